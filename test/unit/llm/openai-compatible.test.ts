// The OpenAI-compatible adapter against a fake server speaking the real protocol (real SDK, real HTTP).
import { ProviderError } from '../../../providers/llm/errors';
import { createLlmProvider } from '../../../providers/llm/registry';
import { collectStream, type LlmProvider, type LlmRequest, type LlmStreamEvent } from '../../../providers/llm/types';
import { startFakeOpenAI, type FakeOpenAI } from '../../support/fake-openai';

let fake: FakeOpenAI;
let provider: LlmProvider;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-test' });
  provider = createLlmProvider({ provider: 'openai', baseURL: fake.baseURL, apiKey: 'sk-test', timeoutMs: 5000 });
});
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const request: LlmRequest = {
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'GOAL: help' },
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

describe('complete', () => {
  it('returns text, usage, finish reason and model, and sends the request the SDK way', async () => {
    fake.script({ text: 'Your order ships today.', usage: { inputTokens: 21, outputTokens: 6 }, model: 'gpt-4o-mini-2024-07-18' });
    const result = await provider.complete({ ...request, temperature: 0.3, maxTokens: 50 });
    expect(result).toEqual({
      content: 'Your order ships today.',
      toolCalls: [],
      model: 'gpt-4o-mini-2024-07-18',
      finishReason: 'stop',
      usage: { inputTokens: 21, outputTokens: 6, totalTokens: 27 },
      provider: 'openai',
    });
    const sent = fake.requests[0];
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.headers['authorization']).toBe('Bearer sk-test');
    expect(sent?.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'GOAL: help' },
        { role: 'user', content: 'Where is my order?' },
      ],
      temperature: 0.3,
      max_tokens: 50,
      stream: false,
    });
  });

  it('maps tools, tool calls and tool results both ways', async () => {
    fake.script({ toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: { orderId: 'A-17' } }] });
    const result = await provider.complete({ ...request, tools: [lookupTool] });
    expect(result.toolCalls).toEqual([{ id: 'call_1', name: 'lookup_order', arguments: '{"orderId":"A-17"}' }]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.content).toBe('');
    expect((fake.requests[0]?.body as { tools: unknown }).tools).toEqual([
      { type: 'function', function: { name: 'lookup_order', description: 'Look up an order', parameters: lookupTool.parameters } },
    ]);

    fake.script({ text: 'It shipped.' });
    await provider.complete({
      ...request,
      messages: [
        ...request.messages,
        { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"orderId":"A-17"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"status":"shipped"}' },
      ],
    });
    expect((fake.requests[1]?.body as { messages: unknown[] }).messages.slice(2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup_order', arguments: '{"orderId":"A-17"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"status":"shipped"}' },
    ]);
  });

  it('passes multimodal user content through', async () => {
    await provider.complete({
      ...request,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] },
      ],
    });
    expect((fake.requests[0]?.body as { messages: unknown[] }).messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
      ],
    });
  });

  it('reports the length finish reason', async () => {
    fake.script({ text: 'Cut', finishReason: 'length' });
    expect((await provider.complete(request)).finishReason).toBe('length');
  });
});

