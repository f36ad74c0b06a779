// Voice channel connections against the real stack: create with defaults, read, change, delete;
// pages newest first; every refusal (phone numbers, fields, agents, deployments, the per-project
// limit) changes nothing; tenancy, scopes and environment binding; a deployment's channelCount.
// Every answer of the file is scanned for the auth tokens it sent.
import { client, type HttpResult } from '../../support/http';
import { echoAgent, publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(90_000);

const LIMIT = 20;
const TOKEN = 'f0e1d2c3b4a5968778695a4b3c2d1e0f';
const SID = `AC${'0123456789abcdef'.repeat(2)}`;

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let raw: ReturnType<typeof client>;
const answers: HttpResult[] = [];

// Every request of the file goes through here, so that every answer is scanned at the end.
type Method = 'get' | 'post' | 'patch' | 'delete' | 'put';
const api = Object.fromEntries(
  (['get', 'post', 'patch', 'delete', 'put'] as const).map((m) => [
    m,
    async (path: string, o?: Parameters<ReturnType<typeof client>['get']>[1]) => {
      const res = await raw[m](path, o);
      answers.push(res);
      return res;
    },
  ]),
) as Record<Method, ReturnType<typeof client>['get']>;

beforeAll(async () => {
  stack = await startTestStack({ env: { CHANNEL_CONNECTIONS_MAX_PER_PROJECT: String(LIMIT) }, liveKit: false });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  raw = client(stack.baseUrl);
  await publishAgent(raw, t, 'Echo', echoAgent());
  await publishAgent(raw, t, 'Helper', echoAgent().replace('AGENT: Echo', 'AGENT: Helper'));
  const draft = await raw.post(`/api/projects/${t.projectId}/agents`, { key: t.adminKey, json: { name: 'Draft', dslContent: echoAgent().replace('AGENT: Echo', 'AGENT: Draft') } });
  expect(draft.status).toBe(201);
});
afterAll(async () => {
  await stack.close();
});

const base = (projectId = t.projectId) => `/api/projects/${projectId}/channel-connections`;
const one = (id: string, projectId = t.projectId) => `${base(projectId)}/${id}`;
const valid = (extra: Record<string, unknown> = {}) => ({ name: 'Support line', accountSid: SID, authToken: TOKEN, callerNumber: '+15551234567', ...extra });
const create = (extra: Record<string, unknown> = {}, key = t.adminKey, projectId = t.projectId) => api.post(base(projectId), { key, json: valid(extra) });
const count = (tenantId = t.tenantId) => stack.ctx.models.ChannelConnection.countDocuments({ tenantId });

async function deploy(manifest: Record<string, string>, entryAgentName: string, environment = 'dev'): Promise<{ id: string; endpointSlug: string }> {
  const res = await api.post(`/api/projects/${t.projectId}/deployments`, { key: t.adminKey, json: { environment, agentVersionManifest: manifest, entryAgentName } });
  expect(res.status).toBe(201);
  return res.body.deployment;
}
const channelCount = async (deploymentId: string) => {
  const res = await api.get(`/api/projects/${t.projectId}/deployments/${deploymentId}`, { key: t.adminKey });
  expect(res.status).toBe(200);
  return res.body.deployment.channelCount as number;
};

describe('create, read, change, delete', () => {
  it('creates with the defaults and answers data.id, the channelConnectionId', async () => {
    const created = await create();
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^cc_[0-9a-z]+$/),
        projectId: t.projectId,
        provider: 'twilio',
        name: 'Support line',
        accountSid: SID,
        // Masked, as every phone number in a response.
        callerNumber: '+1********67',
        environment: 'dev',
        agentId: null,
        endpointSlug: null,
        amdMode: 'off',
        recordingEnabled: false,
        voiceMode: 'gather',
        transferNumber: null,
        status: 'active',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    });
    const got = await api.get(one(created.body.data.id), { key: t.adminKey });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
  });

  it('changes only the fields given, clears with null, and answers an empty change unchanged', async () => {
    const { data } = (await create({ name: '  Sales  ', amdMode: 'continue', recordingEnabled: true, transferNumber: '+442071234567', environment: 'staging' })).body;
    expect(data).toMatchObject({ name: 'Sales', amdMode: 'continue', recordingEnabled: true, transferNumber: '+4*********67', environment: 'staging' });

    const changed = await api.patch(one(data.id), { key: t.adminKey, json: { status: 'disabled', amdMode: 'disconnect', transferNumber: null, agentId: 'Echo' } });
    expect(changed.status).toBe(200);
    const echo = await stack.ctx.models.Agent.findOne({ tenantId: t.tenantId, projectId: t.projectId, name: 'Echo' }).lean();
    expect(changed.body.data).toEqual({
      ...data,
      status: 'disabled',
      amdMode: 'disconnect',
      transferNumber: null,
      // Named by its name, stored as its id.
      agentId: echo!._id,
      updatedAt: expect.any(String),
    });
    const unchanged = await api.patch(one(data.id), { key: t.adminKey, json: {} });
    expect(unchanged.status).toBe(200);
    expect(unchanged.body.data).toEqual(changed.body.data);

    // A new token alone, or a new account with its token: accepted, never shown.
    expect((await api.patch(one(data.id), { key: t.adminKey, json: { authToken: 'another-token-value' } })).status).toBe(200);
    const moved = await api.patch(one(data.id), { key: t.adminKey, json: { accountSid: `AC${'f'.repeat(32)}`, authToken: 'token-of-the-new-account' } });
    expect(moved.status).toBe(200);
    expect(moved.body.data.accountSid).toBe(`AC${'f'.repeat(32)}`);
    // The same account again needs no token.
    expect((await api.patch(one(data.id), { key: t.adminKey, json: { accountSid: `AC${'f'.repeat(32)}`, name: 'Sales 2' } })).status).toBe(200);
  });

  it('deletes: then it is 404 CHANNEL_NOT_FOUND everywhere', async () => {
    const { data } = (await create()).body;
    const before = await count();
    const deleted = await api.delete(one(data.id), { key: t.adminKey });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ success: true });
    expect(await count()).toBe(before - 1);
    for (const res of [
      await api.get(one(data.id), { key: t.adminKey }),
      await api.patch(one(data.id), { key: t.adminKey, json: { name: 'Back' } }),
      await api.delete(one(data.id), { key: t.adminKey }),
    ]) {
      expect([res.status, res.body.error.code]).toEqual([404, 'CHANNEL_NOT_FOUND']);
    }
  });
});

