// GATHER `infer` through the real API and Temporal, against an OpenAI-compatible model (a fake
// that speaks the wire protocol): a field nobody stated is inferred by the model from the
// conversation, the user is asked to confirm it, and "yes" stores it. The session records patch
// gather-infer-v1 and its history replays with today's code.
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { flightsAgent } from '../../fixtures/agents/gather-and-errors';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let api: ReturnType<typeof client>;

const flights = flightsAgent('        infer_confidence: 0.7\n');

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-infer' });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Flights', flights);
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-infer');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
});

type Trace = { type: string; data: Record<string, unknown> };
type ChatBody = { messages: { role: string; content: string }[]; tools?: unknown[] };

const chat = (message: string, sessionId?: string) =>
  api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Flights', message, ...(sessionId ? { sessionId } : {}) } });

it('infers a field from the conversation, confirms it with the user and stores it', async () => {
  // "hi" already goes to the model (the field is open and may be inferred): it infers nothing.
  const start = fake.requests.length;
  fake.script([{ text: '{}' }]);
  const first = await chat('hi');
  expect(first.status).toBe(200);
  const sessionId = first.body.sessionId as string;
  expect(first.body.response).toContain('Which airport (three letters)?');
  expect(fake.requests.length - start).toBe(1);

  const before = fake.requests.length;
  fake.script([{ text: '{"airport": {"value": "CDG", "inferred": true, "confidence": 0.9}}' }]);
  const second = await chat('I want to see the Eiffel Tower on Friday', sessionId);
  expect(second.status).toBe(200);
  expect(second.body.response).toBe('Just to confirm: your airport is CDG. Is that right?');
  expect(fake.requests.length - before).toBe(1);
  const body = fake.requests[before]!.body as ChatBody;
  expect(body.messages[0]!.content).toContain('"x-infer":true');
  expect(body.messages[0]!.content).toContain('user: I want to see the Eiffel Tower on Friday');
  expect(body.messages.at(-1)).toEqual(expect.objectContaining({ role: 'user', content: 'I want to see the Eiffel Tower on Friday' }));
  expect((second.body.traceEvents as Trace[])).toContainEqual(
    expect.objectContaining({ type: 'decision', data: expect.objectContaining({ decisionKind: 'inference', decision: 'airport: to confirm' }) }),
  );

  const third = await chat('yes', sessionId);
  expect(third.status).toBe(200);
  expect(third.body.response).toBe('Flying to CDG.');
  expect(fake.requests.length - before).toBe(1);
  expect(third.body.state.variables).toMatchObject({ airport: 'CDG' });

  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('gather-infer-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});
