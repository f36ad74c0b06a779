// The activities of an HTTP-async conversation (workflows/http-async-conversation.ts) that reach
// the session: starting its AgentSession (core/sessions/start.ts, retry-safe), sending one accepted
// message as a `turn` update (update id = message id, so a retried activity runs the turn once),
// and with it the first attempt of its reply when the conversation's delivery lane is empty, and
// asking whether a session still runs.
import { timeTurn } from '../../core/metrics/turns';
import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { type Client } from '@temporalio/client';
import { isDomainError } from '../../lib/errors';
import { type CoreContext } from '../../core/context';
import { startSession } from '../../core/sessions/start';
import { httpAsyncCaller } from '../../core/contacts/linking';
import { resolveNewSessionTarget } from '../../core/sessions/target';
import { isWorkflowNotFound, sessionWorkflowId } from '../../core/sessions/workflow-client';
import { httpAsyncSessionMessageUpdate, turnUpdate, type HttpAsyncInboundMessage, type HttpAsyncSessionLane, type HttpAsyncSessionReplyInput } from '../../workflows/definitions';
import { responseBody, turnOutcome } from '../../workflows/http-async-bodies';
import { answeredMessageEvent, createHttpAsyncDelivery, type DeliveryOutcome } from './delivery';
import type { ActivityDeps } from '../index';
import { emitOperationEvents, type OperationEvent } from '../../core/analytics/operations';

export interface StartHttpAsyncSessionInput {
  tenantId: string;
  projectId: string;
  environment: string;
  conversationWorkflowId: string;
  /** The message that needs the session: the session id is derived from it, so a retry starts the same one. */
  messageId: string;
  /** The conversation's key: the end user on the channel, recorded as the session's `channelUId` (absent in runs scheduled before it was passed). */
  sessionKey?: string;
  /** Given by a conversation whose sessions run its lane: the lane and the messages the session answers first. */
  lane?: HttpAsyncSessionLane;
}

export interface ForwardHttpAsyncMessageInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  message: HttpAsyncInboundMessage;
}

export interface HttpAsyncTurnInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  messageId: string;
  text: string;
  metadata?: Record<string, unknown>;
  /**
   * Set when the conversation's delivery lane is empty (the reply is next in order) and holds the
   * lane until this activity is done: the activity makes the reply's first delivery attempt itself,
   * with the body the conversation would queue, and reports it in `delivery`.
   */
  reply?: HttpAsyncInlineReply;
}

export interface HttpAsyncInlineReply {
  subscriptionId: string;
  sessionKey: string;
  isNewSession: boolean;
  metadata: Record<string, unknown>;
  /** No attempt follows this one if it fails (the delivery window is shorter than the first wait). */
  final: boolean;
}

/** The reply's first attempt made by the turn's activity (absent: not made; the conversation queues it). */
export interface HttpAsyncInlineDelivery {
  outcome: DeliveryOutcome;
  error: string | null;
  events?: string[] | null;
  /** The posted body's `timestamp`, so the conversation queues the same bytes for the next attempt. */
  timestamp: string;
}

/** What the conversation needs of a turn (not the whole TurnResult: variables stay out of its history). */
export type HttpAsyncTurnOutcome =
  | {
      ok: true;
      response: string;
      action: HttpAsyncSessionReplyInput['action'];
      suspension?: { tool: string; expiresAt: string };
      humanTask?: { id: string; dueAt: string | null };
      richContent?: Record<string, unknown>;
      actions?: Record<string, unknown>;
      llm: HttpAsyncSessionReplyInput['llm'];
      /** When the session finished the turn (its last trace event). */
      finishedAt?: string;
      delivery?: HttpAsyncInlineDelivery;
    }
  /** The session has ended (or never ran): the conversation starts a new one for this message. */
  | { ok: false; sessionGone: true }
  | { ok: false; sessionGone: false; error: { code: string; message: string } };

