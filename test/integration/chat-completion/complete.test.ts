// POST /api/v1/chat/complete against the real stack and fake OpenAI/Anthropic servers: both
// providers incl. tool calls, validation that records nothing, tenancy, 503 without
// credentials, the per-session rate limit, and credentials that never appear in clear.
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { openStream } from './sse-client';
import { inFreshWindow } from '../../support/rate-window';

const OPENAI_KEY = 'sk-openai-complete-SECRET-7f3a9c';
const ANTHROPIC_KEY = 'sk-ant-complete-SECRET-41be07';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;
let key: string;
const responses: string[] = [];

beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAI({ apiKey: OPENAI_KEY }), startFakeAnthropic({ apiKey: ANTHROPIC_KEY })]);
  stack = await startTestStack({ env: { SESSION_MESSAGES_PER_MINUTE: '3' }, allowPrivate: { llm: [openai.baseURL, anthropic.baseURL] } });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-complete');
  globex = await seedTenant(stack.ctx, 'globex-complete');
  key = await acme.keyWith(['session:execute']);
  for (const [provider, apiKey, baseURL] of [
    ['openai', OPENAI_KEY, openai.baseURL],
    ['anthropic', ANTHROPIC_KEY, anthropic.baseURL],
  ] as const) {
    const res = await api.put(`/api/projects/${acme.projectId}/llm-credentials/${provider}`, { key: acme.adminKey, json: { apiKey, baseURL } });
    expect(res.status).toBe(201);
    responses.push(res.text);
  }
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close(), anthropic.close()]);
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'What is the weather?' }] },
];
const tools = [{ name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];

const complete = (body: Record<string, unknown>, credential = key) => api.post('/api/v1/chat/complete', { key: credential, json: body });
const ledgerCount = () => stack.ctx.models.LlmUsage.countDocuments({ tenantId: acme.tenantId });

describe('OpenAI-compatible provider', () => {
  it('returns content, model, finish reason, usage with cost and latency', async () => {
    openai.script({ text: 'Sunny.', usage: { inputTokens: 1000, outputTokens: 500 } });
    const res = await complete({ projectId: acme.projectId, messages, modelId: 'gpt-4o-mini', temperature: 0.3, maxTokens: 100 });
    responses.push(res.text);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      content: 'Sunny.',
      model: 'gpt-4o-mini',
      finishReason: 'end_turn',
      providerFinishReason: 'stop',
      usage: { inputTokens: 1000, outputTokens: 500, totalTokens: 1500, estimatedCost: expect.any(Number) },
      latencyMs: expect.any(Number),
    });
    expect(res.body.usage.estimatedCost).toBeCloseTo((1000 * 0.15 + 500 * 0.6) / 1e6, 12);
    expect(openai.requests[0]!.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.3, max_tokens: 100, messages });
  });

  it('returns tool calls with finishReason tool_use (the provider said tool_calls)', async () => {
    openai.script({ toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: { city: 'Lima' } }] });
    const res = await complete({ projectId: acme.projectId, messages, modelId: 'openai:gpt-4.1-mini', tools });
    expect(res.status).toBe(200);
    expect(res.body.finishReason).toBe('tool_use');
    expect(res.body.providerFinishReason).toBe('tool_calls');
    expect(res.body.toolCalls).toEqual([{ id: 'call_abc', name: 'get_weather', arguments: '{"city":"Lima"}' }]);
  });

  it('passes an upstream 429 on as 429 with retryAfterMs and the headers', async () => {
    openai.script({ error: { status: 429, headers: { 'retry-after': '2' } } });
    const res = await complete({ projectId: acme.projectId, messages, modelId: 'gpt-4o-mini' });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' }, retryAfterMs: 2000 });
    expect(res.headers.get('retry-after')).toBe('2');
  });
});