describe('lists', () => {
  it('pages newest first with total, offset and limit', async () => {
    const project = other.projectId;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create({ name: `Line ${i}` }, other.adminKey, project)).body.data.id);
    const newestFirst = [...ids].reverse();
    const seen: string[] = [];
    for (const offset of [0, 2, 4]) {
      const page = await api.get(`${base(project)}?limit=2&offset=${offset}`, { key: other.adminKey });
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ success: true, total: 5, offset, limit: 2 });
      seen.push(...page.body.data.map((c: { id: string }) => c.id));
    }
    expect(seen).toEqual(newestFirst);
    const all = await api.get(base(project), { key: other.adminKey });
    expect(all.body).toMatchObject({ total: 5, offset: 0, limit: 50 });
    expect(all.body.data.map((c: { id: string }) => c.id)).toEqual(newestFirst);
    for (const query of ['limit=0', 'limit=201', 'offset=-1', 'limit=abc']) {
      const res = await api.get(`${base(project)}?${query}`, { key: other.adminKey });
      expect([query, res.status, res.body.error.code]).toEqual([query, 400, 'VALIDATION_ERROR']);
    }
    // Cleaned up, so that the other tenant holds nothing in the tests below.
    for (const id of ids) expect((await api.delete(one(id, project), { key: other.adminKey })).status).toBe(200);
  });
});

