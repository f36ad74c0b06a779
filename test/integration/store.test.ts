// The dev store: FerretDB on the embedded PostgreSQL keeps its data in its directory and leaves
// no server behind; a data directory from the SQLite store is copied over once, whole, and kept.
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mongoose from 'mongoose';
import { LEGACY_COPIED_DIR, LEGACY_DIR, startDevStore, STORE_DIR } from '../../infra/dev-store';
import { startFerretDb, type FerretDb } from '../../infra/processes';

// Stores start and stop several times per test.
jest.setTimeout(180_000);

const { BSON } = mongoose.mongo;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-store-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function withDb<T>(store: FerretDb, name: string, use: (db: mongoose.mongo.Db) => Promise<T>): Promise<T> {
  const connection = await mongoose.createConnection(store.uri).asPromise();
  try {
    return await use(connection.getClient().db(name));
  } finally {
    await connection.close();
  }
}

/** Every document of every collection of a database, in _id order, as canonical Extended JSON. */
async function dump(store: FerretDb, name: string): Promise<Record<string, string>> {
  return withDb(store, name, async (db) => {
    const out: Record<string, string> = {};
    for (const { name: collection } of await db.listCollections({}, { nameOnly: true }).toArray()) {
      const docs = await db.collection(collection).find({}, { promoteValues: false }).sort({ _id: 1 }).toArray();
      out[collection] = BSON.EJSON.stringify(docs, { relaxed: false });
    }
    return out;
  });
}

function isRunning(pid: number | undefined): boolean {
  try {
    process.kill(pid!, 0);
    return true;
  } catch {
    return false;
  }
}

/** A data directory holding a SQLite store (ferretdb/) with documents of many BSON types, a unique index and two databases. */
async function sqliteStore(dataDir: string): Promise<{ app: Record<string, string>; other: Record<string, string> }> {
  const old = await startFerretDb({ dataDir: path.join(dataDir, LEGACY_DIR), port: 0, sqlite: true });
  try {
    await withDb(old, 'switchboard', async (db) => {
      await db.collection('tenants').createIndex({ slug: 1 }, { unique: true, name: 'slug_unique' });
      // More than one insert batch of the copy.
      await db.collection('tenants').insertMany(
        Array.from({ length: 1234 }, (_, i) => ({
          _id: `tenant_${String(i).padStart(5, '0')}` as never,
          slug: `t${i}`,
          count: BSON.Long.fromNumber(2 ** 40 + i),
          small: new BSON.Int32(i),
          ratio: new BSON.Double(i + 0.5),
          at: new Date(1_700_000_000_000 + i),
          nested: { tags: ['a', 'b'], empty: null, flag: i % 2 === 0 },
        })),
      );
      await db.collection('sessions').insertOne({ _id: new BSON.ObjectId(), turns: [{ role: 'user', text: 'héllo ✓' }] });
    });
    await withDb(old, 'other', (db) => db.collection('things').insertOne({ _id: 'x' as never, v: 1 }));
    return { app: await dump(old, 'switchboard'), other: await dump(old, 'other') };
  } finally {
    await old.process.stop();
  }
}

describe('the dev store', () => {
  it('copies a SQLite store into PostgreSQL once, whole, keeps the old files renamed, and leaves no server behind', async () => {
    const dataDir = path.join(tmp, 'legacy');
    const before = await sqliteStore(dataDir);
    const messages: string[] = [];
    const log = (msg: string) => messages.push(msg);

    const store = await startDevStore({ dataDir, port: 0, postgresPort: 0, log });
    const pid = store.postgres?.pid;
    try {
      expect(await dump(store, 'switchboard')).toEqual(before.app);
      expect(await dump(store, 'other')).toEqual(before.other);
      await withDb(store, 'switchboard', async (db) => {
        expect(await db.collection('tenants').indexes()).toEqual(
          expect.arrayContaining([expect.objectContaining({ name: 'slug_unique', key: { slug: 1 }, unique: true })]),
        );
        await expect(db.collection('tenants').insertOne({ slug: 't7' })).rejects.toMatchObject({ code: 11000 });
      });
    } finally {
      await store.process.stop();
    }
    expect(isRunning(pid)).toBe(false);
    expect(messages.join('\n')).toContain('copied 1236 documents in 3 collections of 2 databases');
    expect(existsSync(path.join(dataDir, LEGACY_DIR))).toBe(false);
    expect(readdirSync(path.join(dataDir, LEGACY_COPIED_DIR))).toEqual(expect.arrayContaining(['switchboard.sqlite', 'other.sqlite']));

    // The next start finds nothing to copy and the data where it was.
    messages.length = 0;
    const again = await startDevStore({ dataDir, port: 0, postgresPort: 0, log });
    try {
      expect(await dump(again, 'switchboard')).toEqual(before.app);
    } finally {
      await again.process.stop();
    }
    expect(messages).toEqual([]);
  });

  it('leaves old SQLite files alone when the PostgreSQL store already holds data', async () => {
    const dataDir = path.join(tmp, 'in-use');
    const first = await startDevStore({ dataDir, port: 0, postgresPort: 0, log: () => {} });
    await withDb(first, 'switchboard', (db) => db.collection('tenants').insertOne({ _id: 'current' as never }));
    await first.process.stop();
    await sqliteStore(dataDir);

    const messages: string[] = [];
    const store = await startDevStore({ dataDir, port: 0, postgresPort: 0, log: (msg) => messages.push(msg) });
    try {
      const ids = await withDb(store, 'switchboard', (db) => db.collection('tenants').distinct('_id'));
      expect(ids).toEqual(['current']);
    } finally {
      await store.process.stop();
    }
    expect(messages.join('\n')).toContain('the old files are left alone');
    expect(existsSync(path.join(dataDir, LEGACY_DIR, 'switchboard.sqlite'))).toBe(true);
  });

  it('does a copy that stopped halfway again, whole', async () => {
    const dataDir = path.join(tmp, 'halfway');
    const before = await sqliteStore(dataDir);
    // What an interrupted copy leaves: part of the documents in PostgreSQL, the marker beside the old files.
    const interrupted = await startFerretDb({ dataDir: path.join(dataDir, STORE_DIR), port: 0 });
    await withDb(interrupted, 'switchboard', (db) => db.collection('tenants').insertMany([{ _id: 'tenant_00000' as never, slug: 'stale' }, { _id: 'extra' as never }]));
    await interrupted.process.stop();
    writeFileSync(path.join(dataDir, LEGACY_DIR, '.copying-to-postgres'), 'earlier');

    const store = await startDevStore({ dataDir, port: 0, postgresPort: 0, log: () => {} });
    try {
      expect(await dump(store, 'switchboard')).toEqual(before.app);
    } finally {
      await store.process.stop();
    }
    expect(existsSync(path.join(dataDir, LEGACY_DIR))).toBe(false);
  });
});
