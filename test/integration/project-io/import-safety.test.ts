// What keeps imports and exports safe against the real stack: the size limits (413, with the
// import routes' own 60 MB body limit), one import per project at a time (409, expiry of a
// crashed holder's lock), all-or-nothing when a write fails half-way, and the export limits.
import { request as httpRequest } from 'node:http';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { createProject } from '../../../core/tenancy/accounts';
import { acquireImportLock } from '../../../core/project-io/import-lock';
import { checkImportFiles, planImport } from '../../../core/project-io/import-plan';
import { applyImport } from '../../../core/project-io/import-apply';
import { buildProjectExport } from '../../../core/project-io/export';
import { type ProjectDoc } from '../../../db/project';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-pio-safety');
});
afterAll(() => stack.close());

const io = (projectId: string) => `/api/projects/${projectId}/project-io`;
const newProject = (name: string) => createProject(stack.ctx.models, acme.tenantId, { name });
const agent = (name: string, goal = 'Help') => `AGENT: ${name}\nGOAL: "${goal}"\n`;
/**
 * POSTs a large JSON body on a connection of its own: a pooled keep-alive socket may be closed by
 * the server's idle timer while tens of megabytes are still being written to it.
 */
function postLarge(path: string, body: string): Promise<{ status: number; body: { error: { code: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.from(body);
    const req = httpRequest(
      `${stack.baseUrl}${path}`,
      { method: 'POST', agent: false, headers: { authorization: `Bearer ${acme.adminKey}`, 'content-type': 'application/json', 'content-length': String(payload.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
const importFiles = (projectId: string, files: Record<string, string>) => api.post(`${io(projectId)}/import`, { key: acme.adminKey, json: { files } });

async function snapshot(projectId: string) {
  const m = stack.ctx.models;
  const [agents, versions, tools] = await Promise.all([
    m.Agent.find({ projectId }).sort({ name: 1 }).lean(),
    m.AgentVersion.find({ projectId }).sort({ agentName: 1, seq: 1 }).lean(),
    m.ToolFile.find({ projectId }).sort({ name: 1 }).lean(),
  ]);
  return JSON.stringify({ agents, versions, tools });
}

describe('size limits', () => {
  it('refuses more than 500 files (413)', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 501; i++) files[`agents/A${i}.abl`] = agent(`A${i}`);
    const res = await api.post(`${io(acme.projectId)}/import/preview`, { key: acme.adminKey, json: { files } });
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: 'files: 501 files; an import holds at most 500' });
  });

  it('refuses a file over 1 MB (413), and takes one of exactly 1 MB', async () => {
    const comment = (bytes: number) => `# ${'x'.repeat(bytes - 3)}\n`;
    const base = agent('Big');
    const exact = base + comment(1024 * 1024 - Buffer.byteLength(base));
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    const ok = await api.post(`${io(acme.projectId)}/import/preview`, { key: acme.adminKey, json: { files: { 'agents/Big.abl': exact } } });
    expect(ok.status).toBe(200);
    const over = await api.post(`${io(acme.projectId)}/import/preview`, { key: acme.adminKey, json: { files: { 'agents/Big.abl': `${exact} ` } } });
    expect(over.status).toBe(413);
    expect(over.body.error.message).toBe(`files: over the 1 MB per-file limit: agents/Big.abl (${1024 * 1024 + 1} bytes)`);
  });

  it('refuses more than 50 MB in all (413) in a body the standard 1 MB limit would refuse', async () => {
    const files: Record<string, string> = {};
    const filler = `# ${'y'.repeat(1_000_000)}\n`;
    for (let i = 0; i < 53; i++) files[`agents/F${i}.abl`] = agent(`F${i}`) + filler;
    const res = await postLarge(`${io(acme.projectId)}/import`, JSON.stringify({ files }));
    expect(res.status).toBe(413);
    expect(res.body.error.message).toMatch(/^files: \d+ bytes in all; an import holds at most 50 MB$/);
  });

  it('refuses a body over 60 MB (413), while other routes keep the 1 MB limit', async () => {
    const huge = JSON.stringify({ files: { 'agents/H.abl': 'z'.repeat(60 * 1024 * 1024) } });
    const res = await postLarge(`${io(acme.projectId)}/import`, huge);
    expect(res.status).toBe(413);
    expect(res.body.error).toEqual({ code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds the 60 MB limit' });
    const other = await api.post(`/api/projects/${acme.projectId}/agents`, { key: acme.adminKey, json: { name: 'X', dslContent: 'q'.repeat(1024 * 1024 + 10) } });
    expect(other.status).toBe(413);
    expect(other.body.error.message).toBe('Request body exceeds the 1 MB limit');
  });
});

describe('one import per project', () => {
  it('answers 409 while another import holds the lock, and imports once it is released', async () => {
    const project = await newProject('Locked');
    const scope = { tenantId: acme.tenantId, projectId: project._id };
    const lock = await acquireImportLock(stack.ctx.models, scope);
    const refused = await importFiles(project._id, { 'agents/One.abl': agent('One') });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'CONFLICT', message: 'Another import into this project is in progress; retry when it has finished' });
    expect(refused.body.error.details.lockExpiresAt).toEqual(expect.any(String));
    expect(await stack.ctx.models.Agent.countDocuments(scope)).toBe(0);
    // A dry run takes no lock, and another project's import is not held up.
    expect((await api.post(`${io(project._id)}/import/preview`, { key: acme.adminKey, json: { files: { 'agents/One.abl': agent('One') } } })).status).toBe(200);
    expect((await importFiles(acme.otherProjectId, { 'agents/Elsewhere.abl': agent('Elsewhere') })).status).toBe(200);

    await lock.release();
    expect((await importFiles(project._id, { 'agents/One.abl': agent('One') })).status).toBe(200);
    expect(await stack.ctx.models.ImportLock.countDocuments(scope)).toBe(0);
  });

  it("takes over a crashed holder's lock once it has expired", async () => {
    const project = await newProject('Crashed');
    const scope = { tenantId: acme.tenantId, projectId: project._id };
    // A holder that stopped renewing (its process died) 121 s after taking the lock.
    const past = new Date(Date.now() - 121_000);
    await stack.ctx.models.ImportLock.create({ _id: `import:${project._id}`, ...scope, holder: 'crashed', acquiredAt: past, expiresAt: new Date(past.getTime() + 120_000) });
    expect((await importFiles(project._id, { 'agents/One.abl': agent('One') })).status).toBe(200);
    expect(await stack.ctx.models.ImportLock.countDocuments(scope)).toBe(0);
  });

  it('releases the lock when the import fails', async () => {
    const project = await newProject('Failing');
    const scope = { tenantId: acme.tenantId, projectId: project._id };
    expect((await importFiles(project._id, { 'agents/Bad.abl': 'AGENT: Bad\nFOO: 1\n' })).status).toBe(422);
    expect(await stack.ctx.models.ImportLock.countDocuments(scope)).toBe(0);
    expect((await importFiles(project._id, { 'agents/Good.abl': agent('Good') })).status).toBe(200);
  });

  it('lets concurrent imports through one at a time: each is applied whole or refused with 409', async () => {
    const project = await newProject('Concurrent');
    const scope = { tenantId: acme.tenantId, projectId: project._id };
    const variants = [0, 1, 2, 3].map((n) => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 20; i++) files[`agents/V${n}_${i}.abl`] = agent(`V${n}_${i}`);
      return files;
    });
    const results = await Promise.all(variants.map((files) => importFiles(project._id, files)));
    for (const res of results) expect([200, 409]).toContain(res.status);
    const winners = results.map((res, i) => ({ res, i })).filter(({ res }) => res.status === 200);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    // The project holds exactly the files of the import that ran last, never a mix.
    const names = (await stack.ctx.models.Agent.find(scope).select({ name: 1 }).lean()).map((a) => a.name).sort();
    const matching = variants.filter((files) => JSON.stringify(Object.keys(files).map((p) => p.slice(7, -4)).sort()) === JSON.stringify(names));
    expect(matching).toHaveLength(1);
    expect(await stack.ctx.models.ImportLock.countDocuments(scope)).toBe(0);
  });
});

describe('all or nothing', () => {
  let project: ProjectDoc;
  const start = {
    'agents/Hub.abl': 'AGENT: Hub\nGOAL: "Route"\nHANDOFF:\n  - TO: Helper\n    WHEN: "needs help"\n',
    'agents/Helper.abl': agent('Helper'),
    'agents/Old.abl': agent('Old'),
    'tools/kept.tools.abl': 'TOOLS:\n  ping() -> string\n    type: http\n    endpoint: "https://x.example.com/ping"\n    method: GET\n',
    'tools/gone.tools.abl': 'TOOLS:\n  pong() -> string\n    type: http\n    endpoint: "https://x.example.com/pong"\n    method: GET\n',
  };
  const next = {
    'agents/Hub.abl': start['agents/Hub.abl'],
    'agents/Helper.abl': agent('Helper', 'Help better'),
    'agents/New_One.abl': agent('New_One'),
    'tools/kept.tools.abl': start['tools/kept.tools.abl'].replace('/ping', '/ping2'),
    'tools/fresh.tools.abl': start['tools/gone.tools.abl'].replace('pong', 'fresh'),
  };

  beforeAll(async () => {
    project = await newProject('Atomic');
    expect((await importFiles(project._id, start)).status).toBe(200);
  });

  it('undoes every earlier write when one fails, at whichever write it fails', async () => {
    const before = await snapshot(project._id);
    // Count the writes of the full import on a throwaway copy of the project's state.
    const scratch = await newProject('Atomic scratch');
    expect((await importFiles(scratch._id, start)).status).toBe(200);
    const steps: string[] = [];
    const applied = await applyImport(stack.ctx.models, await planImport(stack.ctx.models, scratch, checkImportFiles(next)), {
      createdBy: 'test',
      afterWrite: (step) => void steps.push(step),
    });
    expect(steps).toEqual(['delete agents', 'delete tools', 'create tools', 'update tool kept', 'create agents', 'update agent Helper', 'create versions']);
    expect(applied.versions).toEqual({ Helper: '1.0.1', New_One: '1.0.0' });

    for (let failAt = 0; failAt < steps.length; failAt++) {
      const plan = await planImport(stack.ctx.models, project, checkImportFiles(next));
      let writes = 0;
      const failure = applyImport(stack.ctx.models, plan, {
        createdBy: 'test',
        afterWrite: () => {
          if (writes++ === failAt) throw new Error(`write ${failAt} failed`);
        },
      });
      await expect(failure).rejects.toThrow(`write ${failAt} failed`);
      expect(await snapshot(project._id)).toBe(before);
    }
  });
});

describe('a project changed while the import runs', () => {
  it('answers 409 CONFLICT and undoes the part of a batch written before a unique index refused it', async () => {
    const project = await newProject('Raced');
    const scope = { tenantId: acme.tenantId, projectId: project._id };
    expect((await importFiles(project._id, { 'agents/Base.abl': agent('Base') })).status).toBe(200);
    const files = { 'agents/Base.abl': agent('Base'), 'agents/A_New.abl': agent('A_New'), 'agents/B_New.abl': agent('B_New'), 'agents/C_New.abl': agent('C_New') };
    const plan = await planImport(stack.ctx.models, project, checkImportFiles(files));
    // Created through the agent routes after the plan was made: the import's batch insert of the
    // new agents writes A_New, then meets B_New.
    expect((await api.post(`/api/projects/${project._id}/agents`, { key: acme.adminKey, json: { name: 'B_New', dslContent: agent('B_New', 'Mine') } })).status).toBe(201);
    const before = await snapshot(project._id);
    await expect(applyImport(stack.ctx.models, plan, { createdBy: 'test' })).rejects.toMatchObject({
      code: 'CONFLICT',
      message: 'The project changed while the import ran; nothing was applied, retry the import',
    });
    expect(await snapshot(project._id)).toBe(before);
    expect((await stack.ctx.models.Agent.find(scope).select({ name: 1 }).lean()).map((a) => a.name).sort()).toEqual(['B_New', 'Base']);
  });
});

describe('export limits', () => {
  it('refuses more than 1,000 agents or 500 tool files (422)', async () => {
    const many = await newProject('Many agents');
    const now = new Date();
    const docs = Array.from({ length: 1001 }, (_, i) => ({ _id: `a${i}-${many._id}`, tenantId: acme.tenantId, projectId: many._id, name: `A${i}`, domain: 'many', dslContent: agent(`A${i}`), activeVersions: {}, createdAt: now, updatedAt: now }));
    await stack.ctx.models.Agent.collection.insertMany(docs as never[]);
    const res = await api.get(`${io(many._id)}/export`, { key: acme.adminKey });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'UNPROCESSABLE_ENTITY', message: 'The project has 1001 agents; an export holds at most 1000' });

    const tools = await newProject('Many tools');
    const toolDocs = Array.from({ length: 501 }, (_, i) => ({ _id: `t${i}-${tools._id}`, tenantId: acme.tenantId, projectId: tools._id, name: `t${i}`, dslContent: 'TOOLS:\n', createdAt: now, updatedAt: now }));
    await stack.ctx.models.ToolFile.collection.insertMany(toolDocs as never[]);
    const zip = await api.get(`${io(tools._id)}/export?format=zip`, { key: acme.adminKey });
    expect(zip.status).toBe(422);
    expect(zip.body.error.message).toBe('The project has 501 tool files; an export holds at most 500');
  });

  it('refuses an export over the response size limit', async () => {
    const project = await newProject('Sized');
    expect((await importFiles(project._id, { 'agents/Sized.abl': agent('Sized') })).status).toBe(200);
    const limits = { agents: 1000, tools: 500, responseBytes: 10 };
    await expect(buildProjectExport(stack.ctx.models, project, { exportedBy: 'test', includeDeployments: false, limits })).rejects.toMatchObject({
      code: 'UNPROCESSABLE_ENTITY',
      message: expect.stringContaining('an export response holds at most 10 bytes'),
    });
  });
});
