// Project export and import against the real stack: the round trip (export, import into an empty
// project, export again gives the same files, hashes and lockfile), the zip download, previews,
// updates and deletes, ABL errors, unsafe paths, permissions and tenant isolation.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { unzipToMap } from '../../support/zip';
import { seedDevProject } from '../../../infra/seed-project';
import { createProject } from '../../../core/tenancy/accounts';
import { recordActiveVersions } from '../../../core/agents/agents';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-pio');
  globex = await seedTenant(stack.ctx, 'globex-pio');
  await seedDevProject(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.projectId });
  // A second version of one agent, so the lockfile names a label other than 1.0.0.
  const url = `/api/projects/${acme.projectId}/agents/Complaints_Agent`;
  const draft = (await api.get(url, { key: acme.adminKey })).body.agent.dslContent as string;
  expect((await api.put(`${url}/dsl`, { key: acme.adminKey, json: { dslContent: `${draft}\n# second revision\n` } })).status).toBe(200);
  expect((await api.post(`${url}/versions`, { key: acme.adminKey, json: { version: '1.2.0' } })).status).toBe(201);
});
afterAll(() => stack.close());

const io = (projectId: string) => `/api/projects/${projectId}/project-io`;
const newProject = async (tenant: SeededTenant, name: string) => (await createProject(stack.ctx.models, tenant.tenantId, { name }))._id;

async function exportFolder(projectId: string, query = '') {
  const res = await api.get(`${io(projectId)}/export${query}`, { key: acme.adminKey });
  expect(res.status).toBe(200);
  return res.body as { success: true; manifest: Record<string, unknown> & { agents: Record<string, { sourceHash: string; path: string }> }; lockfile: { agents: Record<string, { version: string; hash: string }> }; files: Record<string, string>; warnings: unknown[] };
}

async function snapshot(projectId: string) {
  const m = stack.ctx.models;
  const [agents, versions, tools] = await Promise.all([
    m.Agent.find({ projectId }).sort({ name: 1 }).lean(),
    m.AgentVersion.find({ projectId }).sort({ agentName: 1, seq: 1 }).lean(),
    m.ToolFile.find({ projectId }).sort({ name: 1 }).lean(),
  ]);
  return JSON.stringify({ agents, versions, tools });
}

