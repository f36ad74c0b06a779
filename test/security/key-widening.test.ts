// Keys and scopes never widen: a key, scope or scope change made by a credential holds no more
// than that credential does (grants, permissions, project, environments, expiry), on the public
// key API, on POST /api/api-keys and in the operator's CLI. The attacker holds a tenant's narrow
// key and tries to turn it into a wider one.
import { adminInProcess } from '../support/admin-cli';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { createApiKey } from '../../core/tenancy/accounts';
import { type Permission } from '../../lib/permissions';
import { sha256Hex } from '../../lib/crypto';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

beforeAll(async () => {
  // Scope changes wait API_KEY_CACHE_MS before they answer; keep it short here.
  stack = await startTestStack({ env: { API_KEY_CACHE_MS: '100' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
});
afterAll(() => stack.close());

const scopes = () => `/api/public/apps/${t.projectId}/scopes`;
let counter = 0;

/** A scope of the app with these names YES, made by the tenant's admin key. */
async function scopeWith(grants: string[]) {
  const res = await api.post(scopes(), { key: t.adminKey, json: { scope_name: `scope-${++counter}`, permissions: Object.fromEntries(grants.map((g) => [g, 'YES'])) } });
  expect(res.status).toBe(201);
  return res.body.scope as { scope_id: string; scope_name: string; permissions: Record<string, string> };
}

/** A key of the scope, made by the admin key (so not bounded by anything but the request). */
async function keyIn(scope: { scope_name: string }, extra: Record<string, unknown> = {}) {
  const res = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: scope.scope_name, api_key_name: `key-${++counter}`, app_id: t.projectId, ...extra } });
  expect(res.status).toBe(201);
  return res.body.api_key.apikey as string;
}

/** A permission-style key straight from the service (as the seed and the CLI make them). */
async function permissionKey(permissions: Permission[], extra: { projectId?: string | null; environments?: string[]; expiresAt?: Date | null } = {}) {
  return (await createApiKey(stack.ctx.models, t.tenantId, { name: `pk-${++counter}`, permissions, ...extra })).key;
}

const mint = (key: string, json: Record<string, unknown>) => api.post('/api/public/apikeys/create', { key, json: { api_key_name: `minted-${++counter}`, ...json } });
const keyCount = () => stack.ctx.models.ApiKey.countDocuments({ tenantId: t.tenantId });

