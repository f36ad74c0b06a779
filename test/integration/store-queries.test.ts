// The hot queries of the request and workflow paths, each named after the code that runs it. Two
// checks per query: on the embedded store (FerretDB on PostgreSQL) `explain` must report its
// filter pushed down to PostgreSQL, every scalar equality included; and the mongoose schema must
// declare an index whose leading field the filter fixes, so that MongoDB serves it from an index
// rather than a collection scan. On PostgreSQL a pushed-down equality is a JSONB containment
// that FerretDB's own indexes do not serve: the store's bootstrap gives each table GIN indexes on
// the fields our queries fix (infra/postgres-indexes.ts), and each hot query must fix one of them.
// docs/store.md lists the indexes and the queries they serve.
import { randomBytes } from 'node:crypto';
import mongoose, { type Connection, type Model } from 'mongoose';
import { createModels, syncIndexes, type Models } from '../../db/models';
import { JSONB_INDEXED_FIELDS, sqlClient } from '../../infra/postgres-indexes';

jest.setTimeout(120_000);

type Filter = Record<string, unknown>;
interface HotQuery {
  /** The code path that runs it. */
  name: string;
  model: keyof Models;
  filter: Filter;
  sort?: Record<string, 1 | -1>;
  limit?: number;
}

const T = 'ten_q1';
const P = 'prj_q1';
const S = 'ses_q1';
const before = new Date('2026-01-01T00:00:00Z');

