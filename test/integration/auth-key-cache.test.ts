// API keys this API process has already seen (api/middleware/auth.ts remembers hash -> key id
// and the principal it produced; api/http/route.ts starts the tenant charge and the lookups with
// that principal while the key is re-read by _id). Here API_KEY_CACHE_MS is 0, so every request
// re-reads its key, as each request does once what was read has aged past that window
// (auth-key-window.test.ts covers the window). Whatever was remembered, a request that reads must
// be judged on the key as it stands: revoked, expired, deleted, rotated, narrowed or re-bound keys
// take effect on that request, and nothing of another tenant becomes visible.
import { randomBytes } from 'node:crypto';
import { sha256Hex } from '../../lib/crypto';
import { type Permission } from '../../lib/permissions';
import { createApiKey } from '../../core/tenancy/accounts';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';

// Each test uses its own tenant, so this budget is per test; the budget test counts on it.
const TENANT_BUDGET = 25;

let stack: TestStack;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ env: { RATE_LIMIT_REQUESTS: String(TENANT_BUDGET), RATE_LIMIT_WINDOW_SECONDS: '60', API_KEY_CACHE_MS: '0' } });
  api = client(stack.baseUrl);
});
afterAll(() => stack.close());

async function mintKey(t: SeededTenant, permissions: Permission[], options: { projectId?: string | null; expiresAt?: Date } = {}) {
  const { key, apiKey } = await createApiKey(stack.ctx.models, t.tenantId, { name: 'cached', permissions, ...options });
  return { key, id: apiKey._id };
}

/** Uses a key a few times so this process has certainly remembered it. */
async function warm(key: string, path = '/api/auth/me'): Promise<void> {
  for (let i = 0; i < 2; i++) expect((await api.get(path, { key })).status).toBe(200);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('refuses a remembered key on the very next request after it is revoked (route or database)', async () => {
  const t = await seedTenant(stack.ctx);
  const viaRoute = await mintKey(t, ['agent:read']);
  await warm(viaRoute.key, `/api/projects/${t.projectId}/agents`);
  expect((await api.delete(`/api/api-keys/${viaRoute.id}`, { key: t.adminKey })).status).toBe(200);
  for (const path of ['/api/auth/me', `/api/projects/${t.projectId}/agents`, `/api/projects/${t.projectId}`]) {
    const res = await api.get(path, { key: viaRoute.key });
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: 'UNAUTHORIZED', message: expect.stringMatching(/revoked/) });
  }

  const viaDb = await mintKey(t, ['admin']);
  await warm(viaDb.key);
  await stack.ctx.models.ApiKey.updateOne({ _id: viaDb.id }, { $set: { revokedAt: new Date() } });
  expect((await api.get('/api/auth/me', { key: viaDb.key })).status).toBe(401);
  // Nothing is created on the word of a remembered admin key that is now revoked.
  const created = await api.post(`/api/projects/${t.projectId}/agents`, { key: viaDb.key, json: { name: 'Ghost_Agent', dslContent: 'AGENT: Ghost_Agent\nGOAL: "x"\n' } });
  expect(created.status).toBe(401);
  expect(await stack.ctx.models.Agent.exists({ tenantId: t.tenantId, name: 'Ghost_Agent' })).toBeNull();
});

