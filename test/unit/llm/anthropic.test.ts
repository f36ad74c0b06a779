// The Anthropic adapter against a fake Messages API speaking the real protocol (real SDK, real HTTP).
import { ProviderError } from '../../../providers/llm/errors';
import { createLlmProvider } from '../../../providers/llm/registry';
import { collectStream, type LlmProvider, type LlmRequest, type LlmStreamEvent } from '../../../providers/llm/types';
import { startFakeAnthropic, type FakeAnthropic } from '../../support/fake-anthropic';

let fake: FakeAnthropic;
let provider: LlmProvider;

beforeAll(async () => {
  fake = await startFakeAnthropic({ apiKey: 'sk-ant-test' });
  provider = createLlmProvider({ provider: 'anthropic', baseURL: fake.baseURL, apiKey: 'sk-ant-test', timeoutMs: 5000 });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const request: LlmRequest = {
  model: 'claude-haiku-4-5',
  messages: [
    { role: 'system', content: 'GOAL: help with orders' },
    { role: 'user', content: 'Where is my order?' },
  ],
};

const lookupTool = {
  name: 'lookup_order',
  description: 'Look up an order',
  parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
};

async function events(stream: AsyncIterable<LlmStreamEvent>): Promise<LlmStreamEvent[]> {
  const out: LlmStreamEvent[] = [];
  for await (const event of stream) out.push(event);
  return out;
}

async function failure(run: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await run();
  } catch (err) {
    expect(err).toBeInstanceOf(ProviderError);
    return err as ProviderError;
  }
  throw new Error('expected a ProviderError');
}

interface SentBody {
  system?: string;
  messages: unknown[];
  tools?: unknown[];
  max_tokens: number;
  temperature?: number;
}
const sentBody = (index: number): SentBody => fake.requests[index]?.body as SentBody;

describe('complete', () => {
  it('returns text with Anthropic stop reasons and usage, sending system as the top-level field', async () => {
    fake.script({ text: 'It ships today.', usage: { inputTokens: 30, outputTokens: 5 }, model: 'claude-haiku-4-5-20251001' });
    const result = await provider.complete({ ...request, maxTokens: 256, temperature: 0.2 });
    expect(result).toEqual({
      content: 'It ships today.',
      toolCalls: [],
      model: 'claude-haiku-4-5-20251001',
      finishReason: 'end_turn',
      usage: { inputTokens: 30, outputTokens: 5, totalTokens: 35 },
      provider: 'anthropic',
    });
    const body = sentBody(0);
    expect(body.system).toBe('GOAL: help with orders');
    expect(body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Where is my order?' }] }]);
    expect(body.max_tokens).toBe(256);
    expect(body).not.toHaveProperty('temperature');
    expect(fake.requests[0]?.path).toBe('/v1/messages');
    expect(fake.requests[0]?.headers['authorization'] ?? fake.requests[0]?.headers['x-api-key']).toMatch(/sk-ant-test/);
  });

  it('defaults max_tokens, which Anthropic requires', async () => {
    await provider.complete(request);
    expect(sentBody(0).max_tokens).toBe(4096);
  });

  it('returns tool_use blocks as tool calls with JSON arguments', async () => {
    fake.script({ text: 'Let me check.', toolCalls: [{ id: 'toolu_1', name: 'lookup_order', arguments: { orderId: 'A-17' } }] });
    const result = await provider.complete({ ...request, tools: [lookupTool] });
    expect(result.content).toBe('Let me check.');
    expect(result.finishReason).toBe('tool_use');
    expect(result.toolCalls).toEqual([{ id: 'toolu_1', name: 'lookup_order', arguments: '{"orderId":"A-17"}' }]);
    expect(sentBody(0).tools).toEqual([
      { name: 'lookup_order', description: 'Look up an order', input_schema: lookupTool.parameters },
    ]);
  });

  it('maps assistant tool calls to tool_use and tool messages to one user turn of tool_result blocks', async () => {
    await provider.complete({
      ...request,
      messages: [
        ...request.messages,
        {
          role: 'assistant',
          content: 'Checking both.',
          tool_calls: [
            { id: 'toolu_a', type: 'function', function: { name: 'lookup_order', arguments: '{"orderId":"A"}' } },
            { id: 'toolu_b', type: 'function', function: { name: 'lookup_order', arguments: '{"orderId":"B"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'toolu_a', content: 'shipped' },
        { role: 'tool', tool_call_id: 'toolu_b', content: 'pending' },
      ],
    });
    expect(sentBody(0).messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking both.' },
          { type: 'tool_use', id: 'toolu_a', name: 'lookup_order', input: { orderId: 'A' } },
          { type: 'tool_use', id: 'toolu_b', name: 'lookup_order', input: { orderId: 'B' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_a', content: 'shipped' },
          { type: 'tool_result', tool_use_id: 'toolu_b', content: 'pending' },
        ],
      },
    ]);
  });

  it('maps image parts to image blocks (URL and base64 data URL)', async () => {
    await provider.complete({
      ...request,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Compare' },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    });
    expect(sentBody(0).messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Compare' },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      ],
    });
  });

  it('keeps max_tokens as the finish reason', async () => {
    fake.script({ text: 'Cut sh', finishReason: 'max_tokens' });
    expect((await provider.complete(request)).finishReason).toBe('max_tokens');
  });
});

describe('stream', () => {
  it('maps message_start / content_block_* / message_delta / message_stop to our events', async () => {
    fake.script({
      text: 'It ships today.',
      textChunks: ['It ', 'ships ', 'today.'],
      toolCalls: [{ id: 'toolu_9', name: 'lookup_order', arguments: '{"orderId":"A-17"}', argumentChunks: ['{"orde', 'rId": "A', '-17"}'] }],
      usage: { inputTokens: 40, outputTokens: 22 },
      model: 'claude-haiku-4-5-20251001',
    });
    const got = await events(provider.stream({ ...request, tools: [lookupTool] }));
    expect(got).toEqual([
      { type: 'text_delta', delta: 'It ' },
      { type: 'text_delta', delta: 'ships ' },
      { type: 'text_delta', delta: 'today.' },
      { type: 'tool_call_start', id: 'toolu_9', name: 'lookup_order' },
      { type: 'tool_call_delta', id: 'toolu_9', arguments: '{"orde' },
      { type: 'tool_call_delta', id: 'toolu_9', arguments: 'rId": "A' },
      { type: 'tool_call_delta', id: 'toolu_9', arguments: '-17"}' },
      { type: 'tool_call_end', id: 'toolu_9', name: 'lookup_order', arguments: '{"orderId": "A-17"}' },
      { type: 'usage', inputTokens: 40, outputTokens: 22 },
      { type: 'finish', finishReason: 'tool_use', model: 'claude-haiku-4-5-20251001' },
    ]);
    expect(fake.requests[0]?.body).toMatchObject({ stream: true });
  });

  it('reports `{}` for a tool called without input, like complete() does', async () => {
    fake.script({ toolCalls: [{ id: 'toolu_0', name: 'ping', arguments: '', argumentChunks: [] }] });
    const got = await events(provider.stream(request));
    expect(got).toContainEqual({ type: 'tool_call_end', id: 'toolu_0', name: 'ping', arguments: '{}' });
  });

  it('folds into the same result as complete()', async () => {
    const reply = { text: 'Same either way.', usage: { inputTokens: 3, outputTokens: 4 } };
    fake.script([reply, reply]);
    const completed = await provider.complete(request);
    expect(await collectStream(provider.stream(request), 'anthropic')).toEqual(completed);
  });

  it('throws a retryable network ProviderError from the iterator when the stream breaks mid-way', async () => {
    fake.script({ text: 'one two three four five', failAfterChunks: 4 });
    const seen: LlmStreamEvent[] = [];
    const err = await failure(async () => {
      for await (const event of provider.stream(request)) seen.push(event);
    });
    expect(err).toMatchObject({ kind: 'network', retryable: true, provider: 'anthropic' });
    expect(seen).toEqual([
      { type: 'text_delta', delta: 'one ' },
      { type: 'text_delta', delta: 'two ' },
    ]);
  });

  it('classifies an in-stream overloaded_error event as overloaded and retryable', async () => {
    fake.script({ text: 'one two three', streamError: { afterChunks: 3, type: 'overloaded_error', message: 'Overloaded' } });
    const seen: LlmStreamEvent[] = [];
    const err = await failure(async () => {
      for await (const event of provider.stream(request)) seen.push(event);
    });
    expect(err).toMatchObject({ kind: 'overloaded', retryable: true, code: 'overloaded_error' });
    expect(seen).toEqual([{ type: 'text_delta', delta: 'one ' }]);
  });

  it('aborts the upstream request when the signal fires mid-stream', async () => {
    fake.script({ text: 'a b c d e f g h i j k l', chunkDelayMs: 40 });
    const controller = new AbortController();
    const err = await failure(async () => {
      for await (const event of provider.stream({ ...request, signal: controller.signal })) {
        if (event.type === 'text_delta') controller.abort();
      }
    });
    expect(err).toMatchObject({ kind: 'aborted', retryable: false });
    await fake.requests[0]?.settled;
    expect(fake.requests[0]?.aborted).toBe(true);
  });
});

describe('errors', () => {
  it('401 is auth and not retryable', async () => {
    const wrongKey = createLlmProvider({ provider: 'anthropic', baseURL: fake.baseURL, apiKey: 'nope' });
    expect(await failure(() => wrongKey.complete(request))).toMatchObject({ kind: 'auth', status: 401, retryable: false });
  });

  it('429 is rate_limited and retryable with retryAfterMs, and the SDK does not retry', async () => {
    fake.script({ error: { status: 429, headers: { 'retry-after': '3' } } });
    const err = await failure(() => provider.complete(request));
    expect(err).toMatchObject({ kind: 'rate_limited', status: 429, retryable: true, retryAfterMs: 3000, code: 'rate_limit_error' });
    expect(fake.requests).toHaveLength(1);
  });

  it('500 is retryable and 529 is overloaded', async () => {
    fake.script([{ error: { status: 500 } }, { error: { status: 529 } }]);
    expect(await failure(() => provider.complete(request))).toMatchObject({ status: 500, retryable: true });
    expect(await failure(() => collectStream(provider.stream(request), 'anthropic'))).toMatchObject({
      kind: 'overloaded',
      status: 529,
      retryable: true,
    });
    expect(fake.requests).toHaveLength(2);
  });

  it('400 is bad_request and not retryable', async () => {
    fake.script({ error: { status: 400, message: 'messages: at least one message is required' } });
    const err = await failure(() => provider.complete(request));
    expect(err).toMatchObject({ kind: 'bad_request', retryable: false });
    expect(err.message).toContain('at least one message is required');
  });
});
