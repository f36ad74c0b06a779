// Public widget keys and the SDK bootstrap against the real stack: create, list and revoke keys
// under a project (agent:write), every refusal in the spec's envelope; SDK init and config with a
// key from a listed origin, and the CORS headers only such an origin gets.
import { request as httpRequest } from 'node:http';
import { decodeJwt } from 'jose';
import { client, request } from '../../support/http';
import { echoAgent, publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { sha256Hex } from '../../../lib/crypto';

jest.setTimeout(120_000);

const SHOP = 'https://shop.example.com';
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

async function makeKey(owner = t, origins = [SHOP], environment?: string) {
  const res = await api.post(`/api/projects/${owner.projectId}/public-keys`, { key: owner.adminKey, json: { name: 'Widget', allowedOrigins: origins, ...(environment ? { environment } : {}) } });
  expect(res.status).toBe(201);
  return res.body.publicKey as { id: string; key: string; keyPrefix: string };
}

describe('public key management', () => {
  it('creates a key shown once, stores only its hash, lists it without the key and revokes it', async () => {
    const created = await api.post(`/api/projects/${t.projectId}/public-keys`, {
      key: t.adminKey,
      json: { name: 'Shop', allowedOrigins: [SHOP, 'http://localhost:3000'], environment: 'staging' },
    });
    expect(created.status).toBe(201);
    const pk = created.body.publicKey;
    expect(pk).toMatchObject({ projectId: t.projectId, name: 'Shop', allowedOrigins: [SHOP, 'http://localhost:3000'], environment: 'staging', permissions: ['chat'], status: 'active', revokedAt: null });
    expect(pk.key).toMatch(/^pk_[0-9a-f]{48}$/);
    expect(pk.keyPrefix).toBe(pk.key.slice(0, 11));
    const stored = await stack.ctx.models.PublicKey.findById(pk.id).lean();
    expect(stored!.keyHash).toBe(sha256Hex(pk.key));
    expect(JSON.stringify(stored)).not.toContain(pk.key);

    const listed = await api.get(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey });
    expect(listed.status).toBe(200);
    const item = listed.body.publicKeys.find((k: { id: string }) => k.id === pk.id);
    expect(item).toBeDefined();
    expect(item.key).toBeUndefined();
    expect(listed.text).not.toContain(pk.key);

    const secret = await api.get(`/api/projects/${t.projectId}/public-keys/${pk.id}/identity-secret`, { key: t.adminKey });
    expect(secret.status).toBe(200);
    expect(secret.body).toEqual({ success: true, keyId: pk.id, identitySecret: pk.identitySecret });
    expect(pk.identitySecret).toMatch(/^pkis_[0-9a-f]{64}$/);
    expect((await api.get(`/api/projects/${t.projectId}/public-keys/${pk.id}/identity-secret`, { key: other.adminKey })).status).toBe(404);
    expect((await api.get(`/api/projects/${other.projectId}/public-keys/${pk.id}/identity-secret`, { key: other.adminKey })).status).toBe(404);

    const revoked = await api.delete(`/api/projects/${t.projectId}/public-keys/${pk.id}`, { key: t.adminKey });
    expect(revoked.status).toBe(200);
    expect(revoked.body.publicKey).toMatchObject({ id: pk.id, status: 'revoked' });
    expect(revoked.body.publicKey.revokedAt).toEqual(expect.any(String));
    const init = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': pk.key, origin: SHOP }, json: { projectId: t.projectId } });
    expect(init.status).toBe(401);
    expect(init.body).toEqual({ success: false, error: { code: 'UNAUTHORIZED', message: 'Public key has been revoked' } });
    expect((await api.get(`/api/projects/${t.projectId}/public-keys/${pk.id}/identity-secret`, { key: t.adminKey })).status).toBe(404);
  });

  it('lets agent:write manage keys and refuses read-only credentials with 403', async () => {
    const writer = await t.keyWith(['agent:write']);
    const reader = await t.keyWith(['agent:read', 'session:execute']);
    expect((await api.post(`/api/projects/${t.projectId}/public-keys`, { key: writer, json: { name: 'w', allowedOrigins: [SHOP] } })).status).toBe(201);
    for (const res of [
      await api.post(`/api/projects/${t.projectId}/public-keys`, { key: reader, json: { name: 'r', allowedOrigins: [SHOP] } }),
      await api.get(`/api/projects/${t.projectId}/public-keys`, { key: reader }),
      await api.delete(`/api/projects/${t.projectId}/public-keys/pkey-x`, { key: reader }),
      await api.patch(`/api/projects/${t.projectId}/public-keys/pkey-x`, { key: reader, json: { name: 'r' } }),
      await api.get(`/api/projects/${t.projectId}/public-keys/pkey-x/identity-secret`, { key: reader }),
    ]) {
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
    }
    expect((await api.get(`/api/projects/${t.projectId}/public-keys`)).status).toBe(401);
  });

  it.each([
    ['no origins', { name: 'x', allowedOrigins: [] }],
    ['an origin with a path', { name: 'x', allowedOrigins: ['https://shop.example.com/page'] }],
    ['a trailing slash', { name: 'x', allowedOrigins: ['https://shop.example.com/'] }],
    ['a wildcard', { name: 'x', allowedOrigins: ['*'] }],
    ['another scheme', { name: 'x', allowedOrigins: ['ftp://shop.example.com'] }],
    ['upper case', { name: 'x', allowedOrigins: ['https://Shop.example.com'] }],
    ['an unknown environment', { name: 'x', allowedOrigins: [SHOP], environment: 'qa' }],
    ['a blank name', { name: ' ', allowedOrigins: [SHOP] }],
    ['an unknown field', { name: 'x', allowedOrigins: [SHOP], permissions: ['admin'] }],
  ])('refuses %s with 400 and creates nothing', async (_label, json) => {
    const before = await stack.ctx.models.PublicKey.countDocuments({ tenantId: t.tenantId });
    const res = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json });
    expect(res.status).toBe(400);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toEqual(expect.any(String));
    expect(await stack.ctx.models.PublicKey.countDocuments({ tenantId: t.tenantId })).toBe(before);
  });

  it("answers 404 for another tenant's project and key, and leaves the key live", async () => {
    const mine = await makeKey();
    expect((await api.get(`/api/projects/${t.projectId}/public-keys`, { key: other.adminKey })).status).toBe(404);
    expect((await api.post(`/api/projects/${t.projectId}/public-keys`, { key: other.adminKey, json: { name: 'x', allowedOrigins: [SHOP] } })).status).toBe(404);
    const viaOwnProject = await api.delete(`/api/projects/${other.projectId}/public-keys/${mine.id}`, { key: other.adminKey });
    expect({ status: viaOwnProject.status, code: viaOwnProject.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    // Another project of the same tenant does not hold it either.
    expect((await api.delete(`/api/projects/${t.otherProjectId}/public-keys/${mine.id}`, { key: t.adminKey })).status).toBe(404);
    expect((await stack.ctx.models.PublicKey.findById(mine.id).lean())!.revokedAt).toBeNull();
  });

  it('caps live keys per project at 20 (429 KEY_LIMIT_REACHED)', async () => {
    const owner = await seedTenant(stack.ctx);
    for (let i = 0; i < 20; i++) await makeKey(owner);
    const res = await api.post(`/api/projects/${owner.projectId}/public-keys`, { key: owner.adminKey, json: { name: 'one too many', allowedOrigins: [SHOP] } });
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 429, code: 'KEY_LIMIT_REACHED' });
  });
});

