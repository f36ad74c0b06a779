// What deleting a project or a tenant removes, collection by collection (CASCADE, which a unit test
// holds against every model with a tenantId so no collection is forgotten), and the batched,
// idempotent deletes that do it. Run by the DataDeletion workflow's activities: each step deletes
// what is left, so a step retried after a crash finishes the job and a repeated run finds nothing.
import { type Model, type mongo } from 'mongoose';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { releaseSessionSlot } from '../../db/session-capacity';
import { ATTACHMENT_BUCKET } from '../../db/attachment';
import { RECORDING_MEDIA_BUCKET } from '../../db/recording';

/**
 * How a collection's documents of a project are found: `project` by `{tenantId, projectId}`;
 * `session` by `{tenantId, sessionId}` for each of the project's sessions (the collection has no
 * projectId); `apiKey` by the project's API keys (`keyId`, or `_id` for the key's usage);
 * `gridfs` by the files' `metadata.tenantId` and `metadata.projectId`, chunks with them; `record`:
 * the project record itself, deleted last;
 * `keep` with the reason the project's deletion leaves them (tenant-wide data).
 */
export type ProjectRule = 'record' | 'project' | 'session' | 'apiKey' | 'apiKeyUsage' | 'gridfs' | { keep: string };
/** `tenant` by `{tenantId}`; `id` when `_id` is the tenant id; `gridfs` by `metadata.tenantId`; `keep` with the reason. */
export type TenantRule = 'tenant' | 'id' | 'gridfs' | { keep: string };

type ModelKey = Exclude<keyof Models, 'connection'>;

const AUDIT = 'the deletion records themselves: ids and counts, no content, kept so the request can be polled';

export const CASCADE: Record<ModelKey, { project: ProjectRule; tenant: TenantRule }> = {
  Tenant: { project: { keep: 'the tenant outlives its projects' }, tenant: 'id' },
  Project: { project: 'record', tenant: 'tenant' },
  User: { project: { keep: 'users belong to the tenant, not to a project' }, tenant: 'tenant' },
  ApiKey: { project: 'project', tenant: 'tenant' },
  ApiKeyUsage: { project: 'apiKeyUsage', tenant: 'tenant' },
  ApiScope: { project: 'project', tenant: 'tenant' },
  ApiKeyClaim: { project: 'apiKey', tenant: 'tenant' },
  PublicKey: { project: 'project', tenant: 'tenant' },
  Agent: { project: 'project', tenant: 'tenant' },
  AgentVersion: { project: 'project', tenant: 'tenant' },
  ToolFile: { project: 'project', tenant: 'tenant' },
  Deployment: { project: 'project', tenant: 'tenant' },
  SessionBundle: { project: 'project', tenant: 'tenant' },
  Session: { project: 'project', tenant: 'tenant' },
  TraceEvent: { project: 'project', tenant: 'tenant' },
  TranscriptMessage: { project: 'project', tenant: 'tenant' },
  LlmCredential: { project: 'project', tenant: 'tenant' },
  LlmSettings: { project: 'project', tenant: 'tenant' },
  LlmUsage: { project: 'project', tenant: 'tenant' },
  SessionCapacityCount: { project: { keep: "the tenant's count; the project's sessions give their slots back" }, tenant: 'id' },
  SessionSlot: { project: 'session', tenant: 'tenant' },
  TenantDataKey: { project: { keep: "the tenant's data key" }, tenant: 'tenant' },
  ToolSecret: { project: 'project', tenant: 'tenant' },
  ToolSecretAudit: { project: 'project', tenant: 'tenant' },
  AgentAssistBot: { project: 'project', tenant: 'tenant' },
  Suspension: { project: 'project', tenant: 'tenant' },
  ImportLock: { project: 'project', tenant: 'tenant' },
  HumanTask: { project: 'project', tenant: 'tenant' },
  AppSession: { project: 'project', tenant: 'tenant' },
  AppRun: { project: 'project', tenant: 'tenant' },
  HttpAsyncSubscription: { project: 'project', tenant: 'tenant' },
  HttpAsyncDelivery: { project: 'project', tenant: 'tenant' },
  HttpAsyncConversation: { project: 'project', tenant: 'tenant' },
  ChannelConnection: { project: 'project', tenant: 'tenant' },
  VoiceEvent: { project: 'project', tenant: 'tenant' },
  VoiceRoom: { project: 'project', tenant: 'tenant' },
  OutboundCall: { project: 'project', tenant: 'tenant' },
  Recording: { project: 'project', tenant: 'tenant' },
  AnalyticsEvent: { project: 'project', tenant: 'tenant' },
  SessionEncryptionKey: { project: 'project', tenant: 'tenant' },
  Attachment: { project: 'gridfs', tenant: 'gridfs' },
  Contact: { project: { keep: 'contacts belong to the tenant, not to a project (docs/contacts.md)' }, tenant: 'tenant' },
  ContactSession: { project: 'session', tenant: 'tenant' },
  MemoryFact: { project: 'project', tenant: 'tenant' },
  AnalyticsRollup: { project: 'project', tenant: 'tenant' },
  AnalyticsMinuteRollup: { project: 'project', tenant: 'tenant' },
  MemoryStore: { project: 'project', tenant: 'tenant' },
  McpServer: { project: 'project', tenant: 'tenant' },
  ProjectFunction: { project: 'project', tenant: 'tenant' },
  TurnStream: { project: 'project', tenant: 'tenant' },
  TurnStreamEvent: { project: 'session', tenant: 'tenant' },
  ToolCircuit: { project: 'project', tenant: 'tenant' },
  ToolVault: { project: 'project', tenant: 'tenant' },
  RetentionPolicy: { project: 'project', tenant: 'tenant' },
  DeletionJob: { project: { keep: AUDIT }, tenant: { keep: AUDIT } },
};

