// How domain operations talk to AgentSession workflows: every call bounded by a deadline, and
// Temporal's failures turned into domain errors with our codes (Temporal down or silent → 503).
import { type Client, WithStartWorkflowOperation, type WorkflowStartOptions } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { DomainError } from '../../lib/errors';
import { isErrorCode } from '../../lib/error-codes';
import { type Config } from '../../lib/config';
import { type AgentSessionWorkflow, type SessionStartInput } from '../../workflows/definitions';
import { AgentNameKey, ChannelKey, DeploymentIdKey, EnvironmentKey, ProjectIdKey, SessionIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { type CoreContext } from '../context';
import { SESSION_ID_PATTERN } from './ids';

export type { AgentSessionWorkflow };
/** Started by name: the worker registers `agentSession` from workflows/index.ts. */
export const AGENT_SESSION_WORKFLOW_TYPE = 'agentSession';

/** Default bound on one Temporal round trip made by a session route. */
export const TEMPORAL_CALL_TIMEOUT_MS = 5_000;
/** Bound on the live-state query of the detail route: past it the detail answers from MongoDB. */
export const STATE_QUERY_TIMEOUT_MS = 2_000;

/**
 * The workflow id of a session. Only ids this service issued (UUIDs) may name a workflow: a
 * caller's id is looked up first and never reaches Temporal, and this keeps it that way.
 */
export function sessionWorkflowId(sessionId: string): string {
  if (!SESSION_ID_PATTERN.test(sessionId)) throw new Error('sessionWorkflowId: not a session id this service issued');
  return `session/${sessionId}`;
}

const TEMPORAL_TRANSPORT_ERRORS = new Set(['ServiceError', 'TransportError', 'ConnectionError', 'WorkflowUpdateRPCTimeoutOrCancelledError']);
/**
 * gRPC codes that mean "Temporal did not answer, or was too busy to take it": CANCELLED,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED (a rate limit, or a workflow already holding its limit of
 * in-flight updates while it has no worker: nothing was accepted), UNAVAILABLE.
 */
const UNAVAILABLE_GRPC_CODES = new Set([1, 4, 8, 14]);

export function causes(err: unknown): unknown[] {
  const chain: unknown[] = [];
  let current: unknown = err;
  while (current && chain.length < 8) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

/** Name-based checks: Temporal's classes are symbol-branded, and jest realms break instanceof. */
export function isWorkflowNotFound(err: unknown): boolean {
  return causes(err).some((e) => (e as Error)?.name === 'WorkflowNotFoundError' || (e as { code?: number })?.code === 5);
}

/** The configured Temporal namespace does not exist: the runtime is not configured, nothing can start. */
export function isNamespaceMissing(err: unknown): boolean {
  return causes(err).some((e) => (e as Error)?.name === 'NamespaceNotFoundError');
}

export function isWorkflowAlreadyStarted(err: unknown): boolean {
  return causes(err).some((e) => (e as Error)?.name === 'WorkflowExecutionAlreadyStartedError');
}

/** True when Temporal (or the worker behind a query/update) did not answer in time or at all. */
export function isTemporalUnavailable(err: unknown): boolean {
  const chain = causes(err);
  const grpcCode = chain.map((e) => (e as { code?: unknown })?.code).find((c): c is number => typeof c === 'number');
  if (grpcCode !== undefined) return UNAVAILABLE_GRPC_CODES.has(grpcCode);
  return chain.some((e) => TEMPORAL_TRANSPORT_ERRORS.has((e as Error)?.name));
}

/**
 * Maps a Temporal failure to a DomainError: an ApplicationFailure whose `type` is one of our codes
 * keeps it (the update validator speaks our table); transport trouble is 503; the rest is 500.
 */
export function temporalErrorToDomainError(err: unknown, what = 'Session runtime'): DomainError {
  for (const e of causes(err)) {
    const failure = e as { name?: string; type?: unknown; message?: string };
    if (failure?.name === 'ApplicationFailure' && isErrorCode(failure.type)) {
      return new DomainError(failure.type, { message: failure.message ?? 'Request failed', cause: err });
    }
  }
  if (isNamespaceMissing(err)) return runtimeNotConfigured(err);
  if (isTemporalUnavailable(err)) {
    return new DomainError('SERVICE_UNAVAILABLE', { message: `${what} is unavailable; retry shortly`, cause: err });
  }
  return new DomainError('INTERNAL_ERROR', { message: 'Internal server error', cause: err });
}

/** 503 for a deployment whose Temporal namespace is missing (the spec's "runtime not configured"). */
export function runtimeNotConfigured(cause: unknown): DomainError {
  return new DomainError('SERVICE_UNAVAILABLE', { message: 'Session runtime is not configured: its Temporal namespace does not exist', cause });
}

/** The Temporal client, or 503 when no connection can be made. */
export async function temporalClient(ctx: CoreContext): Promise<Client> {
  try {
    return await ctx.temporal.client();
  } catch (err) {
    throw new DomainError('SERVICE_UNAVAILABLE', { message: 'Session runtime is unavailable; retry shortly', cause: err });
  }
}

/** The gRPC status detail of the server's WorkflowNotReady error (google.rpc.Status details' type URL). */
const WORKFLOW_NOT_READY_DETAIL = 'temporal.api.errordetails.v1.WorkflowNotReadyFailure';

/** Whether a gRPC error's status details (`grpc-status-details-bin`) hold a detail of this type. */
function hasStatusDetail(err: unknown, typeName: string): boolean {
  const metadata = (err as { metadata?: { get?: (key: string) => unknown[] } })?.metadata;
  const raw = typeof metadata?.get === 'function' ? metadata.get('grpc-status-details-bin') : undefined;
  // The detail is a protobuf Any, whose type URL is stored as plain UTF-8 bytes.
  return (raw ?? []).some((value) => Buffer.isBuffer(value) && value.includes(`type.googleapis.com/${typeName}`));
}

/**
 * The server dropped an update without running it because the workflow task that carried it
 * failed. The common cause is benign: the update arrived while the workflow was finishing a task
 * that continues it as new (or ends it), and the server refused that task (UnhandledCommand) so
 * the workflow would see the update first. The server says so with gRPC FAILED_PRECONDITION and
 * a WorkflowNotReady status detail ("not ready yet: try again"), which is what is checked: the
 * error's type, never its message.
 */
export function isDroppedUpdate(err: unknown): boolean {
  return causes(err).some((e) => (e as { code?: unknown })?.code === 9 && hasStatusDetail(e, WORKFLOW_NOT_READY_DETAIL));
}

const DROPPED_UPDATE_BACKOFF_MS = [20, 50, 100, 200, 400, 800];

/**
 * Sends an update, and sends it again while the server drops it (isDroppedUpdate) and `deadline`
 * (ms since the epoch) leaves room. `send` must use the same update id every time: the workflow
 * runs an update id once, and remembers recent turns across continue-as-new.
 */
export async function sendUpdateResendingDropped<T>(deadline: number, send: () => Promise<T>, sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      const wait = DROPPED_UPDATE_BACKOFF_MS[Math.min(attempt, DROPPED_UPDATE_BACKOFF_MS.length - 1)]!;
      if (!isDroppedUpdate(err) || Date.now() + wait >= deadline) throw err;
      await sleep(wait);
    }
  }
}

