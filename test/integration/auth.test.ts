// Authentication and authorization against the real stack: 401 / 403 / 404-for-other-tenant / 200.
import { request as httpRequest } from 'node:http';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme');
  globex = await seedTenant(stack.ctx, 'globex');
});
afterAll(() => stack.close());

describe('credentials', () => {
  it('rejects a request with no credential with 401 in the envelope', async () => {
    const res = await api.get(`/api/projects/${acme.projectId}`);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ success: false, error: { code: 'UNAUTHORIZED', message: expect.stringContaining('Authentication required') } });
  });

  it.each([
    ['an unknown API key', { authorization: `Bearer abl_${'0'.repeat(48)}` }],
    ['a malformed API key', { authorization: 'Bearer abl_short' }],
    ['a garbage JWT', { authorization: 'Bearer not.a.jwt' }],
    ['a non-bearer scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['an unknown X-API-Key', { 'x-api-key': `abl_${'f'.repeat(48)}` }],
  ])('rejects %s with 401', async (_label, headers) => {
    const res = await api.get(`/api/projects/${acme.projectId}`, { headers });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('accepts an API key as Bearer and as X-API-Key', async () => {
    const bearer = await api.get(`/api/projects/${acme.projectId}`, { key: acme.adminKey });
    const header = await api.get(`/api/projects/${acme.projectId}`, { headers: { 'x-api-key': acme.adminKey } });
    expect(bearer.status).toBe(200);
    expect(header.status).toBe(200);
    expect(bearer.body.project).toMatchObject({ id: acme.projectId, name: 'Main' });
  });

  it('fails a revoked key at once', async () => {
    const created = await api.post('/api/api-keys', { key: acme.adminKey, json: { name: 'temp', permissions: ['agent:read'] } });
    const key: string = created.body.key;
    expect((await api.get('/api/auth/me', { key })).status).toBe(200);
    const revoke = await api.delete(`/api/api-keys/${created.body.apiKey.id}`, { key: acme.adminKey });
    expect(revoke.status).toBe(200);
    expect(revoke.body.apiKey.revokedAt).toEqual(expect.any(String));
    const after = await api.get('/api/auth/me', { key });
    expect(after.status).toBe(401);
    expect(after.body.error.message).toMatch(/revoked/);
  });

  it('fails an expired key', async () => {
    const key = await acme.keyWith(['agent:read']);
    const { sha256Hex } = await import('../../lib/crypto');
    await stack.ctx.models.ApiKey.updateOne({ keyHash: sha256Hex(key) }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await api.get('/api/auth/me', { key });
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/expired/);
  });

  it('never stores the key itself', async () => {
    const key = await acme.keyWith(['agent:read']);
    const docs = await stack.ctx.models.ApiKey.find({ tenantId: acme.tenantId }).lean();
    expect(JSON.stringify(docs)).not.toContain(key);
    expect(key).toMatch(/^abl_[0-9a-f]{48}$/);
  });
});

/** A GET whose headers may repeat (fetch folds repeated headers into one line; node:http does not). */
function getWithHeaderLines(path: string, headers: Record<string, string | string[]>): Promise<{ status: number; body: { error?: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${stack.baseUrl}${path}`, { headers }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('two credentials in one request', () => {
  const unknownKey = `abl_${'0'.repeat(48)}`;
  const conflict = { success: false, error: { code: 'UNAUTHORIZED', message: expect.stringMatching(/^Conflicting credentials: .* carry different credentials/) } };

  it('refuses a valid Bearer key with an invalid X-API-Key, even when the key was just served alone', async () => {
    // The key is known to this process now: the refusal must come before any shortcut for known keys.
    expect((await api.get('/api/auth/me', { key: acme.adminKey })).status).toBe(200);
    const res = await api.get('/api/auth/me', { key: acme.adminKey, headers: { 'x-api-key': unknownKey } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(conflict);
    expect(res.body.error.message).toContain('Authorization and X-API-Key');
  });

  it('refuses an invalid Bearer key with a valid X-API-Key', async () => {
    const res = await api.get('/api/auth/me', { key: unknownKey, headers: { 'x-api-key': acme.adminKey } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(conflict);
  });

  it('refuses two different valid keys, of one tenant or of two', async () => {
    const narrow = await acme.keyWith(['agent:read']);
    const sameTenant = await api.get(`/api/projects/${acme.projectId}`, { key: narrow, headers: { 'x-api-key': acme.adminKey } });
    expect(sameTenant.status).toBe(401);
    expect(sameTenant.body).toEqual(conflict);
    const twoTenants = await api.get(`/api/projects/${acme.projectId}`, { key: acme.adminKey, headers: { 'x-api-key': globex.adminKey } });
    expect(twoTenants.status).toBe(401);
    expect(twoTenants.body).toEqual(conflict);
  });

  it('refuses a JWT together with an API key', async () => {
    const { email, password } = await acme.user(['admin']);
    const { body } = await api.post('/api/auth/login', { json: { email, password } });
    expect((await api.get('/api/auth/me', { token: body.token })).status).toBe(200);
    const res = await api.get('/api/auth/me', { token: body.token, headers: { 'x-api-key': acme.adminKey } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(conflict);
  });

  it('accepts the same key sent twice', async () => {
    const res = await api.get(`/api/projects/${acme.projectId}`, { key: acme.adminKey, headers: { 'x-api-key': acme.adminKey } });
    expect(res.status).toBe(200);
    const repeated = await getWithHeaderLines('/api/auth/me', { 'x-api-key': [acme.adminKey, acme.adminKey], authorization: `Bearer ${acme.adminKey}` });
    expect(repeated.status).toBe(200);
  });

  it('judges every line of a repeated header', async () => {
    // Node keeps only the first Authorization line in req.headers: the second must not be ignored.
    const authorization = await getWithHeaderLines('/api/auth/me', { authorization: [`Bearer ${acme.adminKey}`, `Bearer ${unknownKey}`] });
    expect(authorization.status).toBe(401);
    expect(authorization.body.error!.message).toContain('several Authorization values');
    const apiKey = await getWithHeaderLines('/api/auth/me', { 'x-api-key': [acme.adminKey, globex.adminKey] });
    expect(apiKey.status).toBe(401);
    expect(apiKey.body.error!.message).toContain('several X-API-Key values');
    // A proxy may fold the lines into one, comma-separated.
    const folded = await api.get('/api/auth/me', { headers: { 'x-api-key': `${acme.adminKey}, ${unknownKey}` } });
    expect(folded.status).toBe(401);
    expect(folded.body.error.message).toMatch(/^Conflicting credentials/);
    expect((await api.get('/api/auth/me', { headers: { 'x-api-key': `${acme.adminKey}, ${acme.adminKey}` } })).status).toBe(200);
  });
});

describe('permissions and tenancy', () => {
  it('answers 403 when the credential lacks the permission', async () => {
    const key = await acme.keyWith(['agent:read']);
    const res = await api.get('/api/api-keys', { key });
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({ code: 'FORBIDDEN', message: expect.stringContaining("'admin'") });
  });

  it("answers 404, never 403, for another tenant's project", async () => {
    const res = await api.get(`/api/projects/${globex.projectId}`, { key: acme.adminKey });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    const missing = await api.get('/api/projects/doesnotexist000000000000', { key: acme.adminKey });
    // Same answer as for a project that does not exist at all: no hint that it exists.
    expect(missing.body).toEqual(res.body);
  });

  it('confines a project-bound key to its project', async () => {
    const key = await acme.keyWith(['admin'], acme.projectId);
    expect((await api.get(`/api/projects/${acme.projectId}`, { key })).status).toBe(200);
    expect((await api.get(`/api/projects/${acme.otherProjectId}`, { key })).status).toBe(404);
    const list = await api.get('/api/projects', { key });
    expect(list.body.projects.map((p: { id: string }) => p.id)).toEqual([acme.projectId]);
  });

  it('lists only the caller tenant projects', async () => {
    const res = await api.get('/api/projects', { key: globex.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
    expect(res.body.projects.map((p: { id: string }) => p.id).sort()).toEqual([globex.projectId, globex.otherProjectId].sort());
  });

  it("cannot revoke another tenant's key", async () => {
    const keys = await api.get('/api/api-keys', { key: globex.adminKey });
    const res = await api.delete(`/api/api-keys/${keys.body.apiKeys[0].id}`, { key: acme.adminKey });
    expect(res.status).toBe(404);
    expect((await api.get('/api/auth/me', { key: globex.adminKey })).status).toBe(200);
  });
});

describe('JWT login', () => {
  it('issues a JWT for a correct password and accepts it', async () => {
    const { email, password } = await acme.user(['agent:read']);
    const login = await api.post('/api/auth/login', { json: { email, password } });
    expect(login.status).toBe(200);
    expect(login.body).toMatchObject({ success: true, tokenType: 'Bearer', token: expect.any(String) });
    const me = await api.get('/api/auth/me', { token: login.body.token });
    expect(me.status).toBe(200);
    expect(me.body.principal).toMatchObject({ kind: 'user_jwt', tenantId: acme.tenantId, permissions: ['agent:read'] });
    expect((await api.get('/api/api-keys', { token: login.body.token })).status).toBe(403);
  });

  it('rejects a wrong password and an unknown email alike', async () => {
    const { email } = await acme.user(['agent:read']);
    const wrong = await api.post('/api/auth/login', { json: { email, password: 'nope nope nope' } });
    const unknown = await api.post('/api/auth/login', { json: { email: 'nobody@nowhere.test', password: 'nope nope nope' } });
    expect(wrong.status).toBe(401);
    expect(unknown.body).toEqual(wrong.body);
  });

  it('stops a disabled user at once', async () => {
    const { email, password } = await acme.user(['agent:read']);
    const { body } = await api.post('/api/auth/login', { json: { email, password } });
    await stack.ctx.models.User.updateOne({ email }, { $set: { disabledAt: new Date() } });
    expect((await api.get('/api/auth/me', { token: body.token })).status).toBe(401);
  });

  it('rejects a token signed with another secret', async () => {
    const { SignJWT } = await import('jose');
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('x')
      .setIssuer('switchboard')
      .setAudience('switchboard-api')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode('a'.repeat(40)));
    expect((await api.get('/api/auth/me', { token: forged })).status).toBe(401);
  });
});

describe('tenant management', () => {
  it('creates a tenant only with the platform admin token', async () => {
    const denied = await api.post('/api/admin/tenants', { json: { name: 'Initech' } });
    expect(denied.status).toBe(401);
    const res = await api.post('/api/admin/tenants', {
      json: { name: 'Initech' },
      headers: { 'x-platform-admin-token': stack.config.PLATFORM_ADMIN_TOKEN! },
    });
    expect(res.status).toBe(201);
    expect(res.body.key).toMatch(/^abl_[0-9a-f]{48}$/);
    const projects = await api.get('/api/projects', { key: res.body.key });
    expect(projects.body.projects).toEqual([expect.objectContaining({ id: res.body.project.id, name: 'Default' })]);
    const dup = await api.post('/api/admin/tenants', {
      json: { name: 'Initech' },
      headers: { 'x-platform-admin-token': stack.config.PLATFORM_ADMIN_TOKEN! },
    });
    expect(dup.status).toBe(409);
  });

  it('lets a tenant admin mint a narrower key that shows once', async () => {
    const res = await api.post('/api/api-keys', {
      key: acme.adminKey,
      json: { name: 'ci', permissions: ['agent:read'], projectId: acme.projectId },
    });
    expect(res.status).toBe(201);
    const list = await api.get('/api/api-keys', { key: acme.adminKey });
    expect(JSON.stringify(list.body)).not.toContain(res.body.key);
    const cross = await api.post('/api/api-keys', { key: acme.adminKey, json: { name: 'x', permissions: ['admin'], projectId: globex.projectId } });
    expect(cross.status).toBe(404);
  });
});
