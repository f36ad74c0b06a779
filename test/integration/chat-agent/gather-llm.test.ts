// GATHER STRATEGY: llm through the real API and Temporal, against an OpenAI-compatible model (a
// fake that speaks the wire protocol): the flow step asks the model for its fields in one
// extraction call (strict JSON answer, no tools), validates the answer (the LLM-judged rule in a
// validation call) and goes on.
import { startFakeOpenAI } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';

jest.setTimeout(60_000);

type Trace = { type: string; data: Record<string, unknown> };
type ChatBody = { messages: { role: string; content: string }[]; tools?: unknown[] };

let stack: TestStack;
let t: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let anthropic: Awaited<ReturnType<typeof startFakeAnthropic>>;
let api: ReturnType<typeof client>;

const booker = `AGENT: Booker
GOAL: "Book a table."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - party: required
        type: number
        prompt: "How many people?"
        validate: max(10)
      - day: required
        type: date
        prompt: "Which day?"
      - guest: required
        prompt: "Your name?"
        retry_prompt: "Which name should the booking be under?"
        validate: looks like a person's name
    STRATEGY: llm
    THEN: done
  done:
    REASONING: false
    RESPOND: "Booked {{party}} for {{guest}} on {{day}}."
    THEN: COMPLETE
`;

beforeAll(async () => {
  [fake, anthropic] = await Promise.all([startFakeOpenAI({ apiKey: 'sk-gather' }), startFakeAnthropic({ apiKey: 'sk-ant-gather' })]);
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL, anthropic.baseURL] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Booker', booker);
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-gather');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
  await anthropic.close();
});

const chat = (message: string, sessionId?: string) =>
  api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Booker', message, ...(sessionId ? { sessionId } : {}) } });

it('extracts several fields from one message with one extraction call to the model', async () => {
  const before = fake.requests.length;
  fake.script([{ text: '{"party": "4", "day": "2025-03-14", "guest": "Ann Lee"}' }, { text: '{"valid": true, "reason": "a name"}' }]);
  const message = 'A table for four on the 14th of March 2025, under Ann Lee';
  const res = await chat(message);
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('Booked 4 for Ann Lee on 2025-03-14.');

  // Two requests reached the model: the extraction (schema, the user's text, no tools), then the
  // judging of guest's rule.
  expect(fake.requests.length - before).toBe(2);
  const body = fake.requests[before]!.body as ChatBody;
  expect(body.tools ?? []).toEqual([]);
  expect(body.messages[0]).toMatchObject({ role: 'system', content: expect.stringContaining('ABL-GATHER-EXTRACTION/1') });
  expect(body.messages[0]!.content).toContain('"party":{"type":"number"');
  expect(body.messages.at(-1)).toEqual(expect.objectContaining({ role: 'user', content: message }));

  const events: Trace[] = res.body.traceEvents;
  const calls = events.filter((e) => e.type === 'llm_call');
  expect(calls.map((e) => [e.data.agent, e.data.purpose, e.data.provider])).toEqual([['Booker', 'extraction', 'openai'], ['Booker', 'validation', 'openai']]);
  const judge = fake.requests[before + 1]!.body as ChatBody;
  expect(judge.messages[0]!.content).toContain("- looks like a person's name");
  expect(judge.messages.at(-1)).toEqual(expect.objectContaining({ role: 'user', content: 'Ann Lee' }));
  const changes = Object.fromEntries(events.filter((e) => e.type === 'state_change').map((e) => [e.data.variable, e.data.value]));
  // "4" from the model was coerced like a pattern value.
  expect(changes).toMatchObject({ party: 4, day: '2025-03-14', guest: 'Ann Lee' });
});

it('re-asks with the retry prompt when the model judges a value invalid', async () => {
  fake.script([{ text: '{"party": 2, "day": "2025-03-15", "guest": "the window seat"}' }, { text: '{"valid": false, "reason": "not a name"}' }]);
  const res = await chat('2 of us on 2025-03-15, the window seat');
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('Which name should the booking be under?');
  const events: Trace[] = res.body.traceEvents;
  expect(events.filter((e) => e.type === 'state_change').map((e) => e.data.variable)).toEqual(expect.not.arrayContaining(['guest']));
  expect(events.find((e) => e.type === 'decision' && e.data.decisionKind === 'validation')?.data).toMatchObject({ decision: 'guest: invalid', reasoning: 'not a name' });

  fake.script([{ text: '{"guest": "Bo Berg"}' }, { text: '{"valid": true, "reason": "a name"}' }]);
  const next = await chat('Bo Berg', res.body.sessionId);
  expect(next.status).toBe(200);
  expect(next.body.response).toContain('Booked 2 for Bo Berg on 2025-03-15.');
});

it('extracts and judges through the Anthropic adapter too (system text, strict JSON answer)', async () => {
  const other = await seedTenant(stack.ctx);
  await publishAgent(api, other, 'Booker', booker);
  const cred = await api.put(`/api/projects/${other.projectId}/llm-credentials/anthropic`, { key: other.adminKey, json: { apiKey: 'sk-ant-gather', baseURL: anthropic.baseURL } });
  expect(cred.status).toBe(201);
  const settings = await api.put(`/api/projects/${other.projectId}/llm-settings`, { key: other.adminKey, json: { defaultModel: 'anthropic:claude-test-1' } });
  expect(settings.status).toBe(200);
  // Anthropic's answers may wrap the object in prose or a code fence; both are read.
  anthropic.script([{ text: 'Here you go:\n```json\n{"party": 3, "day": "2025-04-01", "guest": "Cy Ho"}\n```' }, { text: '{"valid": true, "reason": "a name"}' }]);
  const res = await api.post('/api/v1/chat/agent', {
    key: other.adminKey,
    json: { projectId: other.projectId, agentId: 'Booker', message: 'Three of us on 1 April 2025, under Cy Ho' },
  });
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('Booked 3 for Cy Ho on 2025-04-01.');
  expect(anthropic.requests).toHaveLength(2);
  const [extraction, judging] = anthropic.requests.map((r) => r.body as { system?: unknown; messages: { role: string; content: unknown }[]; tools?: unknown[] });
  expect(JSON.stringify(extraction!.system)).toContain('ABL-GATHER-EXTRACTION/1');
  expect(extraction!.tools ?? []).toEqual([]);
  expect(extraction!.messages).toEqual([expect.objectContaining({ role: 'user' })]);
  expect(JSON.stringify(extraction!.messages[0]!.content)).toContain('Three of us on 1 April 2025, under Cy Ho');
  expect(JSON.stringify(judging!.system)).toContain('ABL-GATHER-VALIDATION/1');
  const calls = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'llm_call');
  expect(calls.map((e) => [e.data.purpose, e.data.provider])).toEqual([['extraction', 'anthropic'], ['validation', 'anthropic']]);
});
