// Accepting one message of the HTTP-async channel (POST /api/v1/channels/http-async/message,
// api/http-async/router.ts). The answer (202) comes once the message is durably recorded: an
// update of the session that answers the conversation and runs its delivery lane, or, when there
// is none running (a first message, a session that has ended), an update-with-start of the
// conversation's workflow (`http-async/<hash>`), which starts the next session. Either refuses a
// message past the conversation's queue limits (429 QUEUE_FULL); nothing is queued then.
import { createHash } from 'node:crypto';
import { TypedSearchAttributes } from '@temporalio/common';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { type Principal, canActInEnvironment, canSeeProject } from '../../lib/permissions';
import { hasGrant } from '../../lib/api-scopes';
import { DomainError, isDomainError } from '../../lib/errors';
import { isDuplicateKey } from '../../db/duplicate-key';
import { canonicalSessionKey, conversationWorkflowId, parseSessionKey } from '../../lib/http-async/session-key';
import { httpAsyncAcceptUpdate, httpAsyncMessageSignal, httpAsyncSessionMessageSignal, httpAsyncSessionMessageUpdate, type HttpAsyncConversationInput, type HttpAsyncInboundMessage, type HttpAsyncQueueLimits } from '../../workflows/definitions';
import { ChannelKey, EnvironmentKey, ProjectIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { type CoreContext } from '../context';
import { findVisibleProject } from '../projects/visible';
import { validateMetadata } from '../chat/turns';
import { causes, isWorkflowNotFound, sendUpdateResendingDropped, sessionWorkflowId, TEMPORAL_CALL_TIMEOUT_MS, temporalClient, temporalErrorToDomainError, withDeadline } from '../sessions/workflow-client';
import { newMessageId } from './subscriptions';
import { forgetLaneSession, recallLaneSession, rememberLaneSession } from './lane-sessions';

export const HTTP_ASYNC_CONVERSATION_WORKFLOW_TYPE = 'httpAsyncConversation';
export const ACCEPTED_NOTE = 'Message queued. The reply is POSTed to the subscription\'s callback URL; send session_key unchanged with every follow-up.';

/**
 * How long a worker has to take a message (the update runs the queue check). Past it, the message
 * is recorded as a signal instead (on the workflow the update went to), which needs no worker, as
 * long as that workflow's history leaves room (HISTORY_ROOM): it holds the message to the same
 * limits when it reads it.
 */
export const ACCEPT_TIMEOUT_MS = 5_000;
/**
 * How much history a conversation's workflow (or its session's) may have for a message to be
 * recorded while no worker answers.
 * Far inside Temporal's limits (50 MB and 50,000 events per run); concurrent requests can pass it
 * by at most one conversation's message rate (SESSION_MESSAGES_PER_MINUTE) of messages.
 */
export const HISTORY_ROOM = { bytes: 4 * 1024 * 1024, events: 8_000 };
/** A full queue drains as turns and deliveries finish; the caller is told to wait this long. */
export const QUEUE_FULL_RETRY_AFTER_MS = 5_000;

/** The largest carried state (bytes) a conversation queues toward; Temporal refuses a payload of 2 MB. */
export const HTTP_ASYNC_MAX_QUEUED_BYTES = 1024 * 1024;

export interface AcceptedMessage {
  message_id: string;
  session_key: string;
  status: 'accepted';
  _note: string;
}

const queueFull = (message: string) => new DomainError('QUEUE_FULL', { message, retryAfterMs: QUEUE_FULL_RETRY_AFTER_MS });

/** One message as the channel's route received it (api/http-async/schemas.ts). */
export interface HttpAsyncMessageRequest {
  project_id: string;
  subscription_id: string;
  session_key: string;
  message: string;
  metadata?: Record<string, unknown>;
}

/** The update was not answered in time: the call's deadline passed (no worker took it). */
function workerDidNotAnswer(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { name?: string; code?: unknown };
    if (x.name === 'WorkflowUpdateRPCTimeoutOrCancelledError' || x.code === 4) return true;
  }
  return false;
}

/** A workflow whose history leaves no HISTORY_ROOM takes no more messages while no worker answers. */
function refuseWithoutHistoryRoom(described: { historySize?: number; historyLength: number }): void {
  if ((described.historySize ?? 0) >= HISTORY_ROOM.bytes || described.historyLength >= HISTORY_ROOM.events) {
    throw new DomainError('QUEUE_FULL', "The conversation's queue is full: messages are waiting for a worker; send it again later");
  }
}

/**
 * Records a message no worker took in time as a signal-with-start (durable without a worker): the
 * conversation answers it once a worker runs, or answers it with the error QUEUE_FULL when it is
 * past the limits then. Refused with QUEUE_FULL when the waiting messages fill the history room.
 */
