// The public key and scope API against the real stack (docs/public-api.md): scopes of an app,
// keys created in them and deleted for good, every error of the spec's table in its envelope
// (with the `tr-` request id), scopes passing the routes' permission checks, another project's
// key, the per-scope key limit, environment binding, and permission-style keys as before.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { KEYS_PER_SCOPE } from '../../../core/tenancy/accounts';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

beforeAll(async () => {
  // Scope changes and deletions wait API_KEY_CACHE_MS before they answer; keep it short here.
  stack = await startTestStack({ env: { API_KEY_CACHE_MS: '200' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
});
afterAll(() => stack.close());

const xKey = (key: string) => ({ headers: { 'x-api-key': key } });
const scopesPath = (appId = t.projectId) => `/api/public/apps/${appId}/scopes`;
const ERROR = (code: string) => ({ success: false, error: { code, message: expect.any(String), requestId: expect.stringMatching(/^tr-/) } });

let counter = 0;
/** A scope of the app with these names set to YES, made with the tenant's admin key. */
async function scopeWith(grants: string[], appId = t.projectId) {
  const res = await api.post(scopesPath(appId), {
    key: t.adminKey,
    json: { scope_name: `scope-${++counter}`, permissions: Object.fromEntries(grants.map((g) => [g, 'YES'])) },
  });
  expect(res.status).toBe(201);
  return res.body.scope as { scope_id: string; scope_name: string; app_id: string; permissions: Record<string, string> };
}

/** A key of the scope, made with the admin key; returns the key and its id. */
async function keyIn(scope: { scope_name: string; app_id: string }, extra: Record<string, unknown> = {}) {
  const res = await api.post('/api/public/apikeys/create', {
    key: t.adminKey,
    json: { scope_name: scope.scope_name, api_key_name: `key-${++counter}`, app_id: scope.app_id, ...extra },
  });
  expect(res.status).toBe(201);
  return { key: res.body.api_key.apikey as string, id: res.body.api_key.key_id as string };
}

describe('scopes', () => {
  it('creates a scope with every permission name YES or NO, and reads it back with meta', async () => {
    const res = await api.post(scopesPath(), {
      key: t.adminKey,
      json: { scope_name: 'support bots', description: 'Chat backends', permissions: { RUN_API: 'YES', SESSIONS_LIST: 'YES', 'outbound_calls.read': 'YES', APP_EDIT: 'NO' } },
    });
    expect(res.status).toBe(201);
    const scope = res.body.scope;
    expect(scope).toMatchObject({ scope_id: expect.stringMatching(/^as-/), scope_name: 'support bots', description: 'Chat backends', app_id: t.projectId });
    expect(scope.permissions).toMatchObject({ RUN_API: 'YES', SESSIONS_LIST: 'YES', 'outbound_calls.read': 'YES', APP_VIEW: 'NO', APP_EDIT: 'NO', API_SCOPE_KEY_FULL: 'NO', 'chat.execute': 'NO' });
    expect(Object.keys(scope.permissions)).toEqual(expect.arrayContaining(['APP_VIEW', 'APP_FULL', 'AGENTS_FULL', 'DOCUMENT_UPLOAD', 'SESSION_TERMINATION', 'recordings.read', 'analytics.read']));
    expect(res.body.meta).toEqual({ requestId: expect.stringMatching(/^tr-/), timestamp: expect.any(String) });

    const got = await api.get(`${scopesPath()}/${scope.scope_id}`, xKey(t.adminKey));
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ success: true, scope, meta: { requestId: expect.stringMatching(/^tr-/), timestamp: expect.any(String) } });
    expect(got.body.meta.requestId).toBe(`tr-${got.headers.get('x-request-id')}`);

    const list = await api.get(scopesPath(), xKey(t.adminKey));
    expect(list.status).toBe(200);
    expect(list.body.scopes.map((s: { scope_id: string }) => s.scope_id)).toContain(scope.scope_id);
  });

  it('refuses a second scope of the same name in the app (409) and an unknown permission name (400)', async () => {
    const scope = await scopeWith([]);
    const dup = await api.post(scopesPath(), { key: t.adminKey, json: { scope_name: scope.scope_name } });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual(ERROR('CONFLICT'));
    const bad = await api.post(scopesPath(), { key: t.adminKey, json: { scope_name: 'x', permissions: { MAKE_COFFEE: 'YES' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/MAKE_COFFEE/);
  });

  it('deletes a scope and every key of it, which are refused from then on', async () => {
    const scope = await scopeWith(['SESSIONS_LIST']);
    const { key } = await keyIn(scope);
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(200);
    const res = await api.delete(`${scopesPath()}/${scope.scope_id}`, { key: t.adminKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, deleted: { scope_id: scope.scope_id, status: 'deleted', keys_revoked: 1 } });
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(401);
    expect((await api.get(`${scopesPath()}/${scope.scope_id}`, { key: t.adminKey })).status).toBe(404);
  });
});

describe('POST /api/public/apikeys/create', () => {
  it('creates a key in the scope, shown once: abl_ value, ak- id, name and scope', async () => {
    const scope = await scopeWith(['SESSIONS_LIST']);
    const res = await api.post('/api/public/apikeys/create', {
      ...xKey(t.adminKey),
      json: { scope_name: scope.scope_name, api_key_name: 'backend', app_id: t.projectId, environments: ['staging'], expiry: '30_days' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      api_key: {
        apikey: expect.stringMatching(/^abl_[0-9a-f]{48}$/),
        key_id: expect.stringMatching(/^ak-/),
        key_name: 'backend',
        scope_name: scope.scope_name,
        scope_id: scope.scope_id,
        app_id: t.projectId,
        environments: ['staging'],
        expires_at: expect.any(String),
      },
      meta: { requestId: expect.stringMatching(/^tr-/), timestamp: expect.any(String) },
    });
    const days = (Date.parse(res.body.api_key.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    // Never shown again: the listing has a prefix only.
    const list = await api.get(`${scopesPath()}/${scope.scope_id}/apikeys`, { key: t.adminKey });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(res.body.api_key.apikey);
    expect(list.body.api_keys).toEqual([expect.objectContaining({ key_id: res.body.api_key.key_id, key_name: 'backend', key_prefix: res.body.api_key.apikey.slice(0, 8) })]);
  });

  it('is 409 for a name the scope already has, while another scope may use it', async () => {
    const scope = await scopeWith([]);
    const json = { scope_name: scope.scope_name, api_key_name: 'same name', app_id: t.projectId };
    expect((await api.post('/api/public/apikeys/create', { key: t.adminKey, json })).status).toBe(201);
    const dup = await api.post('/api/public/apikeys/create', { key: t.adminKey, json });
    expect(dup.status).toBe(409);
    expect(dup.body).toEqual(ERROR('CONFLICT'));
    const elsewhere = await scopeWith([]);
    expect((await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { ...json, scope_name: elsewhere.scope_name } })).status).toBe(201);
  });

  it(`is 429 KEY_LIMIT_REACHED once the scope holds ${KEYS_PER_SCOPE} keys, and takes one again after a deletion`, async () => {
    const scope = await scopeWith([]);
    const ids: string[] = [];
    for (let i = 0; i < KEYS_PER_SCOPE; i++) ids.push((await keyIn(scope)).id);
    const over = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: scope.scope_name, api_key_name: 'one too many', app_id: t.projectId } });
    expect(over.status).toBe(429);
    expect(over.body).toEqual(ERROR('KEY_LIMIT_REACHED'));
    expect((await api.delete(`/api/public/apikeys/${ids[0]}`, { key: t.adminKey })).status).toBe(200);
    expect((await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: scope.scope_name, api_key_name: 'one too many', app_id: t.projectId } })).status).toBe(201);
  });

  it('holds the name rule and the limit when creates race: one key per name, never more than the limit', async () => {
    const scope = await scopeWith([]);
    const create = (name: string) =>
      api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: scope.scope_name, api_key_name: name, app_id: t.projectId } });
    const sameName = await Promise.all(Array.from({ length: 6 }, () => create('contested')));
    expect(sameName.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    const rush = await Promise.all(Array.from({ length: KEYS_PER_SCOPE + 5 }, (_, i) => create(`rush-${i}`)));
    const statuses = rush.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(KEYS_PER_SCOPE - 1);
    expect(statuses.filter((s) => s === 429)).toHaveLength(6);
    expect(await stack.ctx.models.ApiKey.countDocuments({ scopeId: scope.scope_id })).toBe(KEYS_PER_SCOPE);
  });

  it('is 404 for a scope the app does not have, 422 without an app for a key bound to none, 401 without a key', async () => {
    const missing = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: 'no such scope', api_key_name: 'k', app_id: t.projectId } });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual(ERROR('NOT_FOUND'));
    const noApp = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: 'x', api_key_name: 'k' } });
    expect(noApp.status).toBe(422);
    expect(noApp.body).toEqual(ERROR('UNPROCESSABLE_ENTITY'));
    const scope = await scopeWith([]);
    const past = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: scope.scope_name, api_key_name: 'k', app_id: t.projectId, expiry: '2020-01-01T00:00:00Z' } });
    expect(past.status).toBe(422);
    const forever = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: scope.scope_name, api_key_name: 'k', app_id: t.projectId } });
    expect(forever.body.api_key).toMatchObject({ expires_at: null, environments: [] });
    const anonymous = await api.post('/api/public/apikeys/create', { json: { scope_name: 'x', api_key_name: 'k' } });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(ERROR('UNAUTHORIZED'));
  });

  it("lets a key with API_SCOPE_KEY_FULL manage its own app's keys without naming the app", async () => {
    // It makes keys only in scopes within its own grants.
    const managers = await scopeWith(['API_SCOPE_KEY_FULL', 'SESSIONS_LIST']);
    const { key: manager } = await keyIn(managers);
    const target = await scopeWith(['SESSIONS_LIST']);
    const res = await api.post('/api/public/apikeys/create', { ...xKey(manager), json: { scope_name: target.scope_name, api_key_name: 'made by a manager' } });
    expect(res.status).toBe(201);
    expect(res.body.api_key.app_id).toBe(t.projectId);
    const removed = await api.delete(`/api/public/apikeys/${res.body.api_key.key_id}`, xKey(manager));
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true, revoked: { key_id: res.body.api_key.key_id, status: 'revoked' }, meta: expect.any(Object) });
  });
});

