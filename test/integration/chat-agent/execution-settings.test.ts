// EXECUTION settings through real turns (the real API, Temporal and the official OpenAI SDK against a
// fake that speaks its wire protocol): `fallback_model` answers once when the model is overloaded,
// unavailable or too slow, and not when the request itself is refused; `llm_timeout` bounds a
// model call (the slow request is aborted and the call retried); `session_idle_timeout` ends an
// agent's sessions after its own idle time instead of the platform's (patch agent-idle-timeout-v1).
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

jest.setTimeout(60_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;

type Trace = { type: string; data: Record<string, unknown> };

const agent = (name: string, execution: string) => `AGENT: ${name}
GOAL: "Answer questions."
EXECUTION:
${execution}
`;

beforeAll(async () => {
  fake = await startFakeOpenAI({ apiKey: 'sk-exec' });
  // The platform keeps idle sessions for ten minutes; only Quick_Agent says otherwise.
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] }, env: { SESSION_IDLE_TIMEOUT_MS: '600000' } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-exec');
  await publishAgent(api, t, 'Fallback_Agent', agent('Fallback_Agent', '  model: openai:gpt-primary\n  fallback_model: openai:gpt-backup\n  llm_timeout: 2s'));
  // The project has no Anthropic credential: the model cannot be reached at all.
  await publishAgent(api, t, 'Unconfigured_Agent', agent('Unconfigured_Agent', '  model: anthropic:claude-3-5-haiku\n  fallback_model: openai:gpt-backup'));
  await publishAgent(api, t, 'Timeout_Agent', agent('Timeout_Agent', '  model: openai:gpt-primary\n  llm_timeout: 2s'));
  await publishAgent(api, t, 'Quick_Agent', agent('Quick_Agent', '  session_idle_timeout: 2s'));
  await publishAgent(api, t, 'Plain_Agent', agent('Plain_Agent', '  temperature: 0'));
});
afterAll(async () => {
  await stack?.close();
  await fake?.close();
});
beforeEach(() => fake.reset());

const chat = (agentId: string, message: string, sessionId?: string) =>
  api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message, ...(sessionId ? { sessionId } : {}) } });
const modelsAsked = () => fake.requests.map((r) => (r.body as { model: string }).model);

describe('fallback_model', () => {
  it('answers with the fallback model when the model is overloaded', async () => {
    fake.script([{ error: { status: 503, message: 'overloaded' } }, { text: 'The backup answers.' }]);
    const res = await chat('Fallback_Agent', 'What are your opening hours?');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('The backup answers.');
    expect(modelsAsked()).toEqual(['gpt-primary', 'gpt-backup']);
    const events: Trace[] = res.body.traceEvents;
    const llm = events.filter((e) => e.type === 'llm_call');
    expect(llm).toHaveLength(1);
    expect(llm[0]!.data).toMatchObject({ model: 'gpt-backup', provider: 'openai', fallbackFrom: { model: 'openai:gpt-primary', reason: 'LLM_OVERLOADED' } });
    expect(events.filter((e) => e.type === 'error')).toEqual([]);
  });

  it('answers with the fallback model when the model does not answer within llm_timeout', async () => {
    fake.script([{ delayMs: 15_000, text: 'Too late.' }, { text: 'The backup was quick.' }]);
    const res = await chat('Fallback_Agent', 'Are you there?');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('The backup was quick.');
    expect(modelsAsked()).toEqual(['gpt-primary', 'gpt-backup']);
    await fake.requests[0]!.settled;
    expect(fake.requests[0]!.aborted).toBe(true);
    const llm = (res.body.traceEvents as Trace[]).find((e) => e.type === 'llm_call')!;
    expect(llm.data).toMatchObject({ model: 'gpt-backup', fallbackFrom: { model: 'openai:gpt-primary', reason: 'LLM_TIMEOUT' } });
  });

  it('answers with the fallback model when the model is not configured for the project', async () => {
    fake.script([{ text: 'Configured backup.' }]);
    const res = await chat('Unconfigured_Agent', 'Hello?');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('Configured backup.');
    expect(modelsAsked()).toEqual(['gpt-backup']);
    const llm = (res.body.traceEvents as Trace[]).find((e) => e.type === 'llm_call')!;
    expect(llm.data).toMatchObject({ model: 'gpt-backup', fallbackFrom: { model: 'anthropic:claude-3-5-haiku', reason: 'SERVICE_UNAVAILABLE' } });
  });

  it('does not use the fallback when the request itself is refused', async () => {
    fake.script([{ error: { status: 400, message: 'bad request' } }]);
    const res = await chat('Fallback_Agent', 'Hello?');
    expect(res.status).toBe(200);
    expect(modelsAsked()).toEqual(['gpt-primary']);
    const events: Trace[] = res.body.traceEvents;
    expect(events).toContainEqual(expect.objectContaining({ type: 'error', data: expect.objectContaining({ kind: 'LLM_BAD_REQUEST' }) }));
    expect(events.filter((e) => e.type === 'llm_call')).toEqual([]);
  });
});

describe('llm_timeout', () => {
  it('gives up on a model call that takes longer and tries it again', async () => {
    fake.script([{ delayMs: 15_000, text: 'Too late.' }, { text: 'Second try.' }]);
    const res = await chat('Timeout_Agent', 'Hello?');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('Second try.');
    expect(modelsAsked()).toEqual(['gpt-primary', 'gpt-primary']);
    await fake.requests[0]!.settled;
    expect(fake.requests[0]!.aborted).toBe(true);
    const llm = (res.body.traceEvents as Trace[]).find((e) => e.type === 'llm_call')!;
    expect(llm.data).toMatchObject({ model: 'gpt-primary' });
    expect(llm.data.fallbackFrom).toBeUndefined();
  });
});

describe('session_idle_timeout', () => {
  const detail = (id: string) => api.get(`/api/projects/${t.projectId}/sessions/${id}`, { key: t.adminKey });

  it("ends the agent's session after its own idle time, while the platform's still applies to others", async () => {
    const plain = await chat('Plain_Agent', 'Hello');
    expect(plain.status).toBe(200);
    const quick = await chat('Quick_Agent', 'Hello');
    expect(quick.status).toBe(200);
    const quickId: string = quick.body.sessionId;

    for (;;) {
      const res = await detail(quickId);
      expect(res.status).toBe(200);
      if (res.body.session.status === 'ended') {
        expect(res.body.session).toMatchObject({ endReason: 'idle_timeout' });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // Plain_Agent's session began first and falls under the platform's ten minutes.
    expect((await detail(plain.body.sessionId)).body.session).toMatchObject({ status: 'active' });
    const late = await chat('Quick_Agent', 'Still there?', quickId);
    expect(late.status).toBe(409);

    const history = await sessionHistory(stack, quickId);
    expect(patchIdsIn(history)).toContain('agent-idle-timeout-v1');
    await replayWithTodaysCode(history, `session/${quickId}`);
  });
});
