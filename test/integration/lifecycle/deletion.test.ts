// Deleting a project and a tenant against the real stack: a real session's workflow is running and
// a document sits in every collection the cascade covers (one per model of db/models.ts, plus the
// GridFS buckets), for the project, a sibling project and another tenant. DELETE answers 202 and
// the project is 404 at once; the DataDeletion workflow terminates the running workflows and
// empties every collection of the project (then of the tenant), and nothing else changes.
import { randomUUID } from 'node:crypto';
import { type Model, type mongo } from 'mongoose';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createAgent, seedSession } from '../sessions/fixtures';
import { CASCADE } from '../../../core/lifecycle/cascade';
import { ATTACHMENT_BUCKET } from '../../../db/attachment';
import { RECORDING_MEDIA_BUCKET } from '../../../db/recording';
import { isDuplicateKey } from '../../../db/duplicate-key';
import { turnUpdate, type DataDeletionWorkflow } from '../../../workflows/definitions';
import { requestDeletion } from '../../../core/lifecycle/deletion';
import { reconcileClosedWorkflows } from '../../../core/sessions/closed-reconciler';
import { createProject } from '../../../core/tenancy/accounts';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
const admin = () => ({ 'x-platform-admin-token': stack.config.PLATFORM_ADMIN_TOKEN! });

type AnyModel = Model<{ _id: string }>;
const modelsByName = () => stack.ctx.models as unknown as Record<string, AnyModel>;
const cascaded = () => Object.keys(CASCADE).filter((n) => n !== 'Attachment');

/** Where a project's data sits: the tenant, the project, one of its sessions and API keys. */
interface Place {
  tenantId: string;
  projectId: string;
  sessionId: string;
  keyId: string;
}

/**
 * One document in every collection for the place, straight through the driver (only the fields
 * the cascade finds it by, and a unique value for every other field of a unique index).
 */
async function seedEverywhere(place: Place): Promise<void> {
  for (const name of cascaded()) {
    const model = modelsByName()[name]!;
    if (name === 'Tenant' || name === 'Project' || name === 'DeletionJob') continue;
    const doc: Record<string, unknown> = { _id: `${name}-${randomUUID()}`, tenantId: place.tenantId };
    if (model.schema.path('projectId')) doc.projectId = place.projectId;
    if (model.schema.path('sessionId')) doc.sessionId = place.sessionId;
    if (model.schema.path('keyId')) doc.keyId = place.keyId;
    if (name === 'ApiKeyUsage') doc._id = place.keyId;
    if (name === 'SessionSlot') doc._id = `${place.tenantId}/${place.sessionId}`;
    if (name === 'SessionCapacityCount') doc._id = place.tenantId;
    for (const [fields, options] of model.schema.indexes()) {
      if (!(options as { unique?: boolean }).unique) continue;
      for (const field of Object.keys(fields)) if (!(field in doc)) doc[field] = `u-${randomUUID()}`;
    }
    // One the tenant holds already (its data key, a slot or count the real session made) is data of the same place.
    try {
      await (model.collection as unknown as mongo.Collection<Record<string, unknown>>).updateOne({ _id: doc._id } as never, { $setOnInsert: doc }, { upsert: true });
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  }
  const db = stack.ctx.models.connection.db!;
  for (const bucket of [ATTACHMENT_BUCKET, RECORDING_MEDIA_BUCKET]) {
    const fileId = `f-${randomUUID()}`;
    await db.collection(`${bucket}.files`).insertOne({ _id: fileId, length: 1, chunkSize: 255, uploadDate: new Date(), filename: 'x', metadata: { tenantId: place.tenantId, projectId: place.projectId, sessionId: place.sessionId } } as never);
    await db.collection(`${bucket}.chunks`).insertOne({ files_id: fileId, n: 0, data: Buffer.from('x') });
  }
}

/** Documents per collection (and bucket) matching a filter built for each model. */
async function census(filterOf: (model: AnyModel, name: string) => Record<string, unknown> | null): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const name of cascaded()) {
    const model = modelsByName()[name]!;
    const filter = filterOf(model, name);
    if (filter) counts[name] = await model.collection.countDocuments(filter);
  }
  return counts;
}
const bucketFiles = async (metadata: Record<string, string>) => {
  const db = stack.ctx.models.connection.db!;
  const filter = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [`metadata.${k}`, v]));
  return (await db.collection(`${ATTACHMENT_BUCKET}.files`).countDocuments(filter)) + (await db.collection(`${RECORDING_MEDIA_BUCKET}.files`).countDocuments(filter));
};

const projectFilter = (place: Place) => (model: AnyModel, name: string) => {
  const rule = CASCADE[name as keyof typeof CASCADE].project;
  if (rule === 'project') return { tenantId: place.tenantId, projectId: place.projectId };
  if (rule === 'session') return { tenantId: place.tenantId, sessionId: place.sessionId };
  if (rule === 'apiKey') return { tenantId: place.tenantId, keyId: place.keyId };
  if (rule === 'apiKeyUsage') return { tenantId: place.tenantId, _id: place.keyId };
  if (rule === 'record') return { tenantId: place.tenantId, _id: place.projectId };
  return null;
};
const tenantFilter = (tenantId: string) => (model: AnyModel, name: string) =>
  name === 'DeletionJob' ? null : name === 'Tenant' || name === 'SessionCapacityCount' ? { _id: tenantId } : { tenantId };

