// Shared by the API (request limits) and the worker (tool `rate_limit`).
// Rate-limit counters in MongoDB, one document per key and fixed window, addressed by `_id`
// alone (`<prefix:key>@<window start ms>`): one `$inc` upsert per charge. FerretDB answers a lone
// `_id` equality from its primary key and scans the collection for anything else, so the
// counters stay O(1) however many sessions have ever been limited. Windows are aligned to the
// clock (every replica agrees on them). MongoDB drops old windows through a TTL index; stores
// without TTL indexes get a sweep at most once a minute per process.
// Charges and refunds of one window that arrive while another is in flight go out together as one
// `$inc` of their sum, each learning its own count: fewer writes under load, and exact counts
// within a process on FerretDB, whose updates are not atomic (concurrent `$inc`s of one document
// lose increments there; MongoDB's `$inc` is atomic, so replicas count exactly on it).
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

interface Waiter {
  points: number;
  resolve: (doc: WindowDoc) => void;
  reject: (err: unknown) => void;
}

/** Per window id: whether a charge is in flight, and the charges waiting for it to return. */
const pendingCharges = new Map<string, Waiter[]>();
const lastSweepOf = new WeakMap<object, number>();

export class MongoWindowLimiter extends RateLimiterStoreAbstract {
  private readonly windows: mongo.Collection<WindowDoc>;

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

  private window(rlKey: string, now = Date.now()) {
    const msDuration = this.duration * 1000;
    const start = Math.floor(now / msDuration) * msDuration;
    return { id: `${rlKey}@${start}`, expire: new Date(start + msDuration) };
  }

  /** At most once a minute per connection: the limiters on one connection share its collection object. */
  private sweep(now: number): void {
    if (now - (lastSweepOf.get(this.windows) ?? 0) < SWEEP_EVERY_MS) return;
    lastSweepOf.set(this.windows, now);
    this.windows.deleteMany({ expire: { $lt: new Date(now - SWEEP_EVERY_MS) } }).catch(() => undefined);
  }

  private async increment(id: string, points: number, expire: Date): Promise<WindowDoc> {
    if (points <= 0) {
      // A refund goes to the window it is made in; a window that has ended (or never held a
      // charge) is not created for it.
      const doc = await this.windows.findOneAndUpdate({ _id: id }, { $inc: { points } }, { returnDocument: 'after', includeResultMetadata: false });
      return doc ?? { _id: id, points: 0, expire };
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const doc = await this.windows.findOneAndUpdate(
          { _id: id },
          { $inc: { points }, $setOnInsert: { expire } },
          { upsert: true, returnDocument: 'after', includeResultMetadata: false },
        );
        if (doc) return doc;
        throw new Error(`rate-limit window ${id} was not returned`);
      } catch (err) {
        // Two first charges of a window raced to insert it: the loser retries as an update.
        if ((err as { code?: number }).code !== 11000 || attempt > 0) throw err;
      }
    }
  }

  /** Sends the charges that queued behind the one in flight, as one increment. */
  private drain(id: string, expire: Date): void {
    const waiting = pendingCharges.get(id)!;
    if (waiting.length === 0) {
      pendingCharges.delete(id);
      return;
    }
    pendingCharges.set(id, []);
    const sum = waiting.reduce((total, w) => total + w.points, 0);
    this.increment(id, sum, expire).then(
      (doc) => {
        let seen = doc.points - sum;
        for (const w of waiting) w.resolve({ ...doc, points: (seen += w.points) });
      },
      (err: unknown) => waiting.forEach((w) => w.reject(err)),
    ).finally(() => this.drain(id, expire));
  }

  // The store hooks rate-limiter-flexible calls; its types do not declare them.
  async _upsert(rlKey: string, points: number, msDuration: number, forceExpire = false): Promise<WindowDoc> {
    if (msDuration !== this.duration * 1000) {
      throw new Error('MongoWindowLimiter counts in its own windows only: block() and set() with another duration are not supported');
    }
    const now = Date.now();
    this.sweep(now);
    const { id, expire } = this.window(rlKey, now);
    if (forceExpire) {
      const doc = await this.windows.findOneAndUpdate({ _id: id }, { $set: { points, expire } }, { upsert: true, returnDocument: 'after', includeResultMetadata: false });
      return doc ?? { _id: id, points, expire };
    }
    const waiting = pendingCharges.get(id);
    if (waiting) return new Promise<WindowDoc>((resolve, reject) => waiting.push({ points, resolve, reject }));
    pendingCharges.set(id, []);
    try {
      return await this.increment(id, points, expire);
    } finally {
      this.drain(id, expire);
    }
  }

  async _get(rlKey: string): Promise<WindowDoc | null> {
    return this.windows.findOne({ _id: this.window(rlKey).id });
  }

  async _delete(rlKey: string): Promise<boolean> {
    const result = await this.windows.deleteOne({ _id: this.window(rlKey).id });
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