describe('Anthropic provider', () => {
  it('returns text plus a tool call with finishReason tool_use; an unpriced model costs null', async () => {
    anthropic.script({
      text: 'Checking the forecast.',
      toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: { city: 'Rome' } }],
      usage: { inputTokens: 80, outputTokens: 25 },
    });
    const res = await complete({ projectId: acme.projectId, messages, modelId: 'anthropic:claude-future-9', tools, maxTokens: 300 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      content: 'Checking the forecast.',
      toolCalls: [{ id: 'toolu_1', name: 'get_weather', arguments: '{"city":"Rome"}' }],
      model: 'claude-future-9',
      finishReason: 'tool_use',
      providerFinishReason: 'tool_use',
      usage: { inputTokens: 80, outputTokens: 25, totalTokens: 105, estimatedCost: null },
    });
    const upstream = anthropic.requests[0]!.body as Record<string, unknown>;
    expect(upstream).toMatchObject({ model: 'claude-future-9', max_tokens: 300, system: 'You are terse.' });
    const row = await stack.ctx.models.LlmUsage.findOne({ tenantId: acme.tenantId, modelId: 'claude-future-9' }).lean();
    expect(row).toMatchObject({ provider: 'anthropic', totalTokens: 105, cost: null, status: 'ok' });
  });

  it('reports max_tokens as the finish reason when the reply is cut', async () => {
    anthropic.script({ text: 'A long', finishReason: 'max_tokens' });
    const res = await complete({ projectId: acme.projectId, messages, modelId: 'claude-haiku-4-5', maxTokens: 2 });
    expect(res.body.finishReason).toBe('max_tokens');
  });
});