async function recordWithoutWorker(
  ctx: CoreContext,
  workflowId: string,
  message: HttpAsyncInboundMessage,
  limits: HttpAsyncQueueLimits,
  startOptions: { workflowId: string; taskQueue: string; args: [HttpAsyncConversationInput]; typedSearchAttributes: TypedSearchAttributes; staticSummary: string },
): Promise<void> {
  const client = await temporalClient(ctx);
  const described = await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => client.workflow.getHandle(workflowId).describe()).catch((err: unknown) => {
    if (isWorkflowNotFound(err)) return null;
    throw err;
  });
  if (described && described.status.name === 'RUNNING') refuseWithoutHistoryRoom(described);
  await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
    client.workflow.signalWithStart(HTTP_ASYNC_CONVERSATION_WORKFLOW_TYPE, { ...startOptions, signal: httpAsyncMessageSignal, signalArgs: [{ ...message, limits }] }),
  );
}

/**
 * The message id: random, or derived from the Idempotency-Key within the conversation, so a
 * retried request names the same message and the conversation takes it once.
 */
function messageIdFor(tenantId: string, workflowId: string, idempotencyKey: string | null): string {
  if (!idempotencyKey) return newMessageId();
  return 'ham-' + createHash('sha256').update(`${tenantId}\n${workflowId}\n${idempotencyKey}`).digest('hex').slice(0, 24);
}

