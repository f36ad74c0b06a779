// The sample back-end of the dev stack (infra/sample-backend.ts): every HTTP tool of the seeded
// sample project points at it once the seed rewrites the published hosts, and it answers each
// of them, "not found" and refusals included, with the same data every time.
import { compileProject, type ToolIR } from '../../../abl';
import { buildHttpRequest } from '../../../activities/tools/http-tool';
import { readProjectDir, SAMPLE_PROJECT_DIR } from '../../../infra/seed-project';
import { callsSampleHostElsewhere, pointAtSampleBackend, sampleBackendHttpAsyncEnv, sampleBackendToolEnv, startSampleBackend, type SampleBackend } from '../../../infra/sample-backend';

let backend: SampleBackend;
beforeAll(async () => {
  backend = await startSampleBackend(0);
});
afterAll(() => backend.close());

const published = readProjectDir(SAMPLE_PROJECT_DIR);

function seededTools(): Map<string, ToolIR> {
  const files = pointAtSampleBackend(published, backend.url);
  const out = compileProject(Object.entries(files).map(([path, content]) => ({ path, content })));
  expect(out.ok).toBe(true);
  const tools = new Map<string, ToolIR>();
  for (const agent of Object.values(out.agents)) for (const tool of agent.tools) tools.set(tool.name, tool);
  return tools;
}

