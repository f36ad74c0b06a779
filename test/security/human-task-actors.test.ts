// Who claims and resolves a human task is the credential that calls, never a name in the body: the
// claim lock holds against another credential that sends the claimer's name; a resolution's
// `fields` are the form's only, so `approved` and its kin come from the decision alone.
import { createApiKey } from '../../core/tenancy/accounts';
import { client } from '../support/http';
import { escalationAgent, publishAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { flushProjection } from '../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let ada: { key: string; id: string };
let bob: { key: string; id: string };

const APPROVALS = escalationAgent({
  name: 'Approvals',
  goal: 'Ask a manager before large refunds.',
  over: 5,
  reason: 'Refund of {{amount}}',
  trigger: '      TYPE: approval\n      FIELDS:\n        - name: comment\n          type: text\n',
  respond: '{{#if human.approved}}Refund approved.{{/if}}{{#if human.rejected}}Refund declined.{{/if}}',
});

const tasksUrl = () => `/api/projects/${t.projectId}/human-tasks`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Approvals', APPROVALS);
  const mint = async (name: string) => {
    const made = await createApiKey(stack.ctx.models, t.tenantId, { name, permissions: ['human_task:read', 'human_task:write'] });
    return { key: made.key, id: made.apiKey._id };
  };
  ada = await mint('ada');
  bob = await mint('bob');
});
afterAll(async () => {
  await stack.close();
});

async function newTask(fields: unknown[] = []): Promise<string> {
  const made = await api.post(tasksUrl(), { key: t.adminKey, json: { type: 'approval', title: 'Refund 600', fields } });
  expect(made.status).toBe(201);
  return made.body.task.id as string;
}

it('claims as the calling credential; a name in the body is only a display name', async () => {
  const taskId = await newTask();
  const claimed = await api.post(`${tasksUrl()}/${taskId}/claim`, { key: ada.key, json: { userId: bob.id } });
  expect(claimed.status).toBe(200);
  expect(claimed.body.task.assignedTo).toBe(ada.id);
  // Bob, naming Ada's key or sending Ada's name, is not the claimer.
  for (const body of [{ userId: ada.id }, {}]) {
    const taken = await api.post(`${tasksUrl()}/${taskId}/claim`, { key: bob.key, json: body });
    expect(taken.status).toBe(409);
  }
  for (const respondedBy of [ada.id, bob.id]) {
    const stolen = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: bob.key, json: { respondedBy, decision: 'approved' } });
    expect(stolen.status).toBe(409);
    expect(stolen.body.error.code).toBe('CONFLICT');
  }
  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { respondedBy: 'Ada Lovelace', decision: 'approved' } });
  expect(resolved.status).toBe(200);
  expect(resolved.body.task.resolution).toMatchObject({ respondedBy: ada.id, displayName: 'Ada Lovelace', decision: 'approved' });
  expect(resolved.body.task.history.map((h: { by: string }) => h.by)).toEqual([expect.any(String), ada.id, ada.id]);
});

it('claims and resolves as the user of a user token (its user id)', async () => {
  const { email, password } = await t.user(['human_task:read', 'human_task:write']);
  const login = await api.post('/api/auth/login', { json: { email, password } });
  expect(login.status).toBe(200);
  const token = login.body.token as string;
  const user = await stack.ctx.models.User.findOne({ tenantId: t.tenantId, email }).lean();
  const taskId = await newTask();
  const claimed = await api.post(`${tasksUrl()}/${taskId}/claim`, { token, json: { userId: ada.id } });
  expect(claimed.status).toBe(200);
  expect(claimed.body.task.assignedTo).toBe(user!._id);
  // Ada's key, though the body named her, is not the claimer.
  expect((await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { decision: 'approved' } })).status).toBe(409);
  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, { token, json: { decision: 'approved' } });
  expect(resolved.status).toBe(200);
  expect(resolved.body.task.resolution.respondedBy).toBe(user!._id);
});

it('resolves an unclaimed task as the caller, with no name at all', async () => {
  const taskId = await newTask();
  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: bob.key, json: { decision: 'rejected' } });
  expect(resolved.status).toBe(200);
  expect(resolved.body.task.resolution).toMatchObject({ respondedBy: bob.id, displayName: null, decision: 'rejected' });
});

it('refuses resolution fields outside the form, and the outcome names even when a form has them', async () => {
  const taskId = await newTask([{ name: 'comment', type: 'text' }]);
  for (const fields of [{ approved: true }, { rejected: false }, { resolved: true }, { expired: false }, { cancelled: false }, { other: 'x' }]) {
    const refused = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { decision: 'rejected', fields } });
    expect({ fields, status: refused.status, code: refused.body.error?.code }).toEqual({ fields, status: 422, code: 'UNPROCESSABLE_ENTITY' });
    expect(refused.body.error.message).toContain(`fields.${Object.keys(fields)[0]}`);
  }
  expect((await api.get(`${tasksUrl()}/${taskId}`, { key: ada.key })).body.task.status).toBe('pending');
  // A form may not name a field after an outcome.
  const reserved = await api.post(tasksUrl(), { key: t.adminKey, json: { type: 'approval', title: 'x', fields: [{ name: 'approved', type: 'boolean' }] } });
  expect(reserved.status).toBe(422);
});

it('a session resumes on the decision: a rejection with approved: true in the fields never takes the approval path', async () => {
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Approvals', message: 'refund please' } });
  const sessionId = first.body.sessionId as string;
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: '600' } });
  const taskId = res.body.action.humanTask.id as string;
  const forged = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { respondedBy: 'ada', decision: 'rejected', fields: { approved: true } } });
  expect(forged.status).toBe(422);
  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { decision: 'rejected', fields: { comment: 'no' } } });
  expect(resolved.status).toBe(200);
  const lines = await eventually(
    async () => {
      await flushProjection(stack.ctx, sessionId);
      const tr = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: t.adminKey });
      return (tr.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
    },
    (l) => l.some((x) => x.includes('Refund')),
    20_000,
    100,
  );
  expect(lines).toContain('Refund declined.');
  expect(lines.join('\n')).not.toContain('Refund approved.');
});
