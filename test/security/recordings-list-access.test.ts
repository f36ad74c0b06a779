// The recordings list answers only a platform key bound to the project with `recordings.read`:
// user tokens (even an admin's) and tenant-wide keys get 403 PLATFORM_API_KEY_REQUIRED, a key
// without the scope 403 PERMISSION_REQUIRED, and another project or tenant is 404.
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../support/stack';
import { client } from '../support/http';
import { makeWav, scopedKey, seedSession, storeRecording } from '../integration/telephony/recording-fixtures';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let sessionId: string;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  sessionId = await seedSession(stack.ctx, t);
  await storeRecording(stack.ctx, { ...t, sessionId, channelConnectionId: 'cc_test' }, makeWav(100));
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const path = (projectId = t.projectId, session = sessionId) => `/api/public/recordings/projects/${projectId}/sessions/${session}/recordings`;

it('lists for a project key with recordings.read, in x-api-key or as Bearer', async () => {
  const { key } = await scopedKey(stack.ctx, t, ['recordings.read']);
  const both: Record<string, string>[] = [{ 'x-api-key': key }, { authorization: `Bearer ${key}` }];
  for (const headers of both) {
    const res = await api.get(path(), { headers });
    expect(res.status).toBe(200);
    expect(res.body.data.recordings).toHaveLength(1);
    expect(res.body.data.recordings[0].files[0].url).toEqual(expect.any(String));
  }
});

it('refuses user tokens, even an admin\'s, with PLATFORM_API_KEY_REQUIRED', async () => {
  const { email, password } = await t.user(['admin']);
  const login = await api.post('/api/auth/login', { json: { email, password } });
  expect(login.status).toBe(200);
  const token: string = login.body.token ?? login.body.data?.token;
  const res = await api.get(path(), { token });
  expect(res.status).toBe(403);
  expect(res.body.error.code).toBe('PLATFORM_API_KEY_REQUIRED');
  expect(JSON.stringify(res.body)).not.toContain('/media/content/');
});

it('refuses a tenant-wide key with PLATFORM_API_KEY_REQUIRED', async () => {
  const res = await api.get(path(), { headers: { 'x-api-key': t.adminKey } });
  expect(res.status).toBe(403);
  expect(res.body.error.code).toBe('PLATFORM_API_KEY_REQUIRED');
});

it('refuses a project key without recordings.read with PERMISSION_REQUIRED naming recording:read', async () => {
  const { key } = await scopedKey(stack.ctx, t, ['SESSIONS_LIST', 'outbound_calls.read']);
  const permissionStyle = await t.keyWith(['session:read', 'agent:read'], t.projectId);
  for (const k of [key, permissionStyle]) {
    const res = await api.get(path(), { headers: { 'x-api-key': k } });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ success: false, error: { code: 'PERMISSION_REQUIRED' }, required: 'recording:read' });
    expect(JSON.stringify(res.body)).not.toContain('/media/content/');
  }
});

it("answers 404 for another project's or tenant's project, and a session not in the project", async () => {
  const { key } = await scopedKey(stack.ctx, t, ['recordings.read']);
  const otherProject = await api.get(path(t.otherProjectId), { headers: { 'x-api-key': key } });
  expect(otherProject.status).toBe(404);
  expect(otherProject.body.error.code).toBe('PROJECT_NOT_FOUND');
  const stranger = await seedTenant(stack.ctx);
  const theirSession = await seedSession(stack.ctx, stranger);
  await storeRecording(stack.ctx, { ...stranger, sessionId: theirSession, channelConnectionId: 'cc_test' }, makeWav(100));
  const theirProject = await api.get(path(stranger.projectId, theirSession), { headers: { 'x-api-key': key } });
  expect(theirProject.status).toBe(404);
  expect(theirProject.body.error.code).toBe('PROJECT_NOT_FOUND');
  // Their session id under our project: not ours, whatever it holds.
  const theirSessionHere = await api.get(path(t.projectId, theirSession), { headers: { 'x-api-key': key } });
  expect(theirSessionHere.status).toBe(404);
  expect(theirSessionHere.body.error.code).toBe('SESSION_NOT_FOUND');
  const neighbourSession = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.otherProjectId });
  const crossProject = await api.get(path(t.projectId, neighbourSession), { headers: { 'x-api-key': key } });
  expect(crossProject.body.error.code).toBe('SESSION_NOT_FOUND');
});

it("conceals a session of an environment the key is not bound to (404)", async () => {
  const prodOnly = await scopedKey(stack.ctx, t, ['recordings.read'], ['prod']);
  // The session seeded above runs in `dev`.
  const res = await api.get(path(), { headers: { 'x-api-key': prodOnly.key } });
  expect(res.status).toBe(404);
  expect(res.body.error.code).toBe('SESSION_NOT_FOUND');
  const devToo = await scopedKey(stack.ctx, t, ['recordings.read'], ['prod', 'dev']);
  expect((await api.get(path(), { headers: { 'x-api-key': devToo.key } })).status).toBe(200);
});