describe('stream', () => {
  it('streams text deltas, then usage, then finish, asking for usage in the stream', async () => {
    fake.script({ text: 'Your order ships today.', textChunks: ['Your ', 'order ', 'ships ', 'today.'], usage: { inputTokens: 9, outputTokens: 5 } });
    const got = await events(provider.stream(request));
    expect(got).toEqual([
      { type: 'text_delta', delta: 'Your ' },
      { type: 'text_delta', delta: 'order ' },
      { type: 'text_delta', delta: 'ships ' },
      { type: 'text_delta', delta: 'today.' },
      { type: 'usage', inputTokens: 9, outputTokens: 5 },
      { type: 'finish', finishReason: 'stop', model: 'gpt-4o-mini' },
    ]);
    expect(fake.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('assembles tool calls by index from arguments split across deltas', async () => {
    fake.script({
      toolCalls: [
        { id: 'call_a', name: 'lookup_order', arguments: '{"orderId":"A-17"}', argumentChunks: ['{"ord', 'erId":', '"A-17"}'] },
        { id: 'call_b', name: 'lookup_order', arguments: '{"orderId":"B-2"}', argumentChunks: ['{"orderId"', ':"B-2"}'] },
      ],
    });
    const got = await events(provider.stream({ ...request, tools: [lookupTool] }));
    expect(got.filter((event) => event.type.startsWith('tool_call'))).toEqual([
      { type: 'tool_call_start', id: 'call_a', name: 'lookup_order' },
      { type: 'tool_call_delta', id: 'call_a', arguments: '{"ord' },
      { type: 'tool_call_delta', id: 'call_a', arguments: 'erId":' },
      { type: 'tool_call_delta', id: 'call_a', arguments: '"A-17"}' },
      { type: 'tool_call_start', id: 'call_b', name: 'lookup_order' },
      { type: 'tool_call_delta', id: 'call_b', arguments: '{"orderId"' },
      { type: 'tool_call_delta', id: 'call_b', arguments: ':"B-2"}' },
      { type: 'tool_call_end', id: 'call_a', name: 'lookup_order', arguments: '{"orderId":"A-17"}' },
      { type: 'tool_call_end', id: 'call_b', name: 'lookup_order', arguments: '{"orderId":"B-2"}' },
    ]);
    expect(got.at(-1)).toEqual({ type: 'finish', finishReason: 'tool_calls', model: 'gpt-4o-mini' });
  });

  it('folds into the same result as complete()', async () => {
    const reply = { text: 'Same either way.', usage: { inputTokens: 3, outputTokens: 4 } };
    fake.script([reply, reply]);
    const completed = await provider.complete(request);
    const streamed = await collectStream(provider.stream(request), 'openai');
    expect(streamed).toEqual(completed);
  });

  it('throws a retryable network ProviderError from the iterator when the stream breaks mid-way', async () => {
    fake.script({ text: 'one two three four five', failAfterChunks: 3 });
    const seen: LlmStreamEvent[] = [];
    const err = await failure(async () => {
      for await (const event of provider.stream(request)) seen.push(event);
    });
    expect(err.kind).toBe('network');
    expect(err.retryable).toBe(true);
    expect(seen.map((event) => event.type)).toEqual(['text_delta', 'text_delta']);
    expect(seen.some((event) => event.type === 'finish')).toBe(false);
  });

  it('surfaces an in-stream error chunk as a classified ProviderError', async () => {
    fake.script({ text: 'one two three', streamError: { afterChunks: 2, type: 'server_error', message: 'The server had an error' } });
    const err = await failure(() => collectStream(provider.stream(request), 'openai'));
    expect(err).toMatchObject({ kind: 'unknown', retryable: true, code: 'server_error' });
    expect(err.message).toContain('The server had an error');
  });

  it('aborts the upstream request when the signal fires mid-stream', async () => {
    fake.script({ text: 'a b c d e f g h i j k l', chunkDelayMs: 40 });
    const controller = new AbortController();
    const err = await failure(async () => {
      for await (const event of provider.stream({ ...request, signal: controller.signal })) {
        if (event.type === 'text_delta') controller.abort();
      }
    });
    expect(err.kind).toBe('aborted');
    expect(err.retryable).toBe(false);
    await fake.requests[0]?.settled;
    expect(fake.requests[0]?.aborted).toBe(true);
  });

  it('closes the upstream request when the consumer stops early', async () => {
    fake.script({ text: 'a b c d e f g h i j k l', chunkDelayMs: 40 });
    for await (const event of provider.stream(request)) {
      if (event.type === 'text_delta') break;
    }
    await fake.requests[0]?.settled;
    expect(fake.requests[0]?.aborted).toBe(true);
  });
});

describe('errors', () => {
  it('401 is auth and not retryable', async () => {
    const wrongKey = createLlmProvider({ provider: 'openai', baseURL: fake.baseURL, apiKey: 'sk-wrong' });
    const err = await failure(() => wrongKey.complete(request));
    expect(err).toMatchObject({ kind: 'auth', status: 401, retryable: false, provider: 'openai' });
    expect(fake.requests).toHaveLength(1);
  });

  it('429 is rate_limited, retryable, with retryAfterMs from Retry-After, and the SDK does not retry', async () => {
    fake.script({ error: { status: 429, headers: { 'retry-after': '7' } } });
    const err = await failure(() => provider.complete(request));
    expect(err).toMatchObject({ kind: 'rate_limited', status: 429, retryable: true, retryAfterMs: 7000 });
    expect(fake.requests).toHaveLength(1);
  });

  it('500 is retryable, and a stream that fails before its first byte throws from the iterator', async () => {
    fake.script({ error: { status: 500 } });
    const err = await failure(() => collectStream(provider.stream(request), 'openai'));
    expect(err).toMatchObject({ status: 500, retryable: true });
    expect(fake.requests).toHaveLength(1);
  });

  it('400 with a content-policy code is content_policy and not retryable', async () => {
    fake.script({ error: { status: 400, code: 'content_policy_violation', message: 'rejected by the safety system' } });
    const err = await failure(() => provider.complete(request));
    expect(err).toMatchObject({ kind: 'content_policy', status: 400, retryable: false });
  });

  it('404 (unknown model) is not_found and not retryable', async () => {
    fake.script({ error: { status: 404 } });
    expect(await failure(() => provider.complete(request))).toMatchObject({ kind: 'not_found', retryable: false });
  });

  it('a refused connection is a retryable network error', async () => {
    const closed = await startFakeOpenAI();
    const baseURL = closed.baseURL;
    await closed.close();
    const unreachable = createLlmProvider({ provider: 'openai', baseURL, apiKey: 'x' });
    expect(await failure(() => unreachable.complete(request))).toMatchObject({ kind: 'network', retryable: true });
  });

  it('a slow server past timeoutMs is a retryable timeout', async () => {
    fake.script({ text: 'late', delayMs: 1000 });
    const impatient = createLlmProvider({ provider: 'openai', baseURL: fake.baseURL, apiKey: 'sk-test', timeoutMs: 100 });
    expect(await failure(() => impatient.complete(request))).toMatchObject({ kind: 'timeout', retryable: true });
  });

  it('an already-aborted signal fails fast as aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await failure(() => provider.complete({ ...request, signal: controller.signal }))).toMatchObject({ kind: 'aborted' });
  });
});