describe('a key with API_SCOPE_KEY_FULL', () => {
  it('cannot make a key in a scope that grants more than it holds, only in one within its own grants', async () => {
    const manager = await keyIn(await scopeWith(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']));
    const wide = await scopeWith(['APP_FULL', 'SESSIONS_LIST']);
    const before = await keyCount();
    const refused = await mint(manager, { scope_name: wide.scope_name });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('APP_FULL') });
    expect(refused.body.error.message).not.toContain('SESSIONS_LIST');
    expect(await keyCount()).toBe(before);

    const narrow = await scopeWith(['SESSIONS_LIST']);
    const ok = await mint(manager, { scope_name: narrow.scope_name });
    expect(ok.status).toBe(201);
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key: ok.body.api_key.apikey })).status).toBe(200);
  });

  it('cannot create a scope that grants more than it holds, nor a key in it', async () => {
    const manager = await keyIn(await scopeWith(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']));
    const name = `escalate-${++counter}`;
    const refused = await api.post(scopes(), { key: manager, json: { scope_name: name, permissions: { SESSIONS_LIST: 'YES', APP_FULL: 'YES', 'outbound_calls.initiate': 'YES' } } });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect(refused.body.error.message).toMatch(/APP_FULL.*outbound_calls\.initiate/);
    expect(await stack.ctx.models.ApiScope.countDocuments({ tenantId: t.tenantId, name })).toBe(0);
    // Only what it holds itself (a NO changes nothing) is accepted.
    const ok = await api.post(scopes(), { key: manager, json: { scope_name: name, permissions: { SESSIONS_LIST: 'YES', API_SCOPE_KEY_FULL: 'YES', APP_FULL: 'NO' } } });
    expect(ok.status).toBe(201);
    expect(ok.body.scope.permissions).toMatchObject({ SESSIONS_LIST: 'YES', API_SCOPE_KEY_FULL: 'YES', APP_FULL: 'NO' });
  });

  it('cannot bind a key to more environments than its own, and gives a new key its own when none are named', async () => {
    const manager = await keyIn(await scopeWith(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']), { environments: ['staging'] });
    const target = await scopeWith(['SESSIONS_LIST']);
    const before = await keyCount();
    for (const environments of [['production'], ['staging', 'production']]) {
      const refused = await mint(manager, { scope_name: target.scope_name, environments });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/staging.*production/) });
    }
    expect(await keyCount()).toBe(before);
    const defaulted = await mint(manager, { scope_name: target.scope_name });
    expect(defaulted.status).toBe(201);
    expect(defaulted.body.api_key.environments).toEqual(['staging']);
    const named = await mint(manager, { scope_name: target.scope_name, environments: ['staging'] });
    expect(named.body.api_key.environments).toEqual(['staging']);
  });

  it('cannot make a key that outlives it, and gives a new key its own expiry when none is named', async () => {
    const manager = await keyIn(await scopeWith(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']), { expiry: '30_days' });
    const target = await scopeWith(['SESSIONS_LIST']);
    const own = (await stack.ctx.models.ApiKey.findOne({ keyHash: sha256Hex(manager) }).lean())!.expiresAt!;
    for (const expiry of ['never', '90_days', new Date(own.getTime() + 60_000).toISOString()]) {
      const refused = await mint(manager, { scope_name: target.scope_name, expiry });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
    }
    const defaulted = await mint(manager, { scope_name: target.scope_name });
    expect(defaulted.status).toBe(201);
    expect(defaulted.body.api_key.expires_at).toBe(own.toISOString());
    const sooner = await mint(manager, { scope_name: target.scope_name, expiry: new Date(own.getTime() - 60_000).toISOString() });
    expect(sooner.status).toBe(201);
  });
});

describe('revoking keys', () => {
  it('a key with API_SCOPE_KEY_FULL cannot revoke a key that holds more than it does, only one within its own reach', async () => {
    const manager = await keyIn(await scopeWith(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']), { environments: ['staging'] });
    const keyId = async (key: string) => (await stack.ctx.models.ApiKey.findOne({ keyHash: sha256Hex(key) }).lean())!._id;
    const revoke = async (key: string) => api.delete(`/api/public/apikeys/${await keyId(key)}`, { key: manager });

    // Wider grants: an APP_FULL key of the app, and a permission-style admin key bound to it.
    const wide = await keyIn(await scopeWith(['APP_FULL']), { environments: ['staging'] });
    const admin = await permissionKey(['admin'], { projectId: t.projectId });
    // Same grants, but an environment the manager is not bound to.
    const elsewhere = await keyIn(await scopeWith(['SESSIONS_LIST']), { environments: ['production'] });
    for (const target of [wide, admin, elsewhere]) {
      const refused = await revoke(target);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
      expect(await stack.ctx.models.ApiKey.countDocuments({ keyHash: sha256Hex(target) })).toBe(1);
    }
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key: wide })).status).toBe(200);

    const narrow = await keyIn(await scopeWith(['SESSIONS_LIST']), { environments: ['staging'] });
    expect((await revoke(narrow)).status).toBe(200);
    expect(await stack.ctx.models.ApiKey.countDocuments({ keyHash: sha256Hex(narrow) })).toBe(0);
  });
});

