// The delivery lane of an HTTP-async conversation (docs/http-async.md "Order and delivery"): every
// event for the caller's server (replies, statuses, media) waits here in order and is tried one at
// a time on the retry schedule with jitter. The conversation's workflow runs it, or the session
// that answers the conversation while that session runs; there is one lane at every moment.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { HttpAsyncAnsweredMessage, HttpAsyncLaneState, HttpAsyncOutbound, HttpAsyncQueueLimits, HttpAsyncRetrySchedule, HttpAsyncSessionReplyInput, HttpAsyncStatus, HttpAsyncInboundMessage } from './definitions';
import { mediaBody, responseBody, retryDelayMs, statusBody, type ConversationRef } from './http-async-bodies';
import type { DeliveryOutcome } from '../activities/http-async/delivery';

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

/** Whose lane it is: the conversation's subscription and key, and the retry schedule. */
export interface LaneOwner {
  tenantId: string;
  projectId: string;
  subscriptionId: string;
  sessionKey: string;
  schedule: HttpAsyncRetrySchedule;
}

/** What a turn (or a later reply) leads to, as the lane turns it into events. */
export interface LaneOutcome {
  response: string;
  action: HttpAsyncSessionReplyInput['action'];
  richContent?: Record<string, unknown>;
  actions?: Record<string, unknown>;
  llm: HttpAsyncSessionReplyInput['llm'];
}

/** The turn activity's attempt at its reply, with what the schedule said when it was scheduled. */
export interface InlineDelivery {
  result: { outcome: DeliveryOutcome; error: string | null; events?: string[] | null; timestamp: string };
  final: boolean;
  nextWaitMs: number;
}

export const NO_LLM = { generated: false, usedInternally: false, usedFallback: false };

export class DeliveryLane {
  readonly outbox: HttpAsyncOutbound[];
  /** Bytes of JSON of what waits (carried by continue-as-new), kept as the outbox changes. */
  outboxBytes: number;
  /** What the subscription takes, when known (null: gone, or not known in runs from before it). */
  subscribed: string[] | null;
  /** The message whose turn the session now waits in (a callback or a human task), so the reply that comes later says what it answers. */
  waitingFor: string | null;
  /** An attempt is being made (the lane's head is not settled). */
  busy = false;
  /** Messages answered since the last event was queued, for the next event's first attempt to record. */
  private answered: HttpAsyncAnsweredMessage[] = [];

  constructor(
    private readonly owner: LaneOwner,
    state: Pick<HttpAsyncLaneState, 'outbox' | 'subscribed' | 'waitingFor'>,
    /** Events the subscription does not take are not queued (false in runs recorded before that). */
    private readonly filtersEvents: boolean,
  ) {
    this.outbox = [...state.outbox];
    this.outboxBytes = this.outbox.reduce((n, d) => n + eventBytes(d), 0);
    this.subscribed = state.subscribed;
    this.waitingFor = state.waitingFor;
  }

  ref(sessionId: string): ConversationRef {
    return { sessionKey: this.owner.sessionKey, sessionId };
  }

  takes(event: HttpAsyncOutbound['event']): boolean {
    return !(this.filtersEvents && this.subscribed !== null && !this.subscribed.includes(event));
  }

  enqueue(messageId: string, event: HttpAsyncOutbound['event'], body: Record<string, unknown>, known?: Partial<Pick<HttpAsyncOutbound, 'attempts' | 'firstAttemptAtMs' | 'retryAtMs' | 'subscriptionRevision'>>): void {
    if (!this.takes(event)) return;
    const d: HttpAsyncOutbound = { messageId, event, body, attempts: 0, firstAttemptAtMs: null, queuedAtMs: Date.now(), ...known };
    if (this.answered.length > 0) {
      d.answered = this.answered;
      this.answered = [];
    }
    this.outbox.push(d);
    this.outboxBytes += eventBytes(d);
  }

  status(sessionId: string, s: HttpAsyncStatus, relatedMessageId: string | null, details?: Record<string, unknown>): void {
    const messageId = `has-${wf.uuid4()}`;
    this.enqueue(messageId, 'agent.status', statusBody(this.ref(sessionId), { messageId, status: s, relatedMessageId, ...(details ? { details } : {}) }));
  }

