// POST /api/v1/chat/stream against the real stack, with fake OpenAI and Anthropic servers
// speaking their wire formats, parsed by a real SSE parser: every event kind in order,
// tool-call streaming, heartbeats, client abort reaching upstream, upstream failures.
import { startFakeOpenAI } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { type FakeLlmServer } from '../../support/fake-openai';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { eventNames, openStream } from './sse-client';
import { eventually } from '../../support/eventually';

const OPENAI_KEY = 'sk-openai-stream-test-0001';
const ANTHROPIC_KEY = 'sk-ant-stream-test-0002';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;
let key: string;

beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAI({ apiKey: OPENAI_KEY }), startFakeAnthropic({ apiKey: ANTHROPIC_KEY })]);
  stack = await startTestStack({ env: { SSE_HEARTBEAT_MS: '100' }, allowPrivate: { llm: [openai.baseURL, anthropic.baseURL] } });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-stream');
  globex = await seedTenant(stack.ctx, 'globex-stream');
  key = await acme.keyWith(['session:execute']);
  const put = (provider: string, apiKey: string, baseURL: string) =>
    api.put(`/api/projects/${acme.projectId}/llm-credentials/${provider}`, { key: acme.adminKey, json: { apiKey, baseURL } });
  expect((await put('openai', OPENAI_KEY, openai.baseURL)).status).toBe(201);
  expect((await put('anthropic', ANTHROPIC_KEY, anthropic.baseURL)).status).toBe(201);
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close(), anthropic.close()]);
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

const userMessage = [{ role: 'user', content: 'Hello there' }];

async function ledger(filter: Record<string, unknown> = {}) {
  return stack.ctx.models.LlmUsage.find({ tenantId: acme.tenantId, ...filter }).lean();
}

describe('a text reply', () => {
  it('streams metadata, text deltas, usage and complete in that order, with proxy-safe headers', async () => {
    openai.script({ text: 'The quick brown fox', textChunks: ['The', ' quick', ' brown', ' fox'], usage: { inputTokens: 1200, outputTokens: 400 } });
    const res = await openStream(stack.baseUrl, {
      key,
      body: { projectId: acme.projectId, messages: userMessage, modelId: 'gpt-4o-mini', temperature: 0.2, maxTokens: 64 },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(res.headers.get('content-encoding')).toBeNull();
    expect(res.ended).toBe(true);

    expect(eventNames(res)).toEqual(['metadata', 'text_delta', 'text_delta', 'text_delta', 'text_delta', 'usage', 'complete']);
    expect(res.events[0]!.data).toEqual({ modelId: 'gpt-4o-mini', provider: 'openai', source: 'request' });
    expect(res.events.filter((e) => e.event === 'text_delta').map((e) => e.data.delta)).toEqual(['The', ' quick', ' brown', ' fox']);
    expect(res.events[5]!.data).toEqual({ inputTokens: 1200, outputTokens: 400 });
    const complete = res.events[6]!.data;
    expect(complete).toMatchObject({ inputTokens: 1200, outputTokens: 400, totalTokens: 1600, finishReason: 'end_turn', providerFinishReason: 'stop' });
    // gpt-4o-mini: $0.15 / $0.60 per million tokens.
    expect(complete.estimatedCost).toBeCloseTo((1200 * 0.15 + 400 * 0.6) / 1e6, 12);
    expect(complete.latencyMs).toEqual(expect.any(Number));

    // The real SDK path ran with the project's own key and the request's options.
    const upstream = openai.requests[0]!;
    expect(upstream.stream).toBe(true);
    expect(upstream.headers.authorization).toBe(`Bearer ${OPENAI_KEY}`);
    expect(upstream.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.2, max_tokens: 64, messages: userMessage });

    const rows = await ledger({ provider: 'openai', status: 'ok' });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ modelId: 'gpt-4o-mini', inputTokens: 1200, outputTokens: 400, totalTokens: 1600, source: 'api' });
  });

  it('uses the offline local model through the balanced tier when the call names no model', async () => {
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage } });
    expect(res.events[0]!.data).toEqual({ modelId: 'local', provider: 'local', source: 'tier' });
    const text = res.events.filter((e) => e.event === 'text_delta').map((e) => e.data.delta).join('');
    expect(text).toContain('[local model]');
    expect(text).toContain('You said: "Hello there"');
    expect(eventNames(res).at(-1)).toBe('complete');
    expect(openai.requests).toHaveLength(0);
  });
});