export async function acceptHttpAsyncMessage(
  ctx: CoreContext,
  principal: Principal,
  body: HttpAsyncMessageRequest,
  /** Charges the conversation's message rate (SESSION_MESSAGES_PER_MINUTE); refuses with 429 past it. */
  chargeMessage: (limiterKey: string) => Promise<void>,
  idempotencyKey: string | null = null,
): Promise<AcceptedMessage> {
  // A scoped key needs the submission scope itself; other credentials hold it through session:execute.
  if (!hasGrant(principal, 'http_async.execute')) throw new DomainError('FORBIDDEN', "This key lacks the HTTP-async submission scope ('http_async.execute')");
  validateMetadata(body.metadata);
  // The reads at once (each a round trip to the store, one after the other about half of a 202's
  // time): a visible project is the principal's tenant's with this id, so the subscription's
  // owner is known before the project is read, and it is only used once the project is found.
  // A follow-up's conversation (named by the ids the body gives, which the reads confirm) says
  // which session runs its lane; when this process sent the conversation's last follow-up, it
  // knows that session, which also proves the project (lane-sessions.ts): the subscription alone
  // is read then. Its status, environment and revision are read for every message.
  const sent = parseSessionKey(body.session_key, body.project_id, body.subscription_id);
  const conversationId = sent.kind === 'canonical' ? conversationWorkflowId(body.session_key) : null;
  const known = conversationId ? recallLaneSession(ctx, principal.tenantId, conversationId) : null;
  const [project, sub, conversation] = await Promise.all([
    known ? { _id: body.project_id, tenantId: principal.tenantId } : findVisibleProject(ctx, principal, body.project_id),
    ctx.models.HttpAsyncSubscription.findOne({ _id: body.subscription_id, tenantId: principal.tenantId, projectId: body.project_id }, { secret: 0 }).lean(),
    conversationId && !known
      ? ctx.models.HttpAsyncConversation.findOne({ _id: conversationId, tenantId: principal.tenantId, projectId: body.project_id }, { laneSessionId: 1 }).lean()
      : null,
  ]);
  if (!project || !canSeeProject(principal, project)) throw DomainError.notFound('Project');
  if (!sub || !canActInEnvironment(principal, sub.environment)) throw DomainError.notFound('Subscription');
  if (sub.status === 'paused') throw new DomainError('SUBSCRIPTION_PAUSED', 'The subscription is paused: its replies cannot be delivered. Resume it, then send again');

  const parsed = parseSessionKey(body.session_key, project._id, sub._id);
  if (parsed.kind === 'foreign') {
    throw new DomainError('SESSION_KEY_NOT_CANONICAL', 'body.session_key: a key starting with "http_async:" must be the canonical key this project and subscription returned');
  }
  const sessionKey = canonicalSessionKey(project._id, sub._id, parsed.callerKey);
  const workflowId = conversationWorkflowId(sessionKey);
  await chargeMessage(`${project.tenantId}:${workflowId}`);

  const messageId = messageIdFor(project.tenantId, workflowId, idempotencyKey);
  // The caller's own key opens a conversation once; every follow-up sends the canonical key. A
  // retry of the first message with its Idempotency-Key is that message again, not a follow-up.
  let opened = false;
  if (parsed.kind === 'caller') {
    try {
      await ctx.models.HttpAsyncConversation.create({
        _id: workflowId,
        tenantId: project.tenantId,
        projectId: project._id,
        subscriptionId: sub._id,
        sessionKey,
        firstMessageId: idempotencyKey ? messageId : null,
      });
      opened = true;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const existing = idempotencyKey ? await ctx.models.HttpAsyncConversation.findOne({ _id: workflowId, tenantId: project.tenantId }, { firstMessageId: 1 }).lean() : null;
      if (!existing || existing.firstMessageId !== messageId) {
        throw new DomainError('SESSION_KEY_NOT_CANONICAL', {
          message: 'body.session_key: this conversation has started; send the canonical session_key returned with its first message',
          details: { session_key: sessionKey },
        });
      }
    }
  }

  const start: HttpAsyncConversationInput = {
    tenantId: project.tenantId,
    projectId: project._id,
    subscriptionId: sub._id,
    sessionKey,
    environment: sub.environment,
    // What the subscription takes, so the conversation queues nothing else (read as stored).
    ...(Array.isArray(sub.events) ? { events: [...sub.events] } : {}),
    schedule: {
      initialIntervalMs: ctx.config.HTTP_ASYNC_RETRY_INITIAL_MS,
      maxIntervalMs: ctx.config.HTTP_ASYNC_RETRY_MAX_INTERVAL_MS,
      windowMs: ctx.config.HTTP_ASYNC_DELIVERY_WINDOW_MS,
      pausedCheckMs: ctx.config.HTTP_ASYNC_PAUSED_CHECK_MS,
    },
    sessionIdleTimeoutMs: ctx.config.SESSION_IDLE_TIMEOUT_MS,
    sessionsRunLane: true,
  };
  const limits: HttpAsyncQueueLimits = {
    maxQueuedMessages: ctx.config.HTTP_ASYNC_MAX_QUEUED_MESSAGES,
    maxPendingDeliveries: ctx.config.HTTP_ASYNC_MAX_PENDING_DELIVERIES,
    maxQueuedBytes: HTTP_ASYNC_MAX_QUEUED_BYTES,
  };
  const message: HttpAsyncInboundMessage = {
    messageId,
    text: body.message,
    ...(body.metadata ? { metadata: body.metadata } : {}),
    acceptedAtMs: Date.now(),
    ...(typeof sub.revision === 'number' ? { subscriptionRevision: sub.revision } : {}),
  };
  const startOptions = {
    workflowId,
    taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
    args: [start] as [HttpAsyncConversationInput],
    typedSearchAttributes: new TypedSearchAttributes([
      { key: TenantIdKey, value: project.tenantId },
      { key: ProjectIdKey, value: project._id },
      { key: ChannelKey, value: 'http_async' },
      { key: EnvironmentKey, value: sub.environment },
    ]),
    // The key itself is not a search attribute (the server's ten Keyword attributes are taken):
    // the workflow id is its hash, and the summary shows it in the Web UI.
    staticSummary: `http_async · ${sessionKey.slice(0, 200)}`,
  };
  try {
    const client = await temporalClient(ctx);
    const deadline = Date.now() + ACCEPT_TIMEOUT_MS;
    // A follow-up goes straight to the session that runs the lane; otherwise, or once that session
    // has ended, to the conversation, which refers it to the session that runs the lane then.
    let target: string | null = known ?? conversation?.laneSessionId ?? null;
    let refusedBy: string | null = null;
    // Read before anything can start a workflow, when a remembered session stood in for it.
    let projectRead = !known;
    const readProject = async () => {
      if (projectRead) return;
      if (!(await findVisibleProject(ctx, principal, project._id))) throw DomainError.notFound('Project');
      projectRead = true;
    };
    for (;;) {
      try {
        if (target) {
          if (await sendToSession(client, target, message, limits, deadline)) {
            rememberLaneSession(ctx, project.tenantId, workflowId, target);
            break;
          }
          forgetLaneSession(ctx, project.tenantId, workflowId);
          refusedBy = target;
          target = null;
        }
        await readProject();
        // The update id is the message id: a repeated request is taken once (the workflow also
        // remembers recent ids across continue-as-new). Each send needs its own start operation.
        await sendUpdateResendingDropped(deadline, () =>
          client.withDeadline(deadline, () =>
            client.workflow.executeUpdateWithStart(httpAsyncAcceptUpdate, {
              args: refusedBy ? [message, limits, { refusedBy }] : [message, limits],
              updateId: messageId,
              startWorkflowOperation: new WithStartWorkflowOperation(HTTP_ASYNC_CONVERSATION_WORKFLOW_TYPE, { ...startOptions, workflowIdConflictPolicy: 'USE_EXISTING' }),
            }),
          ),
        );
        break;
      } catch (err) {
        if (workerDidNotAnswer(err)) {
          if (!target || !(await recordOnSession(ctx, target, message, limits))) {
            await readProject();
            await recordWithoutWorker(ctx, workflowId, message, limits, startOptions);
          }
          break;
        }
        const referred = referral(err);
        if (!referred) throw err;
        if (Date.now() + REFERRAL_WAIT_MS >= deadline) throw new DomainError('SERVICE_UNAVAILABLE', { message: 'The conversation is changing sessions; send the message again', retryAfterMs: 1_000 });
        if (referred.sessionId) target = referred.sessionId;
        else await new Promise((resolve) => setTimeout(resolve, REFERRAL_WAIT_MS));
      }
    }
  } catch (err) {
    // Not accepted: the key is not taken either, so the same first message can be sent again.
    if (opened) await ctx.models.HttpAsyncConversation.deleteOne({ _id: workflowId, tenantId: project.tenantId }).catch(() => undefined);
    const error = isDomainError(err) ? err : temporalErrorToDomainError(err, 'HTTP-async runtime');
    if (error.code === 'QUEUE_FULL') throw queueFull(error.message);
    throw error;
  }
  return accepted(messageId, sessionKey);
}

