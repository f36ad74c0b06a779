// Agent-backed chat: one message into a session. A first message creates the session summary and
// starts its AgentSession workflow together with the turn (update-with-start); later messages are
// `turn` updates on the running workflow. The update's result is the agent's answer. Used by
// POST /api/v1/chat/agent and by agentic-app runs; the caller hands in the session's message
// budget (the API charges it with its rate limiter, and sets the rate-limit headers).
import { timeTurn } from '../metrics/turns';
import { isDatabaseUnavailable } from '../../db/unavailable';
import { createHash, randomUUID } from 'node:crypto';
import {
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowNotFoundError } from '@temporalio/common';
import { ApiError, isDomainError, RETRY_LATER_HEADERS } from '../../lib/errors';
import { isErrorCode } from '../../lib/error-codes';
import { canActInEnvironment, hasPermission, sdkChannelUId, type Principal } from '../../lib/permissions';
import { type ProjectDoc } from '../../db/project';
import { type SessionDoc } from '../../db/session';
import { findOwned } from '../../db/owned';
import { turnUpdate, type TurnResult, type TurnUpdateInput } from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { llmRuntime } from '../llm/runtime';
import { buildSessionStartInput, claimSessionCapacity, createSessionRecord, giveBackUnstartedSession, linkStartedSession, releaseSessionCapacity, sessionContactFor } from '../sessions/start';
import { sdkUserCaller, testCaller, unlinkSession } from '../contacts/linking';
import { resolveNewSessionTarget } from '../sessions/target';
import { refuseSdkDeploymentChoice, requireSdkMayStartAgent } from '../sdk/start-agents';
import { forgetRunningSession, recallRunningSession, rememberRunningSession } from '../sessions/running-sessions';
import { isDroppedUpdate, isNamespaceMissing, isTemporalUnavailable, isWorkflowNotFound, runtimeNotConfigured, sendUpdateResendingDropped, sessionWithStartOperation, sessionWorkflowId } from '../sessions/workflow-client';
import { runningCalls } from '../running-calls';
import { requireEnvironment } from '../platform-keys/environments';
import { type MessageBudget } from '../sessions/message-budget';

/** Limits on per-turn metadata (the spec says "validated server side"; these are ours). */
export const METADATA_LIMITS = { maxBytes: 16 * 1024, maxKeys: 50, maxDepth: 5 } as const;

/** One message as a caller sends it: the body of POST /api/v1/chat/agent (api/chat-agent/schemas.ts). */
export interface ChatTurnRequest {
  projectId: string;
  message?: string;
  action?: { id: string; value?: unknown };
  sessionId?: string;
  deploymentId?: string;
  environment?: string;
  agentId?: string;
  metadata?: Record<string, unknown>;
  testContext?: TurnUpdateInput['testContext'];
}

function depth(value: unknown, level = 0): number {
  if (value === null || typeof value !== 'object') return level;
  return Math.max(level + 1, ...Object.values(value as Record<string, unknown>).map((v) => depth(v, level + 1)));
}

/** Most JSON an action's value may carry. */
export const ACTION_VALUE_MAX_BYTES = 4 * 1024;

/** A turn carries a message, an action or both; an action's value stays small. 400 otherwise. */
export function validateMessageOrAction(body: Pick<ChatTurnRequest, 'message' | 'action'>): void {
  if (body.message === undefined && body.action === undefined) throw new ApiError('VALIDATION_ERROR', 'body.message or body.action is required');
  const value = body.action?.value;
  if (value !== undefined && Buffer.byteLength(JSON.stringify(value) ?? '') > ACTION_VALUE_MAX_BYTES) {
    throw new ApiError('VALIDATION_ERROR', `body.action.value: at most ${ACTION_VALUE_MAX_BYTES} bytes of JSON`);
  }
}