/** GridFS buckets beside the models: recording media has no model of its own. */
const EXTRA_BUCKETS = [RECORDING_MEDIA_BUCKET] as const;

/** Documents one delete statement takes at most: each batch is its own statement (no multi-document transaction). */
export const DELETE_BATCH = 500;

export type DeletedCounts = Record<string, number>;
type Progress = () => void;

/** Deletes what matches `filter` in batches of ids, each batch re-checked against the filter (so tenant-scoped). */
async function deleteInBatches(model: Model<never>, filter: mongo.Filter<{ _id: string }>, progress: Progress): Promise<number> {
  const collection = driverCollection(model as unknown as Model<{ _id: string }>);
  let total = 0;
  for (;;) {
    const ids = (await collection.find(filter, { projection: { _id: 1 } }).limit(DELETE_BATCH).toArray()).map((d) => d._id);
    if (ids.length === 0) return total;
    total += (await collection.deleteMany({ $and: [filter, { _id: { $in: ids } }] })).deletedCount;
    progress();
  }
}

/** Deletes a bucket's files matching the metadata filter, chunks first so a crash never leaves chunks without a file to find them by. */
async function deleteGridFs(models: Models, bucket: string, metadata: Record<string, string>, progress: Progress): Promise<number> {
  const db = models.connection.db!;
  const files = db.collection(`${bucket}.files`);
  const filter = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [`metadata.${k}`, v]));
  let total = 0;
  for (;;) {
    const ids = (await files.find(filter, { projection: { _id: 1 } }).limit(DELETE_BATCH).toArray()).map((d) => d._id);
    if (ids.length === 0) return total;
    await db.collection(`${bucket}.chunks`).deleteMany({ files_id: { $in: ids } });
    total += (await files.deleteMany({ ...filter, _id: { $in: ids } })).deletedCount;
    progress();
  }
}

const modelOf = (models: Models, key: ModelKey) => models[key] as unknown as Model<never>;
const collectionName = (models: Models, key: ModelKey) => (models[key] as unknown as Model<never>).collection.collectionName;

/**
 * `counts` starts from what an earlier attempt reported (an activity's heartbeat) and `onProgress`
 * gets it after each batch.
 *
 * Everything of one project that the cascade covers, except the project record (deleted last,
 * deleteProjectRecord) and what its rule keeps. Order: credentials and entry points first so
 * nothing new arrives, then the sessions with what hangs off each, then the rest.
 */
