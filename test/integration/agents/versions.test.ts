// Agent versions against the real stack: compile errors block (422, nothing stored), success stores
// an immutable IR snapshot, labels default to the next patch and never repeat.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-versions');
});
afterAll(() => stack.close());

const agentUrl = (name: string) => `/api/projects/${acme.projectId}/agents/${name}`;
const source = (name: string, goal: string) => `AGENT: ${name}\nGOAL: "${goal}"\n`;

async function createAgent(name: string, dslContent: string) {
  const res = await api.post(`/api/projects/${acme.projectId}/agents`, { key: acme.adminKey, json: { name, dslContent } });
  expect(res.status).toBe(201);
  return res.body.agent as { id: string };
}
const saveDraft = (name: string, dslContent: string) => api.put(`${agentUrl(name)}/dsl`, { key: acme.adminKey, json: { dslContent } });
const createVersion = (name: string, json: Record<string, unknown> = {}) => api.post(`${agentUrl(name)}/versions`, { key: acme.adminKey, json });

describe('compile errors', () => {
  it('answers 422 with the diagnostics (code, line, column) and stores nothing', async () => {
    const agent = await createAgent('Broken', 'AGENT: Broken\nGOAL: "x"\nFOO: bar\nHANDOFF:\n  - TO: Nowhere\n    WHEN: always\n');
    const res = await createVersion('Broken', { version: '1.0.0' });
    expect(res.status).toBe(422);
    expect(res.body.success).toBe(false);
    expect(res.body.error.code).toBe('UNPROCESSABLE_ENTITY');
    expect(res.body.error.message).toMatch(/Agent "Broken" does not compile: \d+ error\(s\); first: agents\/Broken\.agent\.abl:3:1 error E203/);
    expect(res.body.error.details.diagnostics).toEqual(
      expect.arrayContaining([
        { severity: 'error', code: 'E203', message: expect.stringContaining('FOO'), path: 'agents/Broken.agent.abl', line: 3, column: 1 },
        expect.objectContaining({ severity: 'error', code: 'E701', path: 'agents/Broken.agent.abl', line: 5 }),
      ]),
    );
    expect(await stack.ctx.models.AgentVersion.countDocuments({ agentId: agent.id })).toBe(0);
    expect((await api.get(agentUrl('Broken'), { key: acme.adminKey })).body.agent.versionCount).toBe(0);
  });

  it("is not blocked by another agent's broken draft", async () => {
    await createAgent('Healthy', source('Healthy', 'Be fine.'));
    const res = await createVersion('Healthy');
    expect(res.status).toBe(201);
    expect(res.body.diagnostics).toEqual([]);
  });

  it('returns warnings with the version without blocking it', async () => {
    await createAgent('Warned', 'AGENT: Warned\ngoal: "Lowercase keyword."\n');
    const res = await createVersion('Warned');
    expect(res.status).toBe(201);
    const warning = { severity: 'warning', code: 'W205', message: expect.stringContaining('goal'), path: 'agents/Warned.agent.abl', line: 2, column: 1 };
    expect(res.body.diagnostics).toEqual([warning]);
    expect(res.body.version.diagnostics).toEqual([warning]);
  });

  it('blocks a version whose handoff target was never created, then accepts it once the target exists', async () => {
    await createAgent('Router', 'SUPERVISOR: Router\nGOAL: "Route."\nHANDOFF:\n  - TO: Target\n    WHEN: user asks\n');
    const before = await createVersion('Router');
    expect(before.status).toBe(422);
    expect(before.body.error.details.diagnostics).toContainEqual(expect.objectContaining({ code: 'E701', line: 4 }));
    await createAgent('Target', source('Target', 'Be the target.'));
    const after = await createVersion('Router');
    expect(after.status).toBe(201);
    expect(after.body.version.ir.coordination.handoffs).toEqual([expect.objectContaining({ to: 'Target' })]);
  });
});

