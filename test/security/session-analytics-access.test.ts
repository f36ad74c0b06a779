// Who may read a project's session analytics: a platform key bound to that project with session
// read access, and only the sessions of the environments it is bound to. No key is 401; a user
// token or a tenant-wide key 403 PLATFORM_API_KEY_REQUIRED; a key without the access 403; another
// project's or tenant's project 404, even with a session id of theirs. Every refusal has the
// spec's error body and lists nothing.
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { scopedKey } from '../integration/telephony/recording-fixtures';
import { seedSessions } from '../integration/session-analytics/fixtures';

let stack: TestStack;
let t: SeededTenant;
let stranger: SeededTenant;
let api: ReturnType<typeof client>;
let ours: string[];
let theirs: string[];

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  stranger = await seedTenant(stack.ctx);
  ours = await seedSessions(stack.ctx, t, [{ environment: 'production' }, { environment: 'staging' }, { environment: 'dev' }]);
  theirs = await seedSessions(stack.ctx, stranger, [{ environment: 'production' }]);
  await seedSessions(stack.ctx, { tenantId: t.tenantId, projectId: t.otherProjectId }, [{ environment: 'production' }]);
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const list = (projectId: string, headers: Record<string, string>, query = 'fromDate=2000-01-01&toDate=2100-01-01') =>
  api.get(`/api/public/analytics/projects/${projectId}/sessions?${query}`, { headers });

function refused(res: { status: number; body: Record<string, unknown>; text: string }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({ success: false, error: { code }, message: expect.any(String) });
  expect(res.text).not.toContain('"sessions"');
}

it('lists for a project key with session read access', async () => {
  const { key } = await scopedKey(stack.ctx, t, ['SESSIONS_LIST']);
  const res = await list(t.projectId, { 'x-api-key': key });
  expect(res.status).toBe(200);
  expect(res.body.sessions.map((s: { id: string }) => s.id).sort()).toEqual([...ours].sort());
});

it('answers 401 without a key or with a wrong one', async () => {
  refused(await list(t.projectId, {}), 401, 'UNAUTHORIZED');
  refused(await list(t.projectId, { 'x-api-key': `abl_${'0'.repeat(48)}` }), 401, 'UNAUTHORIZED');
});

it('refuses user tokens and tenant-wide keys with PLATFORM_API_KEY_REQUIRED', async () => {
  const { email, password } = await t.user(['admin']);
  const login = await api.post('/api/auth/login', { json: { email, password } });
  const token: string = login.body.token ?? login.body.data?.token;
  refused(await api.get(`/api/public/analytics/projects/${t.projectId}/sessions?fromDate=2000-01-01&toDate=2100-01-01`, { token }), 403, 'PLATFORM_API_KEY_REQUIRED');
  refused(await list(t.projectId, { 'x-api-key': t.adminKey }), 403, 'PLATFORM_API_KEY_REQUIRED');
});

it('refuses a project key without session read access with 403 naming the permission', async () => {
  const { key } = await scopedKey(stack.ctx, t, ['outbound_calls.read']);
  const permissionStyle = await t.keyWith(['agent:read'], t.projectId);
  for (const k of [key, permissionStyle]) {
    const res = await list(t.projectId, { 'x-api-key': k });
    refused(res, 403, 'PERMISSION_REQUIRED');
    expect(res.body).toMatchObject({ error: { details: { required: 'session:read' } }, required: 'session:read' });
  }
});

it("answers 404 for another project of the tenant and for another tenant's project, whatever ids are asked for", async () => {
  const { key } = await scopedKey(stack.ctx, t, ['SESSIONS_LIST']);
  refused(await list(t.otherProjectId, { 'x-api-key': key }), 404, 'NOT_FOUND');
  refused(await list(stranger.projectId, { 'x-api-key': key }, `sessionIds=${theirs[0]}`), 404, 'NOT_FOUND');
  // Their session id under our project: not listed.
  const here = await list(t.projectId, { 'x-api-key': key }, `sessionIds=${theirs[0]}`);
  expect(here.status).toBe(200);
  expect(here.body).toMatchObject({ total: 0, sessions: [] });
});

it("shows a key bound to environments only their sessions, and refuses asking for others", async () => {
  const { key } = await scopedKey(stack.ctx, t, ['SESSIONS_LIST'], ['production', 'staging']);
  const res = await list(t.projectId, { 'x-api-key': key });
  expect(res.status).toBe(200);
  expect(res.body.sessions.map((s: { environment: string }) => s.environment).sort()).toEqual(['production', 'staging']);
  const byId = await list(t.projectId, { 'x-api-key': key }, `sessionIds=${ours.join(',')}`);
  expect(byId.body.total).toBe(2);
  refused(await list(t.projectId, { 'x-api-key': key }, 'fromDate=2000-01-01&toDate=2100-01-01&environment=dev'), 403, 'FORBIDDEN');
  const post = await api.post(`/api/public/analytics/projects/${t.projectId}/sessions`, { headers: { 'x-api-key': key }, json: { sessionIds: ours, environment: ['production', 'dev'] } });
  refused(post, 403, 'FORBIDDEN');
});