describe('revoking keys (admin)', () => {
  it('an environment-bound admin key cannot revoke a key that acts in other environments', async () => {
    const bound = await permissionKey(['admin'], { environments: ['staging'] });
    const unbound = await createApiKey(stack.ctx.models, t.tenantId, { name: `pk-${++counter}`, permissions: ['session:read'] });
    const refused = await api.delete(`/api/api-keys/${unbound.apiKey._id}`, { key: bound });
    expect(refused.status).toBe(403);
    expect((await stack.ctx.models.ApiKey.findById(unbound.apiKey._id).lean())?.revokedAt).toBeNull();
    const within = await createApiKey(stack.ctx.models, t.tenantId, { name: `pk-${++counter}`, permissions: ['session:read'], environments: ['staging'] });
    expect((await api.delete(`/api/api-keys/${within.apiKey._id}`, { key: bound })).status).toBe(200);
  });
});

describe('a key of a scope with API_SCOPE_KEY_EDIT', () => {
  it('can narrow its own scope but never widen it, and a refused change changes nothing', async () => {
    const scope = await scopeWith(['API_SCOPE_KEY_EDIT', 'SESSIONS_LIST', 'AGENTS_VIEW']);
    const key = await keyIn(scope);
    const path = `${scopes()}/${scope.scope_id}`;
    for (const permissions of [{ APP_FULL: 'YES' }, { API_SCOPE_KEY_FULL: 'YES' }, { SESSIONS_LIST: 'NO', 'recordings.read': 'YES' }]) {
      const refused = await api.put(path, { key, json: { permissions, description: 'changed' } });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/widen/) });
    }
    const unchanged = await api.get(path, { key: t.adminKey });
    expect(unchanged.body.scope).toMatchObject({ description: '', permissions: { SESSIONS_LIST: 'YES', AGENTS_VIEW: 'YES', APP_FULL: 'NO', API_SCOPE_KEY_FULL: 'NO', 'recordings.read': 'NO' } });
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(200);

    // Narrowing (and restating what it already holds) is accepted, and in force when it returns.
    const narrowed = await api.put(path, { key, json: { permissions: { SESSIONS_LIST: 'NO', AGENTS_VIEW: 'YES' } } });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.scope.permissions).toMatchObject({ SESSIONS_LIST: 'NO', AGENTS_VIEW: 'YES', API_SCOPE_KEY_EDIT: 'YES' });
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(403);
    // What it gave up it cannot take back.
    const back = await api.put(path, { key, json: { permissions: { SESSIONS_LIST: 'YES' } } });
    expect(back.status).toBe(403);
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(403);
  });
});

describe('credentials other than scoped keys hold what their permissions give', () => {
  it('bounds a permission-style key and a user by their permissions: no admin, no names beyond them', async () => {
    const manager = await permissionKey(['api_key:manage', 'api_key:read', 'session:read'], { projectId: t.projectId });
    const appView = await scopeWith(['APP_VIEW']);
    expect((await mint(manager, { scope_name: appView.scope_name })).status).toBe(403);
    // `outbound_calls.read` maps to no permission: only `admin` holds it.
    const refused = await api.post(scopes(), { key: manager, json: { scope_name: `pk-${++counter}`, permissions: { 'outbound_calls.read': 'YES' } } });
    expect(refused.status).toBe(403);
    const ok = await api.post(scopes(), { key: manager, json: { scope_name: `pk-${++counter}`, permissions: { SESSIONS_LIST: 'YES', 'analytics.read': 'YES', API_SCOPE_KEY_VIEW: 'YES' } } });
    expect(ok.status).toBe(201);
    expect((await mint(manager, { scope_name: ok.body.scope.scope_name })).status).toBe(201);

    const user = await t.user(['api_key:manage', 'session:read']);
    const token = (await api.post('/api/auth/login', { json: user })).body.token as string;
    const byUser = await api.post(scopes(), { token, json: { scope_name: `user-${++counter}`, permissions: { AGENTS_VIEW: 'YES' } } });
    expect(byUser.status).toBe(403);
    expect((await api.post(scopes(), { token, json: { scope_name: `user-${++counter}`, permissions: { SESSIONS_LIST: 'YES' } } })).status).toBe(201);
  });
});

