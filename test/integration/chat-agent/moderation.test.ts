// Provider guardrails through real turns (API, Temporal, the worker's `moderate` activity): the
// project's OpenAI credential sends each guarded text to a fake of OpenAI's moderation endpoint
// (the real SDK runs); an input guardrail blocks a violent message and passes a clean one, an
// output guardrail replaces a flagged reply, a failed call fails closed (or open with
// on_error: allow), a project without a key gets the offline rules (MODERATION_PROVIDER=auto),
// and the session records moderation-guardrails-v1 and replays with today's code. A guardrail with
// action: escalate holds a message as a human task, and resolving it approved lets it through.
import { startFakeModeration, type FakeModerationServer } from '../../support/fake-openai-moderation';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';

jest.setTimeout(90_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let fake: FakeModerationServer;

const desk = (name: string, onError = '') => `AGENT: ${name}
GOAL: "Answer questions safely."
GUARDRAILS:
  no_violence:
    kind: input
    provider: openai
    category: violence
    threshold: 0.5
    action: block
    message: "Let's keep this conversation safe."
${onError}  safe_replies:
    kind: output
    provider: openai_moderation
    category: violence
    threshold: 0.5
    action: block
    message: "I can't repeat that."
`;

type Trace = { type: string; data: Record<string, unknown> };
const evals = (body: { traceEvents: Trace[] }) => body.traceEvents.filter((e) => e.type === 'guardrail_eval').map((e) => e.data);

beforeAll(async () => {
  fake = await startFakeModeration({ apiKey: 'sk-project-mod' });
  // Violent user text scores high; so does the offline model's reply when it repeats "storm".
  fake.scores = (text) => ({ violence: text.includes('hurt') || (text.startsWith('[local model]') && text.includes('storm')) ? 0.93 : 0.02 });
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [fake.baseURL] }, env: { MODERATION_PROVIDER: 'auto' } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  const cred = await api.put(`/api/projects/${t.projectId}/llm-credentials/openai`, { key: t.adminKey, json: { apiKey: 'sk-project-mod', baseURL: fake.baseURL } });
  expect([200, 201]).toContain(cred.status);
  await publishAgent(api, t, 'Safe_Desk', desk('Safe_Desk'));
  await publishAgent(api, t, 'Open_Desk', desk('Open_Desk', '    on_error: allow\n'));
  await publishAgent(api, { adminKey: t.adminKey, projectId: t.otherProjectId }, 'Safe_Desk', desk('Safe_Desk'));
});
afterAll(async () => {
  await stack.close();
  await fake?.close();
});

const chat = (agentId: string, message: string, sessionId?: string, projectId = t.projectId) =>
  api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId, agentId, message, ...(sessionId ? { sessionId } : {}) } });

