// MongoWindowLimiter (api/middleware/mongo-window-store.ts) against the real FerretDB: one
// `_id`-addressed counter per key and clock-aligned window, `$inc` upserts (with the retry of a
// duplicate-key race), refusal from memory once a key is over its limit, the once-a-minute sweep
// of stale windows, and counts shared by limiter instances on one database (API replicas).
// Charges of one key in one process count exactly (they are coalesced); across processes FerretDB
// can still lose concurrent increments (its updates are not atomic; MongoDB's are).
import { randomBytes } from 'node:crypto';
import { type Connection } from 'mongoose';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { connectMongo } from '../../db/connection';
import { MongoWindowLimiter, RATE_LIMIT_WINDOWS_COLLECTION } from '../../api/middleware/mongo-window-store';
import { ensureRateLimitIndexes } from '../../api/middleware/rate-limit';

interface WindowDoc {
  _id: string;
  points: number;
  expire: Date;
}

let connection: Connection;
let replicaConnection: Connection;
const uri = () => `${process.env.SB_TEST_MONGODB_URI!.replace(/\/$/, '')}/rlw_${randomBytes(5).toString('hex')}`;

beforeAll(async () => {
  const dbUri = uri();
  connection = await connectMongo(dbUri);
  // A second connection to the same database: another API process.
  replicaConnection = await connectMongo(dbUri);
});
afterAll(async () => {
  await connection.close();
  await replicaConnection.close();
});