it('refuses a remembered key once it has expired, whether expiresAt was moved or simply passed', async () => {
  const t = await seedTenant(stack.ctx);
  const moved = await mintKey(t, ['agent:read']);
  await warm(moved.key);
  await stack.ctx.models.ApiKey.updateOne({ _id: moved.id }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
  const res = await api.get('/api/auth/me', { key: moved.key });
  expect(res.status).toBe(401);
  expect(res.body.error.message).toMatch(/expired/);

  // Nothing changes in the database: the expiry time just passes.
  const shortLived = await mintKey(t, ['agent:read'], { expiresAt: new Date(Date.now() + 1500) });
  await warm(shortLived.key, `/api/projects/${t.projectId}`);
  await sleep(Math.max(0, 1500 - 200) + 400);
  for (const path of ['/api/auth/me', `/api/projects/${t.projectId}`]) {
    const after = await api.get(path, { key: shortLived.key });
    expect(after.status).toBe(401);
    expect(after.body.error.message).toMatch(/expired/);
  }
});

it('refuses a remembered key that was deleted, or whose secret was rotated in place', async () => {
  const t = await seedTenant(stack.ctx);
  const deleted = await mintKey(t, ['admin']);
  await warm(deleted.key);
  await stack.ctx.models.ApiKey.deleteOne({ _id: deleted.id });
  expect((await api.get('/api/auth/me', { key: deleted.key })).status).toBe(401);

  // Same key id, new secret: the old secret no longer matches the document read by id.
  const rotated = await mintKey(t, ['admin']);
  await warm(rotated.key);
  const newKey = `abl_${randomBytes(24).toString('hex')}`;
  await stack.ctx.models.ApiKey.updateOne({ _id: rotated.id }, { $set: { keyHash: sha256Hex(newKey) } });
  const old = await api.get('/api/auth/me', { key: rotated.key });
  expect(old.status).toBe(401);
  expect(old.body.error.message).toMatch(/Invalid API key/);
  const fresh = await api.get('/api/auth/me', { key: newKey });
  expect(fresh.status).toBe(200);
  expect(fresh.body.principal.id).toBe(rotated.id);
  // The old secret stays refused now that the id is remembered for the new one.
  expect((await api.get('/api/auth/me', { key: rotated.key })).status).toBe(401);
});

it('answers 403 on the next request once a remembered key loses a permission, and 200 once it gains it', async () => {
  const t = await seedTenant(stack.ctx);
  const { key, id } = await mintKey(t, ['agent:read', 'agent:write']);
  const agents = `/api/projects/${t.projectId}/agents`;
  await warm(key, agents);
  const dsl = (name: string) => ({ name, dslContent: `AGENT: ${name}\nGOAL: "Help."\n` });
  expect((await api.post(agents, { key, json: dsl('First_Agent') })).status).toBe(201);

  await stack.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { permissions: ['agent:read'] } });
  const denied = await api.post(agents, { key, json: dsl('Second_Agent') });
  expect(denied.status).toBe(403);
  expect(denied.body.error).toEqual({ code: 'FORBIDDEN', message: expect.stringContaining("'agent:write'") });
  expect(await stack.ctx.models.Agent.exists({ tenantId: t.tenantId, name: 'Second_Agent' })).toBeNull();
  expect((await api.get(agents, { key })).status).toBe(200);
  expect((await api.get('/api/auth/me', { key })).body.principal.permissions).toEqual(['agent:read']);

  // admin implies every permission: granted, the same request goes through at once.
  await stack.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { permissions: ['admin'] } });
  expect((await api.post(agents, { key, json: dsl('Second_Agent') })).status).toBe(201);
  await stack.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { permissions: [] } });
  expect((await api.get(agents, { key })).status).toBe(403);
  expect((await api.get('/api/api-keys', { key })).status).toBe(403);
});

it('confines a remembered key to the project it is bound to after use (404 elsewhere)', async () => {
  const t = await seedTenant(stack.ctx);
  const { key, id } = await mintKey(t, ['admin']);
  await warm(key, `/api/projects/${t.otherProjectId}`);
  await stack.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { projectId: t.projectId } });
  const other = await api.get(`/api/projects/${t.otherProjectId}`, { key });
  expect(other.status).toBe(404);
  expect(other.body.error.code).toBe('NOT_FOUND');
  expect((await api.get(`/api/projects/${t.otherProjectId}/agents`, { key })).status).toBe(404);
  expect((await api.get(`/api/projects/${t.projectId}`, { key })).status).toBe(200);
  const list = await api.get('/api/projects', { key });
  expect(list.body.projects.map((p: { id: string }) => p.id)).toEqual([t.projectId]);
});

