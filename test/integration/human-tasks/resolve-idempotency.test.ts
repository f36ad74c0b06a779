// A resolve sent with an Idempotency-Key counts once however often it is resent: the same key and
// body answer 200 with the task as that request resolved it (while the first is still in flight,
// and after the task's workflow has closed), the same key with another body is 409
// IDEMPOTENCY_CONFLICT, and anyone else's resolve is the usual 409 with the winning resolution.
// The key's hashes never show in an answer.
import { createApiKey } from '../../../core/tenancy/accounts';
import { createTask } from '../../../core/human-tasks/tasks';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let ada: { key: string; id: string };
let bob: { key: string; id: string };

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  const reviewer = async (name: string) => {
    const made = await createApiKey(stack.ctx.models, t.tenantId, { name, permissions: ['human_task:read', 'human_task:write'] });
    return { key: made.key, id: made.apiKey._id };
  };
  ada = await reviewer('ada');
  bob = await reviewer('bob');
});
afterAll(async () => {
  await stack.close();
});

const taskUrl = (taskId: string) => `/api/projects/${t.projectId}/human-tasks/${taskId}`;
const url = (taskId: string) => `${taskUrl(taskId)}/resolve`;

async function newTask(): Promise<string> {
  const scope = { tenantId: t.tenantId, projectId: t.projectId };
  const task = await createTask(stack.ctx, scope, { type: 'review', title: 'Check the reply', priority: 'medium', tags: [], context: {}, fields: [] }, 'user:u1', 'dev');
  return task._id;
}

const resolve = (taskId: string, key: string, idempotencyKey: string | null, notes: string) =>
  api.post(url(taskId), { key, json: { respondedBy: 'Ada', notes, fields: {} }, ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}) });

it('answers a resent resolve with the original task, a reused key with another body 409 IDEMPOTENCY_CONFLICT, and resolves once', async () => {
  const taskId = await newTask();
  const first = await resolve(taskId, ada.key, 'resolve-1', 'looks fine');
  expect(first.status).toBe(200);
  expect(first.body.task).toMatchObject({ status: 'completed', resolution: { respondedBy: ada.id, displayName: 'Ada', notes: 'looks fine' } });
  expect(first.body.task.resolution).not.toHaveProperty('idempotency');

  // Resent after the task's workflow has closed (the answer then comes from the task itself).
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`human-task/${taskId}`);
  await eventually(() => handle.describe(), (d) => d.status.name !== 'RUNNING', 20_000, 100);
  const resent = await resolve(taskId, ada.key, 'resolve-1', 'looks fine');
  expect(resent.status).toBe(200);
  expect(resent.body.task).toEqual(first.body.task);

  // The same key with another body.
  const changed = await resolve(taskId, ada.key, 'resolve-1', 'looks wrong');
  expect(changed.status).toBe(409);
  expect(changed.body.error.code).toBe('IDEMPOTENCY_CONFLICT');

  // Another key, no key, or the same key from another credential: the task was resolved by someone else.
  for (const [key, idem] of [
    [ada.key, 'resolve-2'],
    [ada.key, null],
    [bob.key, 'resolve-1'],
  ] as const) {
    const other = await resolve(taskId, key, idem, 'looks fine');
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');
    expect(other.body.error.details).toMatchObject({ status: 'completed', resolution: { respondedBy: ada.id, notes: 'looks fine' } });
    expect(other.body.error.details.resolution).not.toHaveProperty('idempotency');
  }
  const read = await api.get(taskUrl(taskId), { key: ada.key });
  expect(read.body.task.resolution).toEqual(first.body.task.resolution);

  // A malformed key is refused before anything happens.
  const bad = await resolve(await newTask(), ada.key, 'not a key!', 'x');
  expect(bad.status).toBe(400);

  const history = await handle.fetchHistory();
  expect((history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(1);
});

it('answers resends racing the first one with the same resolution, made once', async () => {
  const taskId = await newTask();
  const answers = await Promise.all([1, 2, 3].map(() => resolve(taskId, ada.key, 'race-1', 'at once')));
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
  for (const a of answers) expect(a.body.task.resolution).toEqual(answers[0]!.body.task.resolution);
  const history = await (await stack.ctx.temporal.client()).workflow.getHandle(`human-task/${taskId}`).fetchHistory();
  expect((history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(1);
});