describe('DELETE /api/public/apikeys/:keyId', () => {
  it('never takes `create` for a key id: OPTIONS lists POST alone there, and DELETE on it is 405', async () => {
    const res = await fetch(`${stack.baseUrl}/api/public/apikeys/create`, { method: 'OPTIONS' });
    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toBe('POST');
    expect((await fetch(`${stack.baseUrl}/api/public/apikeys/ak-x`, { method: 'OPTIONS' })).headers.get('allow')).toBe('DELETE');
    expect((await fetch(`${stack.baseUrl}/api/public/apps/x/scopes/y`, { method: 'OPTIONS' })).headers.get('allow')).toBe('DELETE, GET, HEAD, PUT');
    const del = await api.delete('/api/public/apikeys/create', { key: t.adminKey });
    expect(del.status).toBe(405);
  });

  it('deletes the key for good: refused at once, and a second delete is 404', async () => {
    const scope = await scopeWith(['SESSIONS_LIST']);
    const { key, id } = await keyIn(scope);
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(200);
    expect((await api.delete(`/api/public/apikeys/${id}`, { key: t.adminKey })).status).toBe(200);
    const after = await api.get(`/api/projects/${t.projectId}/sessions`, { key });
    expect(after.status).toBe(401);
    expect(await stack.ctx.models.ApiKey.countDocuments({ _id: id })).toBe(0);
    const again = await api.delete(`/api/public/apikeys/${id}`, { key: t.adminKey });
    expect(again.status).toBe(404);
    expect(again.body).toEqual(ERROR('NOT_FOUND'));
  });
});

