// /api/tool-secrets against the real stack: every field, limit, default and error of the spec,
// pagination, tenant isolation, permissions, the audit trail, and values that never come back.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { resolveToolSecrets, toolSecretAad } from '../../../db/tool-secret';
import { tenantDataKey } from '../../../db/tenant-data-key';
import { secretMasterKeyRing } from '../../../lib/secret-envelope';

const VALUE = 'sk-live-7c1d4e9a-never-shown';

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
afterAll(() => stack.close());

type Secret = { id: string; toolName: string; secretKey: string; environment: string; version: number; expiresAt: string | null; createdAt: string; updatedAt?: string };

async function create(fields: Record<string, unknown>, key = t.adminKey) {
  return api.post<{ success: boolean; secret: Secret; error: { code: string; message: string } }>('/api/tool-secrets', {
    key,
    json: { projectId: t.projectId, toolName: 'get_invoice', secretKey: 'API_TOKEN', value: VALUE, allowedHosts: ['billing.example.com'], ...fields },
  });
}

describe('create', () => {
  it('answers 201 with the metadata, environment dev by default, version 1, and never the value', async () => {
    const res = await create({ secretKey: 'CREATE_1' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      secret: { id: expect.any(String), toolName: 'get_invoice', secretKey: 'CREATE_1', environment: 'dev', version: 1, expiresAt: null, allowedHosts: ['billing.example.com'], createdAt: expect.any(String) },
    });
    expect(res.text).not.toContain(VALUE);
    const stored = await stack.ctx.models.ToolSecret.findById(res.body.secret.id).lean();
    expect(JSON.stringify(stored)).not.toContain(VALUE);
    expect(JSON.stringify(stored)).not.toContain(Buffer.from(VALUE).toString('base64'));
  });

  it('takes an environment and a future expiry', async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const res = await create({ secretKey: 'CREATE_2', environment: 'production', expiresAt });
    expect(res.status).toBe(201);
    expect(res.body.secret).toMatchObject({ environment: 'production', expiresAt });
  });

  it.each([
    ['projectId', { projectId: undefined }, 'body.projectId'],
    ['toolName', { toolName: undefined }, 'body.toolName'],
    ['secretKey', { secretKey: undefined }, 'body.secretKey'],
    ['value', { value: undefined }, 'body.value'],
    ['an empty value', { value: '' }, 'body.value'],
    ['a value over 16,384 characters', { value: 'x'.repeat(16_385) }, 'body.value'],
    ['a toolName over 256 characters', { toolName: 't'.repeat(257) }, 'body.toolName'],
    ['a secretKey over 256 characters', { secretKey: 'k'.repeat(257) }, 'body.secretKey'],
    ['an expiresAt that is not a date', { expiresAt: 'tomorrow' }, 'body.expiresAt'],
    ['an unknown field', { secret: 'x' }, 'body'],
  ])('refuses a missing or bad %s with 400', async (_what, fields, field) => {
    const res = await create({ secretKey: 'BAD', ...fields });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain(field);
  });

  it('takes the longest value, toolName and secretKey the limits allow', async () => {
    const res = await create({ value: 'v'.repeat(16_384), toolName: 't'.repeat(256), secretKey: 'k'.repeat(256) });
    expect(res.status).toBe(201);
  });

  it('refuses an expiry already past with 422, saying why', async () => {
    const res = await create({ secretKey: 'PAST', expiresAt: '2020-01-01T00:00:00Z' });
    expect(res.status).toBe(422);
    expect(res.body.error).toEqual({ code: 'UNPROCESSABLE_ENTITY', message: 'body.expiresAt: must be in the future' });
  });

  it('refuses the same toolName, secretKey and environment twice in a project with 409; another environment, tool or project is fine', async () => {
    expect((await create({ secretKey: 'DUP' })).status).toBe(201);
    const dup = await create({ secretKey: 'DUP' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('CONFLICT');
    expect((await create({ secretKey: 'DUP', environment: 'staging' })).status).toBe(201);
    expect((await create({ secretKey: 'DUP', toolName: '*' })).status).toBe(201);
    expect((await create({ secretKey: 'DUP', projectId: t.otherProjectId })).status).toBe(201);
  });

  it('answers exactly one 201 among concurrent creates of the same secret', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => create({ secretKey: 'RACE' })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  });
});

