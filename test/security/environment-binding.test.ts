// Environment binding reaches human tasks and the resume route: a key bound to `dev` does not see
// or act on a production session's task, nor resume a production session (404, as if it did not
// exist); a task created through the API takes the key's environment; a task recorded before tasks
// carried one is visible only to credentials bound to no environment.
import { createApiKey } from '../../core/tenancy/accounts';
import { client } from '../support/http';
import { escalationAgent, publishAgent } from '../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let devKey: string;
let prodKey: string;

const ESCALATES = escalationAgent({ name: 'Escalates', goal: 'Hand large amounts to a person.', over: 5, reason: 'Amount {{amount}} needs a person', respond: 'Done.' });

const tasksUrl = () => `/api/projects/${t.projectId}/human-tasks`;
const reviewer = ['human_task:read', 'human_task:write', 'session:execute', 'session:read'] as const;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Escalates', ESCALATES);
  const deployed = await api.post(`/api/projects/${t.projectId}/deployments`, {
    key: t.adminKey,
    json: { environment: 'production', agentVersionManifest: { Escalates: 'auto' }, entryAgentName: 'Escalates' },
  });
  expect(deployed.status).toBe(201);
  devKey = (await createApiKey(stack.ctx.models, t.tenantId, { name: 'dev', permissions: [...reviewer], environments: ['dev'] })).key;
  prodKey = (await createApiKey(stack.ctx.models, t.tenantId, { name: 'prod', permissions: [...reviewer], environments: ['production'] })).key;
});
afterAll(async () => {
  await stack.close();
});

/** A production session that escalated: its id and its task's id. */
async function productionEscalation(): Promise<{ sessionId: string; taskId: string }> {
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Escalates', environment: 'production', message: 'hello' } });
  expect(first.status).toBe(200);
  const sessionId = first.body.sessionId as string;
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: '50' } });
  expect(res.body.action?.type).toBe('escalate');
  return { sessionId, taskId: res.body.action.humanTask.id as string };
}

it('hides a production session’s task from a dev key, for reads, lists and every transition', async () => {
  const { sessionId, taskId } = await productionEscalation();

  for (const [path, json] of [
    ['claim', {}],
    ['assign', { assignedTo: 'someone' }],
    ['resolve', {}],
    ['cancel', {}],
  ] as const) {
    const refused = await api.post(`${tasksUrl()}/${taskId}/${path}`, { key: devKey, json });
    expect({ path, status: refused.status, code: refused.body?.error?.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' });
  }
  expect((await api.get(`${tasksUrl()}/${taskId}`, { key: devKey })).status).toBe(404);
  const listed = await api.get(`${tasksUrl()}?sessionId=${sessionId}`, { key: devKey });
  expect(listed.status).toBe(200);
  expect(listed.body.total).toBe(0);
  expect(listed.body.tasks).toEqual([]);

  // Nothing changed, and a production key sees and acts on it.
  const seen = await api.get(`${tasksUrl()}/${taskId}`, { key: prodKey });
  expect(seen.status).toBe(200);
  expect(seen.body.task).toMatchObject({ status: 'pending', environment: 'production', history: [expect.objectContaining({ action: 'created' })] });
  expect((await api.get(`${tasksUrl()}?sessionId=${sessionId}`, { key: prodKey })).body.tasks).toEqual([expect.objectContaining({ id: taskId, environment: 'production' })]);
  const claimed = await api.post(`${tasksUrl()}/${taskId}/claim`, { key: prodKey, json: {} });
  expect(claimed.status).toBe(200);
});

it('answers 404 to a dev key resuming a production session', async () => {
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Escalates', environment: 'production', message: 'hello' } });
  expect(first.status).toBe(200);
  const sessionId = first.body.sessionId as string;
  const refused = await api.post(`/api/v1/sessions/${sessionId}/resume`, { key: devKey, json: { toolResult: { ok: true } } });
  expect(refused.status).toBe(404);
  expect(refused.body.error.code).toBe('NOT_FOUND');
  // The production key reaches it (it waits on no async call: 409).
  const allowed = await api.post(`/api/v1/sessions/${sessionId}/resume`, { key: prodKey, json: { toolResult: { ok: true } } });
  expect(allowed.status).toBe(409);
});

it('gives a task created through the API the key’s environment', async () => {
  const made = await api.post(tasksUrl(), { key: prodKey, json: { type: 'review', title: 'Check the production reply' } });
  expect(made.status).toBe(201);
  expect(made.body.task.environment).toBe('production');
  expect((await api.get(`${tasksUrl()}/${made.body.task.id}`, { key: devKey })).status).toBe(404);
  expect((await api.get(`${tasksUrl()}/${made.body.task.id}`, { key: t.adminKey })).status).toBe(200);
  // A key may not create a task in an environment it is not bound to.
  const elsewhere = await api.post(tasksUrl(), { key: devKey, json: { type: 'review', title: 'Sneak into production', environment: 'production' } });
  expect(elsewhere.status).toBe(403);
});

it('shows a task recorded without an environment only to credentials bound to none', async () => {
  const made = await api.post(tasksUrl(), { key: t.adminKey, json: { type: 'review', title: 'An older task' } });
  expect(made.status).toBe(201);
  await stack.ctx.models.HumanTask.updateOne({ _id: made.body.task.id }, { $unset: { environment: 1 } });
  expect((await api.get(`${tasksUrl()}/${made.body.task.id}`, { key: devKey })).status).toBe(404);
  expect((await api.get(`${tasksUrl()}/${made.body.task.id}`, { key: prodKey })).status).toBe(404);
  const listed = await api.get(`${tasksUrl()}?limit=200`, { key: devKey });
  expect(listed.body.tasks.map((x: { id: string }) => x.id)).not.toContain(made.body.task.id);
  const unbound = await api.get(`${tasksUrl()}/${made.body.task.id}`, { key: t.adminKey });
  expect(unbound.status).toBe(200);
  expect(unbound.body.task.environment).toBeNull();
});