/** Calls a seeded tool the way the tool activity builds its request; status and parsed body. */
async function call(tool: ToolIR, args: Record<string, string | number>): Promise<{ status: number; body: Record<string, unknown> }> {
  if (tool.binding.type !== 'http') throw new Error(`${tool.name} is not an http tool`);
  const { url, init } = buildHttpRequest(tool.binding, { tool, args, timeoutMs: 1000, secrets: {} });
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const ARGS: Record<string, Record<string, string | number>> = {
  get_invoice: { invoice_id: 'INV-123456' },
  issue_refund: { invoice_id: 'INV-123456', amount: 50, reason: 'charged twice' },
  search_flights: { destination: 'Lisbon', depart: '2026-05-01', return_date: '2026-05-08' },
  search_hotels: { city: 'Lisbon', checkin: '2026-05-01', checkout: '2026-05-08' },
  start_kyc_check: { customer_id: 'C-1', full_name: 'Ana Silva', id_number: 'AB123456' },
  open_account: { customer_id: 'C-1', kyc_reference: 'KYC-1234ABCD' },
};

it('leaves examples/ on the published hosts and points every seeded tool at the sample back-end', () => {
  expect(Object.values(published).join('\n')).toMatch(/https:\/\/billing\.example\.com\/v2/);
  const tools = seededTools();
  expect([...tools.keys()].sort()).toEqual(Object.keys(ARGS).sort());
  for (const tool of tools.values()) {
    if (tool.binding.type !== 'http') throw new Error(`${tool.name} has a ${tool.binding.type} binding, which the runtime cannot run`);
    const { url } = buildHttpRequest(tool.binding, { tool, args: ARGS[tool.name]!, timeoutMs: 1000, secrets: {} });
    expect(url.origin).toBe(backend.url);
  }
  expect(sampleBackendToolEnv(backend)).toEqual({ TOOL_ALLOWED_PRIVATE_DESTINATIONS: backend.hostPort });
});

it('answers every seeded tool with the fields its ABL declares', async () => {
  for (const tool of seededTools().values()) {
    const { status, body } = await call(tool, ARGS[tool.name]!);
    expect(status).toBeLessThan(300);
    if (tool.returns.kind !== 'object') throw new Error(`${tool.name} returns ${tool.returns.kind}`);
    expect(Object.keys(body)).toEqual(expect.arrayContaining(tool.returns.fields.map((f) => f.name)));
  }
});

it('serves plausible, deterministic data', async () => {
  const tools = seededTools();
  expect(await call(tools.get('get_invoice')!, { invoice_id: 'INV-123456' })).toEqual({
    status: 200,
    body: { id: 'INV-123456', amount: 120, status: 'open', currency: 'USD' },
  });
  const refund = await call(tools.get('issue_refund')!, ARGS.issue_refund!);
  expect(refund.body).toEqual({ refund_id: 'RF-123456-5000', status: 'approved', amount: 50 });
  expect((await call(tools.get('search_flights')!, ARGS.search_flights!)).body).toEqual({
    best_price: 240,
    summary: 'Round trip to Lisbon, 2026-05-01 to 2026-05-08 from $240',
  });
  expect((await call(tools.get('search_hotels')!, { city: 'new york', checkin: '', checkout: '' })).body).toEqual({
    summary: 'Hudson Lofts, Park Avenue Inn and Brooklyn Bridge Hotel in New York',
  });
  const kyc = await call(tools.get('start_kyc_check')!, ARGS.start_kyc_check!);
  expect(kyc.body).toEqual({ decision: 'approved', reference: expect.stringMatching(/^KYC-[0-9A-F]{8}$/) });
  expect(await call(tools.get('start_kyc_check')!, ARGS.start_kyc_check!)).toEqual(kyc);
  const account = await call(tools.get('open_account')!, { customer_id: 'C-1', kyc_reference: String(kyc.body.reference) });
  expect(account).toEqual({ status: 201, body: { account_number: expect.stringMatching(/^40\d{10}$/) } });
});

it('answers unknown records with 404 and impossible requests with a 4xx the agents take their ON_FAIL path on', async () => {
  const tools = seededTools();
  const cases: [string, Record<string, string | number>, number][] = [
    ['get_invoice', { invoice_id: 'INV-999999' }, 404],
    ['issue_refund', { invoice_id: 'INV-999999', amount: 5, reason: 'x' }, 404],
    ['issue_refund', { invoice_id: 'INV-111111', amount: 5, reason: 'x' }, 409],
    ['issue_refund', { invoice_id: 'INV-123456', amount: 500, reason: 'more than it cost' }, 422],
    ['search_flights', { destination: 'Atlantis', depart: '2026-05-01', return_date: '2026-05-08' }, 404],
    ['search_hotels', { city: 'Atlantis', checkin: '2026-05-01', checkout: '2026-05-08' }, 404],
    ['open_account', { customer_id: 'C-1', kyc_reference: 'none' }, 422],
  ];
  for (const [name, args, status] of cases) {
    const res = await call(tools.get(name)!, args);
    expect({ name, status: res.status, code: (res.body.error as { code?: string } | undefined)?.code }).toEqual({ name, status, code: expect.any(String) });
  }
  const rejected = await call(tools.get('start_kyc_check')!, { customer_id: 'C-1', full_name: 'Bo', id_number: 'XY123456' });
  expect(rejected.body.decision).toBe('rejected');
  const unknownRoute = await fetch(`${backend.url}/billing/v2/customers`);
  expect(unknownRoute.status).toBe(404);
});

it('tells tool files that call the sample hosts elsewhere from those that call this back-end', () => {
  const billing = published['tools/billing-api.tools.abl']!;
  expect(callsSampleHostElsewhere(billing, backend.url)).toBe(true);
  expect(callsSampleHostElsewhere(pointAtSampleBackend({ f: billing }, backend.url).f!, backend.url)).toBe(false);
  expect(callsSampleHostElsewhere(pointAtSampleBackend({ f: billing }, 'http://127.0.0.1:1').f!, backend.url)).toBe(true);
  expect(callsSampleHostElsewhere('TOOLS:\n  base_url: "https://api.acme.com/v1"\n', backend.url)).toBe(false);
});

it("adds the sample back-end to the private destinations the environment already allows, never replacing them", () => {
  const backend = { hostPort: '127.0.0.1:3010' };
  // Nothing set: exactly the sample back-end.
  expect(sampleBackendToolEnv(backend, {})).toEqual({ TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:3010' });
  expect(sampleBackendHttpAsyncEnv(backend, { HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: ' ' })).toEqual({ HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:3010' });
  // The developer's own receivers stay allowed, the sample back-end joins them.
  expect(sampleBackendToolEnv(backend, { TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:4010, billing.internal:8443' })).toEqual({
    TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:4010,billing.internal:8443,127.0.0.1:3010',
  });
  expect(sampleBackendHttpAsyncEnv(backend, { HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:4020' })).toEqual({
    HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:4020,127.0.0.1:3010',
  });
  // Listed already: not twice.
  expect(sampleBackendToolEnv(backend, { TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:3010,127.0.0.1:4010' })).toEqual({
    TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:3010,127.0.0.1:4010',
  });
  // One list never leaks into the other.
  expect(sampleBackendHttpAsyncEnv(backend, { TOOL_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:4010' })).toEqual({ HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: '127.0.0.1:3010' });
});
