// Per-tenant request-rate limiting with shared counters (MongoDB by default, so every API
// replica sees the same numbers; memory only as an explicit single-node option).
import { type Response } from 'express';
import { type Connection } from 'mongoose';
import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { ApiError } from '../../lib/errors';
import { ensureRateLimitWindowIndexes, MongoWindowLimiter } from './mongo-window-store';

export interface RateLimiterSettings {
  store: 'mongo' | 'memory';
  points: number;
  durationSeconds: number;
  keyPrefix: string;
  connection?: Connection;
}

export function createRateLimiter(settings: RateLimiterSettings): RateLimiterAbstract {
  if (settings.store === 'memory') return new RateLimiterMemory({ points: settings.points, duration: settings.durationSeconds, keyPrefix: settings.keyPrefix });
  if (!settings.connection) throw new Error('The MongoDB rate-limit store needs a connection');
  return new MongoWindowLimiter({
    connection: settings.connection,
    keyPrefix: settings.keyPrefix,
    points: settings.points,
    durationSeconds: settings.durationSeconds,
  });
}

/** Counters kept before the `_id`-addressed windows; dropped once, as nothing reads them. */
const LEGACY_RATE_LIMIT_COLLECTION = 'rate_limits';

export async function ensureRateLimitIndexes(connection: Connection): Promise<void> {
  await ensureRateLimitWindowIndexes(connection);
  await connection.dropCollection(LEGACY_RATE_LIMIT_COLLECTION).catch(() => undefined);
}

/** The tenant limiter's key for a tenant (every authenticated route charges it). */
export function tenantRateLimitKey(tenantId: string): string {
  return `tenant:${tenantId}`;
}

/**
 * Keys this process saw refused, per limiter, with the time their window ends: lets a caller
 * that would start something speculative (an upstream LLM call) skip it for a key that is
 * certain to be refused, without a round trip. Memory only, bounded, never authoritative: the
 * charge itself still decides.
 */
const KNOWN_OVER_LIMIT_MAX = 10_000;
const knownOverLimit = new WeakMap<RateLimiterAbstract, Map<string, number>>();

function rememberOverLimit(limiter: RateLimiterAbstract, key: string, msBeforeNext: number): void {
  let known = knownOverLimit.get(limiter);
  if (!known) knownOverLimit.set(limiter, (known = new Map()));
  known.delete(key);
  known.set(key, Date.now() + msBeforeNext);
  if (known.size > KNOWN_OVER_LIMIT_MAX) known.delete(known.keys().next().value!);
}

/** True while `key` is in a window this process already saw refused. */
export function isKnownOverLimit(limiter: RateLimiterAbstract, key: string): boolean {
  const known = knownOverLimit.get(limiter);
  const until = known?.get(key);
  if (until === undefined) return false;
  if (until > Date.now()) return true;
  known!.delete(key);
  return false;
}

function setHeaders(res: Response, limiter: RateLimiterAbstract, result: RateLimiterRes): void {
  res.setHeader('X-RateLimit-Limit', String(limiter.points));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, result.remainingPoints)));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + result.msBeforeNext) / 1000)));
}

/**
 * What this process last learned of each key's window from its own charges. With ample room left
 * (more than a tenth of the limit, and more than 10, beyond the charges not yet counted) and
 * knowledge under a second old in the current window, a request is admitted at once and its
 * charge joins a batch written within BATCH_MS as one increment; otherwise it waits for the
 * shared count (with any batched charges of the key in the same write). One process never
 * admits past the limit on its own; replicas see each other's charges up to BATCH_MS late and
 * can overshoot only by what they admit within a second while the others spend the last tenth
 * of the budget; a crash loses at most BATCH_MS of uncounted charges (a graceful stop writes
 * them: writeBatchedCharges). The headers of a request admitted this way count from that
 * knowledge, so with several replicas they can show a few more requests left than the shared
 * count; near the limit every request waits and they are exact again.
 */
interface Headroom {
  remaining: number;
  resetAtMs: number;
  learnedAtMs: number;
  /** Charges admitted on this knowledge that the shared count has not seen yet. */
  unconfirmed: number;
  /** Of those, the ones not yet sent (the next batch). */
  batched: number;
}
const HEADROOM_FRESH_MS = 1_000;
const HEADROOM_MAX = 10_000;
/**
 * Half the knowledge's freshness: a key in steady use learns its count again well before what it
 * knows goes stale, and a chat session that sends a message every few hundred milliseconds has
 * one write for several messages instead of one each (100 ms meant a write per message; the
 * shared-counter writes were then a tenth of a turn's CPU, docs/performance.md).
 */
const BATCH_MS = 500;
const headrooms = new WeakMap<RateLimiterAbstract, Map<string, Headroom>>();

function headroomOf(limiter: RateLimiterAbstract, key: string): Headroom {
  let known = headrooms.get(limiter);
  if (!known) headrooms.set(limiter, (known = new Map()));
  let room = known.get(key);
  if (!room) {
    known.set(key, (room = { remaining: 0, resetAtMs: 0, learnedAtMs: 0, unconfirmed: 0, batched: 0 }));
    if (known.size > HEADROOM_MAX) {
      const [oldestKey, oldest] = known.entries().next().value!;
      // Never drop charges that are still to be written.
      if (oldest.unconfirmed === 0) known.delete(oldestKey);
    }
  }
  return room;
}

