// Reasoning agents through the real API, Temporal and an OpenAI-compatible model (a fake that
// speaks the wire protocol): `__fan_out__` runs its branches as parallel Delegation child
// workflows and reports the failed one; several tool calls in one answer run concurrently and
// are recorded in the order the model asked for them.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';

jest.setTimeout(60_000);

type Trace = { type: string; spanId: string; parentSpanId: string | null; data: Record<string, unknown> };

let stack: TestStack;
let t: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let api: ReturnType<typeof client>;
let toolServer: Server;
/** Requests the tool server is answering right now, and the most at once. */
let inFlight = 0;
let maxInFlight = 0;
const DELAY_MS: Record<string, number> = { '/weather': 700, '/prices': 150, '/lookup': 500 };

const hub = (port: number) => `AGENT: Fan_Hub
GOAL: "Plan trips with the help of other agents."
TOOLS:
  weather(city: string) -> {forecast: string}
    type: http
    endpoint: "http://127.0.0.1:${port}/weather"
    method: GET
    timeout: 5000
  prices(city: string) -> {price: number}
    type: http
    endpoint: "http://127.0.0.1:${port}/prices"
    method: GET
    timeout: 5000
DELEGATE:
  - AGENT: Researcher
    PURPOSE: "Research one topic"
    ON_FAILURE: continue
  - AGENT: Writer
    PURPOSE: "Write a text with a title"
    ON_FAILURE: continue
`;
const researcher = (port: number) => `AGENT: Researcher
GOAL: "Look a topic up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "http://127.0.0.1:${port}/lookup"
    method: GET
    timeout: 5000
FLOW:
  steps: [find]
  find:
    REASONING: false
    CALL: lookup(q = task)
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Nothing found"
      THEN: COMPLETE
`;
// Needs a title nobody gives it: as a delegated agent it cannot ask, so its branch fails.
const writer = `AGENT: Writer
GOAL: "Write a text."
FLOW:
  steps: [write]
  write:
    REASONING: false
    GATHER:
      title:
        prompt: "Which title?"
    RESPOND: "Wrote {{title}}"
    THEN: COMPLETE
`;

beforeAll(async () => {
  toolServer = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    setTimeout(() => {
      inFlight--;
      const q = url.searchParams.get('q') ?? url.searchParams.get('city');
      const body = url.pathname === '/weather' ? { forecast: `sun in ${q}` } : url.pathname === '/prices' ? { price: 120 } : { answer: `facts about ${q}` };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    }, DELAY_MS[url.pathname] ?? 0);
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  const port = (toolServer.address() as AddressInfo).port;
  fake = await startFakeOpenAI({ apiKey: 'sk-fan-out' });
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [`http://127.0.0.1:${port}`], llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  for (const [name, source] of [['Researcher', researcher(port)], ['Writer', writer], ['Fan_Hub', hub(port)]] as const) {
    await publishAgent(api, t, name, source);
  }
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-fan-out');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
  toolServer.closeAllConnections();
  await new Promise((r) => toolServer.close(r));
});

beforeEach(() => {
  maxInFlight = 0;
});

const chat = (message: string) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Fan_Hub', message } });
type ChatBody = { messages: { role: string; content: string; tool_call_id?: string }[]; tools: { function: { name: string } }[] };

it('runs several tool calls of one answer at once and records them in the order asked', async () => {
  const before = fake.requests.length;
  fake.script([
    { toolCalls: [{ id: 'call_w', name: 'weather', arguments: { city: 'Rome' } }, { id: 'call_p', name: 'prices', arguments: { city: 'Rome' } }] },
    { text: 'Sunny and cheap.' },
  ]);
  const res = await chat('Weather and prices for Rome?');
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Sunny and cheap.');
  // Both requests were at the tool server together.
  expect(maxInFlight).toBe(2);

  const events: Trace[] = res.body.traceEvents;
  const tools = events.filter((e) => e.type === 'tool_call' || e.type === 'tool_result').map((e) => `${e.type}:${String(e.data.tool)}`);
  // prices answered first (150 ms against 700 ms), yet the trace follows the model's order.
  expect(tools).toEqual(['tool_call:weather', 'tool_call:prices', 'tool_result:weather', 'tool_result:prices']);
  const calls = events.filter((e) => e.type === 'tool_call');
  for (const result of events.filter((e) => e.type === 'tool_result')) {
    expect(result.parentSpanId).toBe(calls.find((c) => c.data.tool === result.data.tool)!.spanId);
    expect(result.data.success).toBe(true);
  }

  const second = fake.requests[before + 1]!.body as ChatBody;
  expect(second.messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id, JSON.parse(m.content)])).toEqual([
    ['call_w', { forecast: 'sun in Rome' }],
    ['call_p', { price: 120 }],
  ]);
});

it('fans out to parallel Delegation children, joins them and reports the failed branch', async () => {
  const before = fake.requests.length;
  fake.script([
    {
      toolCalls: [{
        id: 'call_f',
        name: '__fan_out__',
        arguments: { tasks: [{ target: 'Researcher', task: 'museums' }, { target: 'Researcher', task: 'food' }, { target: 'Writer', task: 'a poem' }] },
      }],
    },
    { text: 'Here is your plan.' },
  ]);
  const res = await chat('Plan a weekend in Rome');
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Here is your plan.');
  const offered = (fake.requests[before]!.body as ChatBody).tools.map((x) => x.function.name);
  expect(offered).toContain('__fan_out__');
  // The two Researcher children called their tool at the same time.
  expect(maxInFlight).toBe(2);

  const events: Trace[] = res.body.traceEvents;
  const delegates = events.filter((e) => e.type === 'delegate');
  expect(delegates.map((d) => [d.data.fromAgent, d.data.toAgent, d.data.task, d.data.status])).toEqual([
    ['Fan_Hub', 'Researcher', 'museums', 'completed'],
    ['Fan_Hub', 'Researcher', 'food', 'completed'],
    ['Fan_Hub', 'Writer', 'a poem', 'failed'],
  ]);
  // Each child's tool call hangs under its own delegate span.
  const lookups = events.filter((e) => e.type === 'tool_call' && e.data.tool === 'lookup');
  expect(lookups.map((e) => e.parentSpanId).sort()).toEqual([delegates[0]!.spanId, delegates[1]!.spanId].sort());
  expect(events.some((e) => e.type === 'error' && e.data.kind === 'delegate_failed' && String(e.data.message).startsWith('Writer failed'))).toBe(true);

  const tool = (fake.requests[before + 1]!.body as ChatBody).messages.find((m) => m.role === 'tool')!;
  expect(tool.tool_call_id).toBe('call_f');
  expect(JSON.parse(tool.content)).toEqual([
    { target: 'Researcher', status: 'completed', result: 'Found facts about museums' },
    { target: 'Researcher', status: 'completed', result: 'Found facts about food' },
    { target: 'Writer', status: 'failed', error: expect.stringContaining('needs user input') },
  ]);
});
