// Errors outside a flow step through the real API and Temporal. An agent-level GATHER field: after
// `max_retries` answers that do not fill it, the agent's ON_ERROR validation_error handler responds
// and its THEN: COMPLETE ends the session; the session workflow records patch
// agent-error-transitions-v1 and replays. A reasoning agent whose model fails: ON_ERROR llm_error's
// THEN: COMPLETE ends it, and the failure counts once in errorCount.
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { billingAgent } from '../../fixtures/agents/gather-and-errors';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

const billing = billingAgent(
  'ON_ERROR:\n  validation_error:\n    RESPOND: "I could not read that invoice number; please contact billing by email."\n    THEN: COMPLETE\n',
);

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-errors' });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Billing', billing);
});
afterAll(async () => {
  await stack.close();
  await fake?.close();
});

let fake: Awaited<ReturnType<typeof startFakeOpenAI>> | undefined;

type Trace = { type: string; data: Record<string, unknown> };

const chat = (message: string, sessionId?: string) =>
  api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Billing', message, ...(sessionId ? { sessionId } : {}) } });

it('stops re-asking after max_retries and carries out ON_ERROR validation_error', async () => {
  const first = await chat('hello');
  expect(first.status).toBe(200);
  expect(first.body.response).toBe('Invoice number?');
  const sessionId = first.body.sessionId as string;

  for (const answer of ['12', '34']) {
    const res = await chat(answer, sessionId);
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('That is not an invoice number (INV-123456). Invoice number?');
  }
  const last = await chat('56', sessionId);
  expect(last.status).toBe(200);
  expect(last.body.response).toBe('I could not read that invoice number; please contact billing by email.');
  expect(last.body.action).toMatchObject({ type: 'complete' });
  expect(last.body.state).toMatchObject({ status: 'completed' });
  const events: Trace[] = last.body.traceEvents;
  expect(events).toContainEqual(expect.objectContaining({ type: 'error', data: expect.objectContaining({ kind: 'validation_error', message: 'No valid invoice_id after 2 retries' }) }));
  expect(events).toContainEqual(expect.objectContaining({ type: 'decision', data: expect.objectContaining({ decisionKind: 'on_error', decision: 'validation_error -> COMPLETE' }) }));

  // The ended session is shown as such, the validation error counted.
  const detail = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey });
  expect(detail.status).toBe(200);
  expect(detail.body.session).toMatchObject({ status: 'ended', endReason: 'completed', errorCount: 1 });

  // The patch is recorded where it changed the run, and the history replays with today's code.
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('agent-error-transitions-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

const helper = `AGENT: Helper
GOAL: "Help with anything."
ON_ERROR:
  llm_error:
    RESPOND: "Our assistant is unavailable; a colleague will write to you."
    THEN: COMPLETE
`;

it("carries out a reasoning agent's ON_ERROR llm_error THEN and counts the failure once", async () => {
  if (!fake) throw new Error('the fake provider did not start');
  const other = await seedTenant(stack.ctx);
  await publishAgent(api, other, 'Helper', helper);
  await useFakeOpenAI(api, other, fake.baseURL, 'sk-errors');
  fake.script([{ error: { status: 400, message: 'model rejected the request' } }]);

  const res = await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: other.projectId, agentId: 'Helper', message: 'hi' } });
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Our assistant is unavailable; a colleague will write to you.');
  expect(res.body.action).toMatchObject({ type: 'complete' });
  const errors = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'error');
  // The failed call's own event and the interpreter's llm_error restating it.
  expect(errors.map((e) => e.data.kind)).toContain('llm_error');
  expect(errors.length).toBe(2);
  const detail = await api.get(`/api/projects/${other.projectId}/sessions/${res.body.sessionId as string}`, { key: other.adminKey });
  expect(detail.body.session).toMatchObject({ status: 'ended', endReason: 'completed', errorCount: 1 });
});
