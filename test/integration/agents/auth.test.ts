// The auth matrix of the agent routes: 401 without a credential, 403 without agent:read /
// agent:write, 404 for another tenant's project or agent, and project-bound keys confined.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;

const DSL = (name: string) => `AGENT: ${name}\nGOAL: "Help."\n`;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-agent-auth');
  globex = await seedTenant(stack.ctx, 'globex-agent-auth');
  for (const [tenant, projectId, name] of [
    [acme, acme.projectId, 'Main_Agent'],
    [acme, acme.otherProjectId, 'Other_Agent'],
    [globex, globex.projectId, 'Globex_Agent'],
  ] as const) {
    const res = await api.post(`/api/projects/${projectId}/agents`, { key: tenant.adminKey, json: { name, dslContent: DSL(name) } });
    expect(res.status).toBe(201);
  }
  await api.put(`/api/projects/${acme.projectId}/tools/shared`, {
    key: acme.adminKey,
    json: { dslContent: 'TOOLS:\n  ping() -> string\n    type: http\n    endpoint: "https://x.test/ping"\n' },
  });
});
afterAll(() => stack.close());

type Call = { method: 'get' | 'post' | 'put' | 'delete'; path: (p: string, agent: string) => string; json?: unknown; perm: 'agent:read' | 'agent:write' };

const PROJECT_ROUTES: Array<[string, Call]> = [
  ['list agents', { method: 'get', path: (p) => `/api/projects/${p}/agents`, perm: 'agent:read' }],
  ['get agent', { method: 'get', path: (p, a) => `/api/projects/${p}/agents/${a}`, perm: 'agent:read' }],
  ['validate', { method: 'post', path: (p, a) => `/api/projects/${p}/agents/${a}/validate`, json: {}, perm: 'agent:read' }],
  ['list versions', { method: 'get', path: (p, a) => `/api/projects/${p}/agents/${a}/versions`, perm: 'agent:read' }],
  ['get version', { method: 'get', path: (p, a) => `/api/projects/${p}/agents/${a}/versions/1.0.0`, perm: 'agent:read' }],
  ['list tools', { method: 'get', path: (p) => `/api/projects/${p}/tools`, perm: 'agent:read' }],
  ['get tool', { method: 'get', path: (p) => `/api/projects/${p}/tools/shared`, perm: 'agent:read' }],
  ['create agent', { method: 'post', path: (p) => `/api/projects/${p}/agents`, json: { name: 'New_One' }, perm: 'agent:write' }],
  ['save draft', { method: 'put', path: (p, a) => `/api/projects/${p}/agents/${a}/dsl`, json: { dslContent: 'AGENT: X\nGOAL: "changed"\n' }, perm: 'agent:write' }],
  ['create version', { method: 'post', path: (p, a) => `/api/projects/${p}/agents/${a}/versions`, json: {}, perm: 'agent:write' }],
  ['delete agent', { method: 'delete', path: (p, a) => `/api/projects/${p}/agents/${a}`, perm: 'agent:write' }],
  ['put tool', { method: 'put', path: (p) => `/api/projects/${p}/tools/shared`, json: { dslContent: 'TOOLS:\n  changed' }, perm: 'agent:write' }],
  ['delete tool', { method: 'delete', path: (p) => `/api/projects/${p}/tools/shared`, perm: 'agent:write' }],
];

async function snapshot() {
  const [agents, versions, tools] = await Promise.all([
    stack.ctx.models.Agent.find({}).sort({ _id: 1 }).lean(),
    stack.ctx.models.AgentVersion.countDocuments({}),
    stack.ctx.models.ToolFile.find({}).sort({ _id: 1 }).lean(),
  ]);
  return JSON.stringify({ agents, versions, tools });
}

describe.each(PROJECT_ROUTES)('%s', (_label, call) => {
  const send = (key: string | undefined, projectId: string, agent: string) =>
    api[call.method](call.path(projectId, agent), { key, ...(call.json !== undefined ? { json: call.json } : {}) });

  it('answers 401 without a credential', async () => {
    const res = await send(undefined, acme.projectId, 'Main_Agent');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it(`answers 403 to a key without ${call.perm}, changing nothing`, async () => {
    const key = await acme.keyWith(call.perm === 'agent:read' ? ['session:read', 'session:execute'] : ['agent:read']);
    const before = await snapshot();
    const res = await send(key, acme.projectId, 'Main_Agent');
    expect(res.status).toBe(403);
    expect(res.body.error).toEqual({ code: 'FORBIDDEN', message: expect.stringContaining(`'${call.perm}'`) });
    expect(await snapshot()).toBe(before);
  });

  it("answers 404 for another tenant's project, changing nothing", async () => {
    const before = await snapshot();
    const res = await send(acme.adminKey, globex.projectId, 'Globex_Agent');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect(await snapshot()).toBe(before);
  });

  it('confines a project-bound key to its project (404 elsewhere)', async () => {
    const key = await acme.keyWith([call.perm], acme.projectId);
    const before = await snapshot();
    const res = await send(key, acme.otherProjectId, 'Other_Agent');
    expect(res.status).toBe(404);
    expect(await snapshot()).toBe(before);
  });
});

describe('read routes with the right permission', () => {
  it('lets an agent:read key read but not write', async () => {
    const key = await acme.keyWith(['agent:read']);
    expect((await api.get(`/api/projects/${acme.projectId}/agents/Main_Agent`, { key })).status).toBe(200);
    expect((await api.put(`/api/projects/${acme.projectId}/agents/Main_Agent/dsl`, { key, json: { dslContent: DSL('Main_Agent') } })).status).toBe(403);
  });

  it('lets a JWT user with agent:write save a draft', async () => {
    const { email, password } = await acme.user(['agent:write']);
    const login = await api.post('/api/auth/login', { json: { email, password } });
    expect(login.status).toBe(200);
    const token: string = login.body.token;
    const res = await api.put(`/api/projects/${acme.projectId}/agents/Main_Agent/dsl`, { token, json: { dslContent: DSL('Main_Agent') } });
    expect(res.status).toBe(200);
  });

  it("hides another tenant's agent in a visible project path (404)", async () => {
    const res = await api.get(`/api/projects/${acme.projectId}/agents/Globex_Agent`, { key: acme.adminKey });
    expect(res.status).toBe(404);
  });
});

describe('tenant discovery routes', () => {
  it('answer 401 without a credential', async () => {
    expect((await api.get('/api/agents')).status).toBe(401);
    expect((await api.get('/api/agents/Main_Agent')).status).toBe(401);
  });

  it("never show another tenant's agents", async () => {
    const list = await api.get('/api/agents', { key: acme.adminKey });
    expect(list.body.agents.map((a: { name: string }) => a.name).sort()).toEqual(['Main_Agent', 'Other_Agent']);
    expect((await api.get('/api/agents/Globex_Agent', { key: acme.adminKey })).status).toBe(404);
    expect((await api.get(`/api/agents?projectId=${globex.projectId}`, { key: acme.adminKey })).status).toBe(404);
  });

  it('confine a project-bound key to its project', async () => {
    const key = await acme.keyWith(['session:read'], acme.projectId);
    const list = await api.get('/api/agents', { key });
    expect(list.body).toEqual({ success: true, total: 1, agents: [expect.objectContaining({ name: 'Main_Agent' })] });
    expect((await api.get('/api/agents/Other_Agent', { key })).status).toBe(404);
    expect((await api.get(`/api/agents?projectId=${acme.otherProjectId}`, { key })).status).toBe(404);
    expect((await api.get('/api/agents/Main_Agent', { key })).status).toBe(200);
  });
});