const HOT_QUERIES: HotQuery[] = [
  { name: 'api/middleware/auth.ts: key by hash', model: 'ApiKey', filter: { keyHash: 'h1' }, limit: 1 },
  { name: 'core/sdk/public-keys.ts: public key by hash (SDK init, config)', model: 'PublicKey', filter: { keyHash: 'h1' }, limit: 1 },
  { name: 'api/middleware/auth.ts: public key of an SDK token', model: 'PublicKey', filter: { _id: 'pkey-1', tenantId: T, projectId: P }, limit: 1 },
  { name: 'api/http/route.ts: project of a request (findOwned)', model: 'Project', filter: { _id: P, tenantId: T }, limit: 1 },
  { name: 'api/sessions/service.ts: findSession (findOwned)', model: 'Session', filter: { _id: S, tenantId: T, projectId: P }, limit: 1 },
  { name: 'api/sessions/service.ts: listSessions', model: 'Session', filter: { tenantId: T, projectId: P, status: 'active' }, sort: { createdAt: -1, _id: -1 }, limit: 50 },
  { name: 'api/sessions/service.ts: transcript page', model: 'TranscriptMessage', filter: { tenantId: T, sessionId: S }, sort: { seq: 1 }, limit: 50 },
  { name: 'api/sessions/service.ts: trace page', model: 'TraceEvent', filter: { tenantId: T, sessionId: S }, sort: { seq: 1 }, limit: 50 },
  { name: 'api/human-tasks/service.ts: listTasks by status', model: 'HumanTask', filter: { tenantId: T, projectId: P, status: 'pending' }, sort: { priorityRank: 1, createdAt: 1, _id: 1 }, limit: 50 },
  { name: 'api/human-tasks/service.ts: listTasks by assignee', model: 'HumanTask', filter: { tenantId: T, projectId: P, assignedTo: 'u1' }, sort: { priorityRank: 1, createdAt: 1, _id: 1 }, limit: 50 },
  { name: 'api/human-tasks/service.ts: open tasks of a session', model: 'HumanTask', filter: { tenantId: T, sessionId: S, status: { $nin: ['completed', 'cancelled'] } } },
  { name: 'api/human-tasks/service.ts: getTask (findOwned)', model: 'HumanTask', filter: { _id: 'task_q1', tenantId: T, projectId: P }, limit: 1 },
  { name: 'api/deployments/service.ts: active deployment of an environment', model: 'Deployment', filter: { tenantId: T, projectId: P, environment: 'production', status: 'active' }, limit: 1 },
  { name: 'api/deployments/service.ts: active sessions of a deployment', model: 'Session', filter: { tenantId: T, projectId: P, deploymentId: 'dep_q1', status: 'active' } },
  { name: 'api/agents/service.ts: agent by name', model: 'Agent', filter: { tenantId: T, projectId: P, name: 'support' }, limit: 1 },
  { name: 'api/agents/service.ts: latest version of an agent', model: 'AgentVersion', filter: { tenantId: T, projectId: P, agentId: 'agt_q1' }, sort: { seq: -1 }, limit: 1 },
  { name: 'activities/persistence/session-bundles.ts: bundle (findOwned)', model: 'SessionBundle', filter: { _id: 'b1', tenantId: T }, limit: 1 },
  { name: 'activities/persistence/session-bundles.ts: versions by agent name', model: 'AgentVersion', filter: { tenantId: T, projectId: P, agentName: { $in: ['support'] } } },
  { name: 'core/callbacks/delivery.ts: pending suspension of a session', model: 'Suspension', filter: { tenantId: T, sessionId: S, status: 'pending' }, limit: 1 },
  { name: 'core/callbacks/stale-claims.ts: stalled claims sweep', model: 'Suspension', filter: { status: 'claimed', claimedAt: { $lt: before } }, limit: 100 },
  { name: 'core/agentic-apps/stale-runs.ts: stale running runs sweep', model: 'AppRun', filter: { isAsync: false, status: 'running', createdAt: { $lt: before } }, limit: 100 },
  { name: 'core/agentic-apps/stale-runs.ts: unstarted runs sweep', model: 'AppRun', filter: { isAsync: false, status: 'pending', createdAt: { $lt: before } }, limit: 100 },
  { name: 'core/agentic-apps/runs.ts: run (owned)', model: 'AppRun', filter: { _id: 'run_q1', tenantId: T, projectId: P }, limit: 1 },
  { name: 'core/agentic-apps/sessions.ts: live app session by key', model: 'AppSession', filter: { tenantId: T, projectId: P, liveKey: 'k1' }, limit: 1 },
  { name: 'core/agentic-apps/sessions.ts: open app sessions of a user', model: 'AppSession', filter: { tenantId: T, projectId: P, environment: 'production', userReference: 'u1', terminatedAt: null } },
  { name: 'core/http-async/messages.ts: subscription (owned)', model: 'HttpAsyncSubscription', filter: { _id: 'sub_q1', tenantId: T, projectId: P }, limit: 1 },
  { name: 'core/agentic-apps/oauth.ts: tool secrets of an environment', model: 'ToolSecret', filter: { tenantId: T, projectId: P, environment: 'production', secretKey: { $in: ['k'] } } },
  { name: 'core/project-io/import-lock.ts: live import slots', model: 'ImportLock', filter: { tenantId: T, expiresAt: { $gt: before } } },
  { name: 'api/tenancy/service.ts: claims of a scope', model: 'ApiKeyClaim', filter: { scopeId: 'scp_q1' } },
  { name: 'db/session-capacity.ts: reconciler, slots of a tenant', model: 'SessionSlot', filter: { tenantId: T } },
  { name: 'db/session-capacity.ts: reconciler, active sessions of a tenant', model: 'Session', filter: { tenantId: T, status: 'active' } },
  { name: 'api/chat/service.ts: LLM settings of a project', model: 'LlmSettings', filter: { tenantId: T, projectId: P }, limit: 1 },
  { name: 'core/telephony/voice-metrics.ts: a call\'s events, for its totals', model: 'VoiceEvent', filter: { tenantId: T, connectionId: 'cc_q1', callSid: 'CA_q1' } },
  { name: 'core/telephony/voice-analytics.ts: the call starts of a window', model: 'VoiceEvent', filter: { tenantId: T, projectId: P, type: 'voice.call_started', at: { $gte: before, $lte: before } } },
  { name: 'core/telephony/voice-analytics.ts: the later events of a window', model: 'VoiceEvent', filter: { tenantId: T, projectId: P, type: { $in: ['voice.turn', 'voice.no_input', 'voice.error', 'voice.call_ended'] }, at: { $gte: before } } },
  { name: 'core/analytics/rollups.ts: events of an hour (rollup build)', model: 'AnalyticsEvent', filter: { tenantId: T, projectId: P, hour: before } },
  { name: 'core/analytics/store.ts: a page of a minute (raw edge)', model: 'AnalyticsEvent', filter: { tenantId: T, projectId: P, minute: before, category: 'llm' }, sort: { timestamp: -1, _id: -1 }, limit: 100 },
  { name: 'core/analytics/store.ts: a session\'s events', model: 'AnalyticsEvent', filter: { tenantId: T, projectId: P, sessionId: S }, sort: { timestamp: -1, _id: -1 }, limit: 100 },
  { name: 'core/analytics/rollups.ts: hour rollups of a day', model: 'AnalyticsRollup', filter: { tenantId: T, projectId: P, day: '2026-01-01' } },
  { name: 'core/analytics/rollups.ts: minute rollups of an hour', model: 'AnalyticsMinuteRollup', filter: { tenantId: T, projectId: P, hour: before } },
  { name: 'core/telephony/voice.ts: the session of a call', model: 'Session', filter: { _id: S, tenantId: T }, limit: 1 },
  { name: 'core/contacts/contacts.ts: requireContact (findOwned)', model: 'Contact', filter: { _id: 'ct_q1', tenantId: T, deletedAt: null }, limit: 1 },
  { name: 'core/contacts/contacts.ts: listContacts', model: 'Contact', filter: { tenantId: T, deletedAt: null, type: 'customer' }, sort: { createdAt: -1, _id: -1 }, limit: 50 },
  { name: 'core/contacts/contacts.ts: lookupContact', model: 'Contact', filter: { tenantId: T, liveKey: { $in: ['email:ada@example.com'] } } },
  { name: 'core/contacts/linking.ts: the live contact of a session caller', model: 'Contact', filter: { tenantId: T, liveKey: 'external:k1' }, limit: 1 },
  { name: 'core/contacts/linking.ts: link a session to its contact', model: 'ContactSession', filter: { tenantId: T, contactId: 'ct_q1', sessionId: S }, limit: 1 },
  { name: 'core/contacts/contacts.ts: contactSessionIds', model: 'ContactSession', filter: { tenantId: T, contactId: 'ct_q1' }, sort: { linkedAt: -1, _id: -1 }, limit: 100 },
];

