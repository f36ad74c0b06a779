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
  type HttpAsyncAcceptRoute,
  type HttpAsyncCarriedState,
  type HttpAsyncConversationInput,
  type HttpAsyncInboundMessage,
  type HttpAsyncQueueLimits,
  type HttpAsyncSessionEndedInput,
  type HttpAsyncSessionReplyInput,
} from './definitions';
import { retryDelayMs } from './http-async-bodies';
import { applicationFailureOf, DeliveryLane, jsonBytes, queueFull, SeenMessages, type InlineDelivery } from './http-async-lane';
import { SessionIdKey } from './search-attributes';

export { DELIVERY_WINDOW_FROM_QUEUE_PATCH } from './http-async-lane';

const { startHttpAsyncSession, runHttpAsyncTurn, isHttpAsyncSessionRunning, forwardHttpAsyncMessage } = wf.proxyActivities<Activities>({
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

const DEFAULT_MAX_HISTORY_EVENTS = 4_000;

export async function httpAsyncConversation(input: HttpAsyncConversationInput): Promise<{ status: 'ended' }> {
  const carried: HttpAsyncCarriedState | undefined = input.carried;
  const inbox: HttpAsyncInboundMessage[] = [...(carried?.inbox ?? [])];
  const seen = new SeenMessages(carried?.seen ?? []);
  let session: { sessionId: string } | null = carried?.session ?? null;
  // Its sessions run the delivery lane while they run, and take follow-ups straight from the API.
  const sessionsRunLane = input.sessionsRunLane === true;
  const endedSessions: string[] = [];
  let turnBusy = false;
  // A turn whose activity makes its reply's first attempt is in flight: the lane waits for it.
  let replyInTurn = false;
  // The lane is with the running session (or being handed to the one starting).
  let laneAway = sessionsRunLane && session !== null;
  // The session being started, and an end it reported before its start's result was read.
  let starting = false;
  const earlyEnds = new Map<string, HttpAsyncSessionEndedInput>();
  let rolling = false;
  let lastActivityMs = Date.now();

  const filtersEvents = input.events !== undefined && wf.patched(SUBSCRIBED_EVENTS_PATCH);
  const lane = new DeliveryLane(
    { tenantId: input.tenantId, projectId: input.projectId, subscriptionId: input.subscriptionId, sessionKey: input.sessionKey, schedule: input.schedule },
    { outbox: carried?.outbox ?? [], subscribed: carried?.subscribed !== undefined ? carried.subscribed : (input.events ?? null), waitingFor: carried?.waitingFor ?? null },
    filtersEvents,
  );
  // Bytes of JSON of what waits in the inbox (carried by continue-as-new), kept as it changes.
  let inboxBytes = inbox.reduce((n, m) => n + jsonBytes(m), 0);
  const setInbox = (messages: HttpAsyncInboundMessage[]) => {
    inbox.splice(0, inbox.length, ...messages);
    inboxBytes = inbox.reduce((n, m) => n + jsonBytes(m), 0);
  };

  wf.setHandler(httpAsyncStateQuery, () => ({ sessionKey: input.sessionKey, sessionId: session?.sessionId ?? null, queued: inbox.length, pendingDeliveries: lane.outbox.length }));
  const take = (message: HttpAsyncInboundMessage) => {
    seen.add(message.messageId);
    inbox.push(message);
    inboxBytes += jsonBytes(message);
    lastActivityMs = Date.now();
  };
  /** Why a new message cannot be queued now, or null. A message already taken is never refused. */
  const fullBecause = (message: HttpAsyncInboundMessage, limits: HttpAsyncQueueLimits): string | null =>
    seen.has(message.messageId) ? null : lane.fullBecause({ count: inbox.length, bytes: inboxBytes }, message, limits);
  // Messages sent as signals: while no worker answered the update (the API could not ask), or by
  // earlier versions of the API (no limits). One past the limits is answered at once with the
  // error QUEUE_FULL instead of being queued; while a session runs the lane, the session does that.
  wf.setHandler(httpAsyncMessageSignal, ({ limits, ...message }) => {
    if (seen.has(message.messageId)) return;
    if (laneAway) return take(limits ? { ...message, limits } : message);
    const full = limits ? fullBecause(message, limits) : null;
    if (!full) return take(message);
    seen.add(message.messageId);
    lane.error(session?.sessionId ?? '', message, { code: 'QUEUE_FULL', message: queueFull(full).message });
  });
  // The validator refuses a full queue without a trace in history; the handler checks again, as
  // the state may have changed between the two for updates of the same workflow task.
  wf.setHandler(
    httpAsyncAcceptUpdate,
    (message, limits, route?: HttpAsyncAcceptRoute) => {
      refuseWhileSessionRunsLane(route);
      const full = fullBecause(message, limits);
      if (full) throw queueFull(full);
      if (!seen.has(message.messageId)) take(message);
      return { accepted: true as const };
    },
    {
      validator: (message, limits, route?: HttpAsyncAcceptRoute) => {
        refuseWhileSessionRunsLane(route);
        const full = fullBecause(message, limits);
        if (full) throw queueFull(full);
      },
    },
  );
  /**
   * While a session runs the lane it takes the messages (the API is sent there), so that one order
   * holds: this conversation takes one only when that session has refused it as ended, and none
   * while a session starts (what it holds then is the new session's first messages).
   */
  function refuseWhileSessionRunsLane(route: HttpAsyncAcceptRoute | undefined) {
    if (!sessionsRunLane) return;
    if (starting) throw wf.ApplicationFailure.create({ type: 'SESSION_STARTING', message: 'The conversation is starting its session; send the message again', nonRetryable: true });
    if (laneAway && session !== null && route?.refusedBy !== session.sessionId) {
      throw wf.ApplicationFailure.create({ type: 'SESSION_RUNS_LANE', message: 'The conversation\'s session takes its messages', nonRetryable: true, details: [session.sessionId] });
    }
  }
  wf.setHandler(httpAsyncReplySignal, (reply) => {
    if (seen.has(reply.replyId)) return;
    seen.add(reply.replyId);
    lastActivityMs = Date.now();
    deliverReply(reply);
  });
  wf.setHandler(httpAsyncSessionEndedSignal, (ended) => {
    if (session?.sessionId === ended.sessionId) return sessionEnded(ended);
    if (starting && session === null) earlyEnds.set(ended.sessionId, ended);
  });

  /**
   * The session has ended. One that ran the lane hands it back with the messages it did not
   * answer: they go first (they were accepted before anything waiting here), and what waits here
   * that the session had already taken (a retry sent while it ended) is dropped.
   */
  function sessionEnded({ sessionId, reason, lane: handed }: HttpAsyncSessionEndedInput) {
    session = null;
    endedSessions.push(sessionId);
    if (endedSessions.length > 10) endedSessions.shift();
    if (handed) {
      for (const id of handed.seen) seen.add(id);
      const takenBySession = new Set(handed.seen);
      setInbox([...handed.unanswered, ...inbox.filter((m) => !takenBySession.has(m.messageId))]);
      lane.takeBack(handed);
    }
    laneAway = false;
    lane.waitingFor = null;
    lastActivityMs = Date.now();
    lane.status(sessionId, 'ended', null, { reason });
  }

  function deliverReply(reply: HttpAsyncSessionReplyInput) {
    // A reply of a session that has just ended is still the caller's (the two signals are sent
    // one after the other, but a reply is never dropped for arriving late).
    if (session?.sessionId !== reply.sessionId && !endedSessions.includes(reply.sessionId)) return;
    lane.deliverReply(reply, reply.replyId);
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
          lane.error('', message, applicationFailureOf(err, 'The session could not start'));
          return;
        }
        isNewSession = true;
        wf.upsertSearchAttributes([{ key: SessionIdKey, value: session.sessionId }]);
      }
      const sessionId = session.sessionId;
      lane.status(sessionId, 'processing', message.messageId);
      // The reply is next in the lane when nothing waits there: the turn's activity may try it.
      const inline = lane.outbox.length === 0 && lane.takes('agent.response') && wf.patched(TURN_DELIVERS_REPLY_PATCH);
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
        const delivery: InlineDelivery | undefined = outcome.delivery ? { result: outcome.delivery, final, nextWaitMs } : undefined;
        lane.deliverOutcome(sessionId, message.messageId, message.messageId, outcome, { isNewSession, metadata, ...(details ? { details } : {}), ...(delivery ? { delivery } : {}) });
        return;
      }
      if (outcome.sessionGone && tries === 0) {
        // Ended since the last message (idle, completed): this message opens a new session.
        if (session?.sessionId === sessionId) session = null;
        continue;
      }
      const error = outcome.sessionGone ? { code: 'CONFLICT', message: 'The session ended before the message could be answered' } : outcome.error;
      lane.error(sessionId, message, error, isNewSession);
      return;
    }
  }

  /**
   * Starts a session that runs the lane: it takes the lane as it stands (stopped between
   * attempts) and every message waiting here, and answers them in order before any other.
   */
  async function openSession(): Promise<void> {
    laneAway = true;
    await wf.condition(() => !lane.busy);
    const pending = inbox.slice();
    setInbox([]);
    const handed = lane.handOff();
    starting = true;
    try {
      session = await startHttpAsyncSession({
        tenantId: input.tenantId,
        projectId: input.projectId,
        environment: input.environment,
        conversationWorkflowId: wf.workflowInfo().workflowId,
        messageId: pending[0]!.messageId,
        sessionKey: input.sessionKey,
        lane: { ...handed, seen: seen.list(), subscriptionId: input.subscriptionId, sessionKey: input.sessionKey, schedule: input.schedule, pending },
      });
    } catch (err) {
      // Refused (no agent, the tenant's session cap) or not reachable: the lane stays here, the
      // first message is answered with why, and the others wait for the next try.
      lane.takeBack(handed);
      laneAway = false;
      setInbox([...pending.slice(1), ...inbox]);
      lane.error('', pending[0]!, applicationFailureOf(err, 'The session could not start'));
      return;
    } finally {
      starting = false;
    }
    wf.upsertSearchAttributes([{ key: SessionIdKey, value: session.sessionId }]);
    const early = earlyEnds.get(session.sessionId);
    earlyEnds.clear();
    if (early) sessionEnded(early);
  }

  /**
   * Hands the oldest waiting message to the session that runs the lane (the same update the API
   * sends, by the message's id, so it is taken once). Refused because the session has ended: its
   * end (with the lane) is awaited, or, when it closed without telling, it is let go.
   */
  async function forward(message: HttpAsyncInboundMessage, sessionId: string): Promise<void> {
    const { accepted } = await forwardHttpAsyncMessage({ tenantId: input.tenantId, projectId: input.projectId, sessionId, message }).catch((err: unknown) => {
      if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
      return { accepted: false };
    });
    if (accepted) {
      const at = inbox.indexOf(message);
      if (at >= 0) {
        inbox.splice(at, 1);
        inboxBytes -= jsonBytes(message);
      }
      return;
    }
    if (await wf.condition(() => session?.sessionId !== sessionId || rolling, SESSION_END_WAIT_MS)) return;
    const running = await isHttpAsyncSessionRunning({ sessionId }).catch((err: unknown) => {
      if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
      return true;
    });
    if (!running && session?.sessionId === sessionId) {
      // Terminated: what its lane held went with it.
      session = null;
      laneAway = false;
    }
  }

  async function turnLane(): Promise<void> {
    for (;;) {
      await wf.condition(() => inbox.length > 0 || rolling);
      if (rolling) return;
      turnBusy = true;
      if (!sessionsRunLane) {
        const message = inbox.shift()!;
        inboxBytes -= jsonBytes(message);
        await answer(message);
      } else if (!session) await openSession();
      else await forward(inbox[0]!, session.sessionId);
      turnBusy = false;
      lastActivityMs = Date.now();
    }
  }

  async function deliveryLane(): Promise<void> {
    for (;;) {
      await lane.run(() => rolling || laneAway, () => replyInTurn);
      if (rolling) return;
      // With the session: delivered here again once it hands the lane back.
      await wf.condition(() => !laneAway || rolling);
      if (rolling) return;
    }
  }

  const lanes = Promise.all([turnLane(), deliveryLane()]);
  const idle = () => inbox.length === 0 && lane.outbox.length === 0 && !turnBusy && !lane.busy;
  const maxEvents = input.maxHistoryEvents ?? DEFAULT_MAX_HISTORY_EVENTS;
  const shouldRollOver = () => wf.workflowInfo().continueAsNewSuggested || wf.workflowInfo().historyLength > maxEvents;
  // A session that ended without telling (terminated by an operator) is found by asking.
  const quietCheckMs = Math.max(60_000, input.sessionIdleTimeoutMs * 2);

  const rollOver = async (): Promise<never> => {
    const next: HttpAsyncCarriedState = { inbox, outbox: lane.outbox, seen: seen.list(), session, waitingFor: lane.waitingFor, ...(filtersEvents ? { subscribed: lane.subscribed } : {}) };
    return wf.continueAsNew<typeof httpAsyncConversation>({ ...input, carried: next });
  };
  for (;;) {
    const settled = await wf.condition(() => (idle() && session === null) || shouldRollOver(), quietCheckMs);
    if (settled) break;
    if (idle() && session !== null && Date.now() - lastActivityMs >= quietCheckMs && lane.waitingFor === null) {
      // Unanswered, the session counts as running: the next quiet period asks again.
      const running = await isHttpAsyncSessionRunning({ sessionId: session.sessionId }).catch((err: unknown) => {
        if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
        return true;
      });
      if (!running && idle()) {
        session = null;
        laneAway = false;
      }
    }
  }
  rolling = true;
  await lanes;
  await wf.condition(wf.allHandlersFinished);
  // A message (or a reply) that arrived while the run was closing is answered by the next run.
  if (shouldRollOver() || inbox.length > 0 || lane.outbox.length > 0 || session !== null) await rollOver();
  return { status: 'ended' };
}

/** How long a conversation waits for the end of a session that refused a message as ended before asking whether it still runs. */
const SESSION_END_WAIT_MS = 10_000;