let main: Place;
let sibling: Place;
let other: Place;
let liveSessionId: string;

async function placeOf(t: SeededTenant, projectId: string, sessionId?: string): Promise<Place> {
  const session = sessionId ?? (await seedSession(stack.ctx, { tenantId: t.tenantId, projectId }))._id;
  const key = await stack.ctx.models.ApiKey.findOne({ tenantId: t.tenantId, projectId }).lean();
  return { tenantId: t.tenantId, projectId, sessionId: session, keyId: key!._id };
}

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx);
  globex = await seedTenant(stack.ctx);
  // A key bound to each project, so the cascade has API keys of its own to find.
  for (const [t, p] of [[acme, acme.projectId], [acme, acme.otherProjectId], [globex, globex.projectId]] as const) await t.keyWith(['session:read'], p);
  await createAgent(stack.baseUrl, acme.adminKey, acme.projectId, 'Doomed_Agent');
  const started = await api.post(`/api/projects/${acme.projectId}/sessions`, { key: acme.adminKey, json: { agentId: 'Doomed_Agent' } });
  expect(started.status).toBe(201);
  liveSessionId = started.body.session.id;
  // One turn, so the session has loaded its agents before the documents below join them.
  const temporal = await stack.ctx.temporal.client();
  await temporal.workflow.getHandle(`session/${liveSessionId}`).executeUpdate(turnUpdate, { args: [{ clientMessageId: 'c1', message: 'Hello' }] });
  main = await placeOf(acme, acme.projectId, liveSessionId);
  sibling = await placeOf(acme, acme.otherProjectId);
  other = await placeOf(globex, globex.projectId);
  for (const place of [main, sibling, other]) await seedEverywhere(place);
});
afterAll(() => stack.close());

async function waitCompleted(path: string, headers?: Record<string, string>, key?: string) {
  const res = await eventually(
    () => api.get(path, { ...(headers ? { headers } : {}), ...(key ? { key } : {}) }),
    (r) => r.status !== 200 || r.body.deletion.status === 'completed',
    60_000,
    200,
  );
  expect(res.status).toBe(200);
  expect(res.body.deletion.status).toBe('completed');
  return res.body.deletion;
}