describe('refusals change nothing', () => {
  it('answers 400 for bad input, INVALID_PHONE_NUMBER for numbers, and stores nothing', async () => {
    const before = await count();
    const cases: [Record<string, unknown>, string][] = [
      [{ callerNumber: '5551234567' }, 'INVALID_PHONE_NUMBER'],
      [{ callerNumber: '+05551234567' }, 'INVALID_PHONE_NUMBER'],
      [{ callerNumber: '+1555123456789012' }, 'VALIDATION_ERROR'],
      [{ callerNumber: '+1 555 123 4567' }, 'INVALID_PHONE_NUMBER'],
      [{ transferNumber: 'sip:agent@example.com' }, 'VALIDATION_ERROR'],
      [{ transferNumber: '+1555abc4567' }, 'INVALID_PHONE_NUMBER'],
      [{ accountSid: 'AC123' }, 'VALIDATION_ERROR'],
      [{ accountSid: `AC${'A'.repeat(32)}` }, 'VALIDATION_ERROR'],
      [{ authToken: '' }, 'VALIDATION_ERROR'],
      [{ authToken: '   ' }, 'VALIDATION_ERROR'],
      [{ name: ' ' }, 'VALIDATION_ERROR'],
      [{ provider: 'vonage' }, 'VALIDATION_ERROR'],
      [{ amdMode: 'always' }, 'VALIDATION_ERROR'],
      [{ environment: 'qa' }, 'VALIDATION_ERROR'],
      [{ status: 'paused' }, 'VALIDATION_ERROR'],
      [{ recordingEnabled: 'yes' }, 'VALIDATION_ERROR'],
      [{ voiceMode: 'stream' }, 'VALIDATION_ERROR'],
      [{ unknownField: 1 }, 'VALIDATION_ERROR'],
    ];
    for (const [extra, code] of cases) {
      const res = await create(extra);
      expect([extra, res.status, res.body.error.code]).toEqual([extra, 400, code]);
    }
    const { authToken: _authToken, ...noToken } = valid();
    const missing = await api.post(base(), { key: t.adminKey, json: noToken });
    expect([missing.status, missing.body.error.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(missing.body.error.message).toContain('body.authToken');
    expect(await count()).toBe(before);
  });

  it('answers 422 for an agent or deployment it cannot route to, and stores nothing', async () => {
    const retired = await deploy({ Echo: 'auto' }, 'Echo', 'staging');
    const active = await deploy({ Echo: 'auto' }, 'Echo', 'staging');
    const before = await count();
    const cases: Record<string, unknown>[] = [
      { agentId: 'Nobody' },
      // An agent without a version cannot answer a call.
      { agentId: 'Draft' },
      { endpointSlug: 'no-such-slug' },
      { endpointSlug: retired.endpointSlug },
      // The deployment is in staging, the connection in production.
      { endpointSlug: active.endpointSlug, environment: 'production' },
      // Helper is not part of the deployment.
      { endpointSlug: active.endpointSlug, agentId: 'Helper' },
      // This deployment has no real-time voice (no LIVEKIT_URL): its calls could not be bridged.
      { voiceMode: 'realtime' },
    ];
    for (const extra of cases) {
      const res = await create(extra);
      expect([extra, res.status, res.body.error.code]).toEqual([extra, 422, 'UNPROCESSABLE_ENTITY']);
    }
    // Another tenant's deployment is not one of this project.
    await publishAgent(raw, other, 'Echo', echoAgent());
    const foreign = await raw.post(`/api/projects/${other.projectId}/deployments`, {
      key: other.adminKey,
      json: { environment: 'dev', agentVersionManifest: { Echo: 'auto' }, entryAgentName: 'Echo' },
    });
    expect(foreign.status).toBe(201);
    const pinForeign = await create({ endpointSlug: foreign.body.deployment.endpointSlug });
    expect([pinForeign.status, pinForeign.body.error.code]).toEqual([422, 'UNPROCESSABLE_ENTITY']);
    expect(await count()).toBe(before);

    // The deployment's environment is taken when none is given.
    const pinned = await create({ endpointSlug: active.endpointSlug, agentId: 'Echo' });
    expect(pinned.status).toBe(201);
    expect(pinned.body.data).toMatchObject({ environment: 'staging', endpointSlug: active.endpointSlug });
    expect(await count()).toBe(before + 1);
    expect((await api.delete(one(pinned.body.data.id), { key: t.adminKey })).status).toBe(200);
  });

  it('leaves a connection as it was after a refused change', async () => {
    const { data } = (await create({ name: 'Steady' })).body;
    const refusals: [Record<string, unknown>, number, string][] = [
      [{ callerNumber: '12345', name: 'Changed' }, 400, 'INVALID_PHONE_NUMBER'],
      [{ transferNumber: '+0123', status: 'disabled' }, 400, 'INVALID_PHONE_NUMBER'],
      [{ name: 'Changed', authToken: '' }, 400, 'VALIDATION_ERROR'],
      [{ name: 'Changed', provider: 'twilio' }, 400, 'VALIDATION_ERROR'],
      [{ name: 'Changed', agentId: 'Nobody' }, 422, 'UNPROCESSABLE_ENTITY'],
      [{ name: 'Changed', endpointSlug: 'no-such-slug' }, 422, 'UNPROCESSABLE_ENTITY'],
      [{ name: 'Changed', voiceMode: 'realtime' }, 422, 'UNPROCESSABLE_ENTITY'],
      // A different account without its token.
      [{ name: 'Changed', accountSid: `AC${'e'.repeat(32)}` }, 422, 'UNPROCESSABLE_ENTITY'],
    ];
    for (const [json, status, code] of refusals) {
      const res = await api.patch(one(data.id), { key: t.adminKey, json });
      expect([json, res.status, res.body.error.code]).toEqual([json, status, code]);
    }
    expect((await api.get(one(data.id), { key: t.adminKey })).body.data).toEqual(data);
    expect((await api.delete(one(data.id), { key: t.adminKey })).status).toBe(200);
  });

  it('holds a project to CHANNEL_CONNECTIONS_MAX_PER_PROJECT (429), counting no other project', async () => {
    const limited = await seedTenant(stack.ctx);
    const ids: string[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const res = await create({ name: `Line ${i}` }, limited.adminKey, limited.projectId);
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
    }
    const full = await create({}, limited.adminKey, limited.projectId);
    expect([full.status, full.body.error.code]).toEqual([429, 'CHANNEL_CONNECTION_LIMIT_REACHED']);
    expect(await count(limited.tenantId)).toBe(LIMIT);
    expect((await create({}, limited.adminKey, limited.otherProjectId)).status).toBe(201);
    expect((await api.delete(one(ids[0]!, limited.projectId), { key: limited.adminKey })).status).toBe(200);
    expect((await create({}, limited.adminKey, limited.projectId)).status).toBe(201);
  });
});

describe('who may see and change a connection', () => {
  it("answers 404 CHANNEL_NOT_FOUND for another tenant's or project's connection", async () => {
    const { data } = (await create()).body;
    for (const [key, path] of [
      [other.adminKey, one(data.id, other.projectId)],
      [t.adminKey, one(data.id, t.otherProjectId)],
    ] as const) {
      const res = await api.get(path, { key });
      expect([res.status, res.body.error.code]).toEqual([404, 'CHANNEL_NOT_FOUND']);
    }
    // Another tenant does not see the project at all.
    const foreign = await api.get(one(data.id), { key: other.adminKey });
    expect(foreign.status).toBe(404);
    expect((await api.get(one(data.id), { key: t.adminKey })).status).toBe(200);
  });

  it('lets channel_connection:read read and only channel_connection:write change', async () => {
    const { data } = (await create()).body;
    const none = await t.keyWith(['agent:read']);
    expect((await api.get(base(), { key: none })).status).toBe(403);
    const reader = await t.keyWith(['channel_connection:read']);
    expect((await api.get(base(), { key: reader })).status).toBe(200);
    expect((await api.get(one(data.id), { key: reader })).status).toBe(200);
    const before = await count();
    for (const res of [
      await create({}, reader),
      await api.patch(one(data.id), { key: reader, json: { name: 'Mine' } }),
      await api.delete(one(data.id), { key: reader }),
    ]) {
      expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect(await count()).toBe(before);
    const writer = await t.keyWith(['channel_connection:write']);
    expect((await api.patch(one(data.id), { key: writer, json: { name: 'Mine' } })).status).toBe(200);
    // A user holding the permissions, signed in.
    const user = await t.user(['channel_connection:read']);
    const login = await api.post('/api/auth/login', { json: user });
    expect(login.status).toBe(200);
    expect((await api.get(one(data.id), { token: login.body.token })).body.data.name).toBe('Mine');
    expect((await api.patch(one(data.id), { token: login.body.token, json: { name: 'Users' } })).status).toBe(403);
  });

  it('gives APP_VIEW reads and APP_EDIT changes, and keeps a bound key to its environments', async () => {
    const scoped = async (grant: string, environments?: string[]) => {
      const scope = await api.post(`/api/public/apps/${t.projectId}/scopes`, {
        key: t.adminKey,
        json: { scope_name: `cc-${grant}-${Math.random().toString(36).slice(2, 8)}`, permissions: { [grant]: 'YES' } },
      });
      expect(scope.status).toBe(201);
      const key = await api.post('/api/public/apikeys/create', {
        key: t.adminKey,
        json: { scope_name: scope.body.scope.scope_name, api_key_name: 'k', app_id: t.projectId, ...(environments ? { environments } : {}) },
      });
      expect(key.status).toBe(201);
      return key.body.api_key.apikey as string;
    };
    const viewer = await scoped('APP_VIEW');
    expect((await api.get(base(), { key: viewer })).status).toBe(200);
    expect((await create({}, viewer)).status).toBe(403);
    const editor = await scoped('APP_EDIT');
    const made = await create({ environment: 'production' }, editor);
    expect(made.status).toBe(201);

    const prod = await scoped('channel_connections.write', ['production']);
    expect((await create({ environment: 'dev' }, prod)).status).toBe(403);
    // With no environment given, dev is meant: refused too.
    expect((await create({}, prod)).status).toBe(403);
    const listed = await api.get(`${base()}?limit=200`, { key: prod });
    expect(listed.body.data.length).toBeGreaterThan(0);
    expect(listed.body.data.every((c: { environment: string }) => c.environment === 'production')).toBe(true);
    expect(listed.body.total).toBe(listed.body.data.length);
    expect((await api.patch(one(made.body.data.id), { key: prod, json: { recordingEnabled: true } })).status).toBe(200);
    const dev = (await create()).body.data;
    expect((await api.get(one(dev.id), { key: prod })).body.error.code).toBe('CHANNEL_NOT_FOUND');
  });
});

describe('a deployment counts the connections that pin it', () => {
  it('answers channelCount from the connections whose endpointSlug is its own', async () => {
    const first = await deploy({ Echo: 'auto', Helper: 'auto' }, 'Echo', 'production');
    expect(await channelCount(first.id)).toBe(0);
    const a = (await create({ endpointSlug: first.endpointSlug })).body.data;
    const b = (await create({ endpointSlug: first.endpointSlug, agentId: 'Helper', environment: 'production' })).body.data;
    expect(a.environment).toBe('production');
    await create({ environment: 'production' });
    expect(await channelCount(first.id)).toBe(2);

    // A newer deployment supersedes it: the connections stay pinned to the old one.
    const second = await deploy({ Echo: 'auto' }, 'Echo', 'production');
    expect(await channelCount(second.id)).toBe(0);
    expect(await channelCount(first.id)).toBe(2);
    // Repinning b to the new deployment: Helper is not in it (422), without an agent it is.
    expect((await api.patch(one(b.id), { key: t.adminKey, json: { endpointSlug: second.endpointSlug } })).status).toBe(422);
    expect((await api.patch(one(b.id), { key: t.adminKey, json: { endpointSlug: second.endpointSlug, agentId: null } })).status).toBe(200);
    expect(await channelCount(first.id)).toBe(1);
    expect(await channelCount(second.id)).toBe(1);
    // Unpinned, then deleted.
    expect((await api.patch(one(a.id), { key: t.adminKey, json: { endpointSlug: null } })).body.data.endpointSlug).toBeNull();
    expect(await channelCount(first.id)).toBe(0);
    expect((await api.delete(one(b.id), { key: t.adminKey })).status).toBe(200);
    expect(await channelCount(second.id)).toBe(0);
  });
});

describe('the auth token', () => {
  it('was in no answer of the whole file', () => {
    expect(answers.length).toBeGreaterThan(50);
    for (const res of answers) {
      expect(res.text).not.toContain(TOKEN);
      expect(res.text).not.toContain('another-token-value');
      expect(res.text).not.toContain('token-of-the-new-account');
      expect(res.text).not.toContain('"authToken":');
    }
  });
});
