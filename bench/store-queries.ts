// The embedded store at size: a human-task list (the real filter, sort, projection and limit of
// api/human-tasks/service.ts) and a task read by id and tenant, over 100,000 tasks, first with
// FerretDB's own indexes only, then with GIN indexes on the JSONB expressions FerretDB filters on.
//   node --import tsx bench/store-queries.ts [--docs 100000] [--samples 30]
// FerretDB 1.24 on PostgreSQL pushes an equality down as `(_jsonb -> 'field') @> '"value"'`; the
// B-tree index it builds for a declared index is on `(_jsonb -> 'field')` and cannot serve `@>`,
// so every pushed-down filter is a sequential scan of the table. A GIN index with jsonb_path_ops
// on the same expression serves `@>` (PostgreSQL docs, "GIN Indexes", jsonb operator classes).
// Starts FerretDB on its own PostgreSQL cluster in a temp dir and reaches the cluster directly
// for the SQL indexes and the plans.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import mongoose from 'mongoose';
import { startFerretDb } from '../infra/processes';
import { JSONB_INDEXED_FIELDS, sqlClient } from '../infra/postgres-indexes';
import { createModels } from '../db/models';
import { PRIORITY_RANK } from '../db/human-task';
import { TASK_LIST_PROJECTION, TASK_LIST_SORT } from '../core/human-tasks/tasks';