/** Rejects metadata over the documented limits with 400. */
export function validateMetadata(metadata: Record<string, unknown> | undefined): void {
  if (!metadata) return;
  const bytes = Buffer.byteLength(JSON.stringify(metadata));
  const problem =
    bytes > METADATA_LIMITS.maxBytes
      ? `is ${bytes} bytes; the limit is ${METADATA_LIMITS.maxBytes}`
      : Object.keys(metadata).length > METADATA_LIMITS.maxKeys
        ? `has more than ${METADATA_LIMITS.maxKeys} keys`
        : depth(metadata) > METADATA_LIMITS.maxDepth
          ? `nests deeper than ${METADATA_LIMITS.maxDepth} levels`
          : null;
  if (problem) throw new ApiError('VALIDATION_ERROR', `Invalid message metadata: body.metadata ${problem}`);
}

/**
 * The ApplicationFailure type the Temporal server gives an accepted update whose workflow closed
 * before the update completed (server `update.acceptedUpdateCompletedWorkflowFailure`).
 */
export const UPDATE_OUTLIVED_WORKFLOW = 'AcceptedUpdateCompletedWorkflow';

const sessionEnded = () => new ApiError('CONFLICT', 'Session has ended; start a new session');

/** The first ApplicationFailure in a failure's cause chain (an activity's failure sits under ActivityFailure). */
function applicationFailureIn(err: unknown): ApplicationFailure | null {
  for (let current = err, depth = 0; current && depth < 8; current = (current as { cause?: unknown }).cause, depth++) {
    if (current instanceof ApplicationFailure) return current;
  }
  return null;
}

/**
 * Maps a failed turn onto the API's errors by error class and failure type alone, never by
 * message text: an ApplicationFailure whose type is one of our codes keeps it (the workflow's
 * validator and activities speak our table, with messages written for callers); an update
 * outlived by its workflow, or a workflow that is gone, is an ended session; Temporal not
 * answering, or its namespace missing, is 503; anything else is a 500 whose detail stays in the log.
 */
export function toApiError(err: unknown): ApiError {
  if (isDomainError(err)) return ApiError.fromDomain(err);
  if (err instanceof WorkflowUpdateFailedError) {
    const failure = applicationFailureIn(err.cause);
    if (failure && isErrorCode(failure.type)) return new ApiError(failure.type, failure.message);
    if (failure?.type === UPDATE_OUTLIVED_WORKFLOW) return sessionEnded();
    return new ApiError('INTERNAL_ERROR', { message: 'The turn failed', cause: err });
  }
  if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new ApiError('SERVICE_UNAVAILABLE', { message: 'The agent did not answer in time; retry with the same Idempotency-Key', headers: RETRY_LATER_HEADERS });
  }
  // Before "workflow not found": a missing namespace is also gRPC NOT_FOUND.
  if (isNamespaceMissing(err)) return ApiError.fromDomain(runtimeNotConfigured(err));
  if (err instanceof WorkflowNotFoundError || isWorkflowNotFound(err)) return sessionEnded();
  // The session's workflow task kept failing (its worker died mid-task, or it is overloaded) for
  // longer than the turn's resends: nothing was accepted, so the same message may be sent again.
  if (isDroppedUpdate(err)) {
    return new ApiError('SERVICE_UNAVAILABLE', { message: 'The session is not ready to take the message yet; retry with the same Idempotency-Key', headers: RETRY_LATER_HEADERS });
  }
  if (isTemporalUnavailable(err) || isDatabaseUnavailable(err)) {
    return new ApiError('SERVICE_UNAVAILABLE', { message: 'The runtime is unavailable; retry with the same Idempotency-Key', cause: err, headers: RETRY_LATER_HEADERS });
  }
  return new ApiError('INTERNAL_ERROR', { message: 'The turn failed', cause: err });
}

/** The update was refused because the session's workflow is closed or the session has ended. */
function sessionNoLongerRuns(err: unknown): boolean {
  if (isWorkflowNotFound(err)) return true;
  return err instanceof WorkflowUpdateFailedError && toApiError(err).code === 'CONFLICT';
}