/** Top-level fields the filter fixes to one value (the ones an index prefix can serve by equality). */
function equalityFields(filter: Filter): string[] {
  return Object.entries(filter)
    .filter(([, v]) => v === null || typeof v !== 'object' || v instanceof Date || ('$in' in (v as object) && Object.keys(v as object).length === 1))
    .map(([k]) => k);
}

/** Fields of an equality FerretDB 1.24 hands to PostgreSQL (strings, booleans, dates; docs.ferretdb.io/pushdown). */
function pushableFields(filter: Filter): string[] {
  return Object.entries(filter)
    .filter(([, v]) => typeof v === 'string' || typeof v === 'boolean' || v instanceof Date)
    .map(([k]) => k);
}

/** The declared indexes of a model (the implicit `_id` one first), as ordered field lists. */
function declaredIndexes(model: Model<unknown>): string[][] {
  return [['_id'], ...model.schema.indexes().map(([fields]) => Object.keys(fields))];
}

/** The declared index serving the filter best: the longest leading run of fields the filter fixes (the range field may end it). */
function servingIndex(model: Model<unknown>, filter: Filter): { fields: string[]; prefix: number } | null {
  const eq = new Set(equalityFields(filter));
  const all = new Set(Object.keys(filter));
  let best: { fields: string[]; prefix: number } | null = null;
  for (const fields of declaredIndexes(model)) {
    let prefix = 0;
    while (prefix < fields.length && eq.has(fields[prefix]!)) prefix++;
    if (prefix < fields.length && all.has(fields[prefix]!)) prefix++; // a range on the next field
    if (prefix > 0 && (!best || prefix > best.prefix)) best = { fields, prefix };
  }
  return best;
}