  /** An accepted message answered with an error instead of a turn. */
  error(sessionId: string, message: Pick<HttpAsyncInboundMessage, 'messageId' | 'metadata'>, error: { code: string; message: string }, isNewSession = false): void {
    this.enqueue(message.messageId, 'agent.response', responseBody(this.ref(sessionId), { messageId: message.messageId, response: '', isNewSession, metadata: message.metadata ?? {}, llm: NO_LLM, error }));
  }

  /** Records a message its session answered; its analytics go with the next event queued (or are taken by `takeAnswered`). */
  noteAnswered(answered: HttpAsyncAnsweredMessage): void {
    this.answered.push(answered);
  }

  /** Answered messages no queued event took (nothing was queued after them). */
  takeAnswered(): HttpAsyncAnsweredMessage[] {
    const taken = this.answered;
    this.answered = [];
    return taken;
  }

  /** What a turn (or a later reply) leads to: the reply, its media, and the state it leaves. */
  deliverOutcome(
    sessionId: string,
    replyMessageId: string,
    relatedMessageId: string,
    outcome: LaneOutcome,
    extra: { isNewSession: boolean; metadata: Record<string, unknown>; inReplyTo?: string | null; details?: Record<string, unknown>; delivery?: InlineDelivery; subscriptionRevision?: number },
  ): void {
    const conv = this.ref(sessionId);
    if (outcome.response) {
      const body = responseBody(conv, { messageId: replyMessageId, inReplyTo: extra.inReplyTo, response: outcome.response, isNewSession: extra.isNewSession, metadata: extra.metadata, llm: outcome.llm });
      if (extra.delivery) this.settleInline(replyMessageId, { ...body, timestamp: extra.delivery.result.timestamp }, extra.delivery);
      else this.enqueue(replyMessageId, 'agent.response', body, extra.subscriptionRevision !== undefined ? { subscriptionRevision: extra.subscriptionRevision } : undefined);
    }
    if (outcome.richContent || outcome.actions) {
      const mediaId = `ham-${wf.uuid4()}`;
      this.enqueue(mediaId, 'agent.media', mediaBody(conv, { messageId: mediaId, relatedMessageId: relatedMessageId, richContent: outcome.richContent, actions: outcome.actions, metadata: extra.metadata }));
    }
    if (outcome.action === 'suspend' || outcome.action === 'escalate') {
      this.waitingFor = relatedMessageId;
      this.status(sessionId, outcome.action === 'suspend' ? 'suspended' : 'waiting_for_human', relatedMessageId, extra.details);
    }
    // A completed session also reports its end; that reports `ended` (once).
  }

  /**
   * A reply outside a turn (after a callback, a human task or a suspension's expiry): it answers
   * the message the session waited in, or names `replyId` when that is not known.
   */
  deliverReply(reply: Omit<HttpAsyncSessionReplyInput, 'replyId'>, replyId: string): void {
    const related = this.waitingFor ?? replyId;
    this.waitingFor = null;
    this.status(reply.sessionId, 'resumed', related, { cause: reply.cause });
    const messageId = `ham-${wf.uuid4()}`;
    this.deliverOutcome(reply.sessionId, messageId, related, reply, { isNewSession: false, metadata: {}, inReplyTo: related });
  }

  /**
   * What the turn's own attempt at its reply leaves: nothing (delivered, or nothing to deliver
   * to), the reply queued with that attempt counted and its next one after the schedule's first
   * wait, or the delivery failed for good, as the lane's attempt would have left it.
   */
  settleInline(messageId: string, body: Record<string, unknown>, inline: InlineDelivery): void {
    const { outcome, error, events } = inline.result;
    if (this.filtersEvents && events !== undefined) this.subscribed = events;
    if (outcome === 'delivered' || outcome === 'dropped') return;
    const now = Date.now();
    const { schedule } = this.owner;
    if (!inline.final && (outcome === 'failed' || outcome === 'paused')) {
      // Held by a pause: looked at again later, not counted as an attempt.
      const paused = outcome === 'paused';
      const retryAtMs = now + (paused ? Math.min(schedule.pausedCheckMs, Math.max(1, schedule.windowMs)) : inline.nextWaitMs);
      this.enqueue(messageId, 'agent.response', body, { attempts: paused ? 0 : 1, firstAttemptAtMs: now, retryAtMs });
      return;
    }
    const sessionId = typeof body.session_id === 'string' ? body.session_id : '';
    this.status(sessionId, 'delivery_failed', messageId, { event: 'agent.response', attempts: outcome === 'paused' ? 0 : 1, reason: outcome, last_error: error });
  }

