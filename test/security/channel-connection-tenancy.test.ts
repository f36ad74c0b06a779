// Voice channel connections stay inside their tenant, project and a bound key's environments:
// another tenant's or project's connection, or one of an environment the key is not bound to, is
// 404 CHANNEL_NOT_FOUND for a read, a change and a delete alike, and is left out of lists; a key
// bound to environments cannot create one elsewhere (403); a key holding only the read scope
// changes nothing. After every refusal the connection is as it was.
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
});

const base = (projectId: string) => `/api/projects/${projectId}/channel-connections`;
const body = (extra: Record<string, unknown> = {}) => ({
  name: 'Support line',
  accountSid: `AC${'ab'.repeat(16)}`,
  authToken: 'token-of-the-account',
  callerNumber: '+15551239876',
  ...extra,
});

/** A platform key of a scope granting `grants`, optionally bound to environments. */
async function scopedKey(grants: string[], environments?: string[]): Promise<string> {
  const scope = await api.post(`/api/public/apps/${t.projectId}/scopes`, {
    key: t.adminKey,
    json: { scope_name: `cc-${Math.random().toString(36).slice(2, 10)}`, permissions: Object.fromEntries(grants.map((g) => [g, 'YES'])) },
  });
  expect(scope.status).toBe(201);
  const key = await api.post('/api/public/apikeys/create', {
    key: t.adminKey,
    json: { scope_name: scope.body.scope.scope_name, api_key_name: 'k', app_id: t.projectId, ...(environments ? { environments } : {}) },
  });
  expect(key.status).toBe(201);
  return key.body.api_key.apikey as string;
}

it("hides a connection from other tenants, other projects and keys of other environments, and leaves it unchanged", async () => {
  const created = await api.post(base(t.projectId), { key: t.adminKey, json: body() });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  const before = (await api.get(`${base(t.projectId)}/${id}`, { key: t.adminKey })).body.data;

  const projectBound = await t.keyWith(['admin'], t.otherProjectId);
  const staging = await scopedKey(['channel_connections.write'], ['staging']);
  const attempts: [string, string, string][] = [
    // [who, key, path]
    ['another tenant, its own project', other.adminKey, `${base(other.projectId)}/${id}`],
    ['same tenant, another project', t.adminKey, `${base(t.otherProjectId)}/${id}`],
    ['a key bound to another project', projectBound, `${base(t.otherProjectId)}/${id}`],
    ['a key bound to staging', staging, `${base(t.projectId)}/${id}`],
  ];
  for (const [who, key, path] of attempts) {
    for (const res of [
      await api.get(path, { key }),
      await api.patch(path, { key, json: { name: 'Taken over', status: 'disabled' } }),
      await api.delete(path, { key }),
    ]) {
      expect({ who, status: res.status, code: res.body?.error?.code }).toEqual({ who, status: 404, code: 'CHANNEL_NOT_FOUND' });
    }
  }
  // The project itself is not visible to another tenant or a key of another project.
  for (const key of [other.adminKey, projectBound]) {
    expect((await api.get(`${base(t.projectId)}/${id}`, { key })).status).toBe(404);
    expect((await api.patch(`${base(t.projectId)}/${id}`, { key, json: { name: 'Taken over' } })).status).toBe(404);
  }
  // Lists leave it out.
  expect((await api.get(base(other.projectId), { key: other.adminKey })).body.data).toEqual([]);
  expect((await api.get(base(t.otherProjectId), { key: t.adminKey })).body.data).toEqual([]);
  const stagingList = await api.get(base(t.projectId), { key: staging });
  expect(stagingList.status).toBe(200);
  expect(stagingList.body).toMatchObject({ data: [], total: 0 });

  // A staging key cannot create a dev connection, nor move one into dev.
  const refused = await api.post(base(t.projectId), { key: staging, json: body({ environment: 'dev' }) });
  expect([refused.status, refused.body.error.code]).toEqual([403, 'FORBIDDEN']);
  const own = await api.post(base(t.projectId), { key: staging, json: body({ environment: 'staging' }) });
  expect(own.status).toBe(201);
  const moved = await api.patch(`${base(t.projectId)}/${own.body.data.id}`, { key: staging, json: { environment: 'dev' } });
  expect([moved.status, moved.body.error.code]).toEqual([403, 'FORBIDDEN']);
  expect((await api.get(`${base(t.projectId)}/${own.body.data.id}`, { key: t.adminKey })).body.data.environment).toBe('staging');

  // A key with the read scope only reads.
  const reader = await scopedKey(['channel_connections.read']);
  expect((await api.get(`${base(t.projectId)}/${id}`, { key: reader })).status).toBe(200);
  for (const res of [
    await api.post(base(t.projectId), { key: reader, json: body() }),
    await api.patch(`${base(t.projectId)}/${id}`, { key: reader, json: { status: 'disabled' } }),
    await api.delete(`${base(t.projectId)}/${id}`, { key: reader }),
  ]) {
    expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
  }

  const after = await api.get(`${base(t.projectId)}/${id}`, { key: t.adminKey });
  expect(after.status).toBe(200);
  expect(after.body.data).toEqual(before);
  expect(await stack.ctx.models.ChannelConnection.countDocuments({ tenantId: t.tenantId })).toBe(2);
  expect(await stack.ctx.models.ChannelConnection.countDocuments({ tenantId: other.tenantId })).toBe(0);
});
