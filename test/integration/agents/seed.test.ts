// Seeding the sample project (examples/support-desk) into a project: tool files, agent drafts and
// a first version of every agent with no compile errors; a second run changes nothing.
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { SAMPLE_PROJECT_DIR, seedDevProject } from '../../../infra/seed-project';
import { importProjectFiles, parseProjectFiles } from '../../../core/agents/import';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

const sampleAgents = readdirSync(path.join(SAMPLE_PROJECT_DIR, 'agents'))
  .filter((f) => f.endsWith('.agent.abl'))
  .map((f) => f.replace(/\.agent\.abl$/, ''))
  .sort();

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-seed');
});
afterAll(() => stack.close());

async function snapshot(projectId: string) {
  const [agents, versions, tools] = await Promise.all([
    stack.ctx.models.Agent.find({ projectId }).sort({ name: 1 }).lean(),
    stack.ctx.models.AgentVersion.find({ projectId }).sort({ agentName: 1 }).lean(),
    stack.ctx.models.ToolFile.find({ projectId }).sort({ name: 1 }).lean(),
  ]);
  return JSON.stringify({ agents, versions, tools });
}

describe('seeding the dev project with examples/support-desk', () => {
  it('imports every sample agent with a 1.0.0 version that compiles without errors', async () => {
    const names = await seedDevProject(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.projectId });
    expect(names).toEqual(sampleAgents);
    expect(names).toHaveLength(7);

    const listed = await api.get(`/api/projects/${acme.projectId}/agents`, { key: acme.adminKey });
    expect(listed.body.agents).toHaveLength(7);
    for (const agent of listed.body.agents) {
      expect(agent).toMatchObject({ agentPath: `support-desk/${agent.name}`, versionCount: 1, latestVersion: '1.0.0', activeVersions: {} });
      const version = await api.get(`/api/projects/${acme.projectId}/agents/${agent.name}/versions/1.0.0`, { key: acme.adminKey });
      expect(version.status).toBe(200);
      expect(version.body.version.diagnostics.filter((d: { severity: string }) => d.severity === 'error')).toEqual([]);
      expect(version.body.version.ir.metadata.name).toBe(agent.name);
      const validate = await api.post(`/api/projects/${acme.projectId}/agents/${agent.name}/validate`, { key: acme.adminKey, json: {} });
      expect(validate.body.valid).toBe(true);
    }
    const tools = await api.get(`/api/projects/${acme.projectId}/tools`, { key: acme.adminKey });
    expect(tools.body.tools.map((t: { name: string }) => t.name)).toEqual(['billing-api', 'travel']);
    const billing = await api.get(`/api/projects/${acme.projectId}/agents/Billing_Agent/versions/1.0.0`, { key: acme.adminKey });
    expect(billing.body.version.toolSources.map((t: { path: string }) => t.path)).toEqual(['tools/billing-api.tools.abl']);
  });

  it('changes nothing when run a second time', async () => {
    const before = await snapshot(acme.projectId);
    const names = await seedDevProject(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.projectId });
    expect(names).toEqual(sampleAgents);
    expect(await snapshot(acme.projectId)).toBe(before);
  });

  it('leaves a project that already has agents alone', async () => {
    await api.post(`/api/projects/${acme.otherProjectId}/agents`, { key: acme.adminKey, json: { name: 'Mine' } });
    const names = await seedDevProject(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.otherProjectId });
    expect(names).toEqual(['Mine']);
  });
});

describe('importProjectFiles', () => {
  const files = {
    'project.json': '{"name": "Tiny Desk", "entryAgent": "Front"}',
    'agents/Front.agent.abl': 'SUPERVISOR: Front\nGOAL: "Route."\nHANDOFF:\n  - TO: Back\n    WHEN: user asks\n',
    'agents/Back.abl': 'AGENT: Back\nGOAL: "Answer."\n',
    'agents/Broken.agent.abl': 'AGENT: Broken\nGOAL: "x"\nFOO: 1\n',
    'tools/misc.tools.abl': 'TOOLS:\n  ping() -> string\n    type: http\n    endpoint: "https://x.test/ping"\n',
    'README.md': 'ignored',
  };

  it('sorts a file map into agents, tools and the manifest', () => {
    const parsed = parseProjectFiles(files);
    expect(parsed.agents.map((a) => a.name)).toEqual(['Back', 'Broken', 'Front']);
    expect(parsed.tools.map((t) => t.name)).toEqual(['misc']);
    expect(parsed.manifest).toEqual({ name: 'Tiny Desk', entryAgent: 'Front', description: null });
    expect(parsed.ignored).toEqual(['README.md']);
  });

  it('creates drafts for every agent, versions for those that compile, and reports the rest', async () => {
    const t = await seedTenant(stack.ctx, 'acme-import');
    const scope = { tenantId: t.tenantId, projectId: t.projectId };
    const result = await importProjectFiles(stack.ctx.models, scope, files, { mode: 'create-missing', fallbackDomain: 'x', createdBy: 'test' });
    expect(result.createdAgents).toEqual(['Back', 'Broken', 'Front']);
    expect(result.createdTools).toEqual(['misc']);
    expect(result.versions).toEqual({ Back: '1.0.0', Front: '1.0.0' });
    expect(Object.keys(result.failed)).toEqual(['Broken']);
    expect(result.failed.Broken).toContainEqual(expect.objectContaining({ code: 'E203', line: 3 }));
    const again = await importProjectFiles(stack.ctx.models, scope, files, { mode: 'create-missing', fallbackDomain: 'x', createdBy: 'test' });
    expect(again).toMatchObject({ createdAgents: [], updatedAgents: [], createdTools: [], updatedTools: [], versions: {} });
    const agent = await stack.ctx.models.Agent.findOne({ ...scope, name: 'Front' }).lean();
    expect(agent?.domain).toBe('tiny-desk');
  });
});
