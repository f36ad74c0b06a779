// Agent routes against the real stack: the spec's Agents table (tenant discovery, project agents,
// draft saving), agent creation and deletion, draft validation and tool library files.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

const HUB = `SUPERVISOR: Hub
GOAL: "Route people to the right specialist."
HANDOFF:
  - TO: Helper
    WHEN: user needs help
`;
const HELPER = `AGENT: Helper
GOAL: "Help with anything."
`;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-agents');
});
afterAll(() => stack.close());

const base = () => `/api/projects/${acme.projectId}`;

async function create(name: string, dslContent?: string, projectId = acme.projectId) {
  const res = await api.post(`/api/projects/${projectId}/agents`, { key: acme.adminKey, json: { name, ...(dslContent ? { dslContent } : {}) } });
  expect(res.status).toBe(201);
  return res.body.agent;
}

describe('creating agents', () => {
  it('creates an agent with a draft and answers the project-agent shape', async () => {
    const res = await api.post(`${base()}/agents`, {
      key: acme.adminKey,
      json: { name: 'Helper', domain: 'support', description: 'Answers questions', dslContent: HELPER },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      agent: {
        id: expect.any(String),
        name: 'Helper',
        agentPath: 'support/Helper',
        description: 'Answers questions',
        versionCount: 0,
        latestVersion: null,
        activeVersions: {},
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        dslContent: HELPER,
      },
    });
  });

  it('defaults the domain to the project slug and the draft to a minimal agent', async () => {
    const agent = await create('Minimal');
    expect(agent.agentPath).toBe('main/Minimal');
    expect(agent.description).toBeNull();
    expect(agent.dslContent).toMatch(/^AGENT: Minimal\nGOAL: /);
    const validate = await api.post(`${base()}/agents/Minimal/validate`, { key: acme.adminKey, json: {} });
    expect(validate.body).toEqual({ success: true, valid: true, diagnostics: [] });
  });

  it('answers 409 on a duplicate name and changes nothing', async () => {
    await create('Dup', HELPER.replace('Helper', 'Dup'));
    const res = await api.post(`${base()}/agents`, { key: acme.adminKey, json: { name: 'Dup', dslContent: 'AGENT: Dup\nGOAL: "other"\n' } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    const get = await api.get(`${base()}/agents/Dup`, { key: acme.adminKey });
    expect(get.body.agent.dslContent).toBe(HELPER.replace('Helper', 'Dup'));
  });

  it.each([
    ['a name starting with a digit', { name: '1Agent' }, 'body.name'],
    ['a name with a dash', { name: 'my-agent' }, 'body.name'],
    ['a missing name', {}, 'body.name'],
    ['an empty dslContent', { name: 'Empty', dslContent: '' }, 'body.dslContent'],
    ['a bad domain', { name: 'BadDomain', domain: 'Not A Slug' }, 'body.domain'],
  ])('rejects %s with 400 naming the field', async (_label, json, field) => {
    const res = await api.post(`${base()}/agents`, { key: acme.adminKey, json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain(field);
    const name = (json as { name?: string }).name;
    if (name) expect((await api.get(`/api/agents/${encodeURIComponent(name)}`, { key: acme.adminKey })).status).not.toBe(200);
  });
});

describe('project agents', () => {
  it('lists the project agents sorted by name, without drafts', async () => {
    const res = await api.get(`${base()}/agents`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const names = res.body.agents.map((a: { name: string }) => a.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['Helper', 'Minimal', 'Dup']));
    for (const a of res.body.agents) {
      expect(Object.keys(a).sort()).toEqual(
        ['id', 'name', 'agentPath', 'description', 'versionCount', 'latestVersion', 'activeVersions', 'createdAt', 'updatedAt'].sort(),
      );
    }
  });

  it('gets one agent with its draft, and 404 for an unknown name', async () => {
    const res = await api.get(`${base()}/agents/Helper`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.agent).toMatchObject({ name: 'Helper', agentPath: 'support/Helper', dslContent: HELPER, versionCount: 0 });
    const missing = await api.get(`${base()}/agents/Nobody`, { key: acme.adminKey });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });

  it('deletes an agent with its versions', async () => {
    await create('Doomed', 'AGENT: Doomed\nGOAL: "Go away."\n');
    expect((await api.post(`${base()}/agents/Doomed/versions`, { key: acme.adminKey, json: {} })).status).toBe(201);
    const del = await api.delete(`${base()}/agents/Doomed`, { key: acme.adminKey });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
    expect((await api.get(`${base()}/agents/Doomed`, { key: acme.adminKey })).status).toBe(404);
    expect(await stack.ctx.models.AgentVersion.countDocuments({ agentName: 'Doomed', projectId: acme.projectId })).toBe(0);
    expect((await api.delete(`${base()}/agents/Doomed`, { key: acme.adminKey })).status).toBe(404);
  });

  it('refuses to delete an agent that a deployment has active', async () => {
    const agent = await create('Live', 'AGENT: Live\nGOAL: "Stay."\n');
    const { recordActiveVersions } = await import('../../../core/agents/agents');
    await recordActiveVersions(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.projectId }, 'production', { Live: '1.0.0' });
    const listed = await api.get(`${base()}/agents/Live`, { key: acme.adminKey });
    expect(listed.body.agent.activeVersions).toEqual({ production: '1.0.0' });
    const del = await api.delete(`${base()}/agents/Live`, { key: acme.adminKey });
    expect(del.status).toBe(409);
    expect(await stack.ctx.models.Agent.exists({ _id: agent.id })).toBeTruthy();
    await recordActiveVersions(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.projectId }, 'production', {});
    expect((await api.get(`${base()}/agents/Live`, { key: acme.adminKey })).body.agent.activeVersions).toEqual({});
  });
});

describe('PUT …/dsl saves the draft only', () => {
  it('saves the draft, answers { success, updatedAt } and creates no version', async () => {
    const before = await api.get(`${base()}/agents/Helper`, { key: acme.adminKey });
    const draft = 'AGENT: Helper\nGOAL: "Help with everything, politely."\nNOT VALID ABL AT ALL\n';
    const res = await api.put(`${base()}/agents/Helper/dsl`, { key: acme.adminKey, json: { dslContent: draft } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, updatedAt: expect.any(String) });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before.body.agent.updatedAt));
    const after = await api.get(`${base()}/agents/Helper`, { key: acme.adminKey });
    expect(after.body.agent.dslContent).toBe(draft);
    expect(after.body.agent.versionCount).toBe(before.body.agent.versionCount);
    expect(await stack.ctx.models.AgentVersion.countDocuments({ agentId: before.body.agent.id })).toBe(0);
    await api.put(`${base()}/agents/Helper/dsl`, { key: acme.adminKey, json: { dslContent: HELPER } });
  });

  it.each([
    ['a missing dslContent', {}],
    ['an empty dslContent', { dslContent: '' }],
    ['a blank dslContent', { dslContent: '   \n  ' }],
    ['a non-string dslContent', { dslContent: 42 }],
    ['a dslContent over 512 KB', { dslContent: 'AGENT: Helper\n' + '#'.repeat(512 * 1024) }],
  ])('rejects %s with 400 and changes nothing', async (_label, json) => {
    const before = await api.get(`${base()}/agents/Helper`, { key: acme.adminKey });
    const res = await api.put(`${base()}/agents/Helper/dsl`, { key: acme.adminKey, json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.message).toContain('body.dslContent');
    const after = await api.get(`${base()}/agents/Helper`, { key: acme.adminKey });
    expect(after.body.agent.dslContent).toBe(before.body.agent.dslContent);
    expect(after.body.agent.updatedAt).toBe(before.body.agent.updatedAt);
  });

  it('answers 404 for an unknown agent (PUT never creates one)', async () => {
    const res = await api.put(`${base()}/agents/Ghost/dsl`, { key: acme.adminKey, json: { dslContent: 'AGENT: Ghost\nGOAL: "x"\n' } });
    expect(res.status).toBe(404);
    expect(await stack.ctx.models.Agent.exists({ projectId: acme.projectId, name: 'Ghost' })).toBeNull();
  });
});

describe('validating a draft', () => {
  it('reports diagnostics with code, line and column without saving', async () => {
    const source = 'AGENT: Helper\nGOAL: "x"\nHANDOFF:\n  - TO: Nobody\n    WHEN: always\n';
    const res = await api.post(`${base()}/agents/Helper/validate`, { key: acme.adminKey, json: { dslContent: source } });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.valid).toBe(false);
    expect(res.body.diagnostics).toContainEqual(
      expect.objectContaining({ severity: 'error', code: 'E701', path: 'agents/Helper.agent.abl', line: 4, column: expect.any(Number) }),
    );
    expect((await api.get(`${base()}/agents/Helper`, { key: acme.adminKey })).body.agent.dslContent).toBe(HELPER);
  });

  it('checks handoff targets against the other agents of the project', async () => {
    await create('Hub', HUB);
    const res = await api.post(`${base()}/agents/Hub/validate`, { key: acme.adminKey, json: {} });
    expect(res.body).toEqual({ success: true, valid: true, diagnostics: [] });
  });

  it('reports a draft that names another agent', async () => {
    const res = await api.post(`${base()}/agents/Helper/validate`, { key: acme.adminKey, json: { dslContent: 'AGENT: Other\nGOAL: "x"\n' } });
    expect(res.body.valid).toBe(false);
    expect(res.body.diagnostics[0]).toMatchObject({ code: 'AGENT_NAME_MISMATCH', line: 1, column: 1, path: 'agents/Helper.agent.abl' });
  });

  it('takes a YAML agent as the draft: it compiles as the YAML format and saves a version', async () => {
    const yaml = 'agent: Yaml_Helper\ngoal: "Look members up."\ntools:\n  - name: lookup\n    parameters:\n      - name: member_id\n        type: string\n    returns:\n      points: number\n    type: http\n    endpoint: "https://members.example.com/lookup"\n';
    await create('Yaml_Helper', yaml);
    const valid = await api.post(`${base()}/agents/Yaml_Helper/validate`, { key: acme.adminKey, json: {} });
    expect(valid.body).toEqual({ success: true, valid: true, diagnostics: [] });
    const version = await api.post(`${base()}/agents/Yaml_Helper/versions`, { key: acme.adminKey, json: {} });
    expect(version.status).toBe(201);
    // A YAML error is reported against the YAML file, not as ABL.
    const broken = await api.post(`${base()}/agents/Yaml_Helper/validate`, { key: acme.adminKey, json: { dslContent: 'agent: Yaml_Helper\ngoal: "x"\ntools:\n  - name: lookup\n    type: [http\n' } });
    expect(broken.body.valid).toBe(false);
    expect(broken.body.diagnostics[0]).toMatchObject({ code: 'E111', path: 'agents/Yaml_Helper.agent.yaml' });
  });

  it('reports a draft that is not an agent', async () => {
    const res = await api.post(`${base()}/agents/Helper/validate`, {
      key: acme.adminKey,
      json: { dslContent: 'TOOLS:\n  ping() -> string\n    type: http\n    endpoint: "https://x.test/ping"\n' },
    });
    expect(res.body.valid).toBe(false);
    expect(res.body.diagnostics.map((d: { code: string }) => d.code)).toContain('NOT_AN_AGENT');
  });
});