/** The URI of a connection's database, to open another connection to it (another process). */
const uriOf = (c: Connection) => `${process.env.SB_TEST_MONGODB_URI!.replace(/\/$/, '')}/${c.name}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const windows = () => connection.collection<WindowDoc>(RATE_LIMIT_WINDOWS_COLLECTION);
const unique = (name: string) => `${name}-${randomBytes(4).toString('hex')}`;

function limiter(options: { prefix: string; points: number; durationSeconds: number; on?: Connection }) {
  return new MongoWindowLimiter({ connection: options.on ?? connection, keyPrefix: options.prefix, points: options.points, durationSeconds: options.durationSeconds });
}

/** Waits for the next clock-aligned window when fewer than `needMs` are left in this one. */
async function freshWindow(durationMs: number, needMs: number): Promise<void> {
  const left = durationMs - (Date.now() % durationMs);
  if (left < needMs) await sleep(left + 20);
}

/** The outcome of a charge: the RateLimiterRes it resolved or was refused with (anything else throws). */
async function charge(l: MongoWindowLimiter, key: string, points = 1): Promise<{ allowed: boolean; res: RateLimiterRes }> {
  try {
    return { allowed: true, res: await l.consume(key, points) };
  } catch (err) {
    if (err instanceof RateLimiterRes) return { allowed: false, res: err };
    throw err;
  }
}

const docsOf = (prefix: string, key: string) =>
  windows()
    .find({ _id: { $regex: `^${prefix}:${key}@` } })
    .toArray();

it('drops the legacy rate_limits collection and can run again', async () => {
  await connection.collection('rate_limits').insertOne({ key: 'rl:tenant:x', points: 3, expire: new Date() });
  await ensureRateLimitIndexes(connection);
  const names = (await connection.db!.listCollections().toArray()).map((c) => c.name);
  expect(names).not.toContain('rate_limits');
  await expect(ensureRateLimitIndexes(connection)).resolves.toBeUndefined();
});

it('answers many concurrent first charges of one key without errors (the duplicate-key race is retried)', async () => {
  const prefix = unique('burst');
  const l = limiter({ prefix, points: 1000, durationSeconds: 3600 });
  await freshWindow(3_600_000, 30_000);
  const results = await Promise.all(Array.from({ length: 60 }, () => charge(l, 'k')));
  expect(results.every((r) => r.allowed)).toBe(true);
  expect(results.filter((r) => r.res.isFirstInDuration).length).toBeGreaterThanOrEqual(1);
  for (const { res } of results) expect(res.remainingPoints).toBe(1000 - res.consumedPoints);
  // One counter document for the key and window, however many raced to create it.
  expect(await docsOf(prefix, 'k')).toHaveLength(1);
});

// FerretDB 1.24 (SQLite) reads, modifies and writes a document without isolation, so concurrent
// `$inc`s of one document lose increments (60 charges stored ~37 before charges were coalesced).
// The limiter sends the charges that queue behind one in flight as a single `$inc`.
it('counts many concurrent charges of one key exactly (no lost increments)', async () => {
  const prefix = unique('exact');
  const l = limiter({ prefix, points: 1000, durationSeconds: 3600 });
  await freshWindow(3_600_000, 30_000);
  const N = 60;
  const results = await Promise.all(Array.from({ length: N }, () => charge(l, 'k')));
  expect(results.every((r) => r.allowed)).toBe(true);
  // Every charge saw its own count: nothing was lost or counted twice.
  expect(results.map((r) => r.res.consumedPoints).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
  expect(results.filter((r) => r.res.isFirstInDuration)).toHaveLength(1);
  const docs = await docsOf(prefix, 'k');
  expect(docs).toHaveLength(1);
  expect(docs[0]!.points).toBe(N);
});

it('reports remaining points and the time to the end of the clock-aligned window', async () => {
  const prefix = unique('remaining');
  const l = limiter({ prefix, points: 5, durationSeconds: 60 });
  await freshWindow(60_000, 3_000);
  const windowEnd = Math.ceil(Date.now() / 60_000) * 60_000;
  const first = await charge(l, 'k');
  expect(first.allowed).toBe(true);
  expect(first.res).toMatchObject({ remainingPoints: 4, consumedPoints: 1, isFirstInDuration: true });
  expect(Math.abs(first.res.msBeforeNext - (windowEnd - Date.now()))).toBeLessThan(1000);
  for (let i = 2; i <= 5; i++) expect((await charge(l, 'k')).res).toMatchObject({ remainingPoints: 5 - i, consumedPoints: i, isFirstInDuration: false });
  const refused = await charge(l, 'k');
  expect(refused.allowed).toBe(false);
  expect(refused.res.remainingPoints).toBe(0);
  expect(refused.res.msBeforeNext).toBeGreaterThan(0);
  expect(refused.res.msBeforeNext).toBeLessThanOrEqual(windowEnd - Date.now() + 50);

  // The counter is one document per key and window: `<prefix>:<key>@<window start>`, expiring at its end.
  const docs = await docsOf(prefix, 'k');
  expect(docs).toEqual([{ _id: `${prefix}:k@${windowEnd - 60_000}`, points: 6, expire: new Date(windowEnd) }]);
  // Other keys have their own budget.
  expect((await charge(l, 'other')).res.consumedPoints).toBe(1);
});

it('rolls over to a fresh budget when a 1-second window ends', async () => {
  const prefix = unique('roll');
  const l = limiter({ prefix, points: 2, durationSeconds: 1 });
  await freshWindow(1000, 600);
  expect((await charge(l, 'k')).allowed).toBe(true);
  expect((await charge(l, 'k')).allowed).toBe(true);
  const refused = await charge(l, 'k');
  expect(refused.allowed).toBe(false);
  expect(refused.res.msBeforeNext).toBeLessThanOrEqual(1000);
  await sleep(refused.res.msBeforeNext + 30);

  const next = await charge(l, 'k');
  expect(next.allowed).toBe(true);
  expect(next.res).toMatchObject({ consumedPoints: 1, remainingPoints: 1, isFirstInDuration: true });
  const docs = (await docsOf(prefix, 'k')).sort((a, b) => a.expire.getTime() - b.expire.getTime());
  expect(docs.map((d) => d.points)).toEqual([3, 1]);
  const starts = docs.map((d) => Number(d._id.split('@')[1]));
  expect(starts[0]! % 1000).toBe(0);
  expect(starts[1]! - starts[0]!).toBe(1000);
  expect(docs.map((d) => d.expire.getTime())).toEqual(starts.map((s) => s + 1000));
});

it('refuses a key over its limit from memory until its window ends, without touching the database', async () => {
  const prefix = unique('memory');
  const l = limiter({ prefix, points: 2, durationSeconds: 1 });
  await freshWindow(1000, 700);
  await charge(l, 'k');
  await charge(l, 'k');
  const refused = await charge(l, 'k');
  expect(refused.allowed).toBe(false);
  const [doc] = await docsOf(prefix, 'k');
  expect(doc!.points).toBe(3);

  // With its counter gone, a database-backed check would allow the key again; memory does not.
  await windows().deleteOne({ _id: doc!._id });
  for (let i = 0; i < 10; i++) {
    const again = await charge(l, 'k');
    expect(again.allowed).toBe(false);
    expect(again.res.msBeforeNext).toBeGreaterThan(0);
    expect(again.res.msBeforeNext).toBeLessThanOrEqual(doc!.expire.getTime() - Date.now() + 50);
  }
  expect(await docsOf(prefix, 'k')).toEqual([]);

  // Once the window ends, the key is charged in the database again.
  await sleep(Math.max(0, doc!.expire.getTime() - Date.now()) + 30);
  const next = await charge(l, 'k');
  expect(next.allowed).toBe(true);
  expect(next.res.consumedPoints).toBe(1);
  expect(await docsOf(prefix, 'k')).toHaveLength(1);
});

it('reads and deletes a key; delete also lifts a refusal held in memory', async () => {
  const prefix = unique('getdel');
  const l = limiter({ prefix, points: 3, durationSeconds: 60 });
  await freshWindow(60_000, 3_000);
  expect(await l.get('k')).toBeNull();
  await charge(l, 'k');
  await charge(l, 'k');
  const read = await l.get('k');
  expect(read).toMatchObject({ consumedPoints: 2, remainingPoints: 1 });
  expect(read!.msBeforeNext).toBeGreaterThan(0);
  expect(read!.msBeforeNext).toBeLessThanOrEqual(60_000);
  // get charges nothing.
  expect((await l.get('k'))!.consumedPoints).toBe(2);

  await charge(l, 'k');
  expect((await charge(l, 'k')).allowed).toBe(false);
  expect(await l.delete('k')).toBe(true);
  expect(await l.get('k')).toBeNull();
  expect(await docsOf(prefix, 'k')).toEqual([]);
  expect(await l.delete('k')).toBe(false);
  const after = await charge(l, 'k');
  expect(after.allowed).toBe(true);
  expect(after.res.consumedPoints).toBe(1);
});

it('refunds into the window the charge was made in, never into a later one', async () => {
  const prefix = unique('late-refund');
  const l = limiter({ prefix, points: 3, durationSeconds: 1 });
  await freshWindow(1000, 600);
  await charge(l, 'k');
  await sleep(1000 - (Date.now() % 1000) + 20);
  await l.reward('k', 1);
  expect(await l.get('k')).toBeNull();
  expect((await charge(l, 'k')).res.remainingPoints).toBe(2);
});

it('refuses block() and set() with a duration other than its window', async () => {
  const l = limiter({ prefix: unique('block'), points: 3, durationSeconds: 60 });
  await expect(l.block('k', 5)).rejects.toThrow(/not supported/);
});

it('gives points back with reward in the current window', async () => {
  const prefix = unique('reward');
  const l = limiter({ prefix, points: 3, durationSeconds: 60 });
  await freshWindow(60_000, 3_000);
  await charge(l, 'k');
  await charge(l, 'k');
  await l.reward('k', 1);
  expect((await l.get('k'))!.consumedPoints).toBe(1);
  expect((await charge(l, 'k')).res.remainingPoints).toBe(1);
});

it('counts exactly when refunds are not awaited and charges follow them at once', async () => {
  // What a refused chat message does: its refund is sent without waiting, and the next message's
  // charge is on its way right after. On FerretDB the two writes would lose one increment unless
  // they are sent one after the other.
  const prefix = unique('refund-race');
  const l = limiter({ prefix, points: 100, durationSeconds: 60 });
  await freshWindow(60_000, 5_000);
  await charge(l, 'k');
  const refunds: Promise<unknown>[] = [];
  for (let i = 0; i < 20; i++) {
    await charge(l, 'k');
    refunds.push(l.reward('k', 1));
  }
  await Promise.all(refunds);
  expect((await l.get('k'))!.consumedPoints).toBe(1);
});

it('sweeps windows that ended over a minute ago on the first charge, then not again within the minute', async () => {
  // Sweeps are once a minute per connection (a process's limiters share one): fresh connections
  // play processes that have not swept yet.
  const processA = await connectMongo(uriOf(connection));
  const processB = await connectMongo(uriOf(connection));
  const now = Date.now();
  const stale = unique('stale');
  await windows().insertMany([
    { _id: `${stale}:a@0`, points: 4, expire: new Date(now - 5 * 60_000) },
    { _id: `${stale}:b@0`, points: 4, expire: new Date(now - 61_000) },
    // Ended, but less than a minute ago: kept by design.
    { _id: `${stale}:recent@0`, points: 4, expire: new Date(now - 10_000) },
    { _id: `${stale}:live@0`, points: 4, expire: new Date(now + 60_000) },
  ]);
  const l = limiter({ prefix: unique('sweeper'), points: 10, durationSeconds: 60, on: processA });
  await charge(l, 'k');
  const ids = async () =>
    (await windows().find({ _id: { $regex: `^${stale}:` } }).toArray()).map((d) => d._id).sort();
  const deadline = Date.now() + 5000;
  while ((await ids()).length > 2 && Date.now() < deadline) await sleep(50);
  expect(await ids()).toEqual([`${stale}:live@0`, `${stale}:recent@0`]);

  // A window gone stale since: this limiter swept less than a minute ago, so it stays.
  await windows().insertOne({ _id: `${stale}:c@0`, points: 4, expire: new Date(Date.now() - 5 * 60_000) });
  await charge(l, 'k');
  await charge(l, 'k');
  await sleep(300);
  expect(await ids()).toContain(`${stale}:c@0`);
  // Another limiter of the same process does not sweep again either.
  await charge(limiter({ prefix: unique('sweeper'), points: 10, durationSeconds: 60, on: processA }), 'k');
  await sleep(300);
  expect(await ids()).toContain(`${stale}:c@0`);
  // Another process sweeps on its first charge.
  await charge(limiter({ prefix: unique('sweeper'), points: 10, durationSeconds: 60, on: processB }), 'k');
  const deadline2 = Date.now() + 5000;
  while ((await ids()).includes(`${stale}:c@0`) && Date.now() < deadline2) await sleep(50);
  expect(await ids()).not.toContain(`${stale}:c@0`);
  await processA.close();
  await processB.close();
});

it('shares counts between limiter instances on one connection and across connections (API replicas)', async () => {
  const prefix = unique('shared');
  const options = { prefix, points: 4, durationSeconds: 60 };
  const a = limiter(options);
  const b = limiter(options);
  const c = limiter({ ...options, on: replicaConnection });
  await freshWindow(60_000, 3_000);
  expect((await charge(a, 'k')).res.consumedPoints).toBe(1);
  expect((await charge(b, 'k')).res.consumedPoints).toBe(2);
  expect((await charge(c, 'k')).res.consumedPoints).toBe(3);
  expect((await b.get('k'))!.consumedPoints).toBe(3);
  expect((await c.get('k'))!.remainingPoints).toBe(1);
  expect((await charge(a, 'k')).allowed).toBe(true);
  // The budget is spent for every replica, including ones that never saw a refusal.
  const refusedB = await charge(b, 'k');
  expect(refusedB.allowed).toBe(false);
  expect(refusedB.res.consumedPoints).toBe(5);
  const refusedC = await charge(c, 'k');
  expect(refusedC.allowed).toBe(false);
  expect(refusedC.res.consumedPoints).toBe(6);
  expect((await charge(a, 'k')).allowed).toBe(false);
});
