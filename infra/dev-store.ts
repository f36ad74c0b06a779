// `npm start`'s store under the data directory: FerretDB on the PostgreSQL cluster in postgres/.
// A ferretdb/ directory left by the store before it (FerretDB on SQLite) is copied over once, on
// the first start that finds it, through the MongoDB wire protocol, then kept under a new name.
import { existsSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import mongoose from 'mongoose';
import { freePort, startFerretDb, type FerretDb } from './processes';

/** Where the SQLite store kept its files, and where they go once copied. */
export const LEGACY_DIR = 'ferretdb';
export const LEGACY_COPIED_DIR = 'ferretdb-sqlite-copied';
export const STORE_DIR = 'postgres';
/** Written into the old directory while a copy runs: a copy that did not finish is done again. */
const COPYING_MARKER = '.copying-to-postgres';

export interface DevStoreOptions {
  /** The data directory (.data/ by default). */
  dataDir: string;
  port: number;
  postgresPort: number;
  log: (msg: string) => void;
}

const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

function holdsSqliteStore(dir: string): boolean {
  return existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.sqlite'));
}

/** Starts the dev store; copies an old SQLite store into it first when there is one to copy. */
export async function startDevStore(options: DevStoreOptions): Promise<FerretDb> {
  const storeDir = path.join(options.dataDir, STORE_DIR);
  const legacyDir = path.join(options.dataDir, LEGACY_DIR);
  const freshStore = !existsSync(path.join(storeDir, 'PG_VERSION'));
  const store = await startFerretDb({ dataDir: storeDir, port: options.port, postgresPort: options.postgresPort, durability: 'durable', log: options.log });
  if (!holdsSqliteStore(legacyDir)) return store;
  if (!freshStore && !existsSync(path.join(legacyDir, COPYING_MARKER))) {
    options.log(
      `${legacyDir} holds a store from before PostgreSQL, and ${storeDir} is in use: the old files are left alone. ` +
        `To copy them over instead, stop, move ${storeDir} aside and start again.`,
    );
    return store;
  }
  try {
    options.log(`copying the SQLite store in ${legacyDir} into PostgreSQL (once)…`);
    writeFileSync(path.join(legacyDir, COPYING_MARKER), new Date().toISOString());
    const old = await startFerretDb({ dataDir: legacyDir, port: await freePort(), sqlite: true });
    try {
      const copied = await copyStore(old.uri, store.uri);
      options.log(`copied ${count(copied.documents, 'document')} in ${count(copied.collections, 'collection')} of ${count(copied.databases, 'database')}`);
    } finally {
      await old.process.stop();
    }
    const kept = path.join(options.dataDir, LEGACY_COPIED_DIR);
    renameSync(legacyDir, kept);
    options.log(`the old SQLite files are kept in ${kept}; delete it once you no longer need it`);
    return store;
  } catch (err) {
    await store.process.stop();
    throw new Error(`copying ${legacyDir} into PostgreSQL failed (the next start tries again): ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Copies every database of one MongoDB into another: indexes, then documents in batches, BSON
 * types kept as they are. A database of the same name in the target is dropped first, so a
 * copy that stopped halfway is redone whole.
 */
export async function copyStore(fromUri: string, toUri: string): Promise<{ databases: number; collections: number; documents: number }> {
  const from = await mongoose.createConnection(fromUri).asPromise();
  const to = await mongoose.createConnection(toUri).asPromise();
  const totals = { databases: 0, collections: 0, documents: 0 };
  try {
    const source = from.getClient();
    const target = to.getClient();
    const { databases } = await source.db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      if (['admin', 'local', 'config'].includes(name)) continue;
      totals.databases++;
      const sourceDb = source.db(name);
      const targetDb = target.db(name);
      await targetDb.dropDatabase();
      for (const info of await sourceDb.listCollections({}, { nameOnly: true }).toArray()) {
        if (info.name.startsWith('system.')) continue;
        totals.collections++;
        const sourceCollection = sourceDb.collection(info.name);
        const targetCollection = targetDb.collection(info.name);
        await targetDb.createCollection(info.name);
        for (const index of await sourceCollection.listIndexes().toArray()) {
          if (index.name === '_id_') continue;
          const { key, v: _v, ns: _ns, ...indexOptions } = index as { key: Record<string, 1 | -1>; v?: number; ns?: string; name: string };
          await targetCollection.createIndex(key, indexOptions);
        }
        let batch: Record<string, unknown>[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          await targetCollection.insertMany(batch, { ordered: true });
          totals.documents += batch.length;
          batch = [];
        };
        // promoteValues off: Int32, Int64 and Double come back as themselves and are written so.
        for await (const doc of sourceCollection.find({}, { promoteValues: false, batchSize: 1000 })) {
          batch.push(doc);
          if (batch.length >= 500) await flush();
        }
        await flush();
      }
    }
    return totals;
  } finally {
    await Promise.allSettled([from.close(), to.close()]);
  }
}