describe('validation', () => {
  const base = { projectId: '', messages };
  beforeAll(() => {
    base.projectId = acme.projectId;
  });

  it.each([
    ['temperature 2.1', { temperature: 2.1 }, 'body.temperature'],
    ['temperature below 0', { temperature: -0.1 }, 'body.temperature'],
    ['maxTokens 0', { maxTokens: 0 }, 'body.maxTokens'],
    ['maxTokens 200001', { maxTokens: 200_001 }, 'body.maxTokens'],
    ['maxTokens 1.5', { maxTokens: 1.5 }, 'body.maxTokens'],
    ['empty messages', { messages: [] }, 'body.messages'],
    ['a bad role', { messages: [{ role: 'robot', content: 'hi' }] }, 'body.messages.0.role'],
    ['a message without content', { messages: [{ role: 'user' }] }, 'body.messages.0.content'],
    ['a tool missing parameters', { tools: [{ name: 'x', description: 'y' }] }, 'body.tools.0.parameters'],
    ['a tool missing its description', { tools: [{ name: 'x', parameters: {} }] }, 'body.tools.0.description'],
    ['an unknown tier', { tier: 'turbo' }, 'body.tier'],
    ['a model with no known provider', { modelId: 'mystery-7b' }, 'body.modelId'],
    ['a missing projectId', { projectId: undefined }, 'body.projectId'],
  ])('rejects %s with 400 naming the field and records nothing', async (_label, patch, field) => {
    const before = await ledgerCount();
    const res = await complete({ ...base, ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining(field) });
    expect(await ledgerCount()).toBe(before);
    expect(openai.requests).toHaveLength(0);
  });

  it('accepts the boundary values', async () => {
    const res = await complete({ ...base, temperature: 2, maxTokens: 200_000, tier: 'fast' });
    expect(res.status).toBe(200);
    const low = await complete({ ...base, temperature: 0, maxTokens: 1 });
    expect(low.status).toBe(200);
    expect(low.body.finishReason).toBe('max_tokens');
    expect(low.body.providerFinishReason).toBe('length');
  });

  it('accepts the full message shape: name, tool_calls, tool results, image parts', async () => {
    openai.script({ text: 'It is 21 degrees.' });
    const history = [
      { role: 'user', name: 'ana', content: [{ type: 'text', text: 'Weather?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] },
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
    ];
    const res = await complete({ projectId: acme.projectId, messages: history, tools, modelId: 'gpt-4o-mini' });
    expect(res.status).toBe(200);
    expect((openai.requests[0]!.body as { messages: unknown[] }).messages).toHaveLength(3);
  });
});

describe('tenancy and permissions', () => {
  it.each([
    ["another tenant's project", () => globex.projectId],
    ['a malformed id', () => 'not a cuid!'],
    ['an unknown CUID', () => 'clh2x1k9e0000qz3b6r9xg0zz'],
  ])('answers 404 for %s and records nothing', async (_label, projectId) => {
    const before = await ledgerCount();
    const res = await complete({ projectId: projectId(), messages });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('NOT_FOUND');
    expect(await ledgerCount()).toBe(before);
  });

  it("answers 404 when a project-bound key names the tenant's other project", async () => {
    const bound = await acme.keyWith(['session:execute'], acme.projectId);
    expect((await complete({ projectId: acme.otherProjectId, messages }, bound)).status).toBe(404);
    expect((await complete({ projectId: acme.projectId, messages }, bound)).status).toBe(200);
  });

  it('answers 403 without session:execute and 401 without a credential', async () => {
    const reader = await acme.keyWith(['session:read']);
    expect((await complete({ projectId: acme.projectId, messages }, reader)).status).toBe(403);
    const anonymous = await api.post('/api/v1/chat/complete', { json: { projectId: acme.projectId, messages } });
    expect(anonymous.status).toBe(401);
  });

  it('answers 503 "Runtime not configured" when the provider has no credentials', async () => {
    const res = await complete({ projectId: acme.otherProjectId, messages, modelId: 'gpt-4o-mini' });
    expect(res.status).toBe(503);
    expect(res.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/^Runtime not configured: no credentials for provider "openai"/) });
    expect(openai.requests).toHaveLength(0);
  });
});

describe('session message rate limit', () => {
  it('allows SESSION_MESSAGES_PER_MINUTE messages per session, then 429 with retryAfterMs and headers', async () => {
    await inFreshWindow();
    const body = { projectId: acme.projectId, messages, sessionId: 'sess-limit-1' };
    for (let i = 0; i < 3; i += 1) expect((await complete(body)).status).toBe(200);
    const limited = await complete(body);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      success: false,
      error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Session message rate limit exceeded' },
      retryAfterMs: expect.any(Number),
    });
    expect(limited.body.retryAfterMs).toBeGreaterThan(0);
    expect(limited.body.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);

    // The stream shares the session's budget and answers with the JSON envelope.
    const stream = await openStream(stack.baseUrl, { key, body });
    expect(stream.status).toBe(429);
    expect(stream.json.retryAfterMs).toEqual(expect.any(Number));

    // Other sessions and calls without a session are not affected.
    expect((await complete({ ...body, sessionId: 'sess-limit-2' })).status).toBe(200);
    expect((await complete({ projectId: acme.projectId, messages })).status).toBe(200);
  });
});

describe('stored credentials', () => {
  it('are encrypted at rest and never returned', async () => {
    const raw = await stack.ctx.models.connection.collection('llm_credentials').find({}).toArray();
    expect(raw).toHaveLength(2);
    const dump = JSON.stringify(raw);
    expect(dump).not.toContain(OPENAI_KEY);
    expect(dump).not.toContain(ANTHROPIC_KEY);
    expect(raw[0]!.apiKey).toMatchObject({ alg: 'v2', kid: expect.any(String), iv: expect.any(String), tag: expect.any(String), data: expect.any(String) });

    const listed = await api.get(`/api/projects/${acme.projectId}/llm-credentials`, { key: acme.adminKey });
    expect(listed.status).toBe(200);
    expect(listed.body.credentials.map((c: { provider: string }) => c.provider)).toEqual(['anthropic', 'openai']);
    for (const text of [...responses, listed.text]) {
      expect(text).not.toContain(OPENAI_KEY);
      expect(text).not.toContain(ANTHROPIC_KEY);
    }
    // ...yet the decrypted key reached the upstream (the fakes reject anything else).
    openai.script({ text: 'ok' });
    expect((await complete({ projectId: acme.projectId, messages, modelId: 'gpt-4o-mini' })).status).toBe(200);
    expect(openai.requests[0]!.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
  });
});
