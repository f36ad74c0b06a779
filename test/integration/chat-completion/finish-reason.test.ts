// /chat/complete and /chat/stream speak one finish-reason vocabulary for every provider (the
// real SDKs against fake OpenAI and Anthropic servers, and the local model), keep the provider's
// own value in `providerFinishReason`, and carry `toolCalls` only when there are any.
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { ZChatCompleteResponseSchema } from '../../../api/completions/schemas';
import { openStream } from './sse-client';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;

beforeAll(async () => {
  // The fakes first: their loopback addresses are the only private destinations the stack allows.
  [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  stack = await startTestStack({ allowPrivate: { llm: [openai.baseURL, anthropic.baseURL] } });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-finish');
  for (const [provider, baseURL] of [
    ['openai', openai.baseURL],
    ['anthropic', anthropic.baseURL],
  ] as const) {
    const res = await api.put(`/api/projects/${acme.projectId}/llm-credentials/${provider}`, { key: acme.adminKey, json: { apiKey: 'sk-test', baseURL } });
    expect(res.status).toBe(201);
  }
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close(), anthropic.close()]);
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

const messages = [{ role: 'user', content: 'What is the weather in Lima?' }];
const tools = [{ name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
const complete = (body: Record<string, unknown>) => api.post('/api/v1/chat/complete', { key: acme.adminKey, json: { projectId: acme.projectId, messages, ...body } });
const stream = (body: Record<string, unknown>) => openStream(stack.baseUrl, { key: acme.adminKey, body: { projectId: acme.projectId, messages, ...body } });

const PROVIDERS = {
  openai: { modelId: 'openai:gpt-4o-mini', fake: () => openai },
  anthropic: { modelId: 'anthropic:claude-haiku-4-5', fake: () => anthropic },
} as const;

// [provider, the provider's stop reason, the API's finishReason]
const CASES: [keyof typeof PROVIDERS, string, string][] = [
  ['openai', 'stop', 'end_turn'],
  ['openai', 'length', 'max_tokens'],
  ['openai', 'content_filter', 'content_filter'],
  ['openai', 'function_call', 'tool_use'],
  ['openai', 'eos', 'other'],
  ['anthropic', 'end_turn', 'end_turn'],
  ['anthropic', 'max_tokens', 'max_tokens'],
  ['anthropic', 'stop_sequence', 'stop_sequence'],
  ['anthropic', 'refusal', 'content_filter'],
  ['anthropic', 'model_context_window_exceeded', 'max_tokens'],
  ['anthropic', 'pause_turn', 'other'],
];

describe('POST /api/v1/chat/complete', () => {
  it.each(CASES)('%s %s is finishReason %s, the raw value kept, no toolCalls', async (provider, raw, mapped) => {
    PROVIDERS[provider].fake().script({ text: 'Sunny.', finishReason: raw });
    const res = await complete({ modelId: PROVIDERS[provider].modelId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ content: 'Sunny.', finishReason: mapped, providerFinishReason: raw });
    expect(res.body).not.toHaveProperty('toolCalls');
    expect(() => ZChatCompleteResponseSchema.parse(res.body)).not.toThrow();
  });

  it.each(Object.keys(PROVIDERS) as (keyof typeof PROVIDERS)[])('%s tool calls are finishReason tool_use with toolCalls present', async (provider) => {
    PROVIDERS[provider].fake().script({ toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Lima' } }] });
    const res = await complete({ modelId: PROVIDERS[provider].modelId, tools });
    expect(res.status).toBe(200);
    expect(res.body.finishReason).toBe('tool_use');
    expect(res.body.providerFinishReason).toBe(provider === 'openai' ? 'tool_calls' : 'tool_use');
    expect(res.body.toolCalls).toEqual([{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Lima"}' }]);
  });

  it('maps the local model too: end_turn, max_tokens when cut, tool_use with toolCalls', async () => {
    const plain = await complete({ modelId: 'local' });
    expect(plain.body).toMatchObject({ finishReason: 'end_turn', providerFinishReason: 'stop' });
    expect(plain.body).not.toHaveProperty('toolCalls');
    const cut = await complete({ modelId: 'local', maxTokens: 1 });
    expect(cut.body).toMatchObject({ finishReason: 'max_tokens', providerFinishReason: 'length' });
    const tool = await complete({ modelId: 'local', tools });
    expect(tool.body).toMatchObject({ finishReason: 'tool_use', providerFinishReason: 'tool_calls' });
    expect(tool.body.toolCalls).toHaveLength(1);
  });
});

describe('POST /api/v1/chat/stream', () => {
  it.each(CASES)('%s %s ends with a complete event whose finishReason is %s', async (provider, raw, mapped) => {
    PROVIDERS[provider].fake().script({ text: 'Sunny.', finishReason: raw });
    const res = await stream({ modelId: PROVIDERS[provider].modelId });
    expect(res.status).toBe(200);
    const last = res.events.at(-1)!;
    expect(last.event).toBe('complete');
    expect(last.data).toMatchObject({ finishReason: mapped, providerFinishReason: raw });
  });

  it('maps the local model\'s tool call to tool_use', async () => {
    const res = await stream({ modelId: 'local', tools });
    expect(res.events.at(-1)!.data).toMatchObject({ finishReason: 'tool_use', providerFinishReason: 'tool_calls' });
  });
});