export async function deleteProjectData(
  models: Models,
  scope: { tenantId: string; projectId: string },
  counts: DeletedCounts = {},
  onProgress: (counts: DeletedCounts) => void = () => {},
): Promise<DeletedCounts> {
  const progress = () => onProgress(counts);
  const add = (name: string, n: number) => {
    if (n > 0) counts[name] = (counts[name] ?? 0) + n;
  };
  const { tenantId, projectId } = scope;
  // The project's API keys: their claims and usage go with them.
  for (;;) {
    const keys = (await driverCollection(models.ApiKey).find({ tenantId, projectId }, { projection: { _id: 1 } }).limit(DELETE_BATCH).toArray()).map((k) => k._id);
    if (keys.length === 0) break;
    add(collectionName(models, 'ApiKeyClaim'), (await driverCollection(models.ApiKeyClaim).deleteMany({ tenantId, keyId: { $in: keys } })).deletedCount);
    add(collectionName(models, 'ApiKeyUsage'), (await driverCollection(models.ApiKeyUsage).deleteMany({ tenantId, _id: { $in: keys } })).deletedCount);
    add(collectionName(models, 'ApiKey'), (await driverCollection(models.ApiKey).deleteMany({ tenantId, projectId, _id: { $in: keys } })).deletedCount);
    progress();
  }
  // Sessions, a batch at a time: what is keyed by session only, then the session records.
  const sessionKeyed = (Object.keys(CASCADE) as ModelKey[]).filter((k) => CASCADE[k].project === 'session' && k !== 'SessionSlot');
  for (;;) {
    const sessions = (await driverCollection(models.Session).find({ tenantId, projectId }, { projection: { _id: 1 } }).limit(DELETE_BATCH).toArray()).map((s) => s._id);
    if (sessions.length === 0) break;
    for (const key of sessionKeyed) add(collectionName(models, key), await deleteInBatches(modelOf(models, key), { tenantId, sessionId: { $in: sessions } } as never, progress));
    // A slot gives its place back to the tenant's count (db/session-capacity.ts).
    let slots = 0;
    for (const sessionId of sessions) if (await releaseSessionSlot(models, { tenantId, sessionId })) slots++;
    add(collectionName(models, 'SessionSlot'), slots);
    add(collectionName(models, 'Session'), (await driverCollection(models.Session).deleteMany({ tenantId, projectId, _id: { $in: sessions } })).deletedCount);
    progress();
  }
  for (const key of Object.keys(CASCADE) as ModelKey[]) {
    if (CASCADE[key].project !== 'project' || key === 'Session' || key === 'ApiKey') continue;
    add(collectionName(models, key), await deleteInBatches(modelOf(models, key), { tenantId, projectId } as never, progress));
  }
  for (const bucket of [ATTACHMENT_BUCKET, ...EXTRA_BUCKETS]) add(bucket, await deleteGridFs(models, bucket, { tenantId, projectId }, progress));
  return counts;
}

/** The project record itself, once everything under it is gone. */
export async function deleteProjectRecord(models: Models, scope: { tenantId: string; projectId: string }): Promise<number> {
  return (await driverCollection(models.Project).deleteOne({ _id: scope.projectId, tenantId: scope.tenantId })).deletedCount;
}

/** Everything of one tenant the cascade covers, the tenant record last. */
export async function deleteTenantData(models: Models, tenantId: string, counts: DeletedCounts = {}, onProgress: (counts: DeletedCounts) => void = () => {}): Promise<DeletedCounts> {
  const progress = () => onProgress(counts);
  const add = (name: string, n: number) => {
    if (n > 0) counts[name] = (counts[name] ?? 0) + n;
  };
  // Credentials first, so nothing new arrives while the rest goes.
  const order = (Object.keys(CASCADE) as ModelKey[]).sort((a, b) => rank(a) - rank(b));
  for (const key of order) {
    const rule = CASCADE[key].tenant;
    if (rule === 'tenant') add(collectionName(models, key), await deleteInBatches(modelOf(models, key), { tenantId } as never, progress));
    else if (rule === 'id' && key !== 'Tenant') add(collectionName(models, key), await deleteInBatches(modelOf(models, key), { _id: tenantId } as never, progress));
  }
  for (const bucket of [ATTACHMENT_BUCKET, ...EXTRA_BUCKETS]) add(bucket, await deleteGridFs(models, bucket, { tenantId }, progress));
  add(collectionName(models, 'Tenant'), (await driverCollection(models.Tenant).deleteOne({ _id: tenantId })).deletedCount);
  return counts;
}

const FIRST = ['ApiKey', 'PublicKey', 'User', 'ChannelConnection', 'HttpAsyncSubscription', 'AgentAssistBot', 'Deployment'];
const LAST = ['Project'];
const rank = (key: string) => (FIRST.includes(key) ? 0 : LAST.includes(key) ? 2 : 1);
