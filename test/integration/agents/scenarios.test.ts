// The scenario-test route against the real stack: the seeded examples' scenario files run against
// the drafts and a version with the offline model; a failing scenario, an invalid file, another
// tenant's project and a narrow key get what docs/abl-tests.md says.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let other: SeededTenant;

const EXAMPLES = path.join(__dirname, '../../../examples/support-desk/agents');
const scenarioFile = (agent: string) => readFileSync(path.join(EXAMPLES, `${agent}.scenarios.yaml`), 'utf8');
const runUrl = (agent: string, projectId = acme.projectId) => `/api/projects/${projectId}/agents/${agent}/scenarios/run`;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  [acme, other] = await Promise.all([seedTenant(stack.ctx, 'acme-scenarios'), seedTenant(stack.ctx, 'other-scenarios')]);
  await seedDevProject(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.projectId });
});
afterAll(() => stack.close());

it("passes the seeded examples' scenarios against the drafts and the seeded version, with a JUnit report", async () => {
  const [hub, trip] = await Promise.all([
    api.post(runUrl('Support_Hub'), { key: acme.adminKey, json: { scenarios: scenarioFile('Support_Hub'), junit: true } }),
    api.post(runUrl('Trip_Planner'), { key: acme.adminKey, json: { scenarios: scenarioFile('Trip_Planner'), version: 'latest' } }),
  ]);
  expect(hub.status).toBe(200);
  expect(hub.body).toMatchObject({ success: true, passed: true, source: 'draft', version: null, summary: { total: 4, passed: 4, failed: 0 } });
  expect(hub.body.scenarios[0]).toMatchObject({ name: 'routes a classified billing question to Billing_Agent', agent: 'Support_Hub', passed: true, errors: [] });
  expect(hub.body.scenarios[0].turns[0].agent).toBe('Billing_Agent');
  expect(hub.body.junit).toContain('<testsuite name="Support_Hub.scenarios.yaml" tests="4" failures="0"');
  expect(trip.status).toBe(200);
  expect(trip.body).toMatchObject({ passed: true, source: 'version', version: '1.0.0', summary: { total: 2, passed: 2 } });
  expect(trip.body.junit).toBeUndefined();
  // The model calls (the supervisor's routing by the offline model) are in the project's usage ledger.
  const ledger = await stack.ctx.models.LlmUsage.find({ tenantId: acme.tenantId, projectId: acme.projectId, source: 'api' }).lean();
  expect(ledger.length).toBeGreaterThan(0);
  expect(ledger.every((e) => e.provider === 'local' && e.status === 'ok')).toBe(true);
});

it('answers 200 with the failed expectations and an unmocked tool call', async () => {
  const scenarios = {
    scenarios: [
      {
        name: 'wrong amount',
        turns: [{ user: 'INV-123456', expect: { response: { contains: '$99.00' } } }],
      },
    ],
  };
  const res = await api.post(runUrl('Billing_Agent'), { key: acme.adminKey, json: { scenarios } });
  expect(res.status).toBe(200);
  expect(res.body.passed).toBe(false);
  const [result] = res.body.scenarios;
  expect(result.errors).toEqual([expect.stringMatching(/^tool get_invoice was called with \{"invoice_id":"INV-123456"\} and no mock answers it/)]);
  expect(result.turns[0].expectations).toEqual([{ expectation: 'response.contains "$99.00"', passed: false, message: expect.stringContaining("I couldn't find that invoice.") }]);
});

it('refuses a bad body (400), an invalid file (422 with every problem), a broken draft (422), other tenants (404) and a narrow key (403)', async () => {
  const invalid = await api.post(runUrl('Support_Hub'), {
    key: acme.adminKey,
    json: { scenarios: 'scenarios:\n  - name: a\n    turns:\n      - user: hi\n        expect: { status: sleeping }\n  - name: b\n' },
  });
  expect(invalid.status).toBe(422);
  expect(invalid.body.error.code).toBe('UNPROCESSABLE_ENTITY');
  expect(invalid.body.error.message).toMatch(/^scenarios: scenario "a": scenarios\[0\]\.turns\[0\]\.expect\.status: Invalid option: .* \(and 1 more\)$/);
  expect(invalid.body.error.details.errors).toEqual([
    expect.objectContaining({ scenario: 'a', path: 'scenarios[0].turns[0].expect.status', line: 5 }),
    { scenario: 'b', path: 'scenarios[1].turns', line: 6, message: 'a scripted scenario needs turns' },
  ]);
  const tooMany = await api.post(runUrl('Support_Hub'), {
    key: acme.adminKey,
    json: { scenarios: { scenarios: Array.from({ length: 21 }, (_, i) => ({ name: `s${i}`, turns: [{ user: 'hi' }] })) } },
  });
  expect(tooMany.status).toBe(422);
  expect(tooMany.body.error.message).toBe('scenarios: at most 20 scenarios per request (got 21)');

  await api.put(`/api/projects/${acme.projectId}/agents/Hotel_Search/dsl`, { key: acme.adminKey, json: { dslContent: 'AGENT: Hotel_Search\nGOAL: "x"\nFOO: bar\n' } });
  const broken = await api.post(runUrl('Hotel_Search'), { key: acme.adminKey, json: { scenarios: { scenarios: [{ name: 'x', turns: [{ user: 'hi' }] }] } } });
  expect(broken.status).toBe(422);
  expect(broken.body.error.details.diagnostics).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'E203', path: 'agents/Hotel_Search.agent.abl' })]));

  const badBody = await api.post(runUrl('Support_Hub'), { key: acme.adminKey, json: { scenarios: 'scenarios: []', source: 'draft' } });
  expect(badBody.status).toBe(400);
  expect(badBody.body.error.code).toBe('VALIDATION_ERROR');

  const body = { scenarios: scenarioFile('Support_Hub') };
  expect((await api.post(runUrl('Support_Hub', acme.projectId), { key: other.adminKey, json: body })).status).toBe(404);
  expect((await api.post(runUrl('Nobody'), { key: acme.adminKey, json: body })).status).toBe(404);
  expect((await api.post(runUrl('Support_Hub'), { key: acme.adminKey, json: { ...body, version: '9.9.9' } })).status).toBe(404);
  const reader = await acme.keyWith(['agent:read']);
  expect((await api.post(runUrl('Support_Hub'), { key: reader, json: body })).status).toBe(403);
});
