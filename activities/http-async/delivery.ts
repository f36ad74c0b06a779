// One attempt of an HTTP-async delivery (workflows/http-async-lane.ts holds the retry schedule):
// the subscription as it is now (paused, deleted, not subscribed to the event), the signed POST
// through the destination rules, and the attempt in the subscription's recent deliveries. A 410
// from the receiver pauses the subscription.
import { isDuplicateKey } from '../../db/duplicate-key';
import { failHeldDelivery, insertFirstDeliveryAttempt, openSubscriptionSecret, recordDeliveryAttempt, type DeliveryAttempt, type HttpAsyncDeliveryModel } from '../../db/http-async-subscription';
import { postSignedCallback } from '../../lib/http-async/callback-post';
import { secretMasterKeyRing } from '../../lib/secret-envelope';
import { destinationGuard, httpAsyncDestinationPolicy } from '../../lib/net/destination';
import { type HttpAsyncAnsweredMessage, type HttpAsyncOutbound } from '../../workflows/definitions';
import { switchboardMetrics } from '../../lib/metrics/registry';
import type { ActivityDeps } from '../index';
import { emitOperationEvents, type OperationEvent } from '../../core/analytics/operations';

export interface DeliverHttpAsyncInput {
  tenantId: string;
  projectId: string;
  subscriptionId: string;
  delivery: Pick<HttpAsyncOutbound, 'messageId' | 'event' | 'body'>;
  /** No attempt follows this one if it fails: the delivery is then recorded as failed. */
  final: boolean;
  /** Messages its session answered just before queueing this event: their analytics are written with the attempt's. */
  answered?: HttpAsyncAnsweredMessage[];
  /**
   * The subscription's revision as the API read it when it accepted the message this replies to
   * (first attempts only): a copy of that revision this worker read within SUBSCRIPTION_COPY_MS
   * is used instead of reading it again.
   */
  subscriptionRevision?: number;
}

/**
 * The `channel.message_accepted` analytics event of a message its session answered, and its turn
 * in the turn-duration metric (observed here, by the worker that records it, for sessions that
 * answer messages themselves): from the message's acceptance to now, the reply's first attempt, by
 * the real clock (the workflow's stands still within a workflow task, where a turn without model
 * or tool calls runs whole).
 */
export function answeredMessageEvent(scope: { tenantId: string; projectId: string }, m: HttpAsyncAnsweredMessage, observe = false): OperationEvent {
  if (observe) {
    const ms = m.acceptedAtMs !== undefined ? Math.max(0, Date.now() - m.acceptedAtMs) : m.durationMs;
    switchboardMetrics().turnDuration.observe({ channel: 'http_async', outcome: m.error ? 'error' : 'ok' }, ms / 1000);
  }
  return {
    id: `${m.sessionId}:http_async:${m.messageId}`,
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    category: 'channel',
    eventType: 'channel.message_accepted',
    sessionId: m.sessionId,
    channel: 'http_async',
    durationMs: m.durationMs,
    error: m.error ? m.error.message : null,
    metadata: { message_id: m.messageId, chars: m.chars, ...(m.error ? { code: m.error.code } : { action: m.action }) },
  };
}

/**
 * - `delivered`: the receiver answered 2xx.
 * - `failed`: it did not (or could not be reached); the workflow tries again on its schedule.
 * - `paused`: the subscription is paused; nothing was sent, the workflow looks again later.
 * - `gone`: the receiver answered 410; the subscription is now paused.
 * - `dropped`: nothing to deliver to (the subscription was deleted, or it no longer takes this event).
 * - `blocked`: the destination rules refuse the callback URL; no attempt can succeed.
 */
export type DeliveryOutcome = 'delivered' | 'failed' | 'paused' | 'gone' | 'dropped' | 'blocked';

/**
 * Records one attempt in recent deliveries. Most deliveries succeed at their first attempt, which
 * is an insert: the unique (tenant, subscription, message) index refuses a second one, while the
 * upsert of recordDeliveryAttempt filters on those fields, which FerretDB answers by reading every
 * delivery (258 ms at 2,000 deliveries against 3 ms for the insert; docs/performance.md). A later
 * attempt, or a retried activity, finds the record there and counts itself on it.
 */