it('refuses what the caller may not delete, and changes nothing', async () => {
  const before = await census(projectFilter(main));
  expect(Object.values(before).every((n) => n > 0)).toBe(true);
  // Another tenant's project: 404, whoever asks.
  expect((await api.delete(`/api/projects/${acme.projectId}`, { key: globex.adminKey })).status).toBe(404);
  // Without the permission: 403.
  expect((await api.delete(`/api/projects/${acme.projectId}`, { key: await acme.keyWith(['session:read', 'agent:write']) })).status).toBe(403);
  // A tenant: the operator's token only, and a tenant that exists.
  expect((await api.delete(`/api/admin/tenants/${globex.tenantId}`, { key: acme.adminKey })).status).toBe(401);
  const unknown = await api.delete('/api/admin/tenants/no-such-tenant', { headers: admin() });
  expect(unknown.status).toBe(404);
  expect(unknown.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  // Nothing deleted (the live session's last turn may still be adding its projections).
  const after = await census(projectFilter(main));
  expect(Object.entries(before).filter(([name, n]) => after[name]! < n)).toEqual([]);
  expect((await api.get(`/api/projects/${acme.projectId}`, { key: acme.adminKey })).status).toBe(200);
});

it('deletes a project: 404 at once, its workflows terminated, every collection emptied of it, the rest untouched', async () => {
  const siblingBefore = await census(projectFilter(sibling));
  const otherBefore = await census(tenantFilter(globex.tenantId));
  const contactsBefore = await stack.ctx.models.Contact.countDocuments({ tenantId: acme.tenantId });

  const res = await api.delete(`/api/projects/${acme.projectId}`, { key: acme.adminKey });
  expect(res.status).toBe(202);
  expect(res.body.deletion).toMatchObject({ target: 'project', tenantId: acme.tenantId, projectId: acme.projectId, status: 'running', completedAt: null });
  expect((await api.get(`/api/projects/${acme.projectId}`, { key: acme.adminKey })).status).toBe(404);
  const listed = await api.get('/api/projects', { key: acme.adminKey });
  expect(listed.body.projects.map((p: { id: string }) => p.id)).toEqual([acme.otherProjectId]);

  const deletion = await waitCompleted(`/api/deletions/${res.body.deletion.id}`, undefined, acme.adminKey);
  expect(deletion.workflowsEnded).toBeGreaterThanOrEqual(1);
  expect(deletion.deleted).toMatchObject({ sessions: 2, transcript_messages: expect.any(Number), projects: 1, [ATTACHMENT_BUCKET]: 1, [RECORDING_MEDIA_BUCKET]: 1 });

  const temporal = await stack.ctx.temporal.client();
  expect((await temporal.workflow.getHandle(`session/${liveSessionId}`).describe()).status.name).toBe('TERMINATED');
  const after = await census(projectFilter(main));
  expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([]);
  expect(await bucketFiles({ tenantId: acme.tenantId, projectId: acme.projectId })).toBe(0);
  // The sibling project, the tenant's contacts and the other tenant: as they were.
  expect(await census(projectFilter(sibling))).toEqual(siblingBefore);
  expect(await census(tenantFilter(globex.tenantId))).toEqual(otherBefore);
  expect(await stack.ctx.models.Contact.countDocuments({ tenantId: acme.tenantId })).toBe(contactsBefore);
  // Deleting it again: it is gone. The workflow run again (as a retry after a crash would) finds nothing left.
  expect((await api.delete(`/api/projects/${acme.projectId}`, { key: acme.adminKey })).status).toBe(404);
  const rerun = await temporal.workflow.execute<DataDeletionWorkflow>('dataDeletion', {
    workflowId: `data-deletion-rerun-${randomUUID()}`,
    taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
    args: [{ deletionId: deletion.id, tenantId: acme.tenantId, projectId: acme.projectId }],
  });
  expect(rerun).toEqual({ deletionId: deletion.id, workflowsEnded: 0, deleted: {} });
  expect((await api.get(`/api/deletions/${deletion.id}`, { key: acme.adminKey })).body.deletion.deleted).toEqual(deletion.deleted);
});

it('deletes a tenant (operator): every collection emptied of it, its keys refused, the other tenant untouched', async () => {
  const acmeBefore = await census(tenantFilter(acme.tenantId));
  const res = await api.delete(`/api/admin/tenants/${globex.tenantId}`, { headers: admin() });
  expect(res.status).toBe(202);
  expect(res.body.deletion).toMatchObject({ target: 'tenant', tenantId: globex.tenantId, projectId: null, status: 'running' });
  // Asked again while it runs (or once done, with the tenant still listed): the same deletion or 404.
  const again = await api.delete(`/api/admin/tenants/${globex.tenantId}`, { headers: admin() });
  if (again.status === 202) expect(again.body.deletion.id).toBe(res.body.deletion.id);
  else expect(again.status).toBe(404);

  const deletion = await waitCompleted(`/api/admin/deletions/${res.body.deletion.id}`, admin());
  expect(deletion.deleted).toMatchObject({ tenants: 1, projects: 2, api_keys: expect.any(Number) });
  const after = await census(tenantFilter(globex.tenantId));
  expect(Object.entries(after).filter(([, n]) => n > 0)).toEqual([]);
  expect(await bucketFiles({ tenantId: globex.tenantId })).toBe(0);
  // Refused once every API process has stopped trusting its cached read of the key.
  expect((await eventually(() => api.get('/api/projects', { key: globex.adminKey }), (r) => r.status === 401, 10_000, 100)).status).toBe(401);
  expect(await census(tenantFilter(acme.tenantId))).toEqual(acmeBefore);
});

it('a deletion whose workflow an operator terminated is started again by the reconciliation and finishes', async () => {
  const project = await createProject(stack.ctx.models, acme.tenantId, { name: `Stopped deletion ${randomUUID().slice(0, 8)}` });
  const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: project._id });
  const since = new Date(Date.now() - 60_000);
  // Requested as the API does, its workflow on a queue no worker polls, so it is still at its
  // first step when the operator terminates it: the project is already 404 and half its data left.
  const stalled = { ...stack.ctx, config: { ...stack.ctx.config, TEMPORAL_TASK_QUEUE: `no-worker-${randomUUID()}` } };
  const job = await requestDeletion(stalled, { tenantId: acme.tenantId, projectId: project._id });
  const temporal = await stack.ctx.temporal.client();
  await temporal.workflow.getHandle(`data-deletion/${acme.tenantId}/${project._id}`).terminate('operator: stuck deletion');
  expect((await api.delete(`/api/projects/${project._id}`, { key: acme.adminKey })).status).toBe(404);
  const deps = { models: stack.ctx.models, config: stack.ctx.config, logger: stack.ctx.logger, temporalClient: temporal };
  // Visibility lists a close a moment after it: looked at again until the deletion is in.
  await eventually(() => reconcileClosedWorkflows(deps, since), (r) => r.deletionsRestarted === 1, 30_000, 250);
  const deletion = await waitCompleted(`/api/deletions/${job._id}`, undefined, acme.adminKey);
  expect(deletion.deleted).toMatchObject({ sessions: 1, projects: 1 });
  expect(await stack.ctx.models.Session.exists({ _id: session._id })).toBeNull();
  // Done: the same closed run is looked at again and nothing is started.
  expect((await reconcileClosedWorkflows(deps, since)).deletionsRestarted).toBe(0);
});
