// Which deployment a session runs: one by id, an environment's active one, and what a new session
// is pinned to (its deployment and entry agent). One deployment per environment is active.
import { type DeploymentDoc } from '../../db/deployment';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { DomainError } from '../../lib/errors';

/** A project of a tenant. */
export interface ProjectScope {
  tenantId: string;
  projectId: string;
}

const notFound = () => new DomainError('NOT_FOUND', 'Deployment not found');

export async function getDeployment(models: Models, scope: ProjectScope, id: string): Promise<DeploymentDoc> {
  const doc = await findOwned(models.Deployment, id, scope);
  if (!doc) throw notFound();
  return doc;
}

export async function activeDeployment(models: Models, scope: ProjectScope, environment: string): Promise<DeploymentDoc | null> {
  return models.Deployment.findOne({ ...scope, environment, status: 'active' }).sort({ activatedAt: -1, _id: -1 }).lean();
}

/**
 * The deployment a new session is pinned to: the named one (404 unknown, 410 retired, 409 when
 * `environment` names another), else the environment's active one. `dev` without an active
 * deployment, or neither given, runs the latest versions (null); staging and production need one.
 */
export async function resolveSessionDeployment(
  models: Models,
  scope: ProjectScope,
  target: { deploymentId?: string; environment?: string },
): Promise<DeploymentDoc | null> {
  if (target.deploymentId) {
    const deployment = await getDeployment(models, scope, target.deploymentId);
    if (target.environment && target.environment !== deployment.environment) {
      throw new DomainError('CONFLICT', `body.environment: the deployment is in ${deployment.environment}, not ${target.environment}`);
    }
    if (deployment.status === 'retired') throw new DomainError('GONE', 'Deployment is retired');
    return deployment;
  }
  if (!target.environment) return null;
  const active = await activeDeployment(models, scope, target.environment);
  if (active || target.environment === 'dev') return active;
  throw new DomainError('NOT_FOUND', `No active deployment in ${target.environment}`);
}

/**
 * The agent a session on `deployment` starts with: `agentRef` (id, name or `<domain>/<name>`)
 * when given, else the deployment's entry agent. It must be pinned by the deployment.
 */
export async function resolveDeploymentAgent(models: Models, scope: ProjectScope, deployment: DeploymentDoc, agentRef?: string) {
  const names = Object.keys(deployment.agentVersionManifest);
  const agents = await models.Agent.find({ ...scope, name: { $in: names } }).select({ _id: 1, name: 1, domain: 1 }).lean();
  const wanted = agentRef ?? deployment.entryAgentName;
  const agent = agents.find((a) => a._id === wanted || a.name === wanted || `${a.domain}/${a.name}` === wanted);
  if (!agent) throw new DomainError('NOT_FOUND', `Agent "${wanted}" is not part of deployment ${deployment._id}`);
  return { agentId: agent._id, agentName: agent.name };
}