const { values } = parseArgs({ options: { docs: { type: 'string', default: '100000' }, samples: { type: 'string', default: '30' } } });
const DOCS = Number(values.docs);
const SAMPLES = Number(values.samples);
const TENANTS = 10;
const PROJECTS_PER_TENANT = 5;
const STATUSES = ['pending', 'in_progress', 'completed', 'completed', 'completed', 'cancelled'] as const;
const PRIORITIES = Object.keys(PRIORITY_RANK) as (keyof typeof PRIORITY_RANK)[];
const DB = 'bench_store_queries';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** The n-th task of the bench's collection. */
function taskDoc(n: number): never {
  const priority = PRIORITIES[n % PRIORITIES.length]!;
  const at = new Date(Date.UTC(2026, 0, 1) + n * 1000);
  return {
    _id: `task_${String(n).padStart(8, '0')}`,
    tenantId: `ten_${n % TENANTS}`,
    projectId: `prj_${n % TENANTS}_${Math.floor(n / TENANTS) % PROJECTS_PER_TENANT}`,
    sessionId: `ses_${n % 997}`,
    agentName: 'support',
    environment: 'production',
    type: 'approval',
    title: `Approve refund ${n}`,
    status: STATUSES[Math.floor(n / (TENANTS * PROJECTS_PER_TENANT)) % STATUSES.length]!,
    priority,
    priorityRank: PRIORITY_RANK[priority],
    tags: ['refund'],
    contextJson: JSON.stringify({ order: n, note: 'x'.repeat(300) }),
    fields: [],
    routing: null,
    assignedTo: null,
    assignedToTeam: n % 3 === 0 ? 'billing' : null,
    claimedAt: null,
    dueAt: null,
    resolution: null,
    cancelReason: null,
    history: [{ action: 'created', from: null, to: 'pending', by: null, at: at.toISOString() }],
    createdBy: 'bench',
    revision: 1,
    createdAt: at,
    updatedAt: at,
  } as never;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-store-'));
  let store = await startFerretDb({ dataDir: path.join(dir, 'store'), port: 0, jsonbIndexes: false });
  let connection = await mongoose.createConnection(`${store.uri.replace(/\/$/, '')}/${DB}`).asPromise();
  let sql = sqlClient(store.postgres!.url);
  await sql.connect();
  let tasks = createModels(connection).HumanTask.collection;
  /** FerretDB and PostgreSQL stopped and started again on the same data: connections with no cached plans. */
  const restart = async () => {
    await sql.end();
    await connection.close();
    await store.process.stop();
    store = await startFerretDb({ dataDir: path.join(dir, 'store'), port: 0 });
    connection = await mongoose.createConnection(`${store.uri.replace(/\/$/, '')}/${DB}`).asPromise();
    sql = sqlClient(store.postgres!.url);
    await sql.connect();
    tasks = createModels(connection).HumanTask.collection;
  };
  try {
    await createModels(connection).HumanTask.createIndexes();
    const started = Date.now();
    for (let i = 0; i < DOCS; i += 5000) {
      await tasks.insertMany(
        Array.from({ length: Math.min(5000, DOCS - i) }, (_, k) => taskDoc(i + k)),
      );
    }
    const { rows: tables } = await sql.query<{ table: string }>(`SELECT _jsonb->>'table' AS table FROM "${DB}"._ferretdb_database_metadata WHERE _jsonb->>'_id' = $1`, [tasks.collectionName]);
    const table = `"${DB}"."${tables[0]!.table}"`;
    await sql.query(`ANALYZE ${table}`);
    console.log(`${DOCS} human tasks inserted in ${((Date.now() - started) / 1000).toFixed(1)} s; table ${table}`);

    const listFilter = { tenantId: 'ten_3', projectId: 'prj_3_2', status: 'pending' };
    const queries: { name: string; run: () => Promise<unknown>; filter: Record<string, unknown>; sort?: Record<string, 1 | -1>; limit?: number }[] = [
      { name: 'list: tenantId+projectId+status, sort priorityRank,createdAt,_id, limit 50', filter: listFilter, sort: { ...TASK_LIST_SORT }, limit: 50, run: () => tasks.find(listFilter, { projection: TASK_LIST_PROJECTION }).sort(TASK_LIST_SORT).limit(50).toArray() },
      { name: 'list total: countDocuments of the same filter', filter: listFilter, run: () => tasks.countDocuments(listFilter) },
      { name: 'read by _id+tenantId+projectId (findOwned)', filter: { _id: 'task_00012345', tenantId: 'ten_5', projectId: 'prj_5_4' }, limit: 1, run: () => tasks.findOne({ _id: 'task_00012345' as never, tenantId: 'ten_5', projectId: 'prj_5_4' }) },
    ];

    const scans = async () => {
      const { rows } = await sql.query<{ seq: string; idx: string | null }>(`SELECT seq_scan AS seq, idx_scan AS idx FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`, [DB, tables[0]!.table]);
      // FerretDB's connections report their counts to the statistics within about a second: for fast queries these lag.
      return { seq: Number(rows[0]!.seq), idx: Number(rows[0]!.idx ?? 0) };
    };
    let next = DOCS;
    const measure = async (label: string) => {
      console.log(`\n${label}`);
      const t0 = Date.now();
      for (let k = 0; k < 5; k++) await tasks.insertMany(Array.from({ length: 1000 }, () => taskDoc(next++)));
      console.log(`  insert 5,000 more tasks (5 × insertMany of 1,000): ${Date.now() - t0} ms`);
      for (const q of queries) {
        const explain = await connection.db!.command({ explain: { find: tasks.collectionName, filter: q.filter, ...(q.sort ? { sort: q.sort } : {}), ...(q.limit ? { limit: q.limit } : {}) } });
        const plan = JSON.stringify(explain.queryPlanner);
        const node = /"Node Type":"([^"]+)"/.exec(plan)?.[1];
        await q.run();
        const before = await scans();
        const ms: number[] = [];
        for (let i = 0; i < SAMPLES; i++) {
          const t0 = process.hrtime.bigint();
          await q.run();
          ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        const after = await scans();
        // PostgreSQL's own time for the pushed-down WHERE, without FerretDB's decoding and filtering.
        const where = Object.entries(q.filter).map(([k, v]) => `(_jsonb -> '${k}') @> '${JSON.stringify(v)}'`).join(' AND ');
        const analyzed = await sql.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, FORMAT TEXT) SELECT _jsonb FROM ${table} WHERE ${where}`);
        const pgMs = /Execution Time: ([\d.]+) ms/.exec(analyzed.rows.map((r) => r['QUERY PLAN']).join('\n'))?.[1];
        console.log(
          `  ${q.name}: median ${median(ms).toFixed(2)} ms, min ${Math.min(...ms).toFixed(2)} ms (${SAMPLES} samples; plan ${node}, filterPushdown ${explain.filterPushdown}; ` +
            `per query ${((after.seq - before.seq) / SAMPLES).toFixed(1)} seq / ${((after.idx - before.idx) / SAMPLES).toFixed(1)} index scans; the WHERE alone in PostgreSQL ${pgMs} ms)`,
        );
      }
    };

    await measure("FerretDB's own indexes only");
    // The store as it starts by default: its bootstrap indexes the tables there are (infra/postgres-indexes.ts).
    await restart();
    await sql.query(`ANALYZE ${table}`);
    await measure(`with the bootstrap's GIN (jsonb_path_ops) indexes on ${JSONB_INDEXED_FIELDS.map((f) => `_jsonb -> '${f}'`).join(', ')}`);
  } finally {
    await sql.end();
    await connection.close();
    await store.process.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