describe('scopes decide what a key may do', () => {
  it('maps scope permissions onto the routes’ permissions: SESSIONS_LIST reads sessions, nothing else', async () => {
    const { key } = await keyIn(await scopeWith(['SESSIONS_LIST']));
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(200);
    const create = await api.post(`/api/projects/${t.projectId}/sessions`, { key, json: { agentId: 'Anyone' } });
    expect(create.status).toBe(403);
    expect((await api.get(`/api/projects/${t.projectId}/agents`, { key })).status).toBe(403);
    // Key management needs API_SCOPE_KEY_*: 403 in the public envelope.
    const manage = await api.get(scopesPath(), { key });
    expect(manage.status).toBe(403);
    expect(manage.body).toEqual(ERROR('FORBIDDEN'));
    expect((await api.post('/api/public/apikeys/create', { key, json: { scope_name: 'x', api_key_name: 'y' } })).status).toBe(403);
  });

  it('lets AGENTS_VIEW read agents and APP_EDIT write them', async () => {
    const { key: viewer } = await keyIn(await scopeWith(['AGENTS_VIEW']));
    expect((await api.get(`/api/projects/${t.projectId}/agents`, { key: viewer })).status).toBe(200);
    expect((await api.post(`/api/projects/${t.projectId}/agents`, { key: viewer, json: { name: 'Nope', dslContent: 'AGENT: Nope\nGOAL: "x"\n' } })).status).toBe(403);
    const { key: editor } = await keyIn(await scopeWith(['APP_EDIT']));
    expect((await api.post(`/api/projects/${t.projectId}/agents`, { key: editor, json: { name: 'Edited', dslContent: 'AGENT: Edited\nGOAL: "x"\n' } })).status).toBe(201);
  });

  it('gives a scoped key no project but its own app, and never admin routes', async () => {
    const scope = await scopeWith(['APP_FULL', 'API_SCOPE_KEY_FULL']);
    const { key } = await keyIn(scope);
    // Another project of the same tenant is 404, on the public routes as on the others.
    const other = await api.get(scopesPath(t.otherProjectId), { key });
    expect(other.status).toBe(404);
    expect(other.body).toEqual(ERROR('NOT_FOUND'));
    expect((await api.get(`/api/projects/${t.otherProjectId}/sessions`, { key })).status).toBe(404);
    expect((await api.post('/api/public/apikeys/create', { key, json: { scope_name: scope.scope_name, api_key_name: 'x', app_id: t.otherProjectId } })).status).toBe(404);
    expect((await api.get('/api/api-keys', { key })).status).toBe(403);
    // Another tenant's admin sees none of it.
    const stranger = await seedTenant(stack.ctx);
    expect((await api.get(`${scopesPath()}/${scope.scope_id}`, { key: stranger.adminKey })).status).toBe(404);
    const foreignKey = await api.delete(`/api/public/apikeys/${(await keyIn(scope)).id}`, { key: stranger.adminKey });
    expect(foreignKey.status).toBe(404);
  });

  it('lets only a key of the scope narrow it (PUT), never widen it, and the change applies to its keys when it returns', async () => {
    const scope = await scopeWith(['API_SCOPE_KEY_EDIT', 'SESSIONS_LIST', 'AGENTS_VIEW']);
    const { key } = await keyIn(scope);
    const outsider = (await keyIn(await scopeWith(['API_SCOPE_KEY_FULL']))).key;
    const path = `${scopesPath()}/${scope.scope_id}`;
    for (const other of [t.adminKey, outsider]) {
      const refused = await api.put(path, { key: other, json: { permissions: { SESSIONS_LIST: 'NO' } } });
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual(ERROR('FORBIDDEN'));
    }
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(200);
    // A name the scope does not grant yet is a widening: 403, and nothing changes.
    const wider = await api.put(path, { key, json: { permissions: { SESSIONS_LIST: 'NO', APP_EDIT: 'YES' } } });
    expect(wider.status).toBe(403);
    expect(wider.body).toEqual(ERROR('FORBIDDEN'));
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(200);
    const res = await api.put(path, { key, json: { permissions: { SESSIONS_LIST: 'NO', AGENTS_VIEW: 'YES' } } });
    expect(res.status).toBe(200);
    expect(res.body.scope.permissions).toMatchObject({ SESSIONS_LIST: 'NO', AGENTS_VIEW: 'YES', API_SCOPE_KEY_EDIT: 'YES', APP_EDIT: 'NO' });
    expect(res.body.meta.requestId).toMatch(/^tr-/);
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key })).status).toBe(403);
    expect((await api.get(`/api/projects/${t.projectId}/agents`, { key })).status).toBe(200);
    // A key without API_SCOPE_KEY_EDIT cannot change even its own scope.
    const readers = await scopeWith(['API_SCOPE_KEY_VIEW']);
    const reader = (await keyIn(readers)).key;
    expect((await api.put(`${scopesPath()}/${readers.scope_id}`, { key: reader, json: { permissions: { APP_FULL: 'YES' } } })).status).toBe(403);
    expect((await api.get(`${scopesPath()}/${readers.scope_id}`, { key: reader })).status).toBe(200);
  });
});

