// Session insight routes on the real stack: a session's analysis, the LLM calls across sessions
// (generations) and the CSV export, with their filters, paging, errors, tenant isolation and the
// environments of a narrow key. Trace events are seeded straight into MongoDB, plus one real turn.
import { createApiKey } from '../../../core/tenancy/accounts';
import { EXPORT_COLUMNS } from '../../../core/sessions/export';
import { ZAnalysisResponseSchema, ZGenerationsResponseSchema } from '../../../api/sessions/insight-schemas';
import { type SessionDoc } from '../../../db/session';
import { parseCsv } from '../../support/csv';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createAgent, seedSession, seedTrace, seedTranscript, type SeedEvent } from './fixtures';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let prodKey: string;
let first: SessionDoc;
let second: SessionDoc;
let prod: SessionDoc;
let foreign: SessionDoc;

const at = (minute: number) => new Date(Date.UTC(2026, 0, 10, 12, minute));
const llm = (spanId: string, minute: number, model: string, agent: string, extra: Record<string, unknown> = {}): SeedEvent => ({
  type: 'llm_call',
  spanId,
  parentSpanId: 't1',
  at: at(minute),
  data: {
    agent,
    purpose: 'response',
    model,
    provider: 'openai',
    usage: { inputTokens: 100 + minute, outputTokens: 10 },
    latencyMs: 400,
    finishReason: 'stop',
    estimatedCost: 0.001,
    // Not a field a generation shows: it must never come out.
    prompt: `PROMPT-TEXT-${spanId}`,
    ...extra,
  },
});
const base = (p: string) => `/api/projects/${p}/sessions`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-insight');
  globex = await seedTenant(stack.ctx, 'globex-insight');
  prodKey = (await createApiKey(stack.ctx.models, acme.tenantId, { name: 'prod', permissions: ['session:read'], environments: ['production'] })).key;
  const scope = { tenantId: acme.tenantId, projectId: acme.projectId };
  first = await seedSession(stack.ctx, scope, { agentName: 'Support', createdAt: at(0), lastActivityAt: at(9) });
  second = await seedSession(stack.ctx, scope, { agentName: 'Billing', createdAt: at(10), lastActivityAt: at(19) });
  prod = await seedSession(stack.ctx, scope, { agentName: 'Support', environment: 'production', createdAt: at(20), lastActivityAt: at(29) });
  foreign = await seedSession(stack.ctx, { tenantId: globex.tenantId, projectId: globex.projectId }, { agentName: 'Support', createdAt: at(0), lastActivityAt: at(59) });

  const fail = (spanId: string, minute: number): SeedEvent[] => [
    { type: 'tool_call', spanId: `${spanId}c`, parentSpanId: 't1', at: at(minute), data: { agent: 'Support', tool: 'crm', input: { id: minute } } },
    { type: 'tool_result', spanId: `${spanId}r`, parentSpanId: `${spanId}c`, at: at(minute), data: { agent: 'Support', tool: 'crm', success: false, durationMs: 30, error: { kind: 'tool_error', message: 'HTTP 503' } } },
  ];
  await seedTrace(stack.ctx, first, [
    llm('f1', 1, 'gpt-a', 'Support'),
    { type: 'tool_call', spanId: 'slowc', parentSpanId: 't1', at: at(2), data: { agent: 'Support', tool: 'weather', input: { city: 'Paris, "FR"' } } },
    { type: 'tool_result', spanId: 'slowr', parentSpanId: 'slowc', at: at(2), data: { agent: 'Support', tool: 'weather', success: true, durationMs: 12_000, output: '=HYPERLINK("http://evil.example","x")' } },
    ...fail('e1', 3),
    ...fail('e2', 4),
    ...fail('e3', 5),
    { type: 'handoff', spanId: 'h1', at: at(6), data: { fromAgent: 'Support', toAgent: 'Billing', reason: 'r' } },
    { type: 'handoff', spanId: 'h2', at: at(6), data: { fromAgent: 'Billing', toAgent: 'Support', reason: 'r' } },
    { type: 'handoff', spanId: 'h3', at: at(6), data: { fromAgent: 'Support', toAgent: 'Billing', reason: 'r' } },
    { type: 'response', spanId: 'r1', at: at(7), data: { agent: 'Billing', text: 'line one,\nline "two"\r\n-3 apples' } },
    llm('f2', 8, 'gpt-b', 'Billing'),
  ]);
  await seedTranscript(stack.ctx, first, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }]);
  await seedTrace(stack.ctx, second, [llm('s1', 11, 'gpt-a', 'Billing'), llm('s2', 12, 'gpt-a', 'Billing'), { type: 'response', spanId: 's3', at: at(13), data: { agent: 'Billing', text: 'ok' } }]);
  await seedTrace(stack.ctx, prod, [llm('p1', 21, 'gpt-a', 'Support')]);
  await seedTrace(stack.ctx, foreign, [llm('g1', 30, 'gpt-a', 'Support'), { type: 'response', spanId: 'g2', at: at(31), data: { agent: 'Support', text: 'GLOBEX-ONLY' } }]);
});
afterAll(() => stack.close());