/** Turns this API process is waiting on, per app (the QUEUE_FULL back-pressure). */
const turnsInFlight = new WeakMap<CoreContext, number>();

/**
 * A continuing session's lookups: the session read and its message-budget charge, started in the
 * route's preload so they overlap the key check and the tenant charge. A session this process
 * saw running is not read again (core/sessions/running-sessions.ts): its workflow judges the turn.
 */
export interface ExistingSessionTurn {
  session: Pick<SessionDoc, '_id' | 'tenantId' | 'projectId' | 'status'> | null;
  /** The session came from this process's memory, not from its record. */
  remembered: boolean;
  /** The charge's refusal (429), or null when the message was charged. */
  chargeError: unknown;
  limiterKey: string;
  /** Hands the message's charge back to the budget it was taken from. */
  refund: () => Promise<void>;
}

async function readContinuingSession(ctx: CoreContext, tenantId: string, sessionId: string): Promise<ExistingSessionTurn['session']> {
  const session = await findOwned(ctx.models.Session, sessionId, { tenantId });
  if (session && session.status !== 'ended') rememberRunningSession(ctx, tenantId, sessionId, session);
  return session;
}

export async function startExistingSessionTurn(ctx: CoreContext, principal: Principal, sessionId: string, budget: MessageBudget): Promise<ExistingSessionTurn> {
  const limiterKey = `session:${sessionId}`;
  const running = recallRunningSession(ctx, principal.tenantId, sessionId);
  const [session, chargeError] = await Promise.all([
    running ? { _id: sessionId, tenantId: principal.tenantId, projectId: running.projectId, status: 'active' as const } : readContinuingSession(ctx, principal.tenantId, sessionId),
    budget.charge(limiterKey).then(
      () => null,
      (err: unknown) => err,
    ),
  ]);
  return { session, remembered: running !== null, chargeError, limiterKey, refund: () => budget.refund(limiterKey) };
}

/** Hands a message's charge back: it was refused before it reached the session. */
export function refundSessionCharge(existing: ExistingSessionTurn | null | undefined): void {
  if (existing && !existing.chargeError) void existing.refund().catch(() => undefined);
}

export interface ChatTurnOptions {
  principal: Principal;
  /** The project, already checked visible to the caller (only its ids are needed). */
  project: Pick<ProjectDoc, '_id' | 'tenantId'>;
  body: ChatTurnRequest;
  idempotencyKey: string | null;
  /** The session's message budget, charged when the turn continues a session. */
  budget: MessageBudget;
  /** The continuing session's lookups when the route already started them. */
  existing?: ExistingSessionTurn | null;
  /** A streamed turn's id (TurnUpdateInput.streamId): its reply's text is published there. */
  streamId?: string;
  /**
   * Called once every check has passed, right before the turn goes to its session: a streamed
   * turn opens its stream here, so anything refused earlier is still an error envelope.
   */
  sending?: (turn: SendingTurn) => Promise<void>;
}

/** The turn about to be sent: its session, and the workflow update that will answer it. */
export interface SendingTurn {
  sessionId: string;
  isNewSession: boolean;
  workflowId: string;
  updateId: string;
  /** The session's environment, when this process knows it without a read. */
  environment: string | null;
}

const restarting = () => new ApiError('SERVICE_UNAVAILABLE', { message: 'The API is restarting; retry with the same Idempotency-Key', headers: RETRY_LATER_HEADERS });

/**
 * Runs one message; a message refused before it reached its session gets its charge back. A
 * graceful stop of this process (core/running-calls.ts) answers a turn still running at the end of
 * its grace period with 503: the turn goes on in its workflow, and a retry with the same
 * Idempotency-Key gets its answer. A message not yet sent by then is not sent at all.
 */
