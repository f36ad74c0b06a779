// The open human tasks of a project are bounded (HUMAN_TASK_MAX_OPEN_PER_PROJECT): beyond it a
// create is 429 QUEUE_FULL and nothing is stored, and a session's escalation resumes at once as an
// expired one instead of adding a task; finishing a task makes room again. Another project's
// tasks do not count.
import { client } from '../support/http';
import { escalationAgent, publishAgent } from '../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../support/workflow-history';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

// An expired escalation continues too, saying so.
const ESCALATES = escalationAgent({
  name: 'Escalates',
  goal: 'Hand large amounts to a person.',
  over: 5,
  reason: 'Amount {{amount}} needs a person',
  continueIf: 'human.expired == true',
  respond: '{{#if human.expired}}Nobody can take it now.{{/if}}',
});

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: { HUMAN_TASK_MAX_OPEN_PER_PROJECT: '3' } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Escalates', ESCALATES);
});
afterAll(async () => {
  await stack.close();
});

const tasksUrl = (projectId = t.projectId) => `/api/projects/${projectId}/human-tasks`;
const create = (projectId = t.projectId) => api.post(tasksUrl(projectId), { key: t.adminKey, json: { type: 'review', title: 'Look at this' } });

it('answers 429 QUEUE_FULL beyond the bound, stores nothing, and makes room when a task finishes', async () => {
  const made: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await create();
    expect(res.status).toBe(201);
    made.push(res.body.task.id as string);
  }
  const full = await create();
  expect(full.status).toBe(429);
  expect(full.body).toMatchObject({ success: false, error: { code: 'QUEUE_FULL' } });
  expect(await stack.ctx.models.HumanTask.countDocuments({ tenantId: t.tenantId, projectId: t.projectId })).toBe(3);

  // Another project of the tenant has its own bound.
  expect((await create(t.otherProjectId)).status).toBe(201);

  // A session's escalation does not add a task either: it resumes as expired.
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Escalates', message: 'hello' } });
  const sessionId = first.body.sessionId as string;
  const esc = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: '50' } });
  expect(esc.status).toBe(200);
  expect(esc.body.response).toContain('Nobody can take it now.');
  expect(await stack.ctx.models.HumanTask.countDocuments({ tenantId: t.tenantId, projectId: t.projectId })).toBe(3);
  // The check is behind its marker, and the session's history replays with today's code.
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('human-task-room-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);

  const cancelled = await api.post(`${tasksUrl()}/${made[0]}/cancel`, { key: t.adminKey, json: {} });
  expect(cancelled.status).toBe(200);
  expect((await create()).status).toBe(201);
});