describe('keys made elsewhere', () => {
  it('keeps permission-style keys working as before, and lets admin keys hold every scope name', async () => {
    const reader = await t.keyWith(['session:read'], t.projectId);
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key: reader })).status).toBe(200);
    expect((await api.get(`/api/projects/${t.projectId}/agents`, { key: reader })).status).toBe(403);
    expect((await api.get(scopesPath(), { key: reader })).status).toBe(403);
    const keys = await api.get('/api/api-keys', { key: t.adminKey });
    expect(keys.body.apiKeys[0]).toMatchObject({ permissions: ['admin'], scopeId: null, environments: [] });
  });

  it('creates scoped, environment-bound keys through POST /api/api-keys', async () => {
    const scope = await scopeWith(['SESSIONS_LIST']);
    const res = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'scoped', scopeId: scope.scope_id, environments: ['production'] } });
    expect(res.status).toBe(201);
    expect(res.body.apiKey).toMatchObject({ id: expect.stringMatching(/^ak-/), projectId: t.projectId, scopeId: scope.scope_id, environments: ['production'], permissions: [] });
    expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key: res.body.key })).status).toBe(200);
    expect((await api.get(`/api/projects/${t.projectId}/agents`, { key: res.body.key })).status).toBe(403);
    const both = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'x', scopeId: scope.scope_id, permissions: ['agent:read'] } });
    expect(both.status).toBe(422);
    const neither = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'x' } });
    expect(neither.status).toBe(422);
    const otherApp = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'x', scopeId: scope.scope_id, projectId: t.otherProjectId } });
    expect(otherApp.status).toBe(404);
    // The name rule holds here too.
    const dup = await api.post('/api/api-keys', { key: t.adminKey, json: { name: 'scoped', scopeId: scope.scope_id } });
    expect(dup.status).toBe(409);
  });

  it('keeps the core envelope (no requestId) on the core routes', async () => {
    const res = await api.get(`/api/projects/${t.otherProjectId}x/sessions`, { key: t.adminKey });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: expect.any(String) });
  });
});