/** Runs `fn` with a deadline on every gRPC call it makes. Errors pass through unchanged. */
export function withDeadline<T>(client: Client, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  return client.withDeadline(Date.now() + timeoutMs, fn);
}

export type SessionStartOptions = WorkflowStartOptions<AgentSessionWorkflow> & {
  workflowIdConflictPolicy: 'FAIL' | 'USE_EXISTING';
};

/**
 * Start options of one AgentSession workflow: id `session/<sessionId>`, the API's task queue,
 * the six search attributes and a one-line summary for the Temporal Web UI.
 * @param conflictPolicy `FAIL` (default) refuses a second workflow for the same session id.
 */
export function sessionStartOptions(
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE'>,
  input: SessionStartInput,
  conflictPolicy: 'FAIL' | 'USE_EXISTING' = 'FAIL',
): SessionStartOptions {
  return {
    workflowId: sessionWorkflowId(input.sessionId),
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    args: [input],
    workflowIdConflictPolicy: conflictPolicy,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: TenantIdKey, value: input.tenantId },
      { key: ProjectIdKey, value: input.projectId },
      { key: SessionIdKey, value: input.sessionId },
      { key: AgentNameKey, value: input.agentName },
      { key: ChannelKey, value: input.channel },
      { key: EnvironmentKey, value: input.environment },
      ...(input.deploymentId ? [{ key: DeploymentIdKey, value: input.deploymentId }] : []),
    ]),
    staticSummary: `agent ${input.agentName} · ${input.channel}`,
  };
}

/** The start half of an update-with-start (`client.workflow.executeUpdateWithStart`). */
export function sessionWithStartOperation(
  config: Pick<Config, 'TEMPORAL_TASK_QUEUE'>,
  input: SessionStartInput,
  conflictPolicy: 'FAIL' | 'USE_EXISTING' = 'FAIL',
): WithStartWorkflowOperation<AgentSessionWorkflow> {
  return new WithStartWorkflowOperation<AgentSessionWorkflow>(AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions(config, input, conflictPolicy));
}