let connection: Connection;
let models: Models;

beforeAll(async () => {
  connection = await mongoose.createConnection(`${process.env.SB_TEST_MONGODB_URI!.replace(/\/$/, '')}/store-queries-${randomBytes(4).toString('hex')}`).asPromise();
  models = createModels(connection);
  await syncIndexes(models);
  // A few documents in every collection a hot query reads, so that each table exists with its data.
  for (const model of new Set(HOT_QUERIES.map((q) => q.model))) {
    const docs = Array.from({ length: 3 }, (_, i) => ({
      _id: `${String(model).toLowerCase()}_${i}`,
      tenantId: i === 0 ? T : `ten_other${i}`,
      projectId: P,
      sessionId: S,
      status: 'active',
      createdAt: before,
    }));
    await (models[model] as unknown as Model<unknown>).collection.insertMany(docs as never[]);
  }
});

afterAll(async () => {
  await connection?.db?.dropDatabase();
  await connection?.close();
});

describe('hot queries', () => {
  it.each(HOT_QUERIES.map((q) => [q.name, q] as const))('%s: pushed down on the embedded store', async (_name, q) => {
    const collection = (models[q.model] as unknown as Model<unknown>).collection.collectionName;
    const out = await connection.db!.command({ explain: { find: collection, filter: q.filter, ...(q.sort ? { sort: q.sort } : {}), ...(q.limit ? { limit: q.limit } : {}) } });
    expect(out.filterPushdown).toBe(true);
    // The SQL filter FerretDB ran names each pushable equality: none of them is left to Go over a scan.
    const sqlFilter = JSON.stringify(out.queryPlanner);
    const missing = pushableFields(q.filter).filter((field) => !sqlFilter.includes(`'${field}'`));
    expect(missing).toEqual([]);
  });

  it.each(HOT_QUERIES.map((q) => [q.name, q] as const))('%s: served by a GIN index on the embedded store', async (_name, q) => {
    const indexed = pushableFields(q.filter).filter((field) => (JSONB_INDEXED_FIELDS as readonly string[]).includes(field));
    expect(indexed).not.toEqual([]);
    const collection = (models[q.model] as unknown as Model<unknown>).collection.collectionName;
    const sql = sqlClient(process.env.SB_TEST_POSTGRES_URL!);
    await sql.connect();
    try {
      const { rows } = await sql.query<{ indexdef: string }>(
        `SELECT i.indexdef FROM pg_indexes i WHERE i.schemaname = $1 AND i.tablename = (SELECT m._jsonb->>'table' FROM ${JSON.stringify(connection.db!.databaseName)}._ferretdb_database_metadata m WHERE m._jsonb->>'_id' = $2)`,
        [connection.db!.databaseName, collection],
      );
      for (const field of indexed) expect(rows.map((r) => r.indexdef)).toContainEqual(expect.stringContaining(`USING gin (((_jsonb -> '${field}'::text)) jsonb_path_ops)`));
    } finally {
      await sql.end();
    }
  });

  it.each(HOT_QUERIES.map((q) => [q.name, q] as const))('%s: served by a declared index on MongoDB', (_name, q) => {
    const model = models[q.model] as unknown as Model<unknown>;
    const index = servingIndex(model, q.filter);
    expect(index).not.toBeNull();
    // A tenant-owned query is served by an index that starts with the tenant (or by `_id`).
    if ('tenantId' in q.filter && !('_id' in q.filter)) expect(index!.fields[0]).toBe('tenantId');
  });
});