/** A UUID-shaped id derived from the message id, so every attempt of the start names one session. */
export function sessionIdForMessage(messageId: string): string {
  const h = createHash('sha256').update(`http-async-session:${messageId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The failure of an update as the caller's server will read it, or null when Temporal did not answer (retry). */
function turnFailure(err: unknown): HttpAsyncTurnOutcome | null {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const failure = e as { name?: string; type?: unknown; message?: string };
    if (failure.name === 'ApplicationFailure') {
      // The session ended between the conversation's last look and this turn.
      if (failure.type === 'CONFLICT' && failure.message?.startsWith('Session has ended')) return { ok: false, sessionGone: true };
      return { ok: false, sessionGone: false, error: { code: typeof failure.type === 'string' ? failure.type : 'INTERNAL_ERROR', message: failure.message ?? 'The turn failed' } };
    }
  }
  if (isWorkflowNotFound(err)) return { ok: false, sessionGone: true };
  return null;
}

/** The session refused a message as ended (the validator's CONFLICT). */
function sessionRefused(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const failure = e as { name?: string; type?: unknown };
    if (failure.name === 'ApplicationFailure') return failure.type === 'CONFLICT';
  }
  return false;
}

/** The running activity's info (undefined outside one). */
function activityInfo(): Context['info'] | undefined {
  try {
    return Context.current().info;
  } catch {
    return undefined;
  }
}

/** Heartbeats every 5 s until stopped (the conversation schedules a turn that posts its reply with a heartbeat timeout). */
function heartbeating(): () => void {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return () => undefined;
  }
  const timer = setInterval(() => context.heartbeat(), 5_000);
  return () => clearInterval(timer);
}

function requireClient(deps: ActivityDeps): Client {
  if (!deps.temporalClient) throw ApplicationFailure.nonRetryable('This worker has no Temporal client for HTTP-async conversations', 'SERVICE_UNAVAILABLE');
  return deps.temporalClient;
}


/**
 * A subscription read while the turn ran is used for its reply's attempt when the turn took less
 * than this: the POST then does not wait for the read, and a pause or a deletion older than this
 * still counts. After a longer turn it is read again.
 */
export const SUBSCRIPTION_READ_FRESH_MS = 1_000;

export function createHttpAsyncConversationActivities(deps: ActivityDeps) {
  const { deliverHttpAsyncEvent, readSubscription } = createHttpAsyncDelivery(deps);
  type Subscription = Awaited<ReturnType<typeof readSubscription>>;

  /**
   * The reply's first attempt, exactly as the conversation's lane would make it. A retried activity
   * whose earlier attempt already delivered it (the worker lost after the POST) does not post again:
   * the delivery's record says so. Never throws: an attempt that cannot be made is left to the lane.
   */
  async function deliverReply(
    input: HttpAsyncTurnInput,
    reply: HttpAsyncInlineReply,
    outcome: Extract<HttpAsyncTurnOutcome, { ok: true }>,
    /** The subscription as read while the turn ran (undefined: not read, or too long ago). */
    read: { sub: Subscription } | undefined,
    /** The turn's channel events, written with the delivery's in one batch after the POST. */
    events: readonly OperationEvent[],
  ): Promise<HttpAsyncInlineDelivery | undefined> {
    const { tenantId, projectId, messageId } = input;
    // The same on every attempt of this activity (the turn's result is the update's, kept by id).
    const timestamp = outcome.finishedAt ?? new Date(activityInfo()?.scheduledTimestampMs ?? Date.now()).toISOString();
    let handed = false;
    try {
      if ((activityInfo()?.attempt ?? 1) > 1) {
        const done = await deps.models.HttpAsyncDelivery.findOne({ tenantId, projectId, subscriptionId: reply.subscriptionId, messageId }, { status: 1 }).lean();
        if (done?.status === 'delivered') return { outcome: 'delivered', error: null, timestamp };
      }
      const body = responseBody({ sessionKey: reply.sessionKey, sessionId: input.sessionId }, { messageId, response: outcome.response, isNewSession: reply.isNewSession, metadata: reply.metadata, llm: outcome.llm, timestamp });
      handed = true;
      return { ...(await deliverHttpAsyncEvent({ tenantId, projectId, subscriptionId: reply.subscriptionId, delivery: { messageId, event: 'agent.response', body }, final: reply.final }, read, events)), timestamp };
    } catch (err) {
      deps.logger.warn({ err, tenantId, projectId, messageId }, 'the reply could not be attempted with its turn; the conversation delivers it');
      return undefined;
    } finally {
      // Written by the delivery once handed to it (whatever its outcome), here otherwise.
      if (!handed && events.length > 0) void emitOperationEvents(deps, events);
    }
  }

  return {
    /**
     * Starts the session that answers a conversation's messages: the project's entry agent in the
     * subscription's environment, counted against the tenant's session cap. Idempotent per message.
     */
    async startHttpAsyncSession(input: StartHttpAsyncSessionInput): Promise<{ sessionId: string }> {
      const client = requireClient(deps);
      const ctx: CoreContext = { config: deps.config, models: deps.models, logger: deps.logger, temporal: { client: () => Promise.resolve(client) } };
      const scope = { tenantId: input.tenantId, projectId: input.projectId };
      const sessionId = sessionIdForMessage(input.messageId);
      try {
        const target = await resolveNewSessionTarget(deps.models, scope, { environment: input.environment });
        await startSession(
          ctx,
          {
            ...scope,
            sessionId,
            agentId: target.agent.agentId,
            agentName: target.agent.agentName,
            channel: 'http_async',
            environment: input.environment,
            deploymentId: target.deployment?._id ?? null,
            httpAsync: { conversationWorkflowId: input.conversationWorkflowId, ...(input.lane ? { lane: input.lane } : {}) },
            identity: { channelUId: input.sessionKey ?? null },
            // The same key is the caller's contact identity (external).
            caller: httpAsyncCaller(input.sessionKey),
          },
          { retrySafe: true },
        );
      } catch (err) {
        // A refusal (no agent, no deployment, the tenant's session cap) will not change on retry.
        if (isDomainError(err)) throw ApplicationFailure.nonRetryable(err.message, err.code);
        throw err;
      }
      await deps.models.HttpAsyncConversation.updateOne(
        { _id: input.conversationWorkflowId, tenantId: input.tenantId },
        // The API sends follow-ups straight to a session that runs the lane.
        { $set: { sessionId, lastSessionStartedAt: new Date(), laneSessionId: input.lane ? sessionId : null } },
      );
      return { sessionId };
    },

    /**
     * Hands a message the conversation accepted to the session that runs its lane (the update the
     * API sends, by the message's id: taken once). Not accepted: the session has ended or is gone.
     */
    async forwardHttpAsyncMessage(input: ForwardHttpAsyncMessageInput): Promise<{ accepted: boolean }> {
      const client = requireClient(deps);
      try {
        await client.workflow.getHandle(sessionWorkflowId(input.sessionId)).executeUpdate(httpAsyncSessionMessageUpdate, { args: [input.message, null], updateId: input.message.messageId });
        return { accepted: true };
      } catch (err) {
        if (isWorkflowNotFound(err) || sessionRefused(err)) return { accepted: false };
        throw err;
      }
    },

    /** Sends one accepted message to the session as a turn; the same message id is answered once. */
    async runHttpAsyncTurn(input: HttpAsyncTurnInput): Promise<HttpAsyncTurnOutcome> {
      const client = requireClient(deps);
      const started = Date.now();
      const stopHeartbeats = input.reply ? heartbeating() : () => undefined;
      try {
        return await runTurn(client, input, started);
      } finally {
        stopHeartbeats();
      }
    },

    /** Whether the session's workflow still runs (a conversation that heard nothing for long asks). */
    async isHttpAsyncSessionRunning(input: { sessionId: string }): Promise<boolean> {
      const client = requireClient(deps);
      try {
        const description = await client.workflow.getHandle(sessionWorkflowId(input.sessionId)).describe();
        return description.status.name === 'RUNNING';
      } catch (err) {
        if (isWorkflowNotFound(err)) return false;
        throw err;
      }
    },
  };

  async function runTurn(client: Client, input: HttpAsyncTurnInput, started: number): Promise<HttpAsyncTurnOutcome> {
    let outcome: HttpAsyncTurnOutcome;
    // The reply's subscription, read while the session answers (a failed read is made again with the POST).
    const { reply } = input;
    const subscriptionRead = reply
      ? readSubscription({ tenantId: input.tenantId, projectId: input.projectId, subscriptionId: reply.subscriptionId }).then(
          (sub) => ({ sub }),
          () => undefined,
        )
      : undefined;
    try {
      const result = await timeTurn('http_async', () =>
        client.workflow.getHandle(sessionWorkflowId(input.sessionId)).executeUpdate(turnUpdate, {
          args: [{ clientMessageId: input.messageId, retryable: true, message: input.text, ...(input.metadata ? { metadata: input.metadata } : {}) }],
          updateId: input.messageId,
        }),
      );
      outcome = turnOutcome(result);
    } catch (err) {
      const failure = turnFailure(err);
      if (!failure) throw err;
      outcome = failure;
    }
    // The accepted message's channel event, once its session answered it (a gone session's
    // message goes to a new session, which records it then). Not awaited by the turn's outcome;
    // with a reply to post, written after the POST, in one batch with the delivery's event.
    const events: OperationEvent[] = [];
    if (outcome.ok || !outcome.sessionGone) {
      const answered = { sessionId: input.sessionId, messageId: input.messageId, chars: input.text.length, durationMs: Date.now() - started };
      events.push(answeredMessageEvent(input, outcome.ok ? { ...answered, action: outcome.action } : { ...answered, error: outcome.error }));
    }
    if (reply && outcome.ok && outcome.response) {
      const read = await subscriptionRead;
      const fresh = Date.now() - started < SUBSCRIPTION_READ_FRESH_MS ? read : undefined;
      const delivery = await deliverReply(input, reply, outcome, fresh, events);
      if (delivery) outcome = { ...outcome, delivery };
    } else if (events.length > 0) void emitOperationEvents(deps, events);
    return outcome;
  }
}