function learn(room: Headroom, result: RateLimiterRes): void {
  const now = Date.now();
  room.remaining = result.remainingPoints;
  room.resetAtMs = now + result.msBeforeNext;
  room.learnedAtMs = now;
}

function hasRoom(limiter: RateLimiterAbstract, room: Headroom): boolean {
  const now = Date.now();
  const margin = Math.max(10, Math.ceil(limiter.points / 10));
  return now - room.learnedAtMs < HEADROOM_FRESH_MS && room.resetAtMs > now && room.remaining - room.unconfirmed > margin;
}

/** Takes the key's batched charges, to send with a charge being written now. */
function takeBatch(room: Headroom): number {
  const points = room.batched;
  room.batched = 0;
  return points;
}

/** Batches waiting for their timer, so that a graceful stop can write them at once. */
const waitingBatches = new Map<Headroom, { limiter: RateLimiterAbstract; key: string; timer: NodeJS.Timeout }>();
const batchWrites = new Set<Promise<void>>();

function scheduleBatch(limiter: RateLimiterAbstract, key: string, room: Headroom): void {
  // A timer still waiting for this key (its batch emptied by refunds since) writes this one too.
  if (waitingBatches.has(room)) return;
  const timer = setTimeout(() => flushBatch(limiter, key, room), BATCH_MS).unref();
  waitingBatches.set(room, { limiter, key, timer });
}

/** Writes the key's batched charges as one increment (a refusal is only learned: they were admitted). */
function flushBatch(limiter: RateLimiterAbstract, key: string, room: Headroom): void {
  const waiting = waitingBatches.get(room);
  if (waiting) {
    clearTimeout(waiting.timer);
    waitingBatches.delete(room);
  }
  const points = takeBatch(room);
  if (points === 0) return;
  const write: Promise<void> = limiter
    .consume(key, points)
    .then(
      (result) => learn(room, result),
      (rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) return;
        learn(room, rejection);
        rememberOverLimit(limiter, key, Math.max(1, rejection.msBeforeNext));
      },
    )
    .finally(() => {
      room.unconfirmed -= points;
      batchWrites.delete(write);
    });
  batchWrites.add(write);
}

/** Writes every batched charge now and waits for the writes: a graceful stop loses none. */
export async function writeBatchedCharges(): Promise<void> {
  for (const [room, { limiter, key }] of [...waitingBatches]) flushBatch(limiter, key, room);
  await Promise.allSettled([...batchWrites]);
}

/**
 * Hands one charge of `key` back. A charge still waiting in this process's batch is simply taken
 * out of it (no write, and never a refund that reaches the shared count before its charge does,
 * which a window rolling over in between would lose); otherwise the refund is written.
 */
export async function refundRateLimit(limiter: RateLimiterAbstract, key: string): Promise<void> {
  const room = headrooms.get(limiter)?.get(key);
  if (room && room.batched > 0) {
    room.batched--;
    room.unconfirmed--;
    return;
  }
  await limiter.reward(key, 1);
}

function overLimit(limiter: RateLimiterAbstract, key: string, rejection: RateLimiterRes, message: string): ApiError {
  const retryAfterMs = Math.max(1, rejection.msBeforeNext);
  rememberOverLimit(limiter, key, retryAfterMs);
  return new ApiError('RATE_LIMIT_EXCEEDED', {
    message,
    extraBody: { retryAfterMs },
    headers: { 'Retry-After': String(Math.ceil(retryAfterMs / 1000)) },
  });
}

/**
 * Consumes one point for `key`; sets the rate-limit headers, and throws 429
 * RATE_LIMIT_EXCEEDED with `retryAfterMs` when the window is spent. With ample room known (see
 * Headroom) it returns before the shared count answers.
 */
export async function consumeRateLimit(
  limiter: RateLimiterAbstract,
  key: string,
  res: Response,
  message = 'Rate limit exceeded',
): Promise<void> {
  const room = headroomOf(limiter, key);
  if (hasRoom(limiter, room)) {
    room.unconfirmed++;
    if (room.batched++ === 0) scheduleBatch(limiter, key, room);
    res.setHeader('X-RateLimit-Limit', String(limiter.points));
    res.setHeader('X-RateLimit-Remaining', String(Math.max(0, room.remaining - room.unconfirmed)));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil(room.resetAtMs / 1000)));
    return;
  }
  // This charge is judged by the shared count, with any of the key's batched charges before it.
  const earlier = takeBatch(room);
  try {
    const result = await limiter.consume(key, 1 + earlier);
    learn(room, result);
    setHeaders(res, limiter, result);
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) {
      learn(room, rejection);
      setHeaders(res, limiter, rejection);
      throw overLimit(limiter, key, rejection, message);
    }
    // The counter store failed: fail open rather than take the API down with it.
    return;
  } finally {
    room.unconfirmed -= earlier;
  }
}
