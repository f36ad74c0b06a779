// The offline `local` model: deterministic replies, keyword routing to tools, tool-result summaries.
import { ProviderError } from '../../../providers/llm/errors';
import { bestMatchingTool, keywords, LocalProvider, stem } from '../../../providers/llm/local';
import { createLlmProvider } from '../../../providers/llm/registry';
import { collectStream, type LlmRequest, type LlmStreamEvent, type ToolDefinition } from '../../../providers/llm/types';

const local = createLlmProvider({ provider: 'local' });

const handoffTools: ToolDefinition[] = [
  {
    name: 'handoff_to_Billing',
    description: 'Hand the conversation to the billing agent for invoices, refunds and payment problems',
    parameters: { type: 'object', properties: { reason: { type: 'string' } } },
  },
  {
    name: 'handoff_to_Shipping',
    description: 'Hand the conversation to the shipping agent for deliveries, tracking and lost parcels',
    parameters: { type: 'object', properties: {} },
  },
  {
    name: 'delegate_to_Returns',
    description: 'Delegate return labels and exchanges',
    parameters: { type: 'object', properties: {} },
  },
];

const withSystem = (user: string, extra: Partial<LlmRequest> = {}): LlmRequest => ({
  model: 'local',
  messages: [
    { role: 'system', content: 'You are the front desk.\nGOAL: Route customers to the right team\nBe brief.' },
    { role: 'user', content: user },
  ],
  ...extra,
});

describe('text replies', () => {
  it('says it is the offline model and builds the reply from the GOAL line and the user message', async () => {
    const result = await local.complete(withSystem('What are your opening hours?'));
    expect(result.content).toBe(
      '[local model] This is the offline test model, not a real LLM. Goal: Route customers to the right team. You said: "What are your opening hours?".',
    );
    expect(result).toMatchObject({ toolCalls: [], model: 'local', provider: 'local', finishReason: 'stop' });
  });

  it('works without a system prompt', async () => {
    const result = await local.complete({ model: 'local', messages: [{ role: 'user', content: 'hi' }] });
    expect(result.content).toBe('[local model] This is the offline test model, not a real LLM. You said: "hi".');
  });

  it('is deterministic: the same input gives the same output', async () => {
    const request = withSystem('I was charged twice for my invoice', { tools: handoffTools });
    const first = await local.complete(request);
    const second = await createLlmProvider({ provider: 'local' }).complete(request);
    expect(second).toEqual(first);
    expect(await collectStream(local.stream(request), 'local')).toEqual(
      await collectStream(local.stream(request), 'local'),
    );
  });

  it('counts tokens approximately as ceil(chars / 4)', async () => {
    const request: LlmRequest = { model: 'local', messages: [{ role: 'user', content: 'abcdefghij' }] };
    const result = await local.complete(request);
    expect(result.usage.inputTokens).toBe(3);
    expect(result.usage.outputTokens).toBe(Math.ceil(result.content.length / 4));
    expect(result.usage.totalTokens).toBe(result.usage.inputTokens + result.usage.outputTokens);
  });

  it('honours maxTokens by cutting the reply and reporting length', async () => {
    const result = await local.complete(withSystem('Tell me everything', { maxTokens: 5 }));
    expect(result.finishReason).toBe('length');
    expect(result.content).toBe('[local model] This i');
    expect(result.usage.outputTokens).toBe(5);
  });
});

