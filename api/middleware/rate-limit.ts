// Per-tenant request-rate limiting with shared counters (MongoDB by default, so every API
// replica sees the same numbers; memory only as an explicit single-node option).
import { type Response } from 'express';
import { type Connection } from 'mongoose';
import {
  RateLimiterMemory,
  RateLimiterMongo,
  RateLimiterRes,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { ApiError } from '../../lib/errors';

export interface RateLimiterSettings {
  store: 'mongo' | 'memory';
  points: number;
  durationSeconds: number;
  keyPrefix: string;
  connection?: Connection;
}

export function createRateLimiter(settings: RateLimiterSettings): RateLimiterAbstract {
  const base = { points: settings.points, duration: settings.durationSeconds, keyPrefix: settings.keyPrefix };
  if (settings.store === 'memory') return new RateLimiterMemory(base);
  if (!settings.connection) throw new Error('RateLimiterMongo needs a MongoDB connection');
  return new RateLimiterMongo({
    ...base,
    storeClient: settings.connection,
    tableName: RATE_LIMIT_COLLECTION,
    // Created by ensureRateLimitIndexes, which tolerates stores without TTL indexes.
    disableIndexesCreation: true,
  });
}

export const RATE_LIMIT_COLLECTION = 'rate_limits';

/**
 * The counters' indexes: a unique key (needed for correct upserts under concurrency) and a TTL
 * on `expire` so MongoDB drops stale windows. FerretDB has no TTL indexes; there expired
 * counters are reused in place (one document per tenant), so nothing grows without bound.
 */
export async function ensureRateLimitIndexes(connection: Connection): Promise<void> {
  const collection = connection.collection(RATE_LIMIT_COLLECTION);
  await collection.createIndex({ key: 1 }, { unique: true });
  try {
    await collection.createIndex({ expire: -1 }, { expireAfterSeconds: 0 });
  } catch (err) {
    if ((err as { code?: number }).code !== 238 /* NotImplemented */) throw err;
  }
}

function setHeaders(res: Response, limiter: RateLimiterAbstract, result: RateLimiterRes): void {
  res.setHeader('X-RateLimit-Limit', String(limiter.points));
  res.setHeader('X-RateLimit-Remaining', String(Math.max(0, result.remainingPoints)));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + result.msBeforeNext) / 1000)));
}

/**
 * Consumes one point for `key`; sets the rate-limit headers, and throws 429
 * RATE_LIMIT_EXCEEDED with `retryAfterMs` when the window is spent.
 */
export async function consumeRateLimit(
  limiter: RateLimiterAbstract,
  key: string,
  res: Response,
  message = 'Rate limit exceeded',
): Promise<void> {
  try {
    const result = await limiter.consume(key, 1);
    setHeaders(res, limiter, result);
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) {
      setHeaders(res, limiter, rejection);
      const retryAfterMs = Math.max(1, rejection.msBeforeNext);
      throw new ApiError('RATE_LIMIT_EXCEEDED', {
        message,
        extraBody: { retryAfterMs },
        headers: { 'Retry-After': String(Math.ceil(retryAfterMs / 1000)) },
      });
    }
    // The counter store failed: fail open rather than take the API down with it.
    return;
  }
}
