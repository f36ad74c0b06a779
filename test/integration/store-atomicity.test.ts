// The dev store makes each single-document write atomic, as MongoDB does: a conditional update has
// exactly one winner, $inc loses no increment and an upsert on a unique key makes one document,
// however many clients race. The platform's claims, counters and bounded queues rely on it.
import mongoose from 'mongoose';

jest.setTimeout(120_000);

const RACERS = 100;
let connection: mongoose.Connection;
let db: mongoose.mongo.Db;

beforeAll(async () => {
  // A pool as wide as the race, so the writes really run side by side in the store.
  connection = await mongoose.createConnection(process.env.SB_TEST_MONGODB_URI!, { maxPoolSize: RACERS }).asPromise();
  db = connection.getClient().db(`atomicity_${process.pid}`);
});

afterAll(async () => {
  await db.dropDatabase();
  await connection.close();
});

/** Runs `write` RACERS times at once, each on its own pooled connection. */
function race<T>(write: (i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: RACERS }, (_, i) => write(i)));
}

describe('single-document writes under concurrency', () => {
  it('gives a conditional findOneAndUpdate exactly one winner', async () => {
    const claims = db.collection<{ _id: string; status: string; by?: number }>('claims');
    for (let round = 0; round < 5; round++) {
      const _id = `claim_${round}`;
      await claims.insertOne({ _id, status: 'pending' });
      const results = await race((i) =>
        claims.findOneAndUpdate({ _id, status: 'pending' }, { $set: { status: 'claimed', by: i } }, { returnDocument: 'after' }),
      );
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(await claims.findOne({ _id })).toEqual(winners[0]);
    }
  });

  it('gives a conditional updateOne exactly one modified count', async () => {
    const slots = db.collection<{ _id: string; holder: number | null }>('slots');
    await slots.insertOne({ _id: 'slot', holder: null });
    const results = await race((i) => slots.updateOne({ _id: 'slot', holder: null }, { $set: { holder: i } }));
    expect(results.reduce((sum, r) => sum + r.modifiedCount, 0)).toBe(1);
  });

  it('loses no $inc', async () => {
    const counters = db.collection<{ _id: string; n: number }>('counters');
    await counters.insertOne({ _id: 'hits', n: 0 });
    await race(() => counters.updateOne({ _id: 'hits' }, { $inc: { n: 1 } }));
    expect((await counters.findOne({ _id: 'hits' }))?.n).toBe(RACERS);
  });

  it('admits no more than a bound through a filtered $inc', async () => {
    const bounded = db.collection<{ _id: string; active: number }>('bounded');
    await bounded.insertOne({ _id: 'session', active: 0 });
    const results = await race(() => bounded.updateOne({ _id: 'session', active: { $lt: 5 } }, { $inc: { active: 1 } }));
    expect(results.filter((r) => r.modifiedCount === 1)).toHaveLength(5);
    expect((await bounded.findOne({ _id: 'session' }))?.active).toBe(5);
  });

  it('makes one document from racing upserts on a unique key', async () => {
    const windows = db.collection<{ key: string; count: number }>('windows');
    await windows.createIndex({ key: 1 }, { unique: true });
    const results = await Promise.allSettled(
      Array.from({ length: RACERS }, () => windows.updateOne({ key: 'k' }, { $inc: { count: 1 } }, { upsert: true })),
    );
    const applied = results.filter((r) => r.status === 'fulfilled').length;
    expect(await windows.countDocuments({ key: 'k' })).toBe(1);
    // MongoDB too may refuse a racing upsert with a duplicate key error; none that succeeded is lost.
    expect((await windows.findOne({ key: 'k' }))?.count).toBe(applied);
  });

  it('orders a write by _id against a write by any other filter on the same document', async () => {
    const claims = db.collection<{ _id: string; status: string; kind: string }>('mixed_claims');
    await claims.insertOne({ _id: 'mixed', status: 'pending', kind: 'c' });
    const results = await race((i) =>
      i % 2
        ? claims.updateOne({ _id: 'mixed', status: 'pending' }, { $set: { status: `claimed-${i}` } })
        : claims.updateMany({ kind: 'c', status: 'pending' }, { $set: { status: `swept-${i}` } }),
    );
    expect(results.reduce((sum, r) => sum + r.modifiedCount, 0)).toBe(1);
  });

  it('loses no $inc when writes by _id and by another filter race on one document', async () => {
    const counters = db.collection<{ _id: string; n: number; kind: string }>('mixed_counters');
    await counters.insertOne({ _id: 'mixed', n: 0, kind: 'c' });
    await race((i) => (i % 2 ? counters.updateOne({ _id: 'mixed' }, { $inc: { n: 1 } }) : counters.updateMany({ kind: 'c' }, { $inc: { n: 1 } })));
    expect((await counters.findOne({ _id: 'mixed' }))?.n).toBe(RACERS);
  });

  it('keeps each document of a collection to its own count when writes on many documents race', async () => {
    const counters = db.collection<{ _id: string; n: number }>('many_counters');
    await counters.insertMany(Array.from({ length: 10 }, (_, d) => ({ _id: `doc_${d}`, n: 0 })));
    await race((i) => counters.findOneAndUpdate({ _id: `doc_${i % 10}` }, { $inc: { n: 1 } }));
    expect((await counters.find().sort({ _id: 1 }).toArray()).map((d) => d.n)).toEqual(Array(10).fill(RACERS / 10));
  });

  it('deletes a document for one of many racing findOneAndDelete calls', async () => {
    const queue = db.collection<{ _id: string }>('queue');
    await queue.insertOne({ _id: 'job' });
    const results = await race(() => queue.findOneAndDelete({ _id: 'job' }));
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });
});