describe('tool library files', () => {
  const TOOLS = 'TOOLS:\n  ping(host: string) -> {ok: boolean}\n    type: http\n    endpoint: "https://net.example.com/ping"\n    method: GET\n';

  it('creates (201), replaces (200), lists, gets and deletes a tool file', async () => {
    const created = await api.put(`${base()}/tools/net-tools`, { key: acme.adminKey, json: { dslContent: TOOLS } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      success: true,
      created: true,
      tool: { name: 'net-tools', path: 'tools/net-tools.tools.abl', createdAt: expect.any(String), updatedAt: expect.any(String) },
    });
    const replaced = await api.put(`${base()}/tools/net-tools`, { key: acme.adminKey, json: { dslContent: TOOLS + '\n' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.created).toBe(false);
    const list = await api.get(`${base()}/tools`, { key: acme.adminKey });
    expect(list.body).toEqual({ success: true, tools: [expect.objectContaining({ name: 'net-tools', path: 'tools/net-tools.tools.abl' })] });
    const get = await api.get(`${base()}/tools/net-tools`, { key: acme.adminKey });
    expect(get.body.tool).toMatchObject({ name: 'net-tools', dslContent: TOOLS + '\n' });
    expect((await api.delete(`${base()}/tools/net-tools`, { key: acme.adminKey })).body).toEqual({ success: true });
    expect((await api.get(`${base()}/tools/net-tools`, { key: acme.adminKey })).status).toBe(404);
    expect((await api.delete(`${base()}/tools/net-tools`, { key: acme.adminKey })).status).toBe(404);
  });

  it('rejects a bad name or empty content with 400', async () => {
    const badName = await api.put(`${base()}/tools/bad.name`, { key: acme.adminKey, json: { dslContent: TOOLS } });
    expect(badName.status).toBe(400);
    expect(badName.body.error.message).toContain('params.name');
    const empty = await api.put(`${base()}/tools/ok-name`, { key: acme.adminKey, json: { dslContent: '' } });
    expect(empty.status).toBe(400);
    expect((await api.get(`${base()}/tools/ok-name`, { key: acme.adminKey })).status).toBe(404);
  });

  it('lets agents import a stored tool file', async () => {
    await api.put(`${base()}/tools/net-tools`, { key: acme.adminKey, json: { dslContent: TOOLS } });
    const source = 'AGENT: Pinger\nGOAL: "Ping hosts."\nTOOLS:\n  FROM "../tools/net-tools.tools.abl" USE: ping\n';
    await create('Pinger', source);
    const res = await api.post(`${base()}/agents/Pinger/versions`, { key: acme.adminKey, json: {} });
    expect(res.status).toBe(201);
    expect(res.body.version.toolSources).toEqual([{ path: 'tools/net-tools.tools.abl', content: TOOLS }]);
    expect(res.body.version.ir.tools.map((t: { name: string }) => t.name)).toEqual(['ping']);
  });
});

describe('tenant discovery: /api/agents', () => {
  it('lists the tenant agents with total, across projects', async () => {
    await create('OtherOnly', 'AGENT: OtherOnly\nGOAL: "x"\n', acme.otherProjectId);
    const res = await api.get('/api/agents', { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.total).toBe(res.body.agents.length);
    expect(res.body.agents).toContainEqual({ id: expect.any(String), name: 'Helper', projectId: acme.projectId });
    expect(res.body.agents).toContainEqual({ id: expect.any(String), name: 'OtherOnly', projectId: acme.otherProjectId });
    const page = await api.get('/api/agents?limit=2&offset=1', { key: acme.adminKey });
    expect(page.body.total).toBe(res.body.total);
    expect(page.body.agents).toEqual(res.body.agents.slice(1, 3));
    const narrowed = await api.get(`/api/agents?projectId=${acme.otherProjectId}`, { key: acme.adminKey });
    expect(narrowed.body).toEqual({ success: true, total: 1, agents: [expect.objectContaining({ name: 'OtherOnly' })] });
  });

  it('gets an agent by name with its draft and Cache-Control: private, max-age=300', async () => {
    const res = await api.get('/api/agents/Helper', { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('private, max-age=300');
    expect(res.body).toEqual({ success: true, agent: { id: expect.any(String), name: 'Helper', projectId: acme.projectId, dslContent: HELPER } });
    const missing = await api.get('/api/agents/Nobody', { key: acme.adminKey });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('cache-control')).not.toBe('private, max-age=300');
  });

  it('answers 409 with the projects when a name exists in several projects and no projectId is given', async () => {
    await create('Twin', 'AGENT: Twin\nGOAL: "a"\n');
    await create('Twin', 'AGENT: Twin\nGOAL: "b"\n', acme.otherProjectId);
    const ambiguous = await api.get('/api/agents/Twin', { key: acme.adminKey });
    expect(ambiguous.status).toBe(409);
    expect(ambiguous.body.error.code).toBe('CONFLICT');
    expect(ambiguous.body.error.details.projectIds.sort()).toEqual([acme.projectId, acme.otherProjectId].sort());
    const chosen = await api.get(`/api/agents/Twin?projectId=${acme.otherProjectId}`, { key: acme.adminKey });
    expect(chosen.status).toBe(200);
    expect(chosen.body.agent.dslContent).toContain('"b"');
  });
});

describe('OpenAPI', () => {
  it('documents every agent route', async () => {
    const res = await api.get('/openapi.json');
    expect(res.status).toBe(200);
    const paths = Object.keys(res.body.paths);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/api/agents',
        '/api/agents/{name}',
        '/api/projects/{projectId}/agents',
        '/api/projects/{projectId}/agents/{agentName}',
        '/api/projects/{projectId}/agents/{agentName}/dsl',
        '/api/projects/{projectId}/agents/{agentName}/validate',
        '/api/projects/{projectId}/agents/{agentName}/versions',
        '/api/projects/{projectId}/agents/{agentName}/versions/{version}',
        '/api/projects/{projectId}/tools',
        '/api/projects/{projectId}/tools/{name}',
      ]),
    );
    expect(res.body.paths['/api/agents/{name}'].get.responses['200'].headers['Cache-Control']).toBeDefined();
  });
});