  /** Why a new message cannot be queued now beside `queued` others, or null. */
  fullBecause(queued: { count: number; bytes: number }, message: HttpAsyncInboundMessage, limits: HttpAsyncQueueLimits): string | null {
    if (queued.count >= limits.maxQueuedMessages) return `${queued.count} messages are waiting for their turn (the limit is ${limits.maxQueuedMessages})`;
    if (this.outbox.length >= limits.maxPendingDeliveries) return `${this.outbox.length} events are waiting for delivery (the limit is ${limits.maxPendingDeliveries})`;
    if (queued.bytes + this.outboxBytes + jsonBytes(message) > limits.maxQueuedBytes) return `the waiting messages and events would pass ${limits.maxQueuedBytes} bytes`;
    return null;
  }

  /**
   * Delivers events in order until `stop()` holds between attempts (the head stays first in the
   * outbox, its attempts counted), waiting while `held()` (a turn's activity is trying its reply).
   */
  async run(stop: () => boolean, held: () => boolean = () => false): Promise<void> {
    for (;;) {
      await wf.condition(() => (this.outbox.length > 0 && !held()) || stop());
      if (stop()) return;
      this.busy = true;
      const done = await this.deliver(this.outbox[0]!, stop);
      this.busy = false;
      if (!done) return;
      this.outboxBytes -= eventBytes(this.outbox.shift()!);
    }
  }

  /** Gives the lane (stopped between attempts) to a session that runs it from now on: its events, and what it knows. */
  handOff(): Pick<HttpAsyncLaneState, 'outbox' | 'subscribed' | 'waitingFor'> {
    const handed = { outbox: this.outbox.splice(0), subscribed: this.subscribed, waitingFor: this.waitingFor };
    this.outboxBytes = 0;
    return handed;
  }

  /** Takes the lane back (from a session that ended, or one that could not start): its events go first. */
  takeBack(handed: Pick<HttpAsyncLaneState, 'outbox' | 'subscribed' | 'waitingFor'>): void {
    this.outbox.splice(0, 0, ...handed.outbox);
    this.outboxBytes = this.outbox.reduce((n, d) => n + eventBytes(d), 0);
    this.subscribed = handed.subscribed;
    this.waitingFor = handed.waitingFor;
  }

  /** The lane's state, to carry across continue-as-new or hand to its next owner. */
  state(seen: string[]): HttpAsyncLaneState {
    return { outbox: this.outbox, subscribed: this.subscribed, seen, waitingFor: this.waitingFor };
  }

  /**
   * One attempt of a delivery. The activity failing past its own retries is a failed attempt: a
   * rejection here would stop the lane, and its workflow with it, for good.
   */
  private async attempt(d: HttpAsyncOutbound, final: boolean): Promise<{ outcome: DeliveryOutcome; error: string | null; events?: string[] | null }> {
    const { answered, subscriptionRevision } = d;
    delete d.answered;
    delete d.subscriptionRevision;
    try {
      return await deliverHttpAsyncEvent({
        tenantId: this.owner.tenantId,
        projectId: this.owner.projectId,
        subscriptionId: this.owner.subscriptionId,
        delivery: { messageId: d.messageId, event: d.event, body: d.body },
        final,
        ...(answered ? { answered } : {}),
        ...(subscriptionRevision !== undefined ? { subscriptionRevision } : {}),
      });
    } catch (err) {
      if (!(err instanceof wf.ActivityFailure) || wf.isCancellation(err)) throw err;
      return { outcome: 'failed', error: 'the delivery could not be attempted (internal error)' };
    }
  }