describe('creating versions', () => {
  it('stores the version with IR, hash and source snapshot; versionCount increments', async () => {
    const agent = await createAgent('Versioned', source('Versioned', 'First goal.'));
    const res = await createVersion('Versioned', { changelog: 'First cut' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      created: true,
      diagnostics: [],
      version: {
        id: expect.any(String),
        agentName: 'Versioned',
        version: '1.0.0',
        irVersion: 1,
        sourceHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        changelog: 'First cut',
        createdBy: expect.any(String),
        createdAt: expect.any(String),
        dslContent: source('Versioned', 'First goal.'),
        toolSources: [],
        diagnostics: [],
        ir: expect.objectContaining({ metadata: expect.objectContaining({ name: 'Versioned', kind: 'agent', file: 'agents/Versioned.agent.abl' }) }),
      },
    });
    expect(res.body.version.ir.identity.goal).toBe('First goal.');
    expect(res.body.version.sourceHash).toBe(res.body.version.ir.metadata.source_hash);
    const got = await api.get(agentUrl('Versioned'), { key: acme.adminKey });
    expect(got.body.agent).toMatchObject({ versionCount: 1, latestVersion: '1.0.0', activeVersions: {} });
    const listed = await api.get(`/api/projects/${acme.projectId}/agents`, { key: acme.adminKey });
    expect(listed.body.agents.find((a: { id: string }) => a.id === agent.id)).toMatchObject({ versionCount: 1, latestVersion: '1.0.0' });
  });

  it('keeps a version immutable when the draft changes later', async () => {
    const first = await api.get(`${agentUrl('Versioned')}/versions/1.0.0`, { key: acme.adminKey });
    expect((await saveDraft('Versioned', source('Versioned', 'Second goal.'))).status).toBe(200);
    const again = await api.get(`${agentUrl('Versioned')}/versions/1.0.0`, { key: acme.adminKey });
    expect(again.body).toEqual(first.body);
    expect(again.body.version.ir.identity.goal).toBe('First goal.');
    expect(again.body.version.dslContent).toContain('First goal.');
  });

  it('defaults the label to the next patch of the latest version', async () => {
    const res = await createVersion('Versioned');
    expect(res.status).toBe(201);
    expect(res.body.version.version).toBe('1.0.1');
    expect(res.body.version.ir.identity.goal).toBe('Second goal.');
    expect((await api.get(agentUrl('Versioned'), { key: acme.adminKey })).body.agent).toMatchObject({ versionCount: 2, latestVersion: '1.0.1' });
  });

  it('returns the latest version (200, created: false) when the source is unchanged and no label is given', async () => {
    const res = await createVersion('Versioned');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, created: false, version: { version: '1.0.1' } });
    expect((await api.get(agentUrl('Versioned'), { key: acme.adminKey })).body.agent.versionCount).toBe(2);
  });

  it('answers 409 for an explicit label on an unchanged source', async () => {
    const res = await createVersion('Versioned', { version: '2.0.0' });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/unchanged since version 1\.0\.1/);
  });

  it('accepts an explicit label and refuses the same label twice', async () => {
    await saveDraft('Versioned', source('Versioned', 'Third goal.'));
    const res = await createVersion('Versioned', { version: '2.0.0-beta.1' });
    expect(res.status).toBe(201);
    expect(res.body.version.version).toBe('2.0.0-beta.1');
    await saveDraft('Versioned', source('Versioned', 'Fourth goal.'));
    const dup = await createVersion('Versioned', { version: '2.0.0-beta.1' });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('CONFLICT');
    const next = await createVersion('Versioned');
    expect(next.body.version.version).toBe('2.0.1');
  });

  it.each([
    ['a non-semver label', { version: 'v1' }, 'body.version'],
    ['"auto"', { version: 'auto' }, 'body.version'],
    ['a numeric label', { version: 1 }, 'body.version'],
    ['a huge changelog', { changelog: 'x'.repeat(5001) }, 'body.changelog'],
  ])('rejects %s with 400 and stores nothing', async (_label, json, field) => {
    const before = await stack.ctx.models.AgentVersion.countDocuments({ agentName: 'Versioned' });
    await saveDraft('Versioned', source('Versioned', `Goal ${Math.random()}`));
    const res = await createVersion('Versioned', json);
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain(field);
    expect(await stack.ctx.models.AgentVersion.countDocuments({ agentName: 'Versioned' })).toBe(before);
  });

  it('answers 404 for an unknown agent', async () => {
    expect((await createVersion('Nobody')).status).toBe(404);
  });
});

describe('reading versions', () => {
  it('lists versions newest first, paginated, without IR', async () => {
    const all = await api.get(`${agentUrl('Versioned')}/versions`, { key: acme.adminKey });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ success: true, total: 4, offset: 0, limit: 50 });
    expect(all.body.versions.map((v: { version: string }) => v.version)).toEqual(['2.0.1', '2.0.0-beta.1', '1.0.1', '1.0.0']);
    for (const v of all.body.versions) {
      expect(Object.keys(v).sort()).toEqual(['agentName', 'changelog', 'createdAt', 'createdBy', 'id', 'irVersion', 'sourceHash', 'version']);
    }
    const page = await api.get(`${agentUrl('Versioned')}/versions?limit=2&offset=1`, { key: acme.adminKey });
    expect(page.body).toMatchObject({ total: 4, offset: 1, limit: 2 });
    expect(page.body.versions.map((v: { version: string }) => v.version)).toEqual(['2.0.0-beta.1', '1.0.1']);
    expect((await api.get(`${agentUrl('Versioned')}/versions?limit=500`, { key: acme.adminKey })).status).toBe(400);
  });

  it('gets one version with its IR; unknown or malformed labels are 404 / 400', async () => {
    const res = await api.get(`${agentUrl('Versioned')}/versions/2.0.0-beta.1`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.version).toMatchObject({ version: '2.0.0-beta.1', ir: { identity: { goal: 'Third goal.' } } });
    expect((await api.get(`${agentUrl('Versioned')}/versions/9.9.9`, { key: acme.adminKey })).status).toBe(404);
    expect((await api.get(`${agentUrl('Versioned')}/versions/latest`, { key: acme.adminKey })).status).toBe(400);
  });
});
