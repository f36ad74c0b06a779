// HttpAsyncConversation (`http-async/<hash of the session key>`): owns the order of one HTTP-async
// conversation (docs/http-async.md). Accepted messages (signals) wait in its inbox and are answered
// one turn at a time on the AgentSession machinery; every event for the caller's server (replies,
// statuses, media) goes through one ordered delivery lane that retries on a schedule with jitter.
// It ends when its session has ended and nothing is left to answer or deliver.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  httpAsyncAcceptUpdate,
  httpAsyncMessageSignal,
  httpAsyncReplySignal,
  httpAsyncSessionEndedSignal,
  httpAsyncStateQuery,
  type HttpAsyncCarriedState,
  type HttpAsyncConversationInput,
  type HttpAsyncInboundMessage,
  type HttpAsyncOutbound,
  type HttpAsyncQueueLimits,
  type HttpAsyncSessionReplyInput,
  type HttpAsyncStatus,
} from './definitions';
import { mediaBody, responseBody, retryDelayMs, statusBody, type ConversationRef } from './http-async-bodies';
import { SessionIdKey } from './search-attributes';
import type { DeliveryOutcome } from '../activities/http-async/delivery';

const { startHttpAsyncSession, runHttpAsyncTurn, isHttpAsyncSessionRunning } = wf.proxyActivities<Activities>({
  // A turn can call models and tools; the session's own timeouts bound it well inside this.
  startToCloseTimeout: '5 minutes',
  // Temporal or MongoDB not answering; a refusal (no agent, session cap) is non-retryable.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/**
 * The same turn when its activity also makes the reply's first delivery attempt: it heartbeats, so
 * a worker lost mid-POST is noticed within seconds, as the delivery's own 20 s limit would have
 * (the turn's 5 minutes would hold the reply and the lane that long).
 */
const { runHttpAsyncTurn: runHttpAsyncTurnWithReply } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** One attempt: the receiver's 10 s plus reading the subscription and recording the attempt. */
const { deliverHttpAsyncEvent } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  // Only for the activity itself failing (MongoDB, a worker lost mid-attempt), and briefly: one
  // that still fails counts as a failed attempt of the delivery schedule below, which retries it
  // like a receiver's failure (those are answered, not thrown).
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 3 },
});

/**
 * The delivery window runs from when an event was queued, not from its first attempt: in one
 * ordered lane an event behind a failing one would otherwise get a whole window of its own after
 * that one's, and a receiver that is down would hold a reply for a window per event before it.
 * Runs recorded before it replay with the window from the first attempt.
 */
export const DELIVERY_WINDOW_FROM_QUEUE_PATCH = 'http-async-window-from-queue-v1';

/**
 * Events the subscription does not take are not queued (a `processing` status nobody subscribed
 * to cost an activity and a workflow task per message). What it takes comes with the start and
 * then from each delivery's answer. Runs recorded before it queue every event.
 */
export const SUBSCRIBED_EVENTS_PATCH = 'http-async-subscribed-events-v1';

/**
 * A turn scheduled while the delivery lane is empty makes its reply's first delivery attempt in
 * its own activity (the lane waits for it, so order is kept): no workflow task and no delivery
 * activity between the turn and the reply. What is not delivered then is queued with that attempt
 * counted. Runs recorded before it queue every reply for a delivery activity.
 */
export const TURN_DELIVERS_REPLY_PATCH = 'http-async-turn-delivers-reply-v1';

/** Message ids remembered against repeated signals (the API sends each once; this is the backstop). */
const SEEN_KEPT = 1_000;
const DEFAULT_MAX_HISTORY_EVENTS = 4_000;