export async function recordAttempt(model: HttpAsyncDeliveryModel, attempt: DeliveryAttempt): Promise<void> {
  try {
    await insertFirstDeliveryAttempt(model, attempt);
    return;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  await recordDeliveryAttempt(model, attempt);
}

/** Opened signing secrets kept per worker; a few hundred bytes each. */
const OPENED_SECRETS_KEPT = 1_000;
/** Subscriptions a worker keeps as it last read them (a kilobyte or so each), and for how long one is used. */
const SUBSCRIPTION_COPIES_KEPT = 1_000;
export const SUBSCRIPTION_COPY_MS = 1_000;

export function createHttpAsyncDeliveryActivities(deps: ActivityDeps) {
  const { deliverHttpAsyncEvent } = createHttpAsyncDelivery(deps);
  return {
    deliverHttpAsyncEvent: ({ answered, ...input }: DeliverHttpAsyncInput) => deliverHttpAsyncEvent(input, undefined, (answered ?? []).map((m) => answeredMessageEvent(input, m, true))),
    /** Analytics of messages a session answered when no event for the caller followed them. */
    async recordHttpAsyncAnswers(input: { tenantId: string; projectId: string; answered: HttpAsyncAnsweredMessage[] }): Promise<void> {
      await emitOperationEvents(deps, input.answered.map((m) => answeredMessageEvent(input, m, true)));
    },
  };
}

/**
 * One attempt, with the subscription as read by the caller when it has just read it (a turn's
 * activity reads it while the turn runs, so the reply's POST does not wait for that read).
 */
export function createHttpAsyncDelivery(deps: ActivityDeps) {
  const policy = httpAsyncDestinationPolicy(deps.config);
  const ring = secretMasterKeyRing(deps.config);
  // Opening a secret reads the tenant's data key (a query per delivery). The clear secret is a
  // function of the sealed value and its place alone (data keys never change, the AAD names the
  // place, the GCM tag this sealing), so it is kept under those: a rotation seals anew and misses.
  // The subscription itself is read on every attempt, so a pause, a new URL or a deletion counts at once.
  const opened = new Map<string, string>();
  const openSecret = async (sub: Parameters<typeof openSubscriptionSecret>[2]): Promise<string> => {
    const key = JSON.stringify([sub.tenantId, sub.projectId, sub._id, sub.secret.iv, sub.secret.tag, sub.secret.data]);
    const known = opened.get(key);
    if (known !== undefined) return known;
    if (!ring) throw new Error('no master keys');
    const secret = await openSubscriptionSecret(deps.models.TenantDataKey, ring, sub);
    if (opened.size >= OPENED_SECRETS_KEPT) opened.delete(opened.keys().next().value!);
    opened.set(key, secret);
    return secret;
  };
  const readSubscription = (input: Pick<DeliverHttpAsyncInput, 'tenantId' | 'projectId' | 'subscriptionId'>) =>
    deps.models.HttpAsyncSubscription.findOne({ _id: input.subscriptionId, tenantId: input.tenantId, projectId: input.projectId }).lean().exec();
  type Subscription = Awaited<ReturnType<typeof readSubscription>>;
  // The subscription as this worker last read it. A reply's first attempt names the revision its
  // message was accepted under; every change raises the revision, so a copy of that revision read
  // within SUBSCRIPTION_COPY_MS is what the store holds unless the change came after that
  // acceptance (docs/http-async.md "Retries"). Other attempts always read the store.
  const copies = new Map<string, { sub: NonNullable<Subscription>; readAtMs: number }>();
  const copyKey = (input: Pick<DeliverHttpAsyncInput, 'tenantId' | 'projectId' | 'subscriptionId'>) => `${input.tenantId}\n${input.projectId}\n${input.subscriptionId}`;
  async function currentSubscription(input: DeliverHttpAsyncInput): Promise<Subscription> {
    const key = copyKey(input);
    const copy = copies.get(key);
    if (copy && input.subscriptionRevision !== undefined && copy.sub.revision === input.subscriptionRevision && Date.now() - copy.readAtMs <= SUBSCRIPTION_COPY_MS) return copy.sub;
    const readAtMs = Date.now();
    const sub = await readSubscription(input);
    copies.delete(key);
    if (sub && typeof sub.revision === 'number') {
      if (copies.size >= SUBSCRIPTION_COPIES_KEPT) copies.delete(copies.keys().next().value!);
      copies.set(key, { sub, readAtMs });
    }
    return sub;
  }
  async function attemptDelivery(input: DeliverHttpAsyncInput, read?: { sub: Subscription }): Promise<{ answer: { outcome: DeliveryOutcome; error: string | null }; events: string[] | null }> {
    const { tenantId, projectId, subscriptionId, delivery } = input;
    const sub = read ? read.sub : await currentSubscription(input);
    const events = sub ? [...sub.events] : null;
    const answer = (outcome: DeliveryOutcome, error: string | null) => ({ answer: { outcome, error }, events });
    if (!sub || !sub.events.includes(delivery.event)) return answer('dropped', null);
    const record = (status: 'pending' | 'delivered' | 'failed', statusCode: number | null, latencyMs: number | null, error: string | null) =>
      recordAttempt(deps.models.HttpAsyncDelivery, { tenantId, projectId, subscriptionId, messageId: delivery.messageId, event: delivery.event, status, statusCode, latencyMs, error });
    if (sub.status === 'paused') {
      // Held, not attempted; once the schedule's window has passed it is failed, and visible.
      if (input.final) {
        await failHeldDelivery(deps.models.HttpAsyncDelivery, { tenantId, projectId, subscriptionId, messageId: delivery.messageId, event: delivery.event, error: 'the subscription was paused when the delivery window ended' });
      }
      return answer('paused', 'subscription paused');
    }
    let secret: string;
    try {
      secret = await openSecret(sub);
    } catch {
      // The master key that sealed it is gone: no attempt can be signed until the secret is rotated.
      await record(input.final ? 'failed' : 'pending', null, null, 'the signing secret cannot be decrypted; rotate it');
      return answer('failed', 'signing secret unavailable');
    }
    const outcome = await postSignedCallback({ url: sub.callbackUrl, secret, event: delivery.event, body: delivery.body, fetch: destinationGuard(policy).fetch });
    if (outcome.ok) {
      await record('delivered', outcome.statusCode, outcome.latencyMs, null);
      return answer('delivered', null);
    }
    if (outcome.statusCode === 410) {
      await deps.models.HttpAsyncSubscription.updateOne({ _id: sub._id, tenantId, projectId, status: 'active' }, { $set: { status: 'paused' }, $inc: { revision: 1 } });
      await record('failed', 410, outcome.latencyMs, 'receiver answered 410 Gone: the subscription was paused');
      deps.logger.warn({ tenantId, projectId, subscriptionId }, 'an HTTP-async receiver answered 410; its subscription is paused');
      return answer('gone', outcome.error);
    }
    if (outcome.blocked) {
      await record('failed', null, outcome.latencyMs, outcome.error);
      return answer('blocked', outcome.error);
    }
    await record(input.final ? 'failed' : 'pending', outcome.statusCode, outcome.latencyMs, outcome.error);
    return answer('failed', outcome.error);
  }

  return {
    readSubscription,
    /**
     * One attempt. `events` is what the subscription takes now (null when it is gone), so the
     * conversation stops queueing events nobody subscribed to. `read`: the subscription as the
     * caller has just read it (otherwise it is read here).
     */
    async deliverHttpAsyncEvent(
      input: DeliverHttpAsyncInput,
      read?: { sub: Subscription },
      /** The caller's own channel events, written in the same batch as the delivery's (one insert). */
      withEvents: readonly OperationEvent[] = [],
    ): Promise<{ outcome: DeliveryOutcome; error: string | null; events?: string[] | null }> {
      let result: Awaited<ReturnType<typeof attemptDelivery>>;
      try {
        result = await attemptDelivery(input, read);
      } catch (err) {
        if (withEvents.length > 0) void emitOperationEvents(deps, withEvents);
        throw err;
      }
      const { outcome, error } = result.answer;
      const events: OperationEvent[] = [...withEvents];
      // The delivery's end as a channel event (written beside the answer, not awaited by it).
      if (outcome === 'delivered' || outcome === 'gone' || outcome === 'blocked' || (outcome === 'failed' && input.final)) {
        const done = outcome === 'delivered' ? 'delivered' : 'failed';
        const sessionId = typeof input.delivery.body.session_id === 'string' ? input.delivery.body.session_id : null;
        events.push({
          id: `http_async:${input.subscriptionId}:${input.delivery.messageId}:${done}`,
          tenantId: input.tenantId,
          projectId: input.projectId,
          category: 'channel',
          eventType: `channel.reply_${done}`,
          sessionId,
          channel: 'http_async',
          error: done === 'failed' ? (error ?? outcome) : null,
          metadata: { subscription_id: input.subscriptionId, message_id: input.delivery.messageId, event: input.delivery.event, outcome },
        });
      }
      if (events.length > 0) void emitOperationEvents(deps, events);
      return { ...result.answer, events: result.events };
    },
  };
}