describe('list', () => {
  it('requires projectId, pages with total/page/limit (defaults 1 and 50), filters, and returns metadata only', async () => {
    expect((await api.get('/api/tool-secrets', { key: t.adminKey })).status).toBe(400);
    for (const k of ['PAGE_A', 'PAGE_B', 'PAGE_C']) expect((await create({ toolName: 'pager', secretKey: k, projectId: t.otherProjectId })).status).toBe(201);
    const all = await api.get(`/api/tool-secrets?projectId=${t.otherProjectId}&toolName=pager`, { key: t.adminKey });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ success: true, total: 3, page: 1, limit: 50 });
    expect(all.body.secrets.map((s: Secret) => s.secretKey)).toEqual(['PAGE_A', 'PAGE_B', 'PAGE_C']);
    expect(Object.keys(all.body.secrets[0]).sort()).toEqual(['allowedHosts', 'createdAt', 'environment', 'expiresAt', 'id', 'secretKey', 'toolName', 'updatedAt', 'version']);
    const page2 = await api.get(`/api/tool-secrets?projectId=${t.otherProjectId}&toolName=pager&page=2&limit=2`, { key: t.adminKey });
    expect(page2.body).toMatchObject({ total: 3, page: 2, limit: 2 });
    expect(page2.body.secrets.map((s: Secret) => s.secretKey)).toEqual(['PAGE_C']);
    const staging = await api.get(`/api/tool-secrets?projectId=${t.projectId}&environment=staging`, { key: t.adminKey });
    expect(staging.body.secrets.every((s: Secret) => s.environment === 'staging')).toBe(true);
    expect(staging.body.total).toBeGreaterThan(0);
    expect(all.text + staging.text).not.toContain(VALUE);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}&limit=201`, { key: t.adminKey })).status).toBe(400);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}&page=0`, { key: t.adminKey })).status).toBe(400);
  });
});

describe('rotate and delete', () => {
  it('rotates: version + 1, a new ciphertext, updatedAt; then deletes for good', async () => {
    const created = (await create({ secretKey: 'ROTATE' })).body.secret;
    const before = await stack.ctx.models.ToolSecret.findById(created.id).lean();
    const rotated = await api.put(`/api/tool-secrets/${created.id}`, { key: t.adminKey, json: { value: 'rotated-value-1234' } });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({
      success: true,
      secret: { id: created.id, toolName: 'get_invoice', secretKey: 'ROTATE', environment: 'dev', version: 2, allowedHosts: ['billing.example.com'], updatedAt: expect.any(String) },
    });
    expect(rotated.text).not.toContain('rotated-value-1234');
    const after = await stack.ctx.models.ToolSecret.findById(created.id).lean();
    expect(after!.value.data).not.toBe(before!.value.data);
    expect((await api.put(`/api/tool-secrets/${created.id}`, { key: t.adminKey, json: { value: 'again-1234' } })).body.secret.version).toBe(3);

    expect((await api.put(`/api/tool-secrets/${created.id}`, { key: t.adminKey, json: {} })).status).toBe(400);
    expect((await api.put(`/api/tool-secrets/${created.id}`, { key: t.adminKey, json: { value: 'x'.repeat(16_385) } })).status).toBe(400);
    expect((await api.put(`/api/tool-secrets/${created.id}`, { key: t.adminKey, json: { value: 'v', expiresAt: '2020-01-01T00:00:00Z' } })).status).toBe(422);

    expect((await api.delete(`/api/tool-secrets/${created.id}`, { key: t.adminKey })).body).toEqual({ success: true });
    expect(await stack.ctx.models.ToolSecret.findById(created.id).lean()).toBeNull();
    expect((await api.delete(`/api/tool-secrets/${created.id}`, { key: t.adminKey })).status).toBe(404);
    expect((await api.put(`/api/tool-secrets/${created.id}`, { key: t.adminKey, json: { value: 'v' } })).status).toBe(404);
  });
});

