// Rate-limit counters in MongoDB, one document per key and fixed window, addressed by `_id`
// alone (`<prefix:key>@<window start ms>`): one atomic `$inc` upsert per charge. FerretDB answers
// a lone `_id` equality from its primary key and scans the collection for anything else, so
// the counters stay O(1) however many sessions have ever been limited. Windows are aligned to
// the clock (every replica agrees on them). MongoDB drops old windows through a TTL index;
// stores without TTL indexes get a sweep at most once a minute per process.
import { type Connection, type mongo } from 'mongoose';
import { RateLimiterRes, type RateLimiterStoreAbstract as StoreAbstractType } from 'rate-limiter-flexible';

// The package types export the store base class, but its entry point does not: load it from lib.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const RateLimiterStoreAbstract = require('rate-limiter-flexible/lib/RateLimiterStoreAbstract') as typeof StoreAbstractType;

export const RATE_LIMIT_WINDOWS_COLLECTION = 'rate_limit_windows';
const SWEEP_EVERY_MS = 60_000;

interface WindowDoc {
  _id: string;
  points: number;
  expire: Date;
}

export interface MongoWindowLimiterOptions {
  connection: Connection;
  keyPrefix: string;
  points: number;
  durationSeconds: number;
}

/** Creates the TTL index; stores without TTL indexes (FerretDB) rely on the sweep instead. */
export async function ensureRateLimitWindowIndexes(connection: Connection): Promise<void> {
  try {
    await connection.collection(RATE_LIMIT_WINDOWS_COLLECTION).createIndex({ expire: 1 }, { expireAfterSeconds: 0 });
  } catch (err) {
    if ((err as { code?: number }).code !== 238 /* NotImplemented */) throw err;
  }
}

export class MongoWindowLimiter extends RateLimiterStoreAbstract {
  private readonly windows: mongo.Collection<WindowDoc>;
  private lastSweep = 0;

  constructor(options: MongoWindowLimiterOptions) {
    super({
      storeClient: options.connection,
      keyPrefix: options.keyPrefix,
      points: options.points,
      duration: options.durationSeconds,
      // Once a key is over its limit, this process rejects it from memory until its window
      // ends: a client hammering past its limit costs no database work.
      inMemoryBlockOnConsumed: options.points + 1,
    });
    this.windows = options.connection.collection<WindowDoc>(RATE_LIMIT_WINDOWS_COLLECTION) as unknown as mongo.Collection<WindowDoc>;
  }

  private window(rlKey: string, msDuration: number, now = Date.now()) {
    const start = Math.floor(now / msDuration) * msDuration;
    return { id: `${rlKey}@${start}`, expire: new Date(start + msDuration) };
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    this.windows.deleteMany({ expire: { $lt: new Date(now - SWEEP_EVERY_MS) } }).catch(() => undefined);
  }

  // The store hooks rate-limiter-flexible calls; its types do not declare them.
  async _upsert(rlKey: string, points: number, msDuration: number, forceExpire = false): Promise<WindowDoc> {
    const now = Date.now();
    this.sweep(now);
    const { id, expire } = this.window(rlKey, msDuration, now);
    const update = forceExpire ? { $set: { points, expire } } : { $inc: { points }, $setOnInsert: { expire } };
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await this.windows.findOneAndUpdate({ _id: id }, update, { upsert: true, returnDocument: 'after', includeResultMetadata: false });
        if (doc) return doc;
      } catch (err) {
        // Two first charges of a window raced to insert it: the loser retries as an update.
        if ((err as { code?: number }).code !== 11000 || attempt > 0) throw err;
        continue;
      }
      throw new Error(`rate-limit window ${id} was not returned`);
    }
  }

  async _get(rlKey: string): Promise<WindowDoc | null> {
    return this.windows.findOne({ _id: this.window(rlKey, this.duration * 1000).id });
  }

  async _delete(rlKey: string): Promise<boolean> {
    const result = await this.windows.deleteOne({ _id: this.window(rlKey, this.duration * 1000).id });
    return result.deletedCount > 0;
  }

  _getRateLimiterRes(_rlKey: string, changedPoints: number, doc: WindowDoc): RateLimiterRes {
    const consumed = doc.points;
    return new RateLimiterRes(
      Math.max(this.points - consumed, 0),
      Math.max(new Date(doc.expire).getTime() - Date.now(), 0),
      consumed,
      consumed === changedPoints,
    );
  }
}
