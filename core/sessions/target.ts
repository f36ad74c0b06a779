// What a new session runs: its agent and, where one applies, its deployment. Resolved before
// anything is written, so a missing agent or deployment is a 404 with nothing to undo.
import { type DeploymentDoc } from '../../db/deployment';
import { type Models } from '../../db/models';
import { DomainError } from '../../lib/errors';
import { resolveDeploymentAgent, resolveSessionDeployment } from '../deployments/resolve';
import { type SessionScope } from './scope';

export interface ResolvedAgent {
  agentId: string;
  agentName: string;
}

/**
 * Resolves the agent a new session starts with. `agentRef` is an agent id, an agent path
 * `<domain>/<agent-name>` or a plain name; without it, the project's entry agent (its first
 * supervisor, else its oldest agent). Only agents with at least one version can run. A project
 * with no such agent is 404 "Project not found or has no agents".
 */
export async function resolveSessionAgent(models: Models, scope: SessionScope, agentRef?: string): Promise<ResolvedAgent> {
  const [versionedIds, allAgents] = await Promise.all([
    models.AgentVersion.distinct('agentId', scope),
    models.Agent.find(scope).select({ _id: 1, name: 1, domain: 1, dslContent: 1 }).sort({ createdAt: 1 }).lean(),
  ]);
  const versioned = new Set(versionedIds);
  const agents = allAgents.filter((a) => versioned.has(a._id));
  if (agents.length === 0) throw new DomainError('NOT_FOUND', 'Project not found or has no agents');
  const agent = agentRef
    ? agents.find((a) => a._id === agentRef || a.name === agentRef || `${a.domain}/${a.name}` === agentRef)
    : (agents.find((a) => /^\s*SUPERVISOR\s*:/m.test(a.dslContent)) ?? agents[0]);
  if (!agent) throw new DomainError('NOT_FOUND', `Agent "${agentRef}" not found in this project, or it has no version`);
  return { agentId: agent._id, agentName: agent.name };
}

/**
 * What a new session runs: the deployment named by `deploymentId`, else the active one of
 * `environment` (core/deployments/resolve.ts), and its agent (`agentId`, else the deployment's
 * entry agent); with no deployment, the latest versions and `resolveSessionAgent`.
 */
export async function resolveNewSessionTarget(
  models: Models,
  scope: SessionScope,
  target: { deploymentId?: string; environment?: string; agentId?: string },
): Promise<{ agent: ResolvedAgent; deployment: DeploymentDoc | null }> {
  const deployment = await resolveSessionDeployment(models, scope, target);
  const agent = deployment ? await resolveDeploymentAgent(models, scope, deployment, target.agentId) : await resolveSessionAgent(models, scope, target.agentId);
  return { agent, deployment };
}