/** How long the API waits before sending again a message a conversation refused while it starts a session. */
const REFERRAL_WAIT_MS = 20;

/** The first ApplicationFailure among an error's causes (what a workflow refused with). */
function applicationFailure(err: unknown): { type?: unknown; details?: unknown } | undefined {
  return causes(err).find((e) => (e as { name?: string })?.name === 'ApplicationFailure') as { type?: unknown; details?: unknown } | undefined;
}

/** A conversation's refusal that says where the message goes: the session that runs its lane, or again shortly (one is starting). */
function referral(err: unknown): { sessionId: string | null } | null {
  const failure = applicationFailure(err);
  if (failure?.type === 'SESSION_STARTING') return { sessionId: null };
  if (failure?.type !== 'SESSION_RUNS_LANE') return null;
  const sessionId = Array.isArray(failure.details) && typeof failure.details[0] === 'string' ? failure.details[0] : null;
  return sessionId ? { sessionId } : null;
}

/**
 * Records a message no worker took in time on the session that runs the lane (a signal: durable
 * without a worker, and in the same history as the session's other messages, so their order
 * holds). False when that session no longer runs (the conversation records it then).
 */
async function recordOnSession(ctx: CoreContext, sessionId: string, message: HttpAsyncInboundMessage, limits: HttpAsyncQueueLimits): Promise<boolean> {
  const client = await temporalClient(ctx);
  const handle = client.workflow.getHandle(sessionWorkflowId(sessionId));
  const described = await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => handle.describe()).catch((err: unknown) => {
    if (isWorkflowNotFound(err)) return null;
    throw err;
  });
  if (!described || described.status.name !== 'RUNNING') return false;
  refuseWithoutHistoryRoom(described);
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => handle.signal(httpAsyncSessionMessageSignal, { ...message, limits }));
    return true;
  } catch (err) {
    if (isWorkflowNotFound(err)) return false;
    throw err;
  }
}

function accepted(messageId: string, sessionKey: string): AcceptedMessage {
  return { message_id: messageId, session_key: sessionKey, status: 'accepted', _note: ACCEPTED_NOTE };
}

/**
 * Sends a follow-up to the session that runs its conversation's lane (update id = message id, so a
 * repeated request is taken once). True once the session has queued it; false when the session
 * has ended, is gone or did not answer otherwise (the message then goes to the conversation, which
 * starts the next session and hands it the message). A full queue is the caller's 429, and no
 * worker answering in time goes to the conversation's signal path like its own update would.
 */
async function sendToSession(client: Awaited<ReturnType<typeof temporalClient>>, sessionId: string, message: HttpAsyncInboundMessage, limits: HttpAsyncQueueLimits, deadline: number): Promise<boolean> {
  try {
    await sendUpdateResendingDropped(deadline, () =>
      client.withDeadline(deadline, () => client.workflow.getHandle(sessionWorkflowId(sessionId)).executeUpdate(httpAsyncSessionMessageUpdate, { args: [message, limits], updateId: message.messageId })),
    );
    return true;
  } catch (err) {
    if (workerDidNotAnswer(err) || applicationFailure(err)?.type === 'QUEUE_FULL') throw err;
    return false;
  }
}