export async function httpAsyncConversation(input: HttpAsyncConversationInput): Promise<{ status: 'ended' }> {
  const carried: HttpAsyncCarriedState | undefined = input.carried;
  const inbox: HttpAsyncInboundMessage[] = [...(carried?.inbox ?? [])];
  const outbox: HttpAsyncOutbound[] = [...(carried?.outbox ?? [])];
  const seen: string[] = [...(carried?.seen ?? [])];
  const seenSet = new Set(seen);
  let session: { sessionId: string } | null = carried?.session ?? null;
  // The message whose turn the session now waits in (a callback or a human task), so the reply
  // that comes later says what it answers.
  let waitingFor: string | null = carried?.waitingFor ?? null;
  const endedSessions: string[] = [];
  let turnBusy = false;
  let deliveryBusy = false;
  // A turn whose activity makes its reply's first attempt is in flight: the lane waits for it.
  let replyInTurn = false;
  let rolling = false;
  let lastActivityMs = Date.now();

  const remember = (id: string) => {
    seen.push(id);
    seenSet.add(id);
    if (seen.length > SEEN_KEPT) seenSet.delete(seen.shift()!);
  };
  const ref = (sessionId: string): ConversationRef => ({ sessionKey: input.sessionKey, sessionId });
  // What the subscription takes, when known (null: gone, or not known in runs from before it).
  let subscribed: string[] | null = carried?.subscribed !== undefined ? carried.subscribed : (input.events ?? null);
  const filtersEvents = input.events !== undefined && wf.patched(SUBSCRIBED_EVENTS_PATCH);
  // Bytes of JSON of what waits (carried by continue-as-new), kept as the queues change.
  let inboxBytes = inbox.reduce((n, m) => n + jsonBytes(m), 0);
  let outboxBytes = outbox.reduce((n, d) => n + eventBytes(d), 0);
  const takes = (event: HttpAsyncOutbound['event']) => !(filtersEvents && subscribed !== null && !subscribed.includes(event));
  const enqueue = (messageId: string, event: HttpAsyncOutbound['event'], body: Record<string, unknown>, tried?: Pick<HttpAsyncOutbound, 'attempts' | 'firstAttemptAtMs' | 'retryAtMs'>) => {
    if (!takes(event)) return;
    const d: HttpAsyncOutbound = { messageId, event, body, attempts: 0, firstAttemptAtMs: null, queuedAtMs: Date.now(), ...tried };
    outbox.push(d);
    outboxBytes += eventBytes(d);
  };
  const status = (sessionId: string, s: HttpAsyncStatus, relatedMessageId: string | null, details?: Record<string, unknown>) => {
    const messageId = `has-${wf.uuid4()}`;
    enqueue(messageId, 'agent.status', statusBody(ref(sessionId), { messageId, status: s, relatedMessageId, ...(details ? { details } : {}) }));
  };

  wf.setHandler(httpAsyncStateQuery, () => ({ sessionKey: input.sessionKey, sessionId: session?.sessionId ?? null, queued: inbox.length, pendingDeliveries: outbox.length }));
  const take = (message: HttpAsyncInboundMessage) => {
    remember(message.messageId);
    inbox.push(message);
    inboxBytes += jsonBytes(message);
    lastActivityMs = Date.now();
  };
  /** Why a new message cannot be queued now, or null. A message already taken is never refused. */
  const fullBecause = (message: HttpAsyncInboundMessage, limits: HttpAsyncQueueLimits): string | null => {
    if (seenSet.has(message.messageId)) return null;
    if (inbox.length >= limits.maxQueuedMessages) return `${inbox.length} messages are waiting for their turn (the limit is ${limits.maxQueuedMessages})`;
    if (outbox.length >= limits.maxPendingDeliveries) return `${outbox.length} events are waiting for delivery (the limit is ${limits.maxPendingDeliveries})`;
    if (inboxBytes + outboxBytes + jsonBytes(message) > limits.maxQueuedBytes) return `the waiting messages and events would pass ${limits.maxQueuedBytes} bytes`;
    return null;
  };
  // Messages sent as signals: while no worker answered the update (the API could not ask), or by
  // earlier versions of the API (no limits). One past the limits is answered at once with the
  // error QUEUE_FULL instead of being queued.
  wf.setHandler(httpAsyncMessageSignal, ({ limits, ...message }) => {
    if (seenSet.has(message.messageId)) return;
    const full = limits ? fullBecause(message, limits) : null;
    if (!full) return take(message);
    remember(message.messageId);
    const error = { code: 'QUEUE_FULL', message: queueFull(full).message };
    enqueue(message.messageId, 'agent.response', responseBody(ref(session?.sessionId ?? ''), { messageId: message.messageId, response: '', isNewSession: false, metadata: message.metadata ?? {}, llm: NO_LLM, error }));
  });
  // The validator refuses a full queue without a trace in history; the handler checks again, as
  // the state may have changed between the two for updates of the same workflow task.
  wf.setHandler(
    httpAsyncAcceptUpdate,
    (message, limits) => {
      const full = fullBecause(message, limits);
      if (full) throw queueFull(full);
      if (!seenSet.has(message.messageId)) take(message);
      return { accepted: true as const };
    },
    {
      validator: (message, limits) => {
        const full = fullBecause(message, limits);
        if (full) throw queueFull(full);
      },
    },
  );
  wf.setHandler(httpAsyncReplySignal, (reply) => {
    if (seenSet.has(reply.replyId)) return;
    remember(reply.replyId);
    lastActivityMs = Date.now();
    deliverReply(reply);
  });
  wf.setHandler(httpAsyncSessionEndedSignal, ({ sessionId, reason }) => {
    if (session?.sessionId !== sessionId) return;
    session = null;
    endedSessions.push(sessionId);
    if (endedSessions.length > 10) endedSessions.shift();
    waitingFor = null;
    lastActivityMs = Date.now();
    status(sessionId, 'ended', null, { reason });
  });

  /** What a turn (or a later reply) leads to: the reply, its media, and the state it leaves. */
  function deliverOutcome(
    sessionId: string,
    replyMessageId: string,
    relatedMessageId: string,
    outcome: { response: string; action: HttpAsyncSessionReplyInput['action']; richContent?: Record<string, unknown>; actions?: Record<string, unknown>; llm: HttpAsyncSessionReplyInput['llm'] },
    extra: { isNewSession: boolean; metadata: Record<string, unknown>; inReplyTo?: string | null; details?: Record<string, unknown>; delivery?: InlineDelivery },
  ) {
    const conv = ref(sessionId);
    if (outcome.response) {
      const body = responseBody(conv, { messageId: replyMessageId, inReplyTo: extra.inReplyTo, response: outcome.response, isNewSession: extra.isNewSession, metadata: extra.metadata, llm: outcome.llm });
      if (extra.delivery) settleInline(replyMessageId, { ...body, timestamp: extra.delivery.result.timestamp }, extra.delivery);
      else enqueue(replyMessageId, 'agent.response', body);
    }
    if (outcome.richContent || outcome.actions) {
      const mediaId = `ham-${wf.uuid4()}`;
      enqueue(mediaId, 'agent.media', mediaBody(conv, { messageId: mediaId, relatedMessageId: relatedMessageId, richContent: outcome.richContent, actions: outcome.actions, metadata: extra.metadata }));
    }
    if (outcome.action === 'suspend' || outcome.action === 'escalate') {
      waitingFor = relatedMessageId;
      status(sessionId, outcome.action === 'suspend' ? 'suspended' : 'waiting_for_human', relatedMessageId, extra.details);
    }
    // A completed session also signals its end; that signal reports `ended` (once).
  }

  /**
   * What the turn's own attempt at its reply leaves: nothing (delivered, or nothing to deliver
   * to), the reply queued with that attempt counted and its next one after the schedule's first
   * wait, or the delivery failed for good, as the lane's attempt would have left it.
   */
  function settleInline(messageId: string, body: Record<string, unknown>, inline: InlineDelivery) {
    const { outcome, error, events } = inline.result;
    if (filtersEvents && events !== undefined) subscribed = events;
    if (outcome === 'delivered' || outcome === 'dropped') return;
    const now = Date.now();
    if (!inline.final && (outcome === 'failed' || outcome === 'paused')) {
      // Held by a pause: looked at again later, not counted as an attempt.
      const paused = outcome === 'paused';
      const retryAtMs = now + (paused ? Math.min(input.schedule.pausedCheckMs, Math.max(1, input.schedule.windowMs)) : inline.nextWaitMs);
      enqueue(messageId, 'agent.response', body, { attempts: paused ? 0 : 1, firstAttemptAtMs: now, retryAtMs });
      return;
    }
    const sessionId = typeof body.session_id === 'string' ? body.session_id : '';
    status(sessionId, 'delivery_failed', messageId, { event: 'agent.response', attempts: outcome === 'paused' ? 0 : 1, reason: outcome, last_error: error });
  }

  function deliverReply(reply: HttpAsyncSessionReplyInput) {
    // A reply of a session that has just ended is still the caller's (the two signals are sent
    // one after the other, but a reply is never dropped for arriving late).
    if (session?.sessionId !== reply.sessionId && !endedSessions.includes(reply.sessionId)) return;
    const related = waitingFor ?? reply.replyId;
    waitingFor = null;
    status(reply.sessionId, 'resumed', related, { cause: reply.cause });
    const messageId = `ham-${wf.uuid4()}`;
    deliverOutcome(reply.sessionId, messageId, related, reply, { isNewSession: false, metadata: {}, inReplyTo: related });
  }

  async function answer(message: HttpAsyncInboundMessage): Promise<void> {
    const metadata = message.metadata ?? {};
    for (let tries = 0; ; tries++) {
      let isNewSession = false;
      if (!session) {
        try {
          session = await startHttpAsyncSession({
            tenantId: input.tenantId,
            projectId: input.projectId,
            environment: input.environment,
            conversationWorkflowId: wf.workflowInfo().workflowId,
            messageId: message.messageId,
            sessionKey: input.sessionKey,
          });
        } catch (err) {
          const failure = applicationFailureOf(err);
          const pseudo = ref('');
          enqueue(message.messageId, 'agent.response', responseBody(pseudo, { messageId: message.messageId, response: '', isNewSession: false, metadata, llm: NO_LLM, error: failure }));
          return;
        }
        isNewSession = true;
        wf.upsertSearchAttributes([{ key: SessionIdKey, value: session.sessionId }]);
      }
      const sessionId = session.sessionId;
      status(sessionId, 'processing', message.messageId);
      // The reply is next in the lane when nothing waits there: the turn's activity may try it.
      const inline = outbox.length === 0 && takes('agent.response') && wf.patched(TURN_DELIVERS_REPLY_PATCH);
      const nextWaitMs = inline ? retryDelayMs(1, input.schedule, Math.random) : 0;
      const final = nextWaitMs > input.schedule.windowMs;
      let outcome: Awaited<ReturnType<typeof runHttpAsyncTurn>>;
      replyInTurn = inline;
      try {
        outcome = await (inline ? runHttpAsyncTurnWithReply : runHttpAsyncTurn)({
          tenantId: input.tenantId,
          projectId: input.projectId,
          sessionId,
          messageId: message.messageId,
          text: message.text,
          ...(message.metadata ? { metadata: message.metadata } : {}),
          ...(inline ? { reply: { subscriptionId: input.subscriptionId, sessionKey: input.sessionKey, isNewSession, metadata, final } } : {}),
        });
      } catch (err) {
        // Temporal or the store unreachable past the activity's retries: the message is answered
        // with an error rather than left to stop the lane (and the conversation) for good.
        if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
        outcome = { ok: false, sessionGone: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'The message could not be handed to the session; send it again' } };
      } finally {
        replyInTurn = false;
      }
      if (outcome.ok) {
        const details = outcome.suspension ? { tool: outcome.suspension.tool, expires_at: outcome.suspension.expiresAt } : outcome.humanTask ? { human_task_id: outcome.humanTask.id, due_at: outcome.humanTask.dueAt } : undefined;
        const delivery = outcome.delivery ? { result: outcome.delivery, final, nextWaitMs } : undefined;
        deliverOutcome(sessionId, message.messageId, message.messageId, outcome, { isNewSession, metadata, ...(details ? { details } : {}), ...(delivery ? { delivery } : {}) });
        return;
      }
      if (outcome.sessionGone && tries === 0) {
        // Ended since the last message (idle, completed): this message opens a new session.
        if (session?.sessionId === sessionId) session = null;
        continue;
      }
      const error = outcome.sessionGone ? { code: 'CONFLICT', message: 'The session ended before the message could be answered' } : outcome.error;
      enqueue(message.messageId, 'agent.response', responseBody(ref(sessionId), { messageId: message.messageId, response: '', isNewSession, metadata, llm: NO_LLM, error }));
      return;
    }
  }

  /**
   * One attempt of a delivery. The activity failing past its own retries is a failed attempt: a
   * rejection here would stop the lane, and the conversation with it, for good.
   */
  async function attempt(d: HttpAsyncOutbound, final: boolean): Promise<{ outcome: DeliveryOutcome; error: string | null; events?: string[] | null }> {
    try {
      return await deliverHttpAsyncEvent({
        tenantId: input.tenantId,
        projectId: input.projectId,
        subscriptionId: input.subscriptionId,
        delivery: { messageId: d.messageId, event: d.event, body: d.body },
        final,
      });
    } catch (err) {
      if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
      return { outcome: 'failed', error: 'the delivery could not be attempted (internal error)' };
    }
  }

  /**
   * Delivers the oldest event until it is delivered, dropped or its window has passed (true), or
   * until the run rolls over between attempts (false: the event stays first in the outbox). An
   * event that reaches the head of the lane after its window still gets one (final) attempt.
   */
  async function deliver(d: HttpAsyncOutbound): Promise<boolean> {
    const { schedule } = input;
    if (d.retryAtMs !== undefined) {
      // Its first attempt was made with its turn: the next waits as after any failed attempt.
      if (await wf.condition(() => rolling, Math.max(1, d.retryAtMs - Date.now()))) return false;
      delete d.retryAtMs;
    }
    for (;;) {
      d.firstAttemptAtMs ??= Date.now();
      const windowStart = d.queuedAtMs !== undefined && wf.patched(DELIVERY_WINDOW_FROM_QUEUE_PATCH) ? d.queuedAtMs : d.firstAttemptAtMs;
      const nextWait = retryDelayMs(d.attempts + 1, schedule, Math.random);
      const final = Date.now() + nextWait - windowStart > schedule.windowMs;
      const { outcome, error, events } = await attempt(d, final);
      if (filtersEvents && events !== undefined) subscribed = events;
      if (outcome === 'delivered' || outcome === 'dropped') return true;
      if (outcome === 'paused' && !final) {
        // Held while paused: looked at again, not counted as an attempt.
        if (await wf.condition(() => rolling, Math.min(schedule.pausedCheckMs, Math.max(1, windowStart + schedule.windowMs - Date.now())))) return false;
        continue;
      }
      // Held by a pause when the window ended: nothing was posted this time.
      if (outcome !== 'paused') d.attempts++;
      if (outcome === 'failed' && !final) {
        // A rollover does not wait out the pause: the next run carries the attempts and goes on.
        if (await wf.condition(() => rolling, nextWait)) return false;
        continue;
      }
      // Failed for good (window spent, 410, refused destination, or paused past the window).
      if (d.event !== 'agent.status') {
        const sessionId = typeof d.body.session_id === 'string' ? d.body.session_id : '';
        status(sessionId, 'delivery_failed', d.messageId, { event: d.event, attempts: d.attempts, reason: outcome, last_error: error });
      }
      return true;
    }
  }

  async function turnLane(): Promise<void> {
    for (;;) {
      await wf.condition(() => inbox.length > 0 || rolling);
      if (rolling) return;
      turnBusy = true;
      const message = inbox.shift()!;
      inboxBytes -= jsonBytes(message);
      await answer(message);
      turnBusy = false;
      lastActivityMs = Date.now();
    }
  }

  async function deliveryLane(): Promise<void> {
    for (;;) {
      await wf.condition(() => (outbox.length > 0 && !replyInTurn) || rolling);
      if (rolling) return;
      deliveryBusy = true;
      const done = await deliver(outbox[0]!);
      deliveryBusy = false;
      if (!done) return;
      outboxBytes -= eventBytes(outbox.shift()!);
    }
  }

  const lanes = Promise.all([turnLane(), deliveryLane()]);
  const idle = () => inbox.length === 0 && outbox.length === 0 && !turnBusy && !deliveryBusy;
  const maxEvents = input.maxHistoryEvents ?? DEFAULT_MAX_HISTORY_EVENTS;
  const shouldRollOver = () => wf.workflowInfo().continueAsNewSuggested || wf.workflowInfo().historyLength > maxEvents;
  // A session that ended without telling (terminated by an operator) is found by asking.
  const quietCheckMs = Math.max(60_000, input.sessionIdleTimeoutMs * 2);

  const rollOver = async (): Promise<never> => {
    const next: HttpAsyncCarriedState = { inbox, outbox, seen, session, waitingFor, ...(filtersEvents ? { subscribed } : {}) };
    return wf.continueAsNew<typeof httpAsyncConversation>({ ...input, carried: next });
  };
  for (;;) {
    const settled = await wf.condition(() => (idle() && session === null) || shouldRollOver(), quietCheckMs);
    if (settled) break;
    if (idle() && session !== null && Date.now() - lastActivityMs >= quietCheckMs && waitingFor === null) {
      // Unanswered, the session counts as running: the next quiet period asks again.
      const running = await isHttpAsyncSessionRunning({ sessionId: session.sessionId }).catch((err: unknown) => {
        if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
        return true;
      });
      if (!running && idle()) session = null;
    }
  }
  rolling = true;
  await lanes;
  await wf.condition(wf.allHandlersFinished);
  // A message (or a reply) that arrived while the run was closing is answered by the next run.
  if (shouldRollOver() || inbox.length > 0 || outbox.length > 0 || session !== null) await rollOver();
  return { status: 'ended' };
}

/** UTF-8 bytes of a value's JSON (what a payload of it costs). */
function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}

/** An event's bytes, counted by what does not change while it is tried (its attempts do). */
function eventBytes(d: HttpAsyncOutbound): number {
  return jsonBytes({ messageId: d.messageId, event: d.event, body: d.body });
}

function queueFull(why: string): wf.ApplicationFailure {
  return wf.ApplicationFailure.create({ type: 'QUEUE_FULL', message: `The conversation's queue is full: ${why}; send it again once earlier messages are answered`, nonRetryable: true });
}

/** The turn activity's attempt at its reply, with what the schedule said when it was scheduled. */
interface InlineDelivery {
  result: { outcome: DeliveryOutcome; error: string | null; events?: string[] | null; timestamp: string };
  final: boolean;
  nextWaitMs: number;
}

const NO_LLM = { generated: false, usedInternally: false, usedFallback: false };

function applicationFailureOf(err: unknown): { code: string; message: string } {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const failure = e as { name?: string; type?: unknown; message?: string };
    if (failure.name === 'ApplicationFailure' && typeof failure.type === 'string') return { code: failure.type, message: failure.message ?? 'The session could not start' };
  }
  return { code: 'INTERNAL_ERROR', message: 'The session could not start' };
}