describe('POST /api/api-keys', () => {
  it("keeps an environment-bound admin key's new keys within its environments", async () => {
    const admin = await permissionKey(['admin'], { environments: ['staging'] });
    const scope = await scopeWith(['SESSIONS_LIST']);
    const before = await keyCount();
    for (const json of [
      { name: 'wide', permissions: ['admin'], environments: ['production'] },
      { name: 'wide', permissions: ['agent:read'], environments: ['staging', 'production'] },
      { name: 'wide', scopeId: scope.scope_id, environments: ['production'] },
    ]) {
      const refused = await api.post('/api/api-keys', { key: admin, json });
      expect(refused.status).toBe(403);
      expect(refused.body.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringMatching(/staging.*production/) });
    }
    expect(await keyCount()).toBe(before);
    const defaulted = await api.post('/api/api-keys', { key: admin, json: { name: 'inherits', permissions: ['admin'] } });
    expect(defaulted.status).toBe(201);
    expect(defaulted.body.apiKey.environments).toEqual(['staging']);
    const scoped = await api.post('/api/api-keys', { key: admin, json: { name: 'inherits', scopeId: scope.scope_id } });
    expect(scoped.body.apiKey.environments).toEqual(['staging']);
  });

  it("keeps a project-bound, expiring admin key's new keys in its project and within its lifetime", async () => {
    const expiresAt = new Date(Date.now() + 7 * 86_400_000);
    const admin = await permissionKey(['admin'], { projectId: t.projectId, expiresAt });
    for (const json of [
      { name: 'forever', permissions: ['admin'] as Permission[], expiresAt: null },
      { name: 'later', permissions: ['admin'] as Permission[], expiresAt: new Date(expiresAt.getTime() + 60_000).toISOString() },
    ]) {
      const refused = await api.post('/api/api-keys', { key: admin, json });
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
    }
    const made = await api.post('/api/api-keys', { key: admin, json: { name: 'bound', permissions: ['admin'], projectId: null } });
    expect(made.status).toBe(201);
    expect(made.body.apiKey).toMatchObject({ projectId: t.projectId, expiresAt: expiresAt.toISOString() });
    expect((await api.get(`/api/projects/${t.otherProjectId}`, { key: made.body.key })).status).toBe(404);
    expect((await api.post('/api/api-keys', { key: admin, json: { name: 'elsewhere', permissions: ['admin'], projectId: t.otherProjectId } })).status).toBe(404);
  });
});

describe('POST /api/users', () => {
  it('is refused to an environment-bound or expiring admin key: a user reaches every environment and never expires', async () => {
    const users = () => stack.ctx.models.User.countDocuments({ tenantId: t.tenantId });
    const before = await users();
    const staging = await permissionKey(['admin'], { environments: ['staging'] });
    const expiring = await permissionKey(['admin'], { expiresAt: new Date(Date.now() + 86_400_000) });
    for (const key of [staging, expiring]) {
      const res = await api.post('/api/users', { key, json: { email: `u${++counter}@widen.test`, password: 'correct horse battery staple', permissions: ['admin'] } });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    expect(await users()).toBe(before);
    const unbound = await api.post('/api/users', { key: t.adminKey, json: { email: `u${++counter}@widen.test`, password: 'correct horse battery staple', permissions: ['admin'] } });
    expect(unbound.status).toBe(201);
  });
});

describe('the admin CLI', () => {
  const admin = (...args: string[]) => adminInProcess({ MONGODB_URI: stack.config.MONGODB_URI }, ...args);

  it('never turns an empty --project or --environments into a tenant-wide or unbound key', async () => {
    const scope = await scopeWith(['SESSIONS_LIST']);
    const before = await keyCount();
    const cases = [
      ['--permissions', 'admin', '--project', ''],
      ['--permissions', 'admin', '--project', t.projectId, '--environments', ''],
      ['--scope', scope.scope_id, '--environments', ','],
    ];
    for (const extra of cases) {
      const res = await admin('create-key', '--tenant', t.tenantId, '--name', `cli-${++counter}`, ...extra);
      expect(res.status).toBe(1);
      expect(res.err).toMatch(/--(project|environments)/);
    }
    expect(await keyCount()).toBe(before);
  });
});