describe('tool calls', () => {
  const tools = [{ name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];

  it('streams an OpenAI tool call as start, argument deltas and end', async () => {
    openai.script({
      text: 'Checking.',
      textChunks: ['Checking.'],
      toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}', argumentChunks: ['{"city":', '"Par', 'is"}'] }],
      usage: { inputTokens: 30, outputTokens: 12 },
    });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'openai:gpt-4.1-mini', tools } });
    const names = eventNames(res);
    expect(names[0]).toBe('metadata');
    expect(names.slice(-2)).toEqual(['usage', 'complete']);
    const toolEvents = res.events.filter((e) => e.event.startsWith('tool_call'));
    expect(toolEvents.map((e) => [e.event, e.data])).toEqual([
      ['tool_call_start', { id: 'call_w1', name: 'get_weather' }],
      ['tool_call_delta', { id: 'call_w1', arguments: '{"city":' }],
      ['tool_call_delta', { id: 'call_w1', arguments: '"Par' }],
      ['tool_call_delta', { id: 'call_w1', arguments: 'is"}' }],
      ['tool_call_end', { id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
    ]);
    expect(res.events.at(-1)!.data).toMatchObject({ finishReason: 'tool_use', providerFinishReason: 'tool_calls' });
    expect(openai.requests[0]!.body).toMatchObject({ tools: [{ type: 'function', function: { name: 'get_weather' } }] });
  });

  it('streams an Anthropic reply with text and a tool call through the Messages wire format', async () => {
    anthropic.script({
      text: 'Let me look.',
      textChunks: ['Let me', ' look.'],
      toolCalls: [{ id: 'toolu_9', name: 'get_weather', arguments: { city: 'Oslo' }, argumentChunks: ['{"city"', ':"Oslo"}'] }],
      usage: { inputTokens: 50, outputTokens: 20 },
    });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'claude-haiku-4-5', tools } });
    expect(res.events[0]!.data).toEqual({ modelId: 'claude-haiku-4-5', provider: 'anthropic', source: 'request' });
    expect(eventNames(res)).toEqual([
      'metadata',
      'text_delta',
      'text_delta',
      'tool_call_start',
      'tool_call_delta',
      'tool_call_delta',
      'tool_call_end',
      'usage',
      'complete',
    ]);
    expect(res.events[6]!.data).toEqual({ id: 'toolu_9', name: 'get_weather', arguments: '{"city":"Oslo"}' });
    expect(res.events.at(-1)!.data).toMatchObject({ inputTokens: 50, outputTokens: 20, totalTokens: 70, finishReason: 'tool_use' });
    const sent = anthropic.requests[0]!.headers;
    expect(sent['x-api-key'] ?? sent.authorization?.replace(/^Bearer /, '')).toBe(ANTHROPIC_KEY);
  });
});

