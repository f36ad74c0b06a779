// GET /api/v1/chat/usage: sums and the per-model breakdown over calls through both providers,
// the local model and the ledger writer the agent runtime uses; date filters and their errors.
import { createLlmUsageRecorder, recordLlmUsage } from '../../../db/llm-usage';
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { openStream } from './sse-client';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;
let executor: string;
let reader: string;

const messages = [{ role: 'user', content: 'hi' }];
const price = (input: number, output: number, inPerM: number, outPerM: number) => (input * inPerM + output * outPerM) / 1e6;

beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  stack = await startTestStack({ allowPrivate: { llm: [openai.baseURL, anthropic.baseURL] } });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-usage');
  globex = await seedTenant(stack.ctx, 'globex-usage');
  executor = await acme.keyWith(['session:execute']);
  reader = await acme.keyWith(['session:read']);
  for (const [provider, baseURL] of [
    ['openai', openai.baseURL],
    ['anthropic', anthropic.baseURL],
  ] as const) {
    await api.put(`/api/projects/${acme.projectId}/llm-credentials/${provider}`, { key: acme.adminKey, json: { apiKey: 'k', baseURL } });
  }

  // Four calls on the project: two OpenAI (one streamed), one Anthropic, one local.
  openai.script([
    { text: 'a', usage: { inputTokens: 100, outputTokens: 50 } },
    { text: 'b', usage: { inputTokens: 200, outputTokens: 100 } },
  ]);
  anthropic.script({ text: 'c', usage: { inputTokens: 300, outputTokens: 30 } });
  const post = (body: Record<string, unknown>) => api.post('/api/v1/chat/complete', { key: executor, json: { projectId: acme.projectId, messages, ...body } });
  expect((await post({ modelId: 'gpt-4o-mini', sessionId: 's-1' })).status).toBe(200);
  const streamed = await openStream(stack.baseUrl, { key: executor, body: { projectId: acme.projectId, messages, modelId: 'gpt-4o-mini' } });
  expect(streamed.events.at(-1)!.event).toBe('complete');
  expect((await post({ modelId: 'claude-haiku-4-5' })).status).toBe(200);
  const local = await post({});
  expect(local.status).toBe(200);
  localTokens = local.body.usage.totalTokens;
  // A call on the other project must not count.
  await api.post('/api/v1/chat/complete', { key: executor, json: { projectId: acme.otherProjectId, messages } });
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close(), anthropic.close()]);
});

let localTokens = 0;
const usage = (query: string, key = reader) => api.get(`/api/v1/chat/usage?${query}`, { key });