export async function runChatTurn(ctx: CoreContext, options: ChatTurnOptions): Promise<TurnResult> {
  let existing = options.existing ?? null;
  let sent = false;
  let stopped = false;
  let stop!: (err: ApiError) => void;
  const stoppedEarly = new Promise<never>((_, reject) => (stop = reject));
  stoppedEarly.catch(() => undefined);
  const untrack = runningCalls(ctx).add(() => {
    stopped = true;
    stop(restarting());
  });
  try {
    if (options.body.sessionId && !existing) existing = await startExistingSessionTurn(ctx, options.principal, options.body.sessionId, options.budget);
    const turn = sendChatTurn(ctx, options, existing, async (sending) => {
      if (stopped) throw restarting();
      await options.sending?.(sending);
      if (stopped) throw restarting();
      sent = true;
    });
    turn.catch(() => undefined);
    return await Promise.race([turn, stoppedEarly]);
  } catch (err) {
    if (!sent) refundSessionCharge(existing);
    throw err;
  } finally {
    untrack();
  }
}

async function sendChatTurn(ctx: CoreContext, options: ChatTurnOptions, existing: ExistingSessionTurn | null, sending: (turn: SendingTurn) => Promise<void>): Promise<TurnResult> {
  const { principal, project } = options;
  // A widget's chats run in its public key's environment, which the page need not name.
  const body = principal.sdk && !options.body.environment && principal.environments?.length ? { ...options.body, environment: principal.environments[0] } : options.body;
  validateMessageOrAction(body);
  validateMetadata(body.metadata);
  if (body.testContext && !hasPermission(principal, 'agent:write')) {
    throw new ApiError('FORBIDDEN', "testContext needs the 'agent:write' permission");
  }
  refuseSdkDeploymentChoice(principal, body.deploymentId);
  if ((turnsInFlight.get(ctx) ?? 0) >= ctx.config.MAX_TURNS_IN_FLIGHT) {
    throw new ApiError('QUEUE_FULL', { message: 'Execution queue full', extraBody: { retryAfterMs: 1000 }, headers: { 'Retry-After': '1' } });
  }

  // Fail fast with 503 when no model can be resolved for the project (agents may still pick
  // another model in EXECUTION; those failures surface in the turn as error replies). The check
  // overlaps the session lookups below; its 503 still comes first.
  const llmCheck = llmRuntime(ctx)
    .resolve({ tenantId: principal.tenantId, projectId: project._id })
    .then((llm) => (llm.ok ? null : new ApiError('SERVICE_UNAVAILABLE', `Runtime not configured: ${llm.reason}`)));
  const clientP = ctx.temporal.client();
  const settled = Promise.allSettled([llmCheck, clientP]);
  const gate = async (): Promise<Client> => {
    const [check, connected] = await settled;
    if (check.status === 'rejected') throw check.reason;
    if (check.value) throw check.value;
    if (connected.status === 'rejected') throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The runtime is unavailable; retry with the same Idempotency-Key', cause: connected.reason, headers: RETRY_LATER_HEADERS });
    return connected.value;
  };

  const clientMessageId = options.idempotencyKey ?? randomUUID();
  const turn: TurnUpdateInput = {
    clientMessageId,
    retryable: options.idempotencyKey !== null,
    message: body.message ?? body.action!.id,
    ...(body.action ? { action: { id: body.action.id, ...(body.action.value !== undefined ? { value: body.action.value } : {}) } } : {}),
    metadata: body.metadata,
    testContext: body.testContext,
    ...(options.streamId ? { streamId: options.streamId } : {}),
  };
  const deadline = Date.now() + ctx.config.REQUEST_TIMEOUT_MS;

  turnsInFlight.set(ctx, (turnsInFlight.get(ctx) ?? 0) + 1);
  try {
    if (existing) {
      // A charge for a session that turns out missing or ended is handed back (runChatTurn).
      const client = await gate();
      const session = existing.session?.projectId === project._id ? existing.session : null;
      if (!session) throw new ApiError('NOT_FOUND', 'Session not found');
      let environment: string | null = null;
      if (principal.environments?.length || principal.sdk) {
        // An environment-bound key sees only its environments' sessions, an SDK end user only the
        // sessions it started (one read, for such credentials only).
        const record = await findOwned(ctx.models.Session, session._id, { tenantId: principal.tenantId });
        if (record && !canActInEnvironment(principal, record.environment)) throw new ApiError('NOT_FOUND', 'Session not found');
        if (principal.sdk && record?.channelUId !== sdkChannelUId(principal.sdk)) throw new ApiError('NOT_FOUND', 'Session not found');
        environment = record?.environment ?? null;
      }
      if (session.status === 'ended') throw new ApiError('CONFLICT', 'Session has ended; start a new session');
      if (existing.chargeError) throw existing.chargeError;
      const handle = client.workflow.getHandle(sessionWorkflowId(session._id));
      await sending({ sessionId: session._id, isNewSession: false, workflowId: handle.workflowId, updateId: clientMessageId, environment });
      try {
        return await timeTurn('api', () =>
          sendUpdateResendingDropped(deadline, () =>
            client.withDeadline(deadline, () => handle.executeUpdate(turnUpdate, { args: [turn], updateId: clientMessageId })),
          ),
        );
      } catch (err) {
        if (!existing.remembered || !sessionNoLongerRuns(err)) throw err;
        // Remembered as running, but ended or deleted since: the record decides, as if read first.
        forgetRunningSession(ctx, principal.tenantId, session._id);
        refundSessionCharge(existing);
        const record = await findOwned(ctx.models.Session, session._id, { tenantId: principal.tenantId });
        if (!record || record.projectId !== project._id) throw new ApiError('NOT_FOUND', 'Session not found');
        throw new ApiError('CONFLICT', 'Session has ended; start a new session');
      }
    }

    // A retried first message (same Idempotency-Key) lands in the same session.
    const sessionId = options.idempotencyKey
      ? uuidFromHash(`${principal.tenantId}:${project._id}:${principal.sdk ? `${sdkChannelUId(principal.sdk)}:` : ''}${options.idempotencyKey}`)
      : randomUUID();
    // Reads only, so they go out together. A fresh random id names no session yet: only a
    // retried Idempotency-Key can find an earlier one.
    // The deployment pins the versions the session runs (docs/deployments.md); without one,
    // the latest versions.
    // A test caller's user id (testContext.callerContext.userId) is the session's caller: its
    // contact is found or created beside the reads (it never rejects: a failure starts the
    // session without one).
    // An identified SDK end user is the caller the customer's backend vouched for.
    const caller = principal.sdk?.user ? sdkUserCaller(principal.sdk.user) : testCaller(body.testContext?.callerContext?.userId);
    const [picked, earlier, contact] = await Promise.all([
      resolveNewSessionTarget(ctx.models, { tenantId: project.tenantId, projectId: project._id }, body).then(
        (target) => target,
        (error: unknown) => ({ error }),
      ),
      options.idempotencyKey ? findOwned(ctx.models.Session, sessionId, { tenantId: principal.tenantId }) : null,
      sessionContactFor(ctx, { tenantId: principal.tenantId, channel: 'api', caller }, sessionId),
      settled,
    ]);
    const client = await gate();
    // A retried first message joins the session it started, as it started it, even if its
    // deployment was retired or replaced since.
    const target = earlier
      ? { agentId: earlier.agentId, agentName: earlier.agentName, environment: earlier.environment, deploymentId: earlier.deploymentId }
      : 'error' in picked
        ? null
        : { ...picked.agent, environment: picked.deployment?.environment ?? body.environment ?? 'dev', deploymentId: picked.deployment?._id ?? null };
    if (!target) throw (picked as { error: unknown }).error;
    requireEnvironment(principal, target.environment);
    // A widget starts with its entry agent or one its public key offers (a retry joins what it started).
    if (!earlier) await requireSdkMayStartAgent(ctx.models, principal, { tenantId: project.tenantId, projectId: project._id }, body, target);
    const start = buildSessionStartInput(ctx.config, {
      tenantId: principal.tenantId,
      projectId: project._id,
      agentId: target.agentId,
      agentName: target.agentName,
      channel: 'api',
      environment: target.environment,
      deploymentId: target.deploymentId,
      sessionId,
      contact,
    });
    // A new session takes its place in the tenant's count (429 at the cap) before its record.
    const claimed = !earlier && (await claimSessionCapacity(ctx, start)) === 'acquired';
    if (!earlier) {
      // The link is written beside the record (it never rejects), and taken back if there is no record.
      const linking = linkStartedSession(ctx, start);
      // An SDK end user's session carries that end user, which every later turn is checked against.
      await createSessionRecord(ctx.models, start, new Date(), principal.sdk ? { channelUId: sdkChannelUId(principal.sdk) } : {}).catch(async (err: unknown) => {
        // A concurrent retry with the same Idempotency-Key created it first: same session.
        if ((err as { code?: number }).code === 11000) return;
        await linking;
        if (start.contact) await unlinkSession(ctx, { tenantId: start.tenantId, contactId: start.contact.contactId, sessionId: start.sessionId });
        if (claimed) await releaseSessionCapacity(ctx, start);
        throw err;
      });
      await linking;
    }
    await sending({ sessionId, isNewSession: true, workflowId: sessionWorkflowId(sessionId), updateId: clientMessageId, environment: target.environment }).catch(async (err: unknown) => {
      if (claimed) await giveBackUnstartedSession(ctx, start);
      throw err;
    });
    // A start operation is single-use: each send gets its own.
    const result = await timeTurn('api', () =>
      sendUpdateResendingDropped(deadline, () =>
        client.withDeadline(deadline, () =>
          client.workflow.executeUpdateWithStart(turnUpdate, {
            args: [turn],
            updateId: clientMessageId,
            startWorkflowOperation: sessionWithStartOperation(ctx.config, start, 'USE_EXISTING'),
          }),
        ),
      ),
    ).catch(async (err: unknown) => {
      if (claimed) await giveBackUnstartedSession(ctx, start);
      throw err;
    });
    rememberRunningSession(ctx, principal.tenantId, sessionId, { projectId: project._id });
    return result;
  } catch (err) {
    throw toApiError(err);
  } finally {
    turnsInFlight.set(ctx, (turnsInFlight.get(ctx) ?? 1) - 1);
  }
}

