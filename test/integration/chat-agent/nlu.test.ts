// NLU through the real API and Temporal: a supervisor with an NLU section classifies the message
// with its model (a fake that speaks the OpenAI wire protocol, then the offline local model), and
// its HANDOFF and COMPLETE rules on intent.category take effect in the same turn. An agent
// without NLU makes no classification call.
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';

jest.setTimeout(60_000);

type Trace = { type: string; data: Record<string, unknown> };
type ChatBody = { messages: { role: string; content: string }[]; tools?: unknown[] };

let stack: TestStack;
let t: SeededTenant;
let offline: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let api: ReturnType<typeof client>;

const billing = `AGENT: Nlu_Billing
GOAL: "Help with bills."
FLOW:
  hello:
    REASONING: false
    RESPOND: "Billing here."
`;

const hub = `SUPERVISOR: Nlu_Hub
GOAL: "Route customers."
NLU:
  intents:
    - NAME: billing
      PATTERNS: ["invoice"]
      EXAMPLES: ["I was charged twice", "Where is my bill?"]
      ENTITIES: [amount]
    - NAME: goodbye
      PATTERNS: ["bye"]
      EXAMPLES: ["That's all, thanks"]
  entities:
    - NAME: amount
      TYPE: number
HANDOFF:
  - TO: Nlu_Billing
    WHEN: intent.category == "billing"
COMPLETE:
  - WHEN: intent.category == "goodbye"
    RESPOND: "Goodbye ({{intent.confidence}})."
`;

const plain = `AGENT: Plain_Chat
GOAL: "Chat."
COMPLETE:
  - WHEN: intent.category == "goodbye"
    RESPOND: "Goodbye."
`;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-nlu' });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] } });
  [t, offline] = await Promise.all([seedTenant(stack.ctx), seedTenant(stack.ctx)]);
  api = client(stack.baseUrl);
  for (const owner of [t, offline]) {
    await publishAgent(api, owner, 'Nlu_Billing', billing);
    await publishAgent(api, owner, 'Nlu_Hub', hub);
    await publishAgent(api, owner, 'Plain_Chat', plain);
  }
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-nlu');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
});

const chat = (owner: SeededTenant, agentId: string, message: string, sessionId?: string) =>
  api.post('/api/v1/chat/agent', { key: owner.adminKey, json: { projectId: owner.projectId, agentId, message, ...(sessionId ? { sessionId } : {}) } });

it('classifies the message with the model and hands off on intent.category in the same turn', async () => {
  const before = fake.requests.length;
  fake.script([{ text: '{"intent": "billing", "confidence": 0.93, "entities": {"amount": 120}}', usage: { inputTokens: 210, outputTokens: 14 } }]);
  const message = 'They took 120 twice from my card';
  const res = await chat(t, 'Nlu_Hub', message);
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Billing here.');

  // One request reached the model: the classification (intents with their examples, no tools).
  expect(fake.requests.length - before).toBe(1);
  const body = fake.requests[before]!.body as ChatBody;
  expect(body.tools ?? []).toEqual([]);
  expect(body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('ABL-NLU-CLASSIFICATION/1') });
  expect(body.messages[0]!.content).toContain('"examples":["I was charged twice","Where is my bill?"]');
  expect(body.messages.at(-1)).toEqual(expect.objectContaining({ role: 'user', content: message }));

  const events: Trace[] = res.body.traceEvents;
  const calls = events.filter((e) => e.type === 'llm_call');
  expect(calls.map((e) => [e.data.agent, e.data.purpose, e.data.provider])).toEqual([['Nlu_Hub', 'classification', 'openai']]);
  expect(calls[0]!.data.usage).toEqual({ inputTokens: 210, outputTokens: 14 });
  expect(events.find((e) => e.type === 'decision' && e.data.decisionKind === 'intent')?.data).toMatchObject({ agent: 'Nlu_Hub', decision: 'billing', reasoning: 'model, confidence 0.93, entities amount' });
  expect(events.find((e) => e.type === 'handoff')?.data).toMatchObject({ fromAgent: 'Nlu_Hub', toAgent: 'Nlu_Billing' });
});

it('with the offline local model (no API key): patterns and examples decide, COMPLETE ends on goodbye', async () => {
  const res = await chat(offline, 'Nlu_Hub', 'Where is my bill? I think I was charged twice');
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Billing here.');
  const calls = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'llm_call');
  expect(calls.map((e) => [e.data.purpose, e.data.provider])).toEqual([['classification', 'local']]);
  expect(calls[0]!.data.note).toContain('classified by the offline local model');

  const bye = await chat(offline, 'Nlu_Hub', 'ok bye');
  expect(bye.status).toBe(200);
  expect(bye.body.response).toBe('Goodbye (1).');
});

it('an agent without NLU makes no classification call', async () => {
  const before = fake.requests.length;
  fake.script([{ text: 'Hello there.' }]);
  const res = await chat(t, 'Plain_Chat', 'bye');
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Hello there.');
  expect(fake.requests.length - before).toBe(1);
  expect(JSON.stringify(fake.requests[before]!.body)).not.toContain('ABL-NLU-CLASSIFICATION');
  const calls = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'llm_call');
  expect(calls.map((e) => e.data.purpose)).toEqual(['reasoning']);
});