describe('export', () => {
  it('answers the file map, a manifest with a hash per agent file, and a lockfile of newest versions', async () => {
    const exported = await exportFolder(acme.projectId);
    expect(Object.keys(exported.files)).toEqual([
      'agents/Billing_Agent.abl',
      'agents/Complaints_Agent.abl',
      'agents/Flight_Search.abl',
      'agents/Hotel_Search.abl',
      'agents/Onboarding_Agent.abl',
      'agents/Support_Hub.abl',
      'agents/Trip_Planner.abl',
      'tools/billing-api.tools.abl',
      'tools/travel.tools.abl',
    ]);
    expect(exported.files['agents/Complaints_Agent.abl']).toContain('# second revision');
    expect(exported.manifest).toMatchObject({ name: 'Main', version: 1, entryAgent: 'Support_Hub', exportedBy: expect.any(String) });
    expect(new Date(exported.manifest.exportedAt as string).toISOString()).toBe(exported.manifest.exportedAt);
    const { createHash } = await import('node:crypto');
    expect(exported.manifest.agents.Billing_Agent).toEqual({
      path: 'agents/Billing_Agent.abl',
      sourceHash: createHash('sha256').update(exported.files['agents/Billing_Agent.abl']!).digest('hex'),
    });
    const billingVersion = await api.get(`/api/projects/${acme.projectId}/agents/Billing_Agent/versions/1.0.0`, { key: acme.adminKey });
    expect(exported.lockfile.agents.Billing_Agent).toEqual({ version: '1.0.0', hash: billingVersion.body.version.sourceHash });
    expect(exported.lockfile.agents.Complaints_Agent!.version).toBe('1.2.0');
    expect(Object.keys(exported.lockfile.agents)).toHaveLength(7);
    expect(exported.warnings).toEqual([]);
    expect(exported.files['deployments.json']).toBeUndefined();
  });

  it("adds deployments.json with include_deployments=true: the project's deployments, newest first", async () => {
    const before = await exportFolder(acme.projectId, '?include_deployments=true');
    const earlier = (JSON.parse(before.files['deployments.json']!) as { deployments: unknown[] }).deployments;
    const created = await api.post(`/api/projects/${acme.projectId}/deployments`, {
      key: acme.adminKey,
      json: { environment: 'staging', agentVersionManifest: { Complaints_Agent: '1.2.0' }, entryAgentName: 'Complaints_Agent', label: 'export check' },
    });
    expect(created.status).toBe(201);
    const exported = await exportFolder(acme.projectId, '?include_deployments=true');
    const records = (JSON.parse(exported.files['deployments.json']!) as { deployments: { id: string; environment: string; label: string; agentVersionManifest: Record<string, string> }[] }).deployments;
    expect(records).toHaveLength(earlier.length + 1);
    expect(records[0]).toMatchObject({ id: created.body.deployment.id, environment: 'staging', label: 'export check', agentVersionManifest: { Complaints_Agent: '1.2.0' } });
    const bad = await api.get(`${io(acme.projectId)}/export?include_deployments=yes`, { key: acme.adminKey });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
    const badFormat = await api.get(`${io(acme.projectId)}/export?format=tar`, { key: acme.adminKey });
    expect(badFormat.status).toBe(400);
  });

  it('downloads a real zip holding manifest.json, lockfile.json and the same files', async () => {
    const folder = await exportFolder(acme.projectId);
    const res = await fetch(`${stack.baseUrl}${io(acme.projectId)}/export?format=zip`, { headers: { authorization: `Bearer ${acme.adminKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="main-export.zip"');
    const entries = await unzipToMap(Buffer.from(await res.arrayBuffer()));
    expect(Object.keys(entries).sort()).toEqual(['lockfile.json', 'manifest.json', ...Object.keys(folder.files)].sort());
    for (const [path, content] of Object.entries(folder.files)) expect(entries[path]).toBe(content);
    expect(JSON.parse(entries['lockfile.json']!)).toEqual(folder.lockfile);
    const manifest = JSON.parse(entries['manifest.json']!) as Record<string, unknown>;
    expect({ ...manifest, exportedAt: null }).toEqual({ ...folder.manifest, exportedAt: null });
  });

  it('warns about agents without DSL content and leaves them out', async () => {
    const projectId = await newProject(acme, 'Blank');
    await api.post(`/api/projects/${projectId}/agents`, { key: acme.adminKey, json: { name: 'Empty_One' } });
    await api.post(`/api/projects/${projectId}/agents`, { key: acme.adminKey, json: { name: 'Kept' } });
    await stack.ctx.models.Agent.updateOne({ tenantId: acme.tenantId, projectId, name: 'Empty_One' }, { $set: { dslContent: '' } });
    const exported = await exportFolder(projectId);
    expect(Object.keys(exported.files)).toEqual(['agents/Kept.abl']);
    expect(exported.warnings).toEqual([{ code: 'AGENT_WITHOUT_DSL', name: 'Empty_One', message: expect.stringContaining('Empty_One') }]);
    expect(Object.keys(exported.manifest.agents)).toEqual(['Kept']);
    const preview = await api.get(`${io(projectId)}/export/preview`, { key: acme.adminKey });
    expect(preview.body.agents).toEqual([
      { name: 'Empty_One', hasDslContent: false },
      { name: 'Kept', hasDslContent: true },
    ]);
  });
});

describe('export preview', () => {
  it('lists agents, tools (library and inline) with their type, handoff and tool edges, and the validation result', async () => {
    const res = await api.get(`${io(acme.projectId)}/export/preview`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.project).toEqual({ name: 'Main', slug: 'main' });
    expect(res.body.agents).toHaveLength(7);
    expect(res.body.agents[0]).toEqual({ name: 'Billing_Agent', hasDslContent: true });
    expect(res.body.tools).toEqual(
      expect.arrayContaining([
        { name: 'get_invoice', toolType: 'http', path: 'tools/billing-api.tools.abl' },
        { name: 'start_kyc_check', toolType: 'async_webhook', path: 'agents/Onboarding_Agent.abl' },
      ]),
    );
    expect(res.body.dependencies.edges).toEqual(
      expect.arrayContaining([
        { from: 'Support_Hub', to: 'Billing_Agent', type: 'handoff' },
        { from: 'Billing_Agent', to: 'get_invoice', type: 'tool' },
      ]),
    );
    expect(res.body.dependencies.validation).toEqual({ valid: true, errors: [] });
  });

  it('reports compile errors of the stored drafts under their export paths', async () => {
    const projectId = await newProject(acme, 'Broken preview');
    await api.post(`/api/projects/${projectId}/agents`, { key: acme.adminKey, json: { name: 'Broken', dslContent: 'AGENT: Broken\nGOAL: "x"\nHANDOFF:\n  - TO: Nowhere\n    WHEN: always\n' } });
    const res = await api.get(`${io(projectId)}/export/preview`, { key: acme.adminKey });
    expect(res.body.dependencies.validation.valid).toBe(false);
    expect(res.body.dependencies.validation.errors).toEqual([expect.objectContaining({ severity: 'error', path: 'agents/Broken.abl' })]);
  });
});

describe('round trip', () => {
  it('export → import into an empty project → export gives identical files, manifest hashes and lockfile', async () => {
    const first = await exportFolder(acme.projectId);
    const target = await newProject(acme, 'Copy');
    const files = { ...first.files, 'manifest.json': JSON.stringify(first.manifest), 'lockfile.json': JSON.stringify(first.lockfile) };

    const preview = await api.post(`${io(target)}/import/preview`, { key: acme.adminKey, json: { files } });
    expect(preview.status).toBe(200);
    expect(preview.body.preview.summary).toEqual({ create: 9, update: 0, delete: 0 });
    expect(preview.body.preview.operations).toContainEqual({ type: 'create', entity: 'agent', name: 'Support_Hub', reason: expect.any(String) });
    expect(preview.body.preview.operations).toContainEqual({ type: 'create', entity: 'tool', name: 'travel', reason: expect.any(String) });
    expect(await stack.ctx.models.Agent.countDocuments({ projectId: target })).toBe(0);

    const imported = await api.post(`${io(target)}/import`, { key: acme.adminKey, json: { files } });
    expect(imported.status).toBe(200);
    expect(imported.body.applied).toEqual({ created: 9, updated: 0, deleted: 0 });
    expect(imported.body.versions).toMatchObject({ Billing_Agent: '1.0.0', Complaints_Agent: '1.2.0' });

    const second = await exportFolder(target);
    expect(second.files).toEqual(first.files);
    expect(second.manifest.agents).toEqual(first.manifest.agents);
    expect(second.manifest.entryAgent).toBe(first.manifest.entryAgent);
    expect(second.lockfile).toEqual(first.lockfile);

    // The imported agents run: their versions are ordinary versions of the new project.
    const agents = await api.get(`/api/projects/${target}/agents`, { key: acme.adminKey });
    expect(agents.body.agents.find((a: { name: string }) => a.name === 'Support_Hub')).toMatchObject({ agentPath: 'copy/Support_Hub', versionCount: 1 });
  });

  it('importing the same files again changes nothing', async () => {
    const first = await exportFolder(acme.projectId);
    const target = await newProject(acme, 'Twice');
    expect((await api.post(`${io(target)}/import`, { key: acme.adminKey, json: { files: first.files } })).status).toBe(200);
    const before = await snapshot(target);
    const again = await api.post(`${io(target)}/import`, { key: acme.adminKey, json: { files: first.files } });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ success: true, applied: { created: 0, updated: 0, deleted: 0 }, operations: [], versions: {} });
    expect(await snapshot(target)).toBe(before);
  });
});

describe('import', () => {
  const hub = 'AGENT: Hub\nGOAL: "Route people"\nHANDOFF:\n  - TO: Helper\n    WHEN: "needs help"\n';
  const helper = (goal: string) => `AGENT: Helper\nGOAL: "${goal}"\n`;

  it('creates, updates and deletes agents and tools, and versions what changed', async () => {
    const projectId = await newProject(acme, 'Ops');
    const start = { 'agents/Hub.abl': hub, 'agents/Helper.abl': helper('Help'), 'agents/Old.abl': 'AGENT: Old\nGOAL: "Retire me"\n', 'tools/gone.tools.abl': 'TOOLS:\n  ping() -> string\n    type: http\n    endpoint: "https://x.example.com/ping"\n    method: GET\n' };
    expect((await api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files: start } })).status).toBe(200);

    const next = { 'agents/Hub.abl': hub, 'agents/Helper.abl': helper('Help better'), 'agents/New_One.abl': 'AGENT: New_One\nGOAL: "Be new"\n' };
    const preview = await api.post(`${io(projectId)}/import/preview`, { key: acme.adminKey, json: { files: next } });
    expect(preview.body.preview).toEqual({
      operations: [
        { type: 'create', entity: 'agent', name: 'New_One', reason: 'not in the project' },
        { type: 'update', entity: 'agent', name: 'Helper', reason: 'DSL content differs' },
        { type: 'delete', entity: 'agent', name: 'Old', reason: 'not in the imported files' },
        { type: 'delete', entity: 'tool', name: 'gone', reason: 'not in the imported files' },
      ].sort((a, b) => ['Helper', 'New_One', 'Old', 'gone'].indexOf(a.name) - ['Helper', 'New_One', 'Old', 'gone'].indexOf(b.name)),
      summary: { create: 1, update: 1, delete: 2 },
    });
    const res = await api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files: next } });
    expect(res.status).toBe(200);
    expect(res.body.applied).toEqual({ created: 1, updated: 1, deleted: 2 });
    expect(res.body.versions).toEqual({ Helper: '1.0.1', New_One: '1.0.0' });
    const names = (await api.get(`/api/projects/${projectId}/agents`, { key: acme.adminKey })).body.agents.map((a: { name: string }) => a.name);
    expect(names).toEqual(['Helper', 'Hub', 'New_One']);
    expect(await stack.ctx.models.AgentVersion.countDocuments({ projectId, agentName: 'Old' })).toBe(0);
    expect((await api.get(`/api/projects/${projectId}/tools/gone`, { key: acme.adminKey })).status).toBe(404);
    expect((await api.get(`/api/projects/${projectId}/agents/Helper`, { key: acme.adminKey })).body.agent.dslContent).toBe(helper('Help better'));
  });

  it('takes a YAML agent at agents/<name>.yaml, versions it, and exports it at agents/<name>.abl', async () => {
    const projectId = await newProject(acme, 'Yaml');
    const yaml = 'agent: Helper\ngoal: "Help"\ntools:\n  - name: ping\n    returns:\n      ok: boolean\n    type: http\n    endpoint: "https://x.example.com/ping"\n';
    const res = await api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files: { 'agents/Hub.abl': hub, 'agents/Helper.yaml': yaml } } });
    expect(res.status).toBe(200);
    expect(res.body.versions).toEqual({ Helper: '1.0.0', Hub: '1.0.0' });
    const exported = await api.get(`${io(projectId)}/export`, { key: acme.adminKey });
    expect(exported.body.files['agents/Helper.abl']).toBe(yaml);
    const both = await api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files: { 'agents/Hub.abl': hub, 'agents/Helper.abl': helper('x'), 'agents/Helper.yml': yaml } } });
    expect(both.status).toBe(422);
    expect(both.body.error.message).toContain('agent Helper is given by another file too');
  });

  it('refuses a project whose ABL has errors with the diagnostics, and changes nothing', async () => {
    const before = await snapshot(acme.projectId);
    const files = {
      'agents/Hub.abl': hub,
      'agents/Helper.abl': 'AGENT: Helper\nGOAL: "x"\nFOO: bar\n',
      'agents/Wrong_Name.abl': 'AGENT: Other_Name\nGOAL: "x"\n',
    };
    for (const route of ['import/preview', 'import']) {
      const res = await api.post(`${io(acme.projectId)}/${route}`, { key: acme.adminKey, json: { files } });
      expect(res.status).toBe(422);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('UNPROCESSABLE_ENTITY');
      expect(res.body.error.message).toMatch(/^The imported project does not compile: \d+ error\(s\); first: /);
      expect(res.body.error.details.diagnostics).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ severity: 'error', code: 'E203', path: 'agents/Helper.abl', line: 3 }),
          expect.objectContaining({ severity: 'error', code: 'AGENT_NAME_MISMATCH', path: 'agents/Wrong_Name.abl' }),
        ]),
      );
    }
    expect(await snapshot(acme.projectId)).toBe(before);
  });

  it('refuses to delete an agent a deployment runs (409) and changes nothing', async () => {
    const projectId = await newProject(acme, 'Active');
    expect((await api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files: { 'agents/Hub.abl': hub, 'agents/Helper.abl': helper('Help') } } })).status).toBe(200);
    await recordActiveVersions(stack.ctx.models, { tenantId: acme.tenantId, projectId }, 'production', { Helper: '1.0.0' });
    const before = await snapshot(projectId);
    const res = await api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files: { 'agents/Solo.abl': 'AGENT: Solo\nGOAL: "x"\n' } } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(res.body.error.message).toContain('Helper (production 1.0.0)');
    expect(await snapshot(projectId)).toBe(before);
  });

  it.each([
    ['../agents/X.abl', 'contains ".."'],
    ['agents/../../etc/passwd', 'contains ".."'],
    ['/agents/X.abl', 'starts with "/"'],
    ['agents\\X.abl', 'contains a backslash'],
  ])('rejects the unsafe path %j (400) on preview and import', async (path, reason) => {
    const before = await snapshot(acme.projectId);
    for (const route of ['import/preview', 'import']) {
      const res = await api.post(`${io(acme.projectId)}/${route}`, { key: acme.adminKey, json: { files: { 'agents/Hub.abl': hub, [path]: 'AGENT: X\nGOAL: "x"\n' } } });
      expect(res.status).toBe(400);
      expect(res.body.error).toEqual({ code: 'VALIDATION_ERROR', message: `files: unsafe path(s): ${JSON.stringify(path)} ${reason}` });
    }
    expect(await snapshot(acme.projectId)).toBe(before);
  });

  it('rejects a path holding NUL (422, as any text holding it) on preview and import', async () => {
    const before = await snapshot(acme.projectId);
    for (const route of ['import/preview', 'import']) {
      const res = await api.post(`${io(acme.projectId)}/${route}`, { key: acme.adminKey, json: { files: { 'agents/Hub.abl': hub, 'agents/X\u0000.abl': 'AGENT: X\nGOAL: "x"\n' } } });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('UNPROCESSABLE_ENTITY');
      expect(res.body.error.message).toContain('NUL');
    }
    expect(await snapshot(acme.projectId)).toBe(before);
  });

  it('rejects files outside the layout and bodies without files (400), unusable manifests and lockfiles (422)', async () => {
    const cases: Array<[unknown, number, string]> = [
      [{ files: { 'README.md': '# hi' } }, 400, 'README.md'],
      [{ files: { 'agents/Hub.agent.abl': hub } }, 400, 'agents/Hub.agent.abl'],
      [{}, 400, 'body.files'],
      [{ files: { 'agents/Hub.abl': 42 } }, 400, 'body.files'],
      [{ files: { 'agents/Hub.abl': hub, 'lockfile.json': '{"agents":{"Hub":{"version":"latest","hash":"x"}}}' } }, 422, 'files.lockfile.json: agents.Hub.version'],
      [{ files: { 'agents/Hub.abl': hub, 'manifest.json': 'not json' } }, 422, 'files.manifest.json: is not valid JSON'],
      [{ files: { 'agents/Hub.abl': ' \n' } }, 422, 'files.agents/Hub.abl: is empty'],
    ];
    for (const [json, status, message] of cases) {
      const res = await api.post(`${io(acme.projectId)}/import`, { key: acme.adminKey, json });
      expect(res.status).toBe(status);
      expect(res.body.error.message).toContain(message);
    }
  });

  it('states the accepted paths in the OpenAPI document, matching what the import takes', async () => {
    const doc = (await api.get('/openapi.json')).body;
    const files = doc.paths['/api/projects/{projectId}/project-io/import'].post.requestBody.content['application/json'].schema;
    const schema = files.$ref ? doc.components.schemas[files.$ref.split('/').pop()] : files;
    const pattern = new RegExp(schema.properties.files.propertyNames.pattern);
    expect(schema.properties.files.maxProperties).toBe(500);
    for (const ok of ['agents/Hub.abl', 'agents/Hub.yaml', 'tools/billing-api.tools.abl', 'manifest.json', 'lockfile.json', 'deployments.json']) expect(pattern.test(ok)).toBe(true);
    for (const bad of ['agents/Hub.agent.abl', '../agents/Hub.abl', '/agents/Hub.abl', 'agents\\Hub.abl', 'README.md', 'agents/a/b.abl']) expect(pattern.test(bad)).toBe(false);
  });
});

describe('permissions and tenants', () => {
  const routes = (projectId: string) => [
    { method: 'get' as const, path: `${io(projectId)}/export/preview`, needs: 'project:export' },
    { method: 'get' as const, path: `${io(projectId)}/export`, needs: 'project:export' },
    { method: 'post' as const, path: `${io(projectId)}/import/preview`, needs: 'project:import' },
    { method: 'post' as const, path: `${io(projectId)}/import`, needs: 'project:import' },
  ];
  const body = { files: { 'agents/Perm.abl': 'AGENT: Perm\nGOAL: "x"\n' } };

  it('needs project:export to export and project:import to import (403 otherwise)', async () => {
    const projectId = await newProject(acme, 'Perms');
    const exporter = await acme.keyWith(['project:export', 'agent:write']);
    const importer = await acme.keyWith(['project:import']);
    for (const route of routes(projectId)) {
      const asExporter = await api[route.method](route.path, { key: exporter, json: route.method === 'post' ? body : undefined });
      const asImporter = await api[route.method](route.path, { key: importer, json: route.method === 'post' ? body : undefined });
      const [allowed, refused] = route.needs === 'project:export' ? [asExporter, asImporter] : [asImporter, asExporter];
      expect(allowed.status).toBe(200);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toEqual({ code: 'FORBIDDEN', message: `This credential lacks the '${route.needs}' permission` });
    }
    expect((await api.get(`${io(projectId)}/export`, { key: acme.adminKey })).status).toBe(200);
  });

  it("answers 404 for another tenant's project, for a project outside a bound key, and changes nothing there", async () => {
    const before = await snapshot(acme.projectId);
    const bound = await globex.keyWith(['project:export', 'project:import'], globex.otherProjectId);
    for (const route of routes(acme.projectId)) {
      for (const key of [globex.adminKey, bound]) {
        const res = await api[route.method](route.path, { key, json: route.method === 'post' ? body : undefined });
        expect(res.status).toBe(404);
        expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Project not found' });
      }
    }
    for (const route of routes(globex.projectId)) {
      const res = await api[route.method](route.path, { key: bound, json: route.method === 'post' ? body : undefined });
      expect(res.status).toBe(404);
    }
    expect(await snapshot(acme.projectId)).toBe(before);
  });

  it('answers 401 without a credential', async () => {
    for (const route of routes(acme.projectId)) expect((await api[route.method](route.path, { json: route.method === 'post' ? body : undefined })).status).toBe(401);
  });
});