it("answers 404 for another tenant's project while the key is remembered, and starts nothing there", async () => {
  const acme = await seedTenant(stack.ctx);
  const globex = await seedTenant(stack.ctx);
  const { key } = await mintKey(acme, ['admin']);
  await warm(key, `/api/projects/${acme.projectId}`);
  const missing = await api.get('/api/projects/doesnotexist000000000000', { key });
  for (let i = 0; i < 2; i++) {
    for (const path of [`/api/projects/${globex.projectId}`, `/api/projects/${globex.projectId}/agents`, `/api/projects/${globex.projectId}/sessions`]) {
      const res = await api.get(path, { key });
      expect(res.status).toBe(404);
      // Indistinguishable from a project that does not exist.
      if (path === `/api/projects/${globex.projectId}`) expect(res.body).toEqual(missing.body);
    }
    const chat = await api.post('/api/v1/chat/agent', { key, json: { projectId: globex.projectId, message: 'hello' } });
    expect(chat.status).toBe(404);
  }
  expect(await stack.ctx.models.Session.countDocuments({ tenantId: globex.tenantId })).toBe(0);
  expect(await stack.ctx.models.Session.countDocuments({ projectId: globex.projectId })).toBe(0);
  // The other tenant's own key still sees its project.
  expect((await api.get(`/api/projects/${globex.projectId}`, { key: globex.adminKey })).status).toBe(200);
});

it('rejects malformed keys with 401, including near misses of a remembered key', async () => {
  const t = await seedTenant(stack.ctx);
  const { key } = await mintKey(t, ['admin']);
  await warm(key);
  const flipped = key.slice(0, -1) + (key.endsWith('0') ? '1' : '0');
  const cases: Record<string, string>[] = [
    { authorization: `Bearer ${key.slice(0, -1)}` },
    { authorization: `Bearer ${key}0` },
    { authorization: `Bearer ${key.toUpperCase().replace('ABL_', 'abl_')}` },
    { authorization: `Bearer ${key.replace('abl_', 'abx_')}` },
    { authorization: `Bearer ${flipped}` },
    { authorization: `Bearer abl_${'z'.repeat(48)}` },
    { authorization: `Bearer ${key} ${key}` },
    { authorization: `Token ${key}` },
    { 'x-api-key': key.slice(0, -1) },
    { 'x-api-key': flipped },
  ];
  for (const headers of cases) {
    const res = await api.get(`/api/projects/${t.projectId}`, { headers });
    expect({ headers, status: res.status, code: res.body?.error?.code }).toEqual({ headers, status: 401, code: 'UNAUTHORIZED' });
  }
  expect((await api.get('/api/auth/me', { key })).status).toBe(200);
});

it("does not spend the tenant's request budget on requests with a revoked key", async () => {
  // The window is a clock-aligned minute: start early in one so every charge lands in it.
  const left = 60_000 - (Date.now() % 60_000);
  if (left < 8000) await sleep(left + 50);
  const t = await seedTenant(stack.ctx);
  const { key, id } = await mintKey(t, ['agent:read']);
  await warm(key);
  await stack.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { revokedAt: new Date() } });
  for (let i = 0; i < TENANT_BUDGET + 5; i++) expect((await api.get('/api/auth/me', { key })).status).toBe(401);
  // The tenant's working keys are unaffected: the revoked key's holder cannot exhaust them.
  const ok = await api.get('/api/auth/me', { key: t.adminKey });
  expect(ok.status).toBe(200);
  // Two warm-up requests, this one, and at most one charge made before the revocation was seen.
  expect(Number(ok.headers.get('x-ratelimit-remaining'))).toBeGreaterThanOrEqual(TENANT_BUDGET - 4);
});

it('shows when a key was last used in the key listing', async () => {
  const t = await seedTenant(stack.ctx);
  const used = await mintKey(t, ['agent:read']);
  const unused = await mintKey(t, ['agent:read']);
  const before = Date.now();
  expect((await api.get('/api/auth/me', { key: used.key })).status).toBe(200);
  let listed: { id: string; lastUsedAt: string | null }[] = [];
  for (let i = 0; i < 50; i++) {
    listed = (await api.get('/api/api-keys', { key: t.adminKey })).body.apiKeys;
    if (listed.find((k) => k.id === used.id)?.lastUsedAt) break;
    await sleep(20);
  }
  expect(Date.parse(listed.find((k) => k.id === used.id)!.lastUsedAt!)).toBeGreaterThanOrEqual(before - 1000);
  expect(listed.find((k) => k.id === unused.id)!.lastUsedAt).toBeNull();
  // Use never writes the key document: on FerretDB, two concurrent updates of one document lose
  // one, and a usage write racing a revocation put a revoked key back (seen once in a full run).
  expect((await stack.ctx.models.ApiKey.findById(used.id).lean())!.lastUsedAt).toBeNull();
});