describe('isolation and permissions', () => {
  it("answers 404 for another tenant's project or secret, everywhere", async () => {
    const mine = (await create({ secretKey: 'ISOLATED' })).body.secret;
    expect((await create({ secretKey: 'X' }, other.adminKey)).status).toBe(404);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}`, { key: other.adminKey })).status).toBe(404);
    expect((await api.get(`/api/projects/${t.projectId}/tool-secrets/audit`, { key: other.adminKey })).status).toBe(404);
    expect((await api.put(`/api/tool-secrets/${mine.id}`, { key: other.adminKey, json: { value: 'stolen' } })).status).toBe(404);
    expect((await api.delete(`/api/tool-secrets/${mine.id}`, { key: other.adminKey })).status).toBe(404);
    // A key bound to the other project does not see this project's secrets either.
    const bound = await t.keyWith(['credential:write', 'credential:read'], t.otherProjectId);
    expect((await api.put(`/api/tool-secrets/${mine.id}`, { key: bound, json: { value: 'x' } })).status).toBe(404);
    expect((await create({ secretKey: 'Y' }, bound)).status).toBe(404);
    expect((await stack.ctx.models.ToolSecret.findById(mine.id).lean())!.version).toBe(1);
  });

  it('needs credential:write to change and credential:read to list (403 otherwise)', async () => {
    const mine = (await create({ secretKey: 'PERM' })).body.secret;
    const reader = await t.keyWith(['credential:read']);
    expect((await create({ secretKey: 'PERM2' }, reader)).status).toBe(403);
    expect((await api.put(`/api/tool-secrets/${mine.id}`, { key: reader, json: { value: 'x' } })).status).toBe(403);
    expect((await api.delete(`/api/tool-secrets/${mine.id}`, { key: reader })).status).toBe(403);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}`, { key: reader })).status).toBe(200);
    const agentReader = await t.keyWith(['agent:read']);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}`, { key: agentReader })).status).toBe(403);
    expect((await api.get(`/api/projects/${t.projectId}/tool-secrets/audit`, { key: agentReader })).status).toBe(403);
    expect((await api.get(`/api/tool-secrets?projectId=${t.projectId}`)).status).toBe(401);
  });
});

describe('audit', () => {
  it('records who created, rotated and deleted which secret and version, newest first, never the value', async () => {
    const writer = await t.keyWith(['credential:write', 'credential:read'], t.otherProjectId);
    const writerId = (await api.get('/api/auth/me', { key: writer })).body.principal.id as string;
    const created = (await create({ secretKey: 'AUDITED', projectId: t.otherProjectId, environment: 'qa' }, writer)).body.secret;
    await api.put(`/api/tool-secrets/${created.id}`, { key: writer, json: { value: 'audit-rotated-value' } });
    await api.delete(`/api/tool-secrets/${created.id}`, { key: writer });

    const res = await api.get(`/api/projects/${t.otherProjectId}/tool-secrets/audit?secretId=${created.id}`, { key: writer });
    expect(res.status).toBe(200);
    const common = { secretId: created.id, toolName: 'get_invoice', secretKey: 'AUDITED', environment: 'qa', allowedHosts: ['billing.example.com'], actor: { type: 'api_key', id: writerId } };
    expect(res.body).toMatchObject({ success: true, total: 3, page: 1, limit: 50 });
    expect(res.body.records).toEqual([
      { id: expect.any(String), action: 'delete', version: 2, at: expect.any(String), ...common },
      { id: expect.any(String), action: 'rotate', version: 2, at: expect.any(String), ...common },
      { id: expect.any(String), action: 'create', version: 1, at: expect.any(String), ...common },
    ]);
    expect(res.text).not.toContain(VALUE);
    expect(res.text).not.toContain('audit-rotated-value');
    const page = await api.get(`/api/projects/${t.otherProjectId}/tool-secrets/audit?secretId=${created.id}&page=2&limit=2`, { key: writer });
    expect(page.body.records.map((r: { action: string }) => r.action)).toEqual(['create']);
    const raw = await stack.ctx.models.ToolSecretAudit.find({ tenantId: t.tenantId }).lean();
    expect(JSON.stringify(raw)).not.toContain(VALUE);
  });
});

describe('encryption at rest', () => {
  it('decrypts a value only on its own row: a ciphertext copied onto another row does not open', async () => {
    const a = (await create({ toolName: 'swap', secretKey: 'SWAP_A', value: 'value-of-a-1234' })).body.secret;
    const b = (await create({ toolName: 'swap', secretKey: 'SWAP_B', value: 'value-of-b-5678' })).body.secret;
    const ring = secretMasterKeyRing(stack.config);
    const query = { tenantId: t.tenantId, projectId: t.projectId, toolName: 'swap', environment: 'dev', names: ['SWAP_A', 'SWAP_B'] };
    expect(await resolveToolSecrets(stack.ctx.models, ring, query)).toEqual({ SWAP_A: 'value-of-a-1234', SWAP_B: 'value-of-b-5678' });
    const rowA = await stack.ctx.models.ToolSecret.findById(a.id).lean();
    await stack.ctx.models.ToolSecret.updateOne({ _id: b.id }, { $set: { value: rowA!.value } });
    await expect(resolveToolSecrets(stack.ctx.models, ring, query)).rejects.toMatchObject({ name: 'ToolSecretUnavailableError', secretKey: 'SWAP_B', problem: 'unreadable' });
    expect(toolSecretAad({ ...query, secretKey: 'SWAP_A' })).not.toBe(toolSecretAad({ ...query, secretKey: 'SWAP_B' }));
  });

  it("makes one data key per tenant, even when many requests need it at once", async () => {
    const fresh = await seedTenant(stack.ctx);
    const ring = secretMasterKeyRing(stack.config)!;
    const keys = await Promise.all(Array.from({ length: 8 }, () => tenantDataKey(stack.ctx.models.TenantDataKey, ring, fresh.tenantId)));
    expect(new Set(keys.map((k) => k.toString('hex'))).size).toBe(1);
    expect(await stack.ctx.models.TenantDataKey.countDocuments({ tenantId: fresh.tenantId })).toBe(1);
  });
});

describe('resolution for a tool call', () => {
  it("prefers the tool's own row, falls back to the project-wide one, keeps environments apart, and never bypasses an expiry", async () => {
    const ring = secretMasterKeyRing(stack.config);
    const put = (toolName: string, secretKey: string, value: string, environment = 'dev') =>
      create({ projectId: t.otherProjectId, toolName, secretKey, value, environment }).then((r) => r.body.secret.id);
    await put('billing', 'OWN_AND_WIDE', 'own-value-1111');
    await put('*', 'OWN_AND_WIDE', 'wide-value-2222');
    await put('*', 'WIDE_ONLY', 'wide-only-3333');
    await put('billing', 'WIDE_ONLY', 'prod-only-4444', 'production');
    const expiredId = await put('billing', 'EXPIRING', 'expiring-5555');
    await put('*', 'EXPIRING', 'wide-expiring-6666');
    const query = (names: string[], environment = 'dev') => ({ tenantId: t.tenantId, projectId: t.otherProjectId, toolName: 'billing', environment, names });

    expect(await resolveToolSecrets(stack.ctx.models, ring, query(['OWN_AND_WIDE', 'WIDE_ONLY', 'EXPIRING']))).toEqual({
      OWN_AND_WIDE: 'own-value-1111',
      WIDE_ONLY: 'wide-only-3333',
      EXPIRING: 'expiring-5555',
    });
    expect(await resolveToolSecrets(stack.ctx.models, ring, { ...query(['OWN_AND_WIDE']), toolName: 'crm' })).toEqual({ OWN_AND_WIDE: 'wide-value-2222' });
    expect(await resolveToolSecrets(stack.ctx.models, ring, query(['WIDE_ONLY'], 'production'))).toEqual({ WIDE_ONLY: 'prod-only-4444' });
    await expect(resolveToolSecrets(stack.ctx.models, ring, query(['OWN_AND_WIDE'], 'production'))).rejects.toMatchObject({ secretKey: 'OWN_AND_WIDE', problem: 'missing' });
    // Another tenant asking for the same project finds nothing.
    await expect(resolveToolSecrets(stack.ctx.models, ring, { ...query(['WIDE_ONLY']), tenantId: other.tenantId })).rejects.toMatchObject({ problem: 'missing' });

    await stack.ctx.models.ToolSecret.updateOne({ _id: expiredId, tenantId: t.tenantId }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    await expect(resolveToolSecrets(stack.ctx.models, ring, query(['EXPIRING']))).rejects.toMatchObject({ secretKey: 'EXPIRING', problem: 'expired' });
    // Rotating with a new expiry brings it back.
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await api.put(`/api/tool-secrets/${expiredId}`, { key: t.adminKey, json: { value: 'renewed-7777', expiresAt: future } })).body.secret.version).toBe(2);
    expect(await resolveToolSecrets(stack.ctx.models, ring, query(['EXPIRING']))).toEqual({ EXPIRING: 'renewed-7777' });
    const listed = await api.get(`/api/tool-secrets?projectId=${t.otherProjectId}&toolName=billing&environment=dev`, { key: t.adminKey });
    expect(listed.body.secrets.find((s: Secret) => s.id === expiredId)).toMatchObject({ version: 2, expiresAt: future });
  });
});

describe('without encryption configured', () => {
  let bare: TestStack;
  beforeAll(async () => {
    bare = await startTestStack({ env: { ENCRYPTION_KEY: '' } });
  });
  afterAll(() => bare.close());

  it('answers 503 to create and rotate, and still lists', async () => {
    const owner = await seedTenant(bare.ctx);
    const bareApi = client(bare.baseUrl);
    const res = await bareApi.post('/api/tool-secrets', { key: owner.adminKey, json: { projectId: owner.projectId, toolName: 't', secretKey: 'K', value: 'v', allowedHosts: ['billing.example.com'] } });
    expect(res.status).toBe(503);
    expect(res.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('encryption not configured') });
    expect((await bareApi.get(`/api/tool-secrets?projectId=${owner.projectId}`, { key: owner.adminKey })).body).toMatchObject({ success: true, secrets: [], total: 0 });
  });
});
