// Which agents an embedded widget may open a conversation with: the entry agent of its public
// key's environment, and the agents the key lists in `allowedAgents`. A page names one in
// `agentId`; any other is refused, so an end user cannot start past the entry agent's own steps
// (an identity check before a handoff, say) by naming an agent the widget does not offer. The
// deployment is the environment's: an SDK token cannot pick one.
import { type Models } from '../../db/models';
import { DomainError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { resolveNewSessionTarget } from '../sessions/target';

/** Most agents one public key may list. */
export const MAX_ALLOWED_AGENTS = 50;

/** Refuses an SDK token's `deploymentId` before anything is resolved (API keys and JWTs pass). */
export function refuseSdkDeploymentChoice(principal: Principal, deploymentId: string | undefined): void {
  if (principal.sdk && deploymentId !== undefined) {
    throw new DomainError('FORBIDDEN', "An SDK token cannot choose a deployment: a widget's conversations run on its public key's environment's deployment");
  }
}

/**
 * For an SDK token starting a session with an explicit `agentId`: passes when the agent it
 * resolved to is listed in the public key's `allowedAgents` (by id or name) or is the entry agent
 * the same request would get without `agentId`; 403 otherwise. Nothing to check for other
 * credentials or without `agentId`.
 */
export async function requireSdkMayStartAgent(
  models: Models,
  principal: Principal,
  scope: { tenantId: string; projectId: string },
  requested: { agentId?: string; environment?: string },
  resolved: { agentId: string | null; agentName: string },
): Promise<void> {
  if (!principal.sdk || requested.agentId === undefined) return;
  const allowed = principal.sdk.allowedAgents ?? [];
  if ((resolved.agentId !== null && allowed.includes(resolved.agentId)) || allowed.includes(resolved.agentName)) return;
  const entry = await resolveNewSessionTarget(models, scope, { environment: requested.environment }).catch(() => null);
  if (entry && entry.agent.agentId === resolved.agentId && entry.agent.agentName === resolved.agentName) return;
  throw new DomainError(
    'FORBIDDEN',
    `This widget's conversations start with its entry agent${allowed.length > 0 ? ' or an agent its public key lists in allowedAgents' : ''}; agentId "${requested.agentId}" is ${allowed.length > 0 ? 'neither' : 'not the entry agent'}. List it in the public key's allowedAgents to offer it`,
  );
}