  /**
   * Delivers the oldest event until it is delivered, dropped or its window has passed (true), or
   * until `stop()` holds between attempts (false: the event stays first in the outbox). An
   * event that reaches the head of the lane after its window still gets one (final) attempt.
   */
  private async deliver(d: HttpAsyncOutbound, stop: () => boolean): Promise<boolean> {
    const { schedule } = this.owner;
    if (d.retryAtMs !== undefined) {
      // Its first attempt was made with its turn: the next waits as after any failed attempt.
      if (await wf.condition(stop, Math.max(1, d.retryAtMs - Date.now()))) return false;
      delete d.retryAtMs;
    }
    for (;;) {
      d.firstAttemptAtMs ??= Date.now();
      const windowStart = d.queuedAtMs !== undefined && wf.patched(DELIVERY_WINDOW_FROM_QUEUE_PATCH) ? d.queuedAtMs : d.firstAttemptAtMs;
      const nextWait = retryDelayMs(d.attempts + 1, schedule, Math.random);
      const final = Date.now() + nextWait - windowStart > schedule.windowMs;
      const { outcome, error, events } = await this.attempt(d, final);
      if (this.filtersEvents && events !== undefined) this.subscribed = events;
      if (outcome === 'delivered' || outcome === 'dropped') return true;
      if (outcome === 'paused' && !final) {
        // Held while paused: looked at again, not counted as an attempt.
        if (await wf.condition(stop, Math.min(schedule.pausedCheckMs, Math.max(1, windowStart + schedule.windowMs - Date.now())))) return false;
        continue;
      }
      // Held by a pause when the window ended: nothing was posted this time.
      if (outcome !== 'paused') d.attempts++;
      if (outcome === 'failed' && !final) {
        // Stopping does not wait out the pause: the next owner carries the attempts and goes on.
        if (await wf.condition(stop, nextWait)) return false;
        continue;
      }
      // Failed for good (window spent, 410, refused destination, or paused past the window).
      if (d.event !== 'agent.status') {
        const sessionId = typeof d.body.session_id === 'string' ? d.body.session_id : '';
        this.status(sessionId, 'delivery_failed', d.messageId, { event: d.event, attempts: d.attempts, reason: outcome, last_error: error });
      }
      return true;
    }
  }
}

/** UTF-8 bytes of a value's JSON (what a payload of it costs). */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}

/** An event's bytes, counted by what does not change while it is tried (its attempts do). */
function eventBytes(d: HttpAsyncOutbound): number {
  return jsonBytes({ messageId: d.messageId, event: d.event, body: d.body });
}

export function queueFull(why: string): wf.ApplicationFailure {
  return wf.ApplicationFailure.create({ type: 'QUEUE_FULL', message: `The conversation's queue is full: ${why}; send it again once earlier messages are answered`, nonRetryable: true });
}

/** The ApplicationFailure's type and message in an error's causes (how a caller's server reads it). */
export function applicationFailureOf(err: unknown, fallback: string): { code: string; message: string } {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const failure = e as { name?: string; type?: unknown; message?: string };
    if (failure.name === 'ApplicationFailure' && typeof failure.type === 'string') return { code: failure.type, message: failure.message ?? fallback };
  }
  return { code: 'INTERNAL_ERROR', message: fallback };
}

/** Message ids remembered against repeated messages (the API sends each once; this is the backstop). */
export const SEEN_KEPT = 1_000;

/** A bounded window of message ids, newest last, carried with the lane. */
export class SeenMessages {
  private readonly ids: string[];
  private readonly set: Set<string>;
  constructor(ids: readonly string[]) {
    this.ids = [...ids];
    this.set = new Set(this.ids);
  }
  has(id: string): boolean {
    return this.set.has(id);
  }
  add(id: string): void {
    if (this.set.has(id)) return;
    this.ids.push(id);
    this.set.add(id);
    if (this.ids.length > SEEN_KEPT) this.set.delete(this.ids.shift()!);
  }
  list(): string[] {
    return this.ids;
  }
}