describe('environment binding', () => {
  const source = (name: string) => `AGENT: ${name}\nGOAL: "Help."\n`;

  beforeAll(async () => {
    await publishAgent(api, t, 'EnvAgent', source('EnvAgent'));
  });

  it('lets a staging key deploy to staging only, and hides production deployments from it', async () => {
    const { key } = await keyIn(await scopeWith(['AGENTS_FULL']), { environments: ['staging'] });
    const deploy = (environment: string, k = key) =>
      api.post(`/api/projects/${t.projectId}/deployments`, { key: k, json: { environment, agentVersionManifest: { EnvAgent: 'auto' }, entryAgentName: 'EnvAgent' } });
    const prod = await deploy('production');
    expect(prod.status).toBe(403);
    expect(prod.body.error.message).toMatch(/staging.*production/);
    const staging = await deploy('staging');
    expect(staging.status).toBe(201);
    expect((await api.get(`/api/projects/${t.projectId}/deployments/${staging.body.deployment.id}`, { key })).status).toBe(200);
    // Promoting into production is acting on production.
    expect((await api.post(`/api/projects/${t.projectId}/deployments/${staging.body.deployment.id}/promote`, { key, json: { targetEnvironment: 'production' } })).status).toBe(403);

    const adminProd = await deploy('production', t.adminKey);
    expect(adminProd.status).toBe(201);
    const id = adminProd.body.deployment.id;
    expect((await api.get(`/api/projects/${t.projectId}/deployments/${id}`, { key })).status).toBe(404);
    expect((await api.post(`/api/projects/${t.projectId}/deployments/${id}/rollback`, { key, json: {} })).status).toBe(404);
    expect((await api.post(`/api/projects/${t.projectId}/deployments/${id}/retire`, { key })).status).toBe(404);
    expect((await api.get(`/api/projects/${t.projectId}/deployments/${id}`, { key: t.adminKey })).body.deployment.status).toBe('active');
  });

  it("lets a staging key manage staging tool secrets only, and hides production's", async () => {
    const { key } = await keyIn(await scopeWith(['tool_secrets.write']), { environments: ['staging'] });
    const create = (environment: string, k = key) =>
      api.post('/api/tool-secrets', { key: k, json: { projectId: t.projectId, toolName: 'billing', secretKey: 'TOKEN', value: `tok-${environment}`, environment, allowedHosts: ['billing.example.com'] } });
    expect((await create('production')).status).toBe(403);
    const mine = await create('staging');
    expect(mine.status).toBe(201);
    const theirs = await create('production', t.adminKey);
    expect(theirs.status).toBe(201);
    const list = await api.get(`/api/tool-secrets?projectId=${t.projectId}`, { key });
    expect(list.body.secrets.map((x: { environment: string }) => x.environment)).toEqual(['staging']);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}&environment=production`, { key })).body.secrets).toEqual([]);
    expect((await api.put(`/api/tool-secrets/${theirs.body.secret.id}`, { key, json: { value: 'stolen' } })).status).toBe(404);
    expect((await api.delete(`/api/tool-secrets/${theirs.body.secret.id}`, { key })).status).toBe(404);
    expect((await api.put(`/api/tool-secrets/${mine.body.secret.id}`, { key, json: { value: 'rotated' } })).status).toBe(200);
  });

  it('lets a staging key create staging sessions only, and hides production sessions from it', async () => {
    const { key } = await keyIn(await scopeWith(['SESSION_CREATION', 'SESSIONS_LIST']), { environments: ['staging'] });
    const create = (environment: string, k = key) => api.post(`/api/projects/${t.projectId}/sessions`, { key: k, json: { agentId: 'EnvAgent', environment } });
    const refused = await create('production');
    expect(refused.status).toBe(403);
    const mine = await create('staging');
    expect(mine.status).toBe(201);
    const theirs = await create('production', t.adminKey);
    expect(theirs.status).toBe(201);
    const theirId = theirs.body.session.id;
    expect((await api.get(`/api/projects/${t.projectId}/sessions/${theirId}`, { key })).status).toBe(404);
    expect((await api.get(`/api/projects/${t.projectId}/sessions/${theirId}/traces`, { key })).status).toBe(404);
    expect((await api.delete(`/api/projects/${t.projectId}/sessions/${theirId}`, { key })).status).toBe(404);
    expect((await api.get(`/api/v1/sessions/${theirId}/transcripts`, { key })).status).toBe(404);
    expect((await api.get(`/api/projects/${t.projectId}/sessions/${mine.body.session.id}`, { key })).status).toBe(200);
    const list = await api.get(`/api/projects/${t.projectId}/sessions?limit=200`, { key });
    const ids = list.body.sessions.map((s: { id: string }) => s.id);
    expect(ids).toContain(mine.body.session.id);
    expect(ids).not.toContain(theirId);
    // The chat route too: a new production conversation is refused, a production session is invisible.
    const chat = await api.post('/api/v1/chat/agent', { key, json: { projectId: t.projectId, agentId: 'EnvAgent', message: 'hi', environment: 'production' } });
    expect(chat.status).toBe(403);
    const cont = await api.post('/api/v1/chat/agent', { key, json: { projectId: t.projectId, message: 'hi', sessionId: theirId } });
    expect(cont.status).toBe(404);
  });
});