describe('SDK init and config', () => {
  it("takes a browser's same-origin GET, which carries no Origin, as from the address it was sent to, and nothing else so", async () => {
    const pk = await makeKey(t, [stack.baseUrl]);
    const config = (headers: Record<string, string>) => request(stack.baseUrl, 'GET', `/api/v1/sdk/config/${t.projectId}`, { headers: { 'x-api-key': pk.key, ...headers } });
    const same = await config({ 'sec-fetch-site': 'same-origin' });
    expect(same.status).toBe(200);
    expect(same.headers.get('access-control-allow-origin')).toBe(stack.baseUrl);
    // Without the browser's mark there is no origin; a page elsewhere (or a rebound name) sends its own Host.
    expect((await config({})).status).toBe(403);
    expect((await config({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    // fetch sends its own Host; node:http sends the one given.
    const elsewhere = await new Promise<number>((resolve, reject) => {
      const url = new URL(`/api/v1/sdk/config/${t.projectId}`, stack.baseUrl);
      httpRequest(url, { headers: { host: 'shop.example.com', 'x-api-key': pk.key, 'sec-fetch-site': 'same-origin' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      })
        .on('error', reject)
        .end();
    });
    expect(elsewhere).toBe(403);
  });

  it('issues a short-lived token bound to tenant, project, origin, environment and a fresh anonymous end user', async () => {
    const pk = await makeKey(t, [SHOP], 'staging');
    const a = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': pk.key, origin: SHOP }, json: { projectId: t.projectId } });
    expect(a.status).toBe(200);
    expect(a.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(a.body).toMatchObject({ success: true, projectId: t.projectId, environment: 'staging', endUserId: expect.stringMatching(/^eu-[0-9a-f]{32}$/) });
    const claims = decodeJwt(a.body.token);
    expect(claims).toMatchObject({ tid: t.tenantId, pid: t.projectId, pkid: pk.id, org: SHOP, env: 'staging', sub: a.body.endUserId });
    expect(claims.exp! - claims.iat!).toBe(900);
    expect(new Date(a.body.expiresAt).getTime()).toBe(claims.exp! * 1000);
    const b = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': pk.key, origin: SHOP }, json: { projectId: t.projectId } });
    expect(b.body.endUserId).not.toBe(a.body.endUserId);
  });

  it('refuses a missing, malformed or unknown key (401), and a project the key is not for (404)', async () => {
    const pk = await makeKey();
    const cases: [Record<string, string>, unknown, number, string][] = [
      [{ origin: SHOP }, { projectId: t.projectId }, 401, 'A public key is required'],
      [{ origin: SHOP, 'x-public-key': 'abl_' + '0'.repeat(48) }, { projectId: t.projectId }, 401, 'Invalid public key'],
      [{ origin: SHOP, 'x-public-key': 'pk_' + '0'.repeat(48) }, { projectId: t.projectId }, 401, 'Invalid public key'],
      [{ origin: SHOP, 'x-public-key': pk.key }, { projectId: t.otherProjectId }, 404, 'Project not found'],
      [{ origin: SHOP, 'x-public-key': pk.key }, { projectId: other.projectId }, 404, 'Project not found'],
    ];
    for (const [headers, json, status, message] of cases) {
      const res = await api.post('/api/v1/sdk/init', { headers, json });
      expect({ status: res.status, body: res.body }).toEqual({ status, body: { success: false, error: { code: status === 401 ? 'UNAUTHORIZED' : 'NOT_FOUND', message } } });
    }
    const bad = await api.post('/api/v1/sdk/init', { headers: { origin: SHOP, 'x-public-key': pk.key }, json: { projectId: t.projectId, endUserId: 'eu-chosen' } });
    expect(bad.status).toBe(400);
  });

  it('returns the widget config: entry agent, the key\'s widget settings, no voice, the upload limits', async () => {
    const owner = await seedTenant(stack.ctx);
    const pk = await makeKey(owner, [SHOP], 'dev');
    const empty = await api.get(`/api/v1/sdk/config/${owner.projectId}`, { headers: { 'x-api-key': pk.key, origin: SHOP } });
    expect(empty.status).toBe(200);
    // No agent to talk to: no voice call offered, though the stack has a LiveKit server.
    expect(empty.body).toMatchObject({ entryAgent: null, greeting: null, title: null, theme: { primaryColor: null, position: 'bottom-right', launcherLabel: null }, voice: { enabled: false } });
    await publishAgent(api, owner, 'Echo', echoAgent());
    const widget = { greeting: 'Hello!\nHow can we help?', title: 'Shop support', theme: { primaryColor: '#0B5FFF', position: 'bottom-left', launcherLabel: 'Chat with us' } };
    const changed = await api.patch(`/api/projects/${owner.projectId}/public-keys/${pk.id}`, { key: owner.adminKey, json: { widget } });
    expect(changed.status).toBe(200);
    expect(changed.body.publicKey.widget).toEqual({ ...widget, theme: { ...widget.theme, primaryColor: '#0b5fff' } });
    const res = await api.get(`/api/v1/sdk/config/${owner.projectId}`, { headers: { 'x-api-key': pk.key, origin: SHOP } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(res.body).toEqual({
      success: true,
      projectId: owner.projectId,
      environment: 'dev',
      entryAgent: { id: expect.any(String), name: 'Echo' },
      greeting: 'Hello!\nHow can we help?',
      title: 'Shop support',
      theme: { primaryColor: '#0b5fff', position: 'bottom-left', launcherLabel: 'Chat with us' },
      voice: { enabled: true },
      uploads: { enabled: true, maxFileSize: stack.config.ATTACHMENT_MAX_BYTES, maxFilesPerSession: stack.config.ATTACHMENTS_MAX_PER_SESSION, allowedMimeTypes: expect.arrayContaining(['text/plain', 'image/png']) },
      streaming: true,
    });
    // A field left out stays; null clears one.
    const cleared = await api.patch(`/api/projects/${owner.projectId}/public-keys/${pk.id}`, { key: owner.adminKey, json: { widget: { greeting: null, theme: { position: null } } } });
    expect(cleared.body.publicKey.widget).toEqual({ greeting: null, title: 'Shop support', theme: { primaryColor: '#0b5fff', position: null, launcherLabel: 'Chat with us' } });
    const after = await api.get(`/api/v1/sdk/config/${owner.projectId}`, { headers: { 'x-api-key': pk.key, origin: SHOP } });
    expect(after.body).toMatchObject({ greeting: null, title: 'Shop support', theme: { position: 'bottom-right', primaryColor: '#0b5fff' } });
    const wrongProject = await api.get(`/api/v1/sdk/config/${t.projectId}`, { headers: { 'x-api-key': pk.key, origin: SHOP } });
    expect(wrongProject.status).toBe(404);
    const noKey = await api.get(`/api/v1/sdk/config/${owner.projectId}`, { headers: { origin: SHOP } });
    expect(noKey.status).toBe(401);
  });

  it('takes widget settings on create and checks them strictly, on create and on change', async () => {
    const created = await api.post(`/api/projects/${t.projectId}/public-keys`, {
      key: t.adminKey,
      json: { name: 'Themed', allowedOrigins: [SHOP], widget: { title: 'Help', theme: { primaryColor: '#112233' } } },
    });
    expect(created.status).toBe(201);
    expect(created.body.publicKey.widget).toEqual({ greeting: null, title: 'Help', theme: { primaryColor: '#112233', position: null, launcherLabel: null } });
    const id = created.body.publicKey.id as string;
    const bad: unknown[] = [
      { theme: { primaryColor: 'red' } },
      { theme: { primaryColor: '#12345' } },
      { theme: { primaryColor: '#1122334' } },
      { theme: { position: 'top-left' } },
      { theme: { fontFamily: 'Comic Sans' } },
      { title: 'two\nlines' },
      { title: 'x'.repeat(81) },
      { title: '  ' },
      { greeting: 'x'.repeat(1001) },
      { greeting: 'bell\u0007' },
      { theme: { launcherLabel: 'x'.repeat(41) } },
      { logoUrl: 'https://evil.example.net/x.png' },
    ];
    for (const widget of bad) {
      const onCreate = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'x', allowedOrigins: [SHOP], widget } });
      expect({ widget, status: onCreate.status, code: onCreate.body.error?.code }).toEqual({ widget, status: 400, code: 'VALIDATION_ERROR' });
      const onChange = await api.patch(`/api/projects/${t.projectId}/public-keys/${id}`, { key: t.adminKey, json: { widget } });
      expect({ widget, status: onChange.status, code: onChange.body.error?.code }).toEqual({ widget, status: 400, code: 'VALIDATION_ERROR' });
    }
    for (const json of [{}, { environment: 'dev' }, { name: 'x', key: 'pk_' + '0'.repeat(48) }]) {
      expect((await api.patch(`/api/projects/${t.projectId}/public-keys/${id}`, { key: t.adminKey, json })).status).toBe(400);
    }
    // The agents a page may start with: names or ids, 1–200 characters, at most 50.
    for (const allowedAgents of [[''], ['  '], ['x'.repeat(201)], Array.from({ length: 51 }, (_, i) => `A${i}`), 'Echo', [7]]) {
      const onCreate = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'x', allowedOrigins: [SHOP], allowedAgents } });
      expect({ allowedAgents, status: onCreate.status, code: onCreate.body.error?.code }).toEqual({ allowedAgents, status: 400, code: 'VALIDATION_ERROR' });
      const onChange = await api.patch(`/api/projects/${t.projectId}/public-keys/${id}`, { key: t.adminKey, json: { allowedAgents } });
      expect({ allowedAgents, status: onChange.status }).toEqual({ allowedAgents, status: 400 });
    }
    expect((await stack.ctx.models.PublicKey.findById(id).lean())!.allowedAgents).toEqual([]);
    const offered = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Offers two', allowedOrigins: [SHOP], allowedAgents: ['Billing', ' Billing ', 'Refunds'] } });
    expect(offered.status).toBe(201);
    expect(offered.body.publicKey.allowedAgents).toEqual(['Billing', 'Refunds']);
    await api.delete(`/api/projects/${t.projectId}/public-keys/${offered.body.publicKey.id}`, { key: t.adminKey });
    expect((await stack.ctx.models.PublicKey.findById(id).lean())!.widget).toMatchObject({ title: 'Help', theme: { primaryColor: '#112233' } });
  });

  it('changes a key\'s name and origins only for its managers, never another tenant\'s or a revoked key', async () => {
    const pk = await makeKey();
    const renamed = await api.patch(`/api/projects/${t.projectId}/public-keys/${pk.id}`, { key: t.adminKey, json: { name: 'Renamed', allowedOrigins: ['https://new.example.com'] } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.publicKey).toMatchObject({ id: pk.id, name: 'Renamed', allowedOrigins: ['https://new.example.com'], status: 'active' });
    expect((await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': pk.key, origin: SHOP }, json: { projectId: t.projectId } })).status).toBe(403);
    expect((await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': pk.key, origin: 'https://new.example.com' }, json: { projectId: t.projectId } })).status).toBe(200);
    const reader = await t.keyWith(['agent:read', 'session:execute']);
    expect((await api.patch(`/api/projects/${t.projectId}/public-keys/${pk.id}`, { key: reader, json: { name: 'r' } })).status).toBe(403);
    for (const [projectId, key] of [
      [other.projectId, other.adminKey],
      [t.projectId, other.adminKey],
      [t.otherProjectId, t.adminKey],
    ] as const) {
      const res = await api.patch(`/api/projects/${projectId}/public-keys/${pk.id}`, { key, json: { name: 'taken' } });
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    }
    await api.delete(`/api/projects/${t.projectId}/public-keys/${pk.id}`, { key: t.adminKey });
    expect((await api.patch(`/api/projects/${t.projectId}/public-keys/${pk.id}`, { key: t.adminKey, json: { name: 'revived' } })).status).toBe(404);
    expect((await stack.ctx.models.PublicKey.findById(pk.id).lean())!.name).toBe('Renamed');
  });

  it('answers a preflight only for an origin a live key lists', async () => {
    const origin = `https://p-${Date.now()}.example.com`;
    const preflight = (o: string) => request(stack.baseUrl, 'OPTIONS', '/api/v1/sdk/init', { headers: { origin: o, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-public-key' } });
    const before = await preflight(origin);
    expect(before.status).toBe(403);
    expect(before.headers.get('access-control-allow-origin')).toBeNull();
    const pk = await makeKey(t, [origin]);
    const listed = await preflight(origin);
    expect(listed.status).toBe(204);
    expect(listed.headers.get('access-control-allow-origin')).toBe(origin);
    expect(listed.headers.get('access-control-allow-headers')).toContain('X-SDK-Token');
    await api.delete(`/api/projects/${t.projectId}/public-keys/${pk.id}`, { key: t.adminKey });
    expect((await preflight(origin)).status).toBe(403);
  });
});
