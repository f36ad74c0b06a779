// Analytics events of operations outside a session's turns: deployments, audit (who changed which
// key, scope, tool secret or channel connection, by id and name, never a value), channel traffic
// and system events. One batch per operation, written after the operation succeeded; a failed
// write is logged and counted (ingest.ts `emitAnalyticsEvents`), never fails the operation.
import { type AnalyticsCategory } from '../../db/analytics-event';
import { type DeploymentDoc } from '../../db/deployment';
import { type Logger } from '../../lib/logger';
import { type Models } from '../../db/models';
import { emitAnalyticsEvents, type NewAnalyticsEvent } from './ingest';

export interface OperationEvent {
  tenantId: string;
  projectId: string;
  category: Extract<AnalyticsCategory, 'deployment' | 'audit' | 'channel' | 'system'>;
  eventType: string;
  /** Who did it: the principal's subject (a user or key id); null for the platform itself. */
  actor?: string | null;
  /** A deterministic id when the source has one (a retried activity then writes nothing twice). */
  id?: string;
  agentName?: string | null;
  sessionId?: string | null;
  channel?: string | null;
  durationMs?: number | null;
  error?: string | null;
  metadata: Record<string, unknown>;
}

/** Writes an operation's events in one batch; never throws. */
export async function emitOperationEvents(ctx: { models: Models; logger: Pick<Logger, 'warn'> }, events: readonly OperationEvent[]): Promise<void> {
  const now = new Date();
  const batch: NewAnalyticsEvent[] = events.map(({ actor, metadata, ...e }) => ({
    ...e,
    timestamp: now,
    metadata: actor === undefined ? metadata : { ...metadata, actor },
  }));
  await emitAnalyticsEvents(ctx.models, ctx.logger, batch);
}

type DeploymentAction = 'created' | 'promoted' | 'rolled_back' | 'retired';

/** A deployment's event: which deployment, environment, entry agent and pinned agents; never settings' contents. */
export function deploymentEvent(
  action: DeploymentAction,
  d: Pick<DeploymentDoc, '_id' | 'tenantId' | 'projectId' | 'environment' | 'label' | 'entryAgentName' | 'agentVersionManifest' | 'promotedFromId' | 'previousDeploymentId' | 'retireReason'>,
  actor: string | null,
  extra: Record<string, unknown> = {},
): OperationEvent {
  return {
    tenantId: d.tenantId,
    projectId: d.projectId,
    category: 'deployment',
    eventType: `deployment.${action}`,
    actor,
    agentName: d.entryAgentName,
    metadata: {
      deployment_id: d._id,
      environment: d.environment,
      label: d.label,
      agent_versions: d.agentVersionManifest,
      ...(action === 'promoted' ? { promoted_from_id: d.promotedFromId } : {}),
      ...(action === 'created' || action === 'rolled_back' ? { previous_deployment_id: d.previousDeploymentId } : {}),
      ...(action === 'retired' ? { retire_reason: d.retireReason } : {}),
      ...extra,
    },
  };
}

/** An audit event: `audit.<what>_<action>` with the ids and names of what changed, never a value. */
export function auditEvent(
  scope: { tenantId: string; projectId: string },
  what: 'api_key' | 'scope' | 'tool_secret' | 'channel_connection',
  action: 'created' | 'updated' | 'rotated' | 'revoked' | 'deleted',
  actor: string | null,
  metadata: Record<string, unknown>,
): OperationEvent {
  return { tenantId: scope.tenantId, projectId: scope.projectId, category: 'audit', eventType: `audit.${what}_${action}`, actor, metadata };
}