describe('GET .../sessions/:id/analysis', () => {
  it('explains the slow span, the repeated tool error and the handoff loop, with thresholds, observed values and suggestions', async () => {
    const res = await api.get(`${base(acme.projectId)}/${first._id}/analysis`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const { analysis, sessionId } = ZAnalysisResponseSchema.parse(res.body);
    expect(sessionId).toBe(first._id);
    expect(analysis.eventCount).toBe(14);
    expect(analysis.slowSpans).toContainEqual(
      expect.objectContaining({ rule: 'slow_span_absolute', spanIds: ['slowr'], observed: 12_000, threshold: 10_000, unit: 'ms', severity: 'warning', subject: { tool: 'weather', agent: 'Support' } }),
    );
    expect(analysis.errorPatterns).toContainEqual(
      expect.objectContaining({ rule: 'repeated_tool_error', spanIds: ['e1r', 'e2r', 'e3r'], observed: 3, threshold: 3, explanation: expect.stringContaining('HTTP 503') }),
    );
    expect(analysis.decisionAnomalies).toContainEqual(expect.objectContaining({ rule: 'handoff_loop', spanIds: ['h1', 'h2', 'h3'], observed: 2 }));
    expect(analysis.suggestions.map((s) => s.kind)).toEqual(expect.arrayContaining(['speed_up_tool', 'handle_tool_failure', 'tighten_handoff_rules']));
    expect(analysis.summary.findings).toBe(analysis.slowSpans.length + analysis.errorPatterns.length + analysis.decisionAnomalies.length + analysis.costHotspots.length);
  });

  it('answers 404 to a key bound to another environment', async () => {
    const res = await api.get(`${base(acme.projectId)}/${first._id}/analysis`, { key: prodKey });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
    expect((await api.get(`${base(acme.projectId)}/${prod._id}/analysis`, { key: prodKey })).status).toBe(200);
  });

  it('analyses a session the runtime recorded, and its LLM calls are listed as generations with their model and provider', async () => {
    await createAgent(stack.baseUrl, acme.adminKey, acme.otherProjectId, 'Live_Agent');
    const chat = await api.post('/api/v1/chat/agent', { key: acme.adminKey, json: { projectId: acme.otherProjectId, agentId: 'Live_Agent', message: 'Hello there' } });
    expect(chat.status).toBe(200);
    const sessionId = chat.body.sessionId as string;
    const analysis = await api.get(`${base(acme.otherProjectId)}/${sessionId}/analysis`, { key: acme.adminKey });
    expect(analysis.status).toBe(200);
    expect(analysis.body.analysis.eventCount).toBeGreaterThan(0);
    const calls = (chat.body.traceEvents as { type: string }[]).filter((e) => e.type === 'llm_call');
    const listed = await api.get(`${base(acme.otherProjectId)}/generations?sessionId=${sessionId}`, { key: acme.adminKey });
    expect(listed.status).toBe(200);
    expect(listed.body.total).toBe(calls.length);
    for (const g of listed.body.generations) {
      expect(g).toMatchObject({ sessionId, model: expect.any(String), provider: expect.any(String), agentName: 'Live_Agent', purpose: expect.any(String) });
    }
  });
});

describe('GET .../sessions/generations', () => {
  const list = (query: string, key = acme.adminKey) => api.get(`${base(acme.projectId)}/generations${query}`, { key });
  const spans = (res: { body: { generations: { spanId: string }[] } }) => res.body.generations.map((g) => g.spanId);

  it("lists the project's LLM calls newest first, with their metadata and never fields it does not show", async () => {
    const res = await list('');
    expect(res.status).toBe(200);
    const body = ZGenerationsResponseSchema.parse(res.body);
    expect(body).toMatchObject({ total: 5, offset: 0, limit: 50, hasMore: false });
    expect(spans(res)).toEqual(['p1', 's2', 's1', 'f2', 'f1']);
    expect(body.generations[4]).toEqual({
      id: `${first._id}:0`,
      sessionId: first._id,
      spanId: 'f1',
      turn: 1,
      timestamp: at(1).toISOString(),
      agentName: 'Support',
      model: 'gpt-a',
      provider: 'openai',
      purpose: 'response',
      inputTokens: 101,
      outputTokens: 10,
      totalTokens: 111,
      latencyMs: 400,
      estimatedCost: 0.001,
      finishReason: 'stop',
      fallbackFrom: null,
    });
    expect(res.text).not.toContain('PROMPT-TEXT');
    expect(res.text).not.toContain(foreign._id);
  });

  it('filters by model, agent, session and time window', async () => {
    expect(spans(await list('?model=gpt-b'))).toEqual(['f2']);
    expect(spans(await list('?agentName=Billing'))).toEqual(['s2', 's1', 'f2']);
    expect(spans(await list(`?sessionId=${second._id}`))).toEqual(['s2', 's1']);
    expect(spans(await list(`?from=${at(8).toISOString()}&to=${at(12).toISOString()}`))).toEqual(['s2', 's1', 'f2']);
    expect(spans(await list('?model=gpt-a&agentName=Support'))).toEqual(['p1', 'f1']);
    // A window that ends before it starts is empty.
    expect((await list(`?from=${at(12).toISOString()}&to=${at(8).toISOString()}`)).body).toMatchObject({ total: 0, generations: [] });
  });

  it('pages with total and hasMore', async () => {
    const page1 = await list('?limit=2');
    expect(page1.body).toMatchObject({ total: 5, limit: 2, offset: 0, hasMore: true });
    expect(spans(page1)).toEqual(['p1', 's2']);
    const page3 = await list('?limit=2&offset=4');
    expect(page3.body).toMatchObject({ total: 5, hasMore: false });
    expect(spans(page3)).toEqual(['f1']);
  });

  it.each(['?limit=201', '?limit=0', '?offset=-1', '?from=yesterday', '?to=2026-01-01', `?sessionId=${'x'.repeat(129)}`, `?model=${'m'.repeat(201)}`])('answers 400 to %s', async (query) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: { code: 'VALIDATION_ERROR', message: expect.any(String) } });
  });

  it('shows a key bound to an environment only the calls of its sessions', async () => {
    const res = await list('', prodKey);
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    expect(spans(res)).toEqual(['p1']);
    const other = await list(`?sessionId=${first._id}`, prodKey);
    expect(other.status).toBe(404);
    expect(other.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
  });

  it("answers 404 for another tenant's project and session", async () => {
    expect((await api.get(`${base(globex.projectId)}/generations`, { key: acme.adminKey })).status).toBe(404);
    const res = await list(`?sessionId=${foreign._id}`);
    expect(res.status).toBe(404);
    expect(res.body.error.message).toBe('Session not found');
  });
});