describe('summary', () => {
  it('sums tokens, cost, requests and latency of the project only', async () => {
    const res = await usage(`projectId=${acme.projectId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      summary: { totalTokens: 150 + 300 + 330 + localTokens, totalCost: expect.any(Number), requestCount: 4, avgLatency: expect.any(Number) },
    });
    expect(res.body.byModel).toBeUndefined();
    const expectedCost = price(100, 50, 0.15, 0.6) + price(200, 100, 0.15, 0.6) + price(300, 30, 1, 5);
    expect(res.body.summary.totalCost).toBeCloseTo(expectedCost, 10);
    expect(res.body.summary.avgLatency).toBeGreaterThanOrEqual(0);
  });

  it('breaks usage down per model and provider with groupBy=model', async () => {
    const res = await usage(`projectId=${acme.projectId}&groupBy=model`);
    expect(res.status).toBe(200);
    const byModel = [...res.body.byModel].sort((a, b) => a.modelId.localeCompare(b.modelId));
    expect(byModel).toEqual([
      { modelId: 'claude-haiku-4-5', provider: 'anthropic', totalTokens: 330, totalCost: expect.any(Number), requestCount: 1 },
      { modelId: 'gpt-4o-mini', provider: 'openai', totalTokens: 450, totalCost: expect.any(Number), requestCount: 2 },
      { modelId: 'local', provider: 'local', totalTokens: localTokens, totalCost: 0, requestCount: 1 },
    ]);
    expect(byModel[0].totalCost).toBeCloseTo(price(300, 30, 1, 5), 12);
    expect(byModel[1].totalCost).toBeCloseTo(price(300, 150, 0.15, 0.6), 12);
    const sum = byModel.reduce((acc, m) => acc + m.totalTokens, 0);
    expect(sum).toBe(res.body.summary.totalTokens);
  });
});

describe('agent-session calls and date ranges', () => {
  const day = (iso: string) => new Date(iso);
  let agentProjectId = '';

  beforeAll(async () => {
    const project = await stack.ctx.models.Project.create({ tenantId: acme.tenantId, name: 'Agents', slug: 'agents' });
    agentProjectId = project._id;
    // The runtime's writer (what the worker's recordUsage uses), then a few backdated calls.
    const recorder = createLlmUsageRecorder(stack.ctx.models.LlmUsage, ({ inputTokens, outputTokens }) => (inputTokens + outputTokens) / 1e6);
    const { estimatedCost } = await recorder({
      tenantId: acme.tenantId,
      projectId: agentProjectId,
      sessionId: 'agent-session-1',
      modelId: 'gpt-4.1',
      provider: 'openai',
      inputTokens: 1000,
      outputTokens: 1000,
      latencyMs: 900,
      source: 'agent',
    });
    expect(estimatedCost).toBeCloseTo(0.002, 12);
    const backdated = (createdAt: string, tokens: number) =>
      recordLlmUsage(stack.ctx.models.LlmUsage, {
        tenantId: acme.tenantId,
        projectId: agentProjectId,
        modelId: 'gpt-4.1',
        provider: 'openai',
        inputTokens: tokens,
        outputTokens: 0,
        cost: 0.5,
        latencyMs: 100,
        source: 'agent',
        createdAt: day(createdAt),
      });
    await backdated('2024-01-10T12:00:00.000Z', 10);
    await backdated('2024-01-15T23:30:00.000Z', 20);
    await backdated('2024-02-01T00:00:00.000Z', 40);
  });

  it('counts agent-session calls recorded by the runtime writer', async () => {
    const res = await usage(`projectId=${agentProjectId}&startDate=2025-01-01`);
    expect(res.body.summary).toEqual({ totalTokens: 2000, totalCost: 0.002, requestCount: 1, avgLatency: 900 });
  });

  it('filters by startDate and endDate (a date alone includes the whole day)', async () => {
    const jan = await usage(`projectId=${agentProjectId}&startDate=2024-01-01&endDate=2024-01-15&groupBy=model`);
    expect(jan.status).toBe(200);
    expect(jan.body.summary).toMatchObject({ totalTokens: 30, requestCount: 2, totalCost: 1 });
    expect(jan.body.byModel).toEqual([{ modelId: 'gpt-4.1', provider: 'openai', totalTokens: 30, totalCost: 1, requestCount: 2 }]);

    const instant = await usage(`projectId=${agentProjectId}&startDate=2024-01-10T12:00:00Z&endDate=2024-01-15T23:29:59Z`);
    expect(instant.body.summary).toMatchObject({ totalTokens: 10, requestCount: 1 });

    const open = await usage(`projectId=${agentProjectId}&startDate=2024-01-12`);
    expect(open.body.summary).toMatchObject({ totalTokens: 20 + 40 + 2000, requestCount: 3 });

    const until = await usage(`projectId=${agentProjectId}&endDate=2024-01-31`);
    expect(until.body.summary).toMatchObject({ totalTokens: 30, requestCount: 2 });

    const empty = await usage(`projectId=${agentProjectId}&startDate=2023-01-01&endDate=2023-12-31&groupBy=model`);
    expect(empty.body).toEqual({ success: true, summary: { totalTokens: 0, totalCost: 0, requestCount: 0, avgLatency: 0 }, byModel: [] });

    // Each date is valid on its own: an end before the start is an empty period, not a 400.
    const inverted = await usage(`projectId=${agentProjectId}&startDate=2024-02-01&endDate=2024-01-01&groupBy=model`);
    expect(inverted.status).toBe(200);
    expect(inverted.body).toEqual({ success: true, summary: { totalTokens: 0, totalCost: 0, requestCount: 0, avgLatency: 0 }, byModel: [] });
  });

  it.each([
    ['a bad startDate', 'startDate=yesterday', 'query.startDate'],
    ['a bad endDate', 'endDate=2024-13-45', 'query.endDate'],
    ['a date-time without an offset', 'startDate=2024-02-01T10:00:00', 'query.startDate'],
    ['an unknown groupBy', 'groupBy=provider', 'query.groupBy'],
  ])('answers 400 for %s', async (_label, query, field) => {
    const res = await usage(`projectId=${acme.projectId}&${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining(field) });
  });

  it('answers 400 without projectId, 404 for an invisible project, 403 without session:read', async () => {
    expect((await api.get('/api/v1/chat/usage', { key: reader })).body.error.message).toContain('query.projectId');
    expect((await usage(`projectId=${globex.projectId}`)).status).toBe(404);
    expect((await usage('projectId=nope')).status).toBe(404);
    expect((await usage(`projectId=${acme.projectId}`, executor)).status).toBe(403);
  });
});