/** A UUID (v4 layout) derived from a string, so the same idempotency key names the same session. */
function uuidFromHash(input: string): string {
  const h = createHash('sha256').update(input).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A turn a channel process sends into a session it attends (a voice room's utterance, its greeting). */
export interface SessionTurnOptions {
  sessionId: string;
  /** The session's message: the caller's words, or empty with `startOnly` (the greeting). */
  message: string;
  startOnly?: boolean;
  /** Stable across resends of the same turn, so a resent turn is answered once. */
  updateId: string;
  channel: 'voice_realtime';
}

/**
 * One turn of a session the channel already started (core/sessions/start.ts), as the chat route
 * sends a continuing session's turn: the session's `turn` update, resent while its workflow task is
 * dropped, timed for /metrics, and its failures mapped as the chat route maps them (an ended
 * session is CONFLICT). No message budget: the channel charged its session when it started it.
 */
export async function runSessionTurn(ctx: CoreContext, options: SessionTurnOptions): Promise<TurnResult> {
  const turn: TurnUpdateInput = { clientMessageId: options.updateId, retryable: true, message: options.message, ...(options.startOnly ? { startOnly: true } : {}) };
  const deadline = Date.now() + ctx.config.REQUEST_TIMEOUT_MS;
  try {
    const client = await ctx.temporal.client();
    const handle = client.workflow.getHandle(sessionWorkflowId(options.sessionId));
    return await timeTurn(options.channel, () =>
      sendUpdateResendingDropped(deadline, () => client.withDeadline(deadline, () => handle.executeUpdate(turnUpdate, { args: [turn], updateId: options.updateId }))),
    );
  } catch (err) {
    throw toApiError(err);
  }
}