describe('GET .../sessions/export', () => {
  const exportCsv = (query: string, key = acme.adminKey) => api.get(`${base(acme.projectId)}/export?format=csv${query}`, { key });
  const records = (text: string) => {
    const rows = parseCsv(text);
    expect(rows[0]).toEqual([...EXPORT_COLUMNS]);
    return rows.slice(1).map((r) => Object.fromEntries(EXPORT_COLUMNS.map((c, i) => [c, r[i]!])) as Record<(typeof EXPORT_COLUMNS)[number], string>);
  };

  it('streams every trace event of the project as RFC 4180 CSV, sessions oldest first, as an attachment', async () => {
    const res = await exportCsv('');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="session-traces-${acme.projectId}.csv"`);
    expect(res.text.endsWith('\r\n')).toBe(true);
    const rows = records(res.text);
    expect(rows.map((r) => `${r.session_id === first._id ? 'first' : r.session_id === second._id ? 'second' : r.session_id === prod._id ? 'prod' : r.session_id}:${r.span_id}`)).toEqual([
      ...['f1', 'slowc', 'slowr', 'e1c', 'e1r', 'e2c', 'e2r', 'e3c', 'e3r', 'h1', 'h2', 'h3', 'r1', 'f2'].map((s) => `first:${s}`),
      'second:s1',
      'second:s2',
      'second:s3',
      'prod:p1',
    ]);
    expect(rows[0]).toEqual({
      session_id: first._id,
      session_agent: 'Support',
      environment: 'dev',
      channel: 'api',
      seq: '0',
      turn: '1',
      timestamp: at(1).toISOString(),
      type: 'llm_call',
      span_id: 'f1',
      parent_span_id: 't1',
      agent: 'Support',
      model: 'gpt-a',
      tool: '',
      duration_ms: '400',
      input_tokens: '101',
      output_tokens: '10',
      error: '',
      data: expect.any(String),
    });
    expect(JSON.parse(rows[0]!.data)).toMatchObject({ model: 'gpt-a', usage: { inputTokens: 101 } });
    // Quoting round-trips: commas, quotes, CR/LF; a cell that starts like a formula is neutralised.
    const response = rows.find((r) => r.span_id === 'r1')!;
    expect(JSON.parse(response.data)).toEqual({ agent: 'Billing', text: 'line one,\nline "two"\r\n-3 apples' });
    expect(JSON.parse(rows.find((r) => r.span_id === 'slowc')!.data).input).toEqual({ city: 'Paris, "FR"' });
    expect(rows.find((r) => r.span_id === 'e1r')).toMatchObject({ tool: 'crm', duration_ms: '30', error: 'HTTP 503' });
    expect(res.text).not.toContain('GLOBEX-ONLY');
    expect(res.text).not.toContain(foreign._id);
  });

  it('neutralises a text cell that a spreadsheet would run as a formula', async () => {
    const scope = { tenantId: acme.tenantId, projectId: acme.otherProjectId };
    const s = await seedSession(stack.ctx, scope, { agentName: '=cmd|calc' });
    await seedTrace(stack.ctx, s, [{ type: 'error', spanId: '@x', at: at(1), data: { agent: '+Agent', kind: 'k', message: '-1+1' } }]);
    const res = await api.get(`${base(acme.otherProjectId)}/export?format=csv&sessionId=${s._id}`, { key: acme.adminKey });
    const [row] = records(res.text);
    expect(row).toMatchObject({ session_agent: "'=cmd|calc", span_id: "'@x", agent: "'+Agent", error: "'-1+1" });
  });

  it('filters by session, agent and time window', async () => {
    const ids = async (query: string) => records((await exportCsv(query)).text).map((r) => r.span_id);
    expect(await ids(`&sessionId=${second._id}`)).toEqual(['s1', 's2', 's3']);
    expect(await ids('&agentName=Billing')).toEqual(['s1', 's2', 's3']);
    expect(await ids(`&from=${at(7).toISOString()}&to=${at(12).toISOString()}`)).toEqual(['r1', 'f2', 's1', 's2']);
    // Only the header when nothing matches.
    expect(await ids('&agentName=Nobody')).toEqual([]);
  });

  it('exports for a key bound to an environment only the sessions of it', async () => {
    const rows = records((await exportCsv('', prodKey)).text);
    expect(rows.map((r) => r.span_id)).toEqual(['p1']);
    expect((await exportCsv(`&sessionId=${first._id}`, prodKey)).status).toBe(404);
  });

  it.each(['', '&format=csv&format=json'])('answers 400 without format=csv (%s)', async (extra) => {
    for (const query of ['', '?format=json', '?format=CSV', `?format=csv${extra}`].filter((q) => q !== '?format=csv')) {
      const res = await api.get(`${base(acme.projectId)}/export${query}`, { key: acme.adminKey });
      expect({ query, status: res.status, code: res.body?.error?.code }).toEqual({ query, status: 400, code: 'VALIDATION_ERROR' });
    }
  });

  it("answers 404 for another tenant's project and session, and 403 without session:read", async () => {
    expect((await api.get(`${base(globex.projectId)}/export?format=csv`, { key: acme.adminKey })).status).toBe(404);
    expect((await exportCsv(`&sessionId=${foreign._id}`)).status).toBe(404);
    const key = await acme.keyWith(['session:execute']);
    expect((await exportCsv('', key)).status).toBe(403);
  });

  it('is documented as text/csv in the OpenAPI document', async () => {
    const doc = await api.get('/openapi.json');
    const op = doc.body.paths['/api/projects/{projectId}/sessions/export'].get;
    expect(Object.keys(op.responses['200'].content)).toEqual(['text/csv']);
    expect(op.responses['200'].content['text/csv'].example).toContain('session_id,session_agent');
    expect(op.responses['200'].headers['Content-Disposition']).toBeDefined();
    expect(Object.keys(op.responses['400'].content)).toEqual(['application/json']);
    expect(op.parameters).toContainEqual(expect.objectContaining({ name: 'format', in: 'query', required: true }));
  });
});