it('blocks a violent message, passes a clean one, and replaces a flagged reply', async () => {
  const blocked = await chat('Safe_Desk', 'I am going to hurt my neighbour');
  expect(blocked.status).toBe(200);
  expect(blocked.body.response).toBe("Let's keep this conversation safe.");
  expect(evals(blocked.body)).toEqual([
    { guardrail: 'no_violence', kind: 'input', passed: false, action: 'block', agent: 'Safe_Desk', threshold: 0.5, provider: 'openai', model: 'omni-moderation-latest', category: 'violence', score: 0.93 },
  ]);
  expect(blocked.body.traceEvents.some((e: Trace) => e.type === 'llm_call')).toBe(false);
  const request = fake.requests.at(-1)!;
  expect(request.headers.authorization).toBe('Bearer sk-project-mod');
  expect(request.body).toEqual({ model: 'omni-moderation-latest', input: ['I am going to hurt my neighbour'] });
  const sessionId = blocked.body.sessionId as string;

  const clean = await chat('Safe_Desk', 'What are your opening hours?', sessionId);
  expect(clean.status).toBe(200);
  expect(clean.body.response).toContain('[local model]');
  expect(evals(clean.body).map((e) => [e.guardrail, e.passed, e.score])).toEqual([['no_violence', true, 0.02], ['safe_replies', true, 0.02]]);

  const reply = await chat('Safe_Desk', 'Tell me about the storm', sessionId);
  expect(reply.status).toBe(200);
  expect(reply.body.response).toBe("I can't repeat that.");
  expect(evals(reply.body).map((e) => [e.guardrail, e.kind, e.passed])).toEqual([['no_violence', 'input', true], ['safe_replies', 'output', false]]);

  // The marker is recorded where the guardrails ran, and the history replays with today's code.
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('moderation-guardrails-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

it('fails closed when the moderation call fails, unless the guardrail says on_error: allow', async () => {
  fake.failNext(500, 3);
  const closed = await chat('Safe_Desk', 'What are your opening hours?');
  expect(closed.status).toBe(200);
  expect(closed.body.response).toBe("Let's keep this conversation safe.");
  expect(evals(closed.body)[0]).toMatchObject({ guardrail: 'no_violence', passed: false, provider: 'openai', error: 'The moderation provider openai failed (HTTP 500)' });
  expect(closed.body.traceEvents).toContainEqual(expect.objectContaining({ type: 'error', data: expect.objectContaining({ kind: 'moderation_error' }) }));

  fake.failNext(500, 3);
  const open = await chat('Open_Desk', 'What are your opening hours?');
  expect(open.status).toBe(200);
  expect(open.body.response).toContain('[local model]');
  expect(evals(open.body)[0]).toMatchObject({ guardrail: 'no_violence', passed: true, error: expect.any(String) });
});

it('uses the offline rules for a project without an OpenAI key (MODERATION_PROVIDER=auto)', async () => {
  const before = fake.requests.length;
  const blocked = await chat('Safe_Desk', 'I will kill him', undefined, t.otherProjectId);
  expect(blocked.status).toBe(200);
  expect(blocked.body.response).toBe("Let's keep this conversation safe.");
  expect(evals(blocked.body)[0]).toMatchObject({ provider: 'local', model: 'local-rules', category: 'violence', score: 0.9, passed: false });
  const clean = await chat('Safe_Desk', 'Where is my parcel?', blocked.body.sessionId as string, t.otherProjectId);
  expect(clean.body.response).toContain('[local model]');
  expect(fake.requests.length).toBe(before);
});

it('runs agents without provider guardrails with no moderation call and no marker', async () => {
  await publishAgent(api, t, 'Plain_Desk', 'AGENT: Plain_Desk\nGOAL: "Answer questions."\n');
  const before = fake.requests.length;
  const res = await chat('Plain_Desk', 'I am going to hurt my neighbour');
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('[local model]');
  expect(fake.requests.length).toBe(before);
  expect(patchIdsIn(await sessionHistory(stack, res.body.sessionId as string))).not.toContain('moderation-guardrails-v1');
});

it('holds a message an escalate guardrail fires on as a human task; approved, the agent answers it', async () => {
  await publishAgent(api, t, 'Held_Desk', `AGENT: Held_Desk
GOAL: "Answer questions."
GUARDRAILS:
  threats:
    kind: input
    check: not_matches_pattern(input, "lawyer")
    action: escalate
    message: "Message held for review"
`);
  const held = await chat('Held_Desk', 'My lawyer asks about the refund');
  expect(held.status).toBe(200);
  expect(held.body.response).toContain('passed this to a member of our team');
  expect(held.body.action.type).toBe('escalate');
  const taskId = held.body.action.humanTask.id as string;
  const sessionId = held.body.sessionId as string;
  const detail = await api.get(`/api/projects/${t.projectId}/human-tasks/${taskId}`, { key: t.adminKey });
  expect(detail.body.task).toMatchObject({ title: 'Message held for review', context: { held_content: 'My lawyer asks about the refund', guardrail: 'threats' } });

  const resolved = await api.post(`/api/projects/${t.projectId}/human-tasks/${taskId}/resolve`, { key: t.adminKey, json: { respondedBy: 'ada', decision: 'approved' } });
  expect(resolved.status).toBe(200);
  const assistant = async () => {
    await flushProjection(stack.ctx, sessionId);
    const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=50`, { key: t.adminKey });
    return (res.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
  };
  const lines = await eventually(assistant, (l) => l.some((x) => x.includes('[local model]')), 20_000, 100);
  expect(lines.at(-1)).toContain('[local model]');

  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('guardrail-actions-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});