describe('tool routing', () => {
  it('calls the handoff tool whose description shares keywords with the user message, passing the reason', async () => {
    const result = await local.complete(withSystem('I need a refund, my payment was charged twice', { tools: handoffTools }));
    expect(result.finishReason).toBe('tool_calls');
    expect(result.content).toBe('');
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({
      name: 'handoff_to_Billing',
      arguments: JSON.stringify({ reason: 'I need a refund, my payment was charged twice' }),
    });
    expect(result.toolCalls[0]?.id).toMatch(/^call_local_[0-9a-f]{8}$/);
  });

  it('matches plural and suffixed forms and passes {} when the schema has no reason', async () => {
    const result = await local.complete(withSystem('My delivery is late and tracking shows nothing', { tools: handoffTools }));
    expect(result.toolCalls[0]).toMatchObject({ name: 'handoff_to_Shipping', arguments: '{}' });
  });

  it('matches the agent name in the tool name (case-insensitive)', async () => {
    const result = await local.complete(withSystem('RETURNS please', { tools: handoffTools }));
    expect(result.toolCalls[0]?.name).toBe('delegate_to_Returns');
  });

  it('breaks ties in favour of the first tool', () => {
    const tools: ToolDefinition[] = [
      { name: 'first', description: 'orders', parameters: {} },
      { name: 'second', description: 'orders', parameters: {} },
    ];
    expect(bestMatchingTool('my orders', tools)?.name).toBe('first');
  });

  it('answers in text when only stopwords or short words overlap', async () => {
    const result = await local.complete(withSystem('Can you do it for me to the end?', { tools: handoffTools }));
    expect(result.toolCalls).toEqual([]);
    expect(result.content).toContain('[local model]');
    // Routing boilerplate shared by every handoff description ("hand the conversation to the agent") is not a match.
    const generic = await local.complete(withSystem('Can I talk to an agent about this conversation?', { tools: handoffTools }));
    expect(generic.toolCalls).toEqual([]);
  });

  it('summarises a tool result instead of calling a tool again', async () => {
    const request: LlmRequest = {
      model: 'local',
      tools: handoffTools,
      messages: [
        { role: 'user', content: 'Where is my refund?' },
        { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup_refund', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: '{"status": "approved",\n "amount": 12.5}' },
      ],
    };
    const result = await local.complete(request);
    expect(result.toolCalls).toEqual([]);
    expect(result.content).toBe('[local model] lookup_refund returned: {"status": "approved", "amount": 12.5}');
  });
});

describe('streaming', () => {
  async function events(request: LlmRequest): Promise<LlmStreamEvent[]> {
    const out: LlmStreamEvent[] = [];
    for await (const event of local.stream(request)) out.push(event);
    return out;
  }

  it('splits the reply into word-sized deltas that concatenate to the complete text', async () => {
    const request = withSystem('What are your opening hours?');
    const got = await events(request);
    const deltas = got.flatMap((event) => (event.type === 'text_delta' ? [event.delta] : []));
    expect(deltas.length).toBeGreaterThan(10);
    expect(deltas.every((delta) => delta.trim().split(/\s+/).length === 1)).toBe(true);
    const completed = await local.complete(request);
    expect(deltas.join('')).toBe(completed.content);
    expect(got.slice(-2)).toEqual([
      { type: 'usage', inputTokens: completed.usage.inputTokens, outputTokens: completed.usage.outputTokens },
      { type: 'finish', finishReason: 'stop', model: 'local' },
    ]);
  });

  it('streams a tool call as start, delta, end', async () => {
    const got = await events(withSystem('refund my invoice', { tools: handoffTools }));
    expect(got.map((event) => event.type)).toEqual(['tool_call_start', 'tool_call_delta', 'tool_call_end', 'usage', 'finish']);
    expect(got[2]).toMatchObject({ type: 'tool_call_end', name: 'handoff_to_Billing' });
  });

  it('stops with an aborted ProviderError when the signal fires', async () => {
    const controller = new AbortController();
    const seen: LlmStreamEvent[] = [];
    await expect(
      (async () => {
        for await (const event of local.stream(withSystem('a long question', { signal: controller.signal }))) {
          seen.push(event);
          controller.abort();
        }
      })(),
    ).rejects.toMatchObject({ kind: 'aborted', retryable: false });
    expect(seen).toHaveLength(1);
    await expect(new LocalProvider().complete(withSystem('x', { signal: controller.signal }))).rejects.toBeInstanceOf(ProviderError);
  });
});

describe('keywords', () => {
  it('drops stopwords and short words and stems simple suffixes', () => {
    expect(keywords('The refunds I was refunded for my invoices')).toEqual(['refund', 'invoic']);
    expect(stem('deliveries')).toBe(stem('delivery'));
    expect(stem('shipping')).toBe(stem('ship'));
    expect(stem('charges')).toBe(stem('charged'));
  });
});