describe('a long-running stream', () => {
  it('sends ": heartbeat" comments while the upstream is slow', async () => {
    openai.script({ text: 'one two three four five', chunkDelayMs: 120 });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'gpt-4o-mini' } });
    expect(eventNames(res).at(-1)).toBe('complete');
    const heartbeats = res.comments.filter((c) => c.text === 'heartbeat');
    // ~600 ms of upstream time at a 100 ms interval.
    expect(heartbeats.length).toBeGreaterThanOrEqual(3);
    const firstDelta = res.events.find((e) => e.event === 'text_delta')!.at;
    const completeAt = res.events.at(-1)!.at;
    expect(heartbeats.some((h) => h.at > firstDelta && h.at < completeAt)).toBe(true);
  });

  it('delivers each delta as the upstream sends it, never held for later ones', async () => {
    // Writes are coalesced within one turn of the event loop; a delta must not wait for the next.
    openai.script({ text: 'slow and steady', textChunks: ['slow', ' and', ' steady'], chunkDelayMs: 300 });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'gpt-4o-mini' } });
    const deltas = res.events.filter((e) => e.event === 'text_delta');
    expect(deltas.map((e) => e.data.delta)).toEqual(['slow', ' and', ' steady']);
    // 300 ms between upstream chunks: each delta reached the client well before the next one.
    expect(deltas[1]!.at - deltas[0]!.at).toBeGreaterThan(150);
    expect(deltas[2]!.at - deltas[1]!.at).toBeGreaterThan(150);
    // The headers and metadata did not wait for the first token either (the upstream waits
    // 300 ms before its first chunk too).
    expect(res.events[0]!.event).toBe('metadata');
    expect(deltas[0]!.at - res.events[0]!.at).toBeGreaterThan(150);
  });

  it('aborts the upstream request when the client disconnects', async () => {
    openai.script({ text: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 40 });
    const res = await openStream(stack.baseUrl, {
      key,
      body: { projectId: acme.projectId, messages: userMessage, modelId: 'gpt-4o-mini', sessionId: 'abort-me' },
      onEvent: (event) => event.event === 'text_delta',
    });
    expect(res.ended).toBe(false);
    const upstream = openai.requests[0]!;
    await upstream.settled;
    expect(upstream.aborted).toBe(true);
    const rows = await eventually(() => ledger({ sessionId: 'abort-me' }), (r) => r.length > 0);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.status).toBe('aborted');
  });
});

describe('upstream failures', () => {
  it('turns a connection dropped mid-stream into an error event and ends the stream', async () => {
    openai.script({ text: 'alpha beta gamma delta epsilon', failAfterChunks: 3 });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'gpt-4o-mini', sessionId: 'dropped' } });
    expect(res.status).toBe(200);
    expect(res.ended).toBe(true);
    const names = eventNames(res);
    expect(names[0]).toBe('metadata');
    expect(names).toContain('text_delta');
    expect(names.at(-1)).toBe('error');
    expect(names).not.toContain('complete');
    expect(res.events.at(-1)!.data).toMatchObject({ error: expect.stringContaining('openai'), code: 'LLM_NETWORK', retryable: true });
    const rows = await ledger({ sessionId: 'dropped' });
    expect(rows.map((r) => r.status)).toEqual(['error']);
  });

  it("turns Anthropic's in-stream overloaded_error into an error event", async () => {
    anthropic.script({ text: 'partial answer here', streamError: { afterChunks: 3, type: 'overloaded_error', message: 'Overloaded' } });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'claude-haiku-4-5' } });
    expect(res.ended).toBe(true);
    expect(eventNames(res).at(-1)).toBe('error');
    expect(eventNames(res)).not.toContain('complete');
    expect(res.events.at(-1)!.data).toMatchObject({ code: 'LLM_OVERLOADED', retryable: true });
  });

  it('answers an upstream HTTP error before the first token with an error event, not a hung stream', async () => {
    openai.script({ error: { status: 500 } });
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, modelId: 'gpt-4o-mini' } });
    expect(eventNames(res)).toEqual(['metadata', 'error']);
    expect(res.ended).toBe(true);
  });
});

describe('errors before the stream opens are JSON envelopes', () => {
  it('404 for another tenant\'s project', async () => {
    const res = await openStream(stack.baseUrl, { key, body: { projectId: globex.projectId, messages: userMessage } });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Project not found' } });
  });

  it('400 naming the field for a bad body', async () => {
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.projectId, messages: userMessage, temperature: 3 } });
    expect(res.status).toBe(400);
    expect(res.json.error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining('body.temperature') });
  });

  it('503 when the provider has no credentials', async () => {
    const res = await openStream(stack.baseUrl, { key, body: { projectId: acme.otherProjectId, messages: userMessage, modelId: 'claude-haiku-4-5' } });
    expect(res.status).toBe(503);
    expect(res.json.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/^Runtime not configured: .*anthropic/) });
    expect(anthropic.requests).toHaveLength(0);
  });
});
