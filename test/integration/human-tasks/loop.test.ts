// Human tasks end to end on the real stack: a chat turn escalates, the task is listed, claimed and
// resolved through the API, and the session resumes with the `human` object and applies
// on_human_complete (CONTINUE, COMPLETE, HANDOFF); the form's fields reach the flow; expiry at DUE
// (and ON_DUE: raise_priority first), cancellation, session deletion and any other end of the
// session; the reviewer permission; another tenant's task is 404.
import { createApiKey } from '../../../core/tenancy/accounts';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { reconcileClosedWorkflows } from '../../../core/sessions/closed-reconciler';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { decodeEncryptedPayloads } from '../../fixtures/histories/history-json';
import { DEPLOYMENT_RETIRED_REASON, endSignal } from '../../../workflows/definitions';
import { TaskPriorityKey } from '../../../workflows/search-attributes';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
/** Two reviewers' keys: who claims and resolves is the key that calls (its id), never a name in the body. */
let ada: { key: string; id: string };
let bob: { key: string; id: string };

const refunds = (name: string, due = '') => `AGENT: ${name}
GOAL: "Approve large refunds with a manager."
ESCALATE:
  triggers:
    - WHEN: refund_amount > 500 AND human IS NOT SET
      REASON: "Refund of {{refund_amount}} needs approval"
      PRIORITY: high
      TAGS: [refund, approval]
      ${due}
      FIELDS:
        - name: approved_amount
          type: number
          required: true
        - name: channel
          type: select
          options: [card, voucher]
  context_for_human: [refund_amount, conversation_history]
  on_human_complete:
    - IF human.expired == true: CONTINUE
    - IF human.cancelled == true: CONTINUE
    - IF human.decision == "rejected": COMPLETE
    - IF human.decision == "transfer": HANDOFF to Billing
    - IF human.resolved == true: CONTINUE
COMPLETE:
  - WHEN: human.decision == "rejected"
    RESPOND: "A manager declined the refund: {{human.notes}}"
FLOW:
  steps: [ask_amount, decide, done]
  ask_amount:
    REASONING: false
    GATHER:
      - refund_amount: required
        type: number
        prompt: "How much should be refunded?"
    THEN: decide
  decide:
    REASONING: false
    RESPOND: "{{#if human.expired}}Nobody answered in time.{{/if}}{{#if human.resolved}}Refund of {{human.approved_amount}} by {{human.channel}} approved by {{human.respondedBy}}.{{/if}}"
    THEN: done
  done:
    REASONING: false
    RESPOND: "Anything else?"
`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  const reviewer = async (name: string) => {
    const made = await createApiKey(stack.ctx.models, t.tenantId, { name, permissions: ['human_task:read', 'human_task:write'] });
    return { key: made.key, id: made.apiKey._id };
  };
  ada = await reviewer('ada');
  bob = await reviewer('bob');
  await publishAgent(api, t, 'Billing', 'AGENT: Billing\nGOAL: "Billing."\nON_START:\n  RESPOND: "Billing here."\n');
  await publishAgent(api, t, 'Refunds', refunds('Refunds'));
  await publishAgent(api, t, 'Quick_Refunds', refunds('Quick_Refunds', 'DUE: 2s'));
  await publishAgent(api, t, 'Raising_Refunds', refunds('Raising_Refunds', 'DUE: 1s\n      ON_DUE: raise_priority\n      THEN_EXPIRE_AFTER: 3s'));
});
afterAll(async () => {
  await stack.close();
});

const tasksUrl = (projectId = t.projectId) => `/api/projects/${projectId}/human-tasks`;

/** A session that asked for a refund of `amount` and escalated: its id and its task's id. */
async function escalated(agentId = 'Refunds', amount = '600') {
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message: 'I want a refund' } });
  expect(first.body.response).toContain('How much should be refunded?');
  const sessionId = first.body.sessionId as string;
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: amount } });
  expect(res.status).toBe(200);
  expect(res.body.action.type).toBe('escalate');
  const taskId = res.body.action.humanTask.id as string;
  expect(taskId).toMatch(/^ht_[0-9a-f]{32}$/);
  return { sessionId, taskId, res };
}

async function transcript(sessionId: string): Promise<string[]> {
  await flushProjection(stack.ctx, sessionId);
  const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: t.adminKey });
  return (res.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
}
const replies = (sessionId: string, wanted: string) => eventually(() => transcript(sessionId), (lines) => lines.some((l) => l.includes(wanted)), 20_000, 100);

it('escalates, lists, claims and resolves a task; the session continues with the decision and the form’s fields', async () => {
  const { sessionId, taskId, res } = await escalated();
  expect(res.body.response).toContain('passed this to a member of our team');

  const listed = await api.get(`${tasksUrl()}?status=pending&sessionId=${sessionId}`, { key: t.adminKey });
  expect(listed.status).toBe(200);
  expect(listed.body.tasks).toEqual([
    expect.objectContaining({ id: taskId, type: 'approval', status: 'pending', priority: 'high', title: 'Refund of 600 needs approval', sessionId, agentName: 'Refunds' }),
  ]);

  const detail = await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey });
  expect(detail.body.task.context.refund_amount).toBe(600);
  expect((detail.body.task.context.conversation_history as string[]).join('\n')).toContain('user: 600');
  expect(detail.body.task.fields.map((f: { name: string }) => f.name)).toEqual(['approved_amount', 'channel']);
  expect(detail.body.task.session).toEqual({ id: sessionId, href: `/api/projects/${t.projectId}/sessions/${sessionId}` });

  // While the task waits, the user hears a holding reply and the message is recorded.
  const held = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: 'any news?' } });
  expect(held.body.response).toMatch(/our team/);

  const claimed = await api.post(`${tasksUrl()}/${taskId}/claim`, { key: ada.key, json: { userId: 'Ada' } });
  expect(claimed.status).toBe(200);
  expect(claimed.body.task).toMatchObject({ status: 'in_progress', assignedTo: ada.id });
  const stolen = await api.post(`${tasksUrl()}/${taskId}/claim`, { key: bob.key, json: { userId: 'Ada' } });
  expect(stolen.status).toBe(409);

  // Missing and mistyped fields are named; nothing changes.
  const bad = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { respondedBy: 'Ada', decision: 'approved', fields: { channel: 'cash' } } });
  expect(bad.status).toBe(422);
  expect(bad.body.error.message).toContain('fields.approved_amount: is required');
  expect(bad.body.error.message).toContain('fields.channel: must be one of card, voucher');
  const noDecision = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { respondedBy: 'Ada', fields: { approved_amount: 550 } } });
  expect(noDecision.status).toBe(422);
  expect(noDecision.body.error.message).toContain('decision: is required');
  const badBody = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: ada.key, json: { respondedBy: 42, decision: 'approved', fields: {} } });
  expect(badBody.status).toBe(400);
  expect(badBody.body.error.message).toContain('respondedBy');

  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, {
    key: ada.key,
    json: { respondedBy: 'Ada', decision: 'approved', fields: { approved_amount: 550, channel: 'voucher' }, notes: 'ok' },
  });
  expect(resolved.status).toBe(200);
  expect(resolved.body.task).toMatchObject({ status: 'completed', resolution: { respondedBy: ada.id, displayName: 'Ada', decision: 'approved', fields: { approved_amount: 550, channel: 'voucher' }, notes: 'ok' } });
  expect(resolved.body.task.history.map((h: { action: string }) => h.action)).toEqual(['created', 'claimed', 'resolved']);

  const lines = await replies(sessionId, `Refund of 550 by voucher approved by ${ada.id}.`);
  expect(lines[lines.length - 1]).toBe(`Refund of 550 by voucher approved by ${ada.id}.\n\nAnything else?`);

  // A second resolve is a conflict that carries the first one.
  const again = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: bob.key, json: { decision: 'rejected', fields: { approved_amount: 1 } } });
  expect(again.status).toBe(409);
  expect(again.body.error.details).toMatchObject({ status: 'completed', resolution: { respondedBy: ada.id, decision: 'approved' } });

  // Trace events record the creation and the resolution with the wait.
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  const events = (traces.body.events ?? traces.body.traceEvents) as { type: string; data: Record<string, unknown> }[];
  const human = events.filter((e) => e.type === 'human_task').map((e) => e.data);
  expect(human).toEqual([
    expect.objectContaining({ taskId, status: 'created', type: 'approval', priority: 'high' }),
    expect.objectContaining({ taskId, status: 'completed', respondedBy: ada.id, decision: 'approved', waitedMs: expect.any(Number) }),
  ]);

  // The session recorded the marker where it created the task, and both workflows replay with today's code.
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('human-tasks-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
  const taskHistory = await (await stack.ctx.temporal.client()).workflow.getHandle(`human-task/${taskId}`).fetchHistory();
  // Refused calls (the second claim, the bad resolves) left no update in the task's history.
  const updates = (taskHistory.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
  expect(updates).toHaveLength(2);
  await replayWithTodaysCode(await decodeEncryptedPayloads(taskHistory, stack.ctx.payloadCodec), `human-task/${taskId}`);
});

it('COMPLETE ends the session with the rule’s message when the manager rejects', async () => {
  const { sessionId, taskId } = await escalated();
  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: t.adminKey, json: { respondedBy: 'bob', decision: 'rejected', fields: { approved_amount: 0 }, notes: 'over the limit' } });
  expect(resolved.status).toBe(200);
  await replies(sessionId, 'A manager declined the refund: over the limit');
  const session = await eventually(
    async () => (await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey })).body.session,
    (s) => s.status === 'ended',
    20_000,
    100,
  );
  expect(session.endReason).toBe('completed');
});

it('HANDOFF transfers the conversation to the named agent', async () => {
  const { sessionId, taskId } = await escalated();
  const resolved = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: t.adminKey, json: { respondedBy: 'bob', decision: 'transfer', fields: { approved_amount: 0 } } });
  expect(resolved.status).toBe(200);
  await replies(sessionId, 'Billing here.');
  const session = (await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey })).body.session;
  expect(session.currentAgent).toBe('Billing');
});

it('expires a task at its DUE and resumes the session with human.expired', async () => {
  const { sessionId, taskId, res } = await escalated('Quick_Refunds');
  expect(res.body.action.humanTask.dueAt).toEqual(expect.any(String));
  await replies(sessionId, 'Nobody answered in time.');
  const task = (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task;
  expect(task.status).toBe('expired');
  expect(task.history.map((h: { action: string; by: string | null }) => [h.action, h.by])).toEqual([
    ['created', 'agent:Quick_Refunds'],
    ['expired', null],
  ]);
  const late = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: t.adminKey, json: { respondedBy: 'ada', decision: 'approved', fields: { approved_amount: 1 } } });
  expect(late.status).toBe(409);
  expect(late.body.error.details.status).toBe('expired');
});

it('raises the priority at DUE (ON_DUE: raise_priority), then expires after THEN_EXPIRE_AFTER', async () => {
  const { sessionId, taskId } = await escalated('Raising_Refunds');
  const raised = await eventually(
    async () => (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task,
    (x) => x.priority === 'critical' || x.status !== 'pending',
    20_000,
    50,
  );
  expect(raised).toMatchObject({ status: 'pending', priority: 'critical' });
  expect(raised.history.map((h: { action: string; note?: string }) => [h.action, h.note ?? null])).toEqual([
    ['created', null],
    ['priority_raised', 'high → critical'],
  ]);
  // The queue's order and the Web UI's search attribute follow.
  const listed = await api.get(`${tasksUrl()}?priority=critical&sessionId=${sessionId}`, { key: t.adminKey });
  expect(listed.body.tasks.map((x: { id: string }) => x.id)).toEqual([taskId]);
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`human-task/${taskId}`);
  // The search attribute is recorded when the workflow task that wrote the projection completes.
  await eventually(async () => (await handle.describe()).typedSearchAttributes.get(TaskPriorityKey), (p) => p === 4, 20_000, 50);

  await replies(sessionId, 'Nobody answered in time.');
  const task = (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task;
  expect(task.status).toBe('expired');
  expect(task.history.map((h: { action: string }) => h.action)).toEqual(['created', 'priority_raised', 'expired']);
  await replayWithTodaysCode(await decodeEncryptedPayloads(await handle.fetchHistory(), stack.ctx.payloadCodec), `human-task/${taskId}`);
});

it('cancels a task: the session resumes with human.cancelled, and the task cannot be resolved', async () => {
  const { sessionId, taskId } = await escalated();
  const cancelled = await api.post(`${tasksUrl()}/${taskId}/cancel`, { key: t.adminKey, json: { reason: 'withdrawn' } });
  expect(cancelled.status).toBe(200);
  expect(cancelled.body.task).toMatchObject({ status: 'cancelled', cancelReason: 'withdrawn' });
  await replies(sessionId, 'Anything else?');
  const resolve = await api.post(`${tasksUrl()}/${taskId}/resolve`, { key: t.adminKey, json: { respondedBy: 'ada', decision: 'approved', fields: { approved_amount: 1 } } });
  expect(resolve.status).toBe(409);
});

it('takes a cancellation request from Temporal (the Web UI, the CLI) as cancelling the task: the session resumes with human.cancelled', async () => {
  const { sessionId, taskId } = await escalated();
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`human-task/${taskId}`);
  await handle.cancel();
  // The workflow finishes its own way: the task cancelled in the projection, the session told.
  expect((await handle.result()).status).toBe('cancelled');
  const task = (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task;
  expect(task).toMatchObject({ status: 'cancelled', cancelReason: 'workflow cancellation requested in Temporal' });
  expect(task.history.map((h: { action: string; by: string | null }) => [h.action, h.by])).toEqual([
    ['created', 'agent:Refunds'],
    ['cancelled', 'system'],
  ]);
  await replies(sessionId, 'Anything else?');
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  await replayWithTodaysCode(await decodeEncryptedPayloads(await handle.fetchHistory(), stack.ctx.payloadCodec), `human-task/${taskId}`);
});

it('cancels a task whose workflow was terminated in Temporal, and resumes its session (the reconciliation)', async () => {
  const since = new Date(Date.now() - 60_000);
  const { sessionId, taskId } = await escalated();
  const temporal = await stack.ctx.temporal.client();
  await temporal.workflow.getHandle(`human-task/${taskId}`).terminate('operator: stuck task');
  const deps = { models: stack.ctx.models, config: stack.ctx.config, logger: stack.ctx.logger, temporalClient: temporal };
  // Visibility lists a close a moment after it: looked at again until the task is in.
  const task = await eventually(
    async () => {
      await reconcileClosedWorkflows(deps, since);
      return (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task;
    },
    (x) => x.status === 'cancelled',
    30_000,
    250,
  );
  expect(task).toMatchObject({ status: 'cancelled', cancelReason: 'task workflow terminated in Temporal' });
  expect(task.history.map((h: { action: string; by: string | null }) => [h.action, h.by])).toEqual([
    ['created', 'agent:Refunds'],
    ['cancelled', 'system'],
  ]);
  await replies(sessionId, 'Anything else?');
  expect((await reconcileClosedWorkflows(deps, since)).tasksCancelled).toBe(0);
});

it('cancels the open tasks of a deleted session', async () => {
  const { sessionId, taskId } = await escalated();
  const deleted = await api.delete(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey });
  expect(deleted.status).toBe(200);
  const task = (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task;
  expect(task).toMatchObject({ status: 'cancelled', cancelReason: 'session deleted' });
});

it('cancels the open task of a session that ends any other way (here a deployment drain’s end signal)', async () => {
  const { sessionId, taskId } = await escalated();
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`);
  await handle.signal(endSignal, { reason: DEPLOYMENT_RETIRED_REASON });
  await handle.result();
  const task = await eventually(
    async () => (await api.get(`${tasksUrl()}/${taskId}`, { key: t.adminKey })).body.task,
    (x) => x.status === 'cancelled',
    20_000,
    100,
  );
  expect(task.cancelReason).toBe('session ended (deployment_retired)');
  expect(task.history.map((h: { action: string; by: string | null }) => [h.action, h.by])).toEqual([
    ['created', 'agent:Refunds'],
    ['cancelled', 'system'],
  ]);
  await flushProjection(stack.ctx, sessionId);
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  const events = (traces.body.events ?? traces.body.traceEvents) as { type: string; data: Record<string, unknown> }[];
  expect(events.filter((e) => e.type === 'human_task').map((e) => e.data)).toEqual([
    expect.objectContaining({ taskId, status: 'created' }),
    expect.objectContaining({ taskId, status: 'cancelled', reason: 'session ended (deployment_retired)', waitedMs: expect.any(Number) }),
  ]);
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('session-end-cancels-task-v1');
  await replayWithTodaysCode(history, `session/${sessionId}`);
});

it('assigns to a team and to a user; a user assigned elsewhere cannot claim', async () => {
  const created = await api.post(tasksUrl(), {
    key: t.adminKey,
    json: { type: 'data_entry', title: 'Confirm the address', priority: 'low', fields: [{ name: 'street', type: 'text', required: true }] },
  });
  expect(created.status).toBe(201);
  const id = created.body.task.id as string;
  expect(created.body.task).toMatchObject({ status: 'pending', sessionId: null, session: null, workflowId: `human-task/${id}` });
  const team = await api.post(`${tasksUrl()}/${id}/assign`, { key: t.adminKey, json: { assignedToTeam: 'ops' } });
  expect(team.body.task).toMatchObject({ status: 'assigned', assignedToTeam: 'ops', assignedTo: null });
  const user = await api.post(`${tasksUrl()}/${id}/assign`, { key: t.adminKey, json: { assignedTo: 'carol' } });
  expect(user.body.task).toMatchObject({ status: 'assigned', assignedTo: 'carol' });
  expect((await api.post(`${tasksUrl()}/${id}/claim`, { key: t.adminKey, json: { userId: 'dave' } })).status).toBe(409);
  expect((await api.post(`${tasksUrl()}/${id}/assign`, { key: t.adminKey, json: { assignedTo: 'x', assignedToTeam: 'y' } })).status).toBe(422);
  expect((await api.post(`${tasksUrl()}/${id}/assign`, { key: t.adminKey, json: {} })).status).toBe(422);
  const noOptions = await api.post(tasksUrl(), { key: t.adminKey, json: { title: 'Pick one', fields: [{ name: 'colour', type: 'select' }] } });
  expect(noOptions.status).toBe(422);
  expect(noOptions.body.error.message).toContain('body.fields.colour: a select needs options');
  const byTeam = await api.get(`${tasksUrl()}?assignedToTeam=ops&assignedTo=carol`, { key: t.adminKey });
  expect(byTeam.body.tasks.map((x: { id: string }) => x.id)).toEqual([id]);
  const done = await api.post(`${tasksUrl()}/${id}/resolve`, { key: t.adminKey, json: { respondedBy: 'carol', fields: { street: 'Main St 1' } } });
  expect(done.body.task.status).toBe('completed');
});

it('keeps any JSON context, keys with dots and nested arrays included, through create, read and transitions', async () => {
  const context = { 'order.id': 'A-1', matrix: [[1, 2], [[3]]], nested: { 'a.b': [[{ c: null }]] } };
  const created = await api.post(tasksUrl(), { key: t.adminKey, json: { type: 'review', title: 'Odd context', context } });
  expect(created.status).toBe(201);
  const id = created.body.task.id as string;
  expect(created.body.task.context).toEqual(context);
  expect((await api.get(`${tasksUrl()}/${id}`, { key: t.adminKey })).body.task.context).toEqual(context);
  const claimed = await api.post(`${tasksUrl()}/${id}/claim`, { key: t.adminKey, json: { userId: 'ada' } });
  expect(claimed.body.task.context).toEqual(context);
  // The workflow's projection writes it too: the row follows the claim.
  const read = await eventually(() => api.get(`${tasksUrl()}/${id}`, { key: t.adminKey }), (r) => r.body.task.status === 'in_progress', 10_000, 100);
  expect(read.body.task).toMatchObject({ status: 'in_progress', context });
});

it('sorts by priority, then oldest first, and filters', async () => {
  const make = async (priority: string, type = 'review') =>
    (await api.post(tasksUrl(), { key: t.adminKey, json: { type, title: `${priority} one`, priority, tags: ['sorting'] } })).body.task.id as string;
  const low = await make('low');
  const critical = await make('critical');
  const high1 = await make('high', 'decision');
  const high2 = await make('high');
  const res = await api.get(`${tasksUrl()}?status=pending&type=review&limit=200`, { key: t.adminKey });
  const order = (res.body.tasks as { id: string }[]).map((x) => x.id).filter((id) => [low, critical, high2].includes(id));
  expect(order).toEqual([critical, high2, low]);
  const decisions = await api.get(`${tasksUrl()}?type=decision&priority=high`, { key: t.adminKey });
  expect(decisions.body.tasks.map((x: { id: string }) => x.id)).toContain(high1);
  const page = await api.get(`${tasksUrl()}?status=pending&type=review&limit=1&offset=1`, { key: t.adminKey });
  expect(page.body).toMatchObject({ limit: 1, offset: 1, total: res.body.total });
  expect(page.body.tasks).toHaveLength(1);
  const future = await api.get(`${tasksUrl()}?createdFrom=2999-01-01T00:00:00Z`, { key: t.adminKey });
  expect(future.body.tasks).toEqual([]);
  expect((await api.get(`${tasksUrl()}?priority=urgent`, { key: t.adminKey })).status).toBe(400);
});

it('lets a reviewer act on tasks without agent:write, keeps readers to reading, and hides other tenants’ tasks', async () => {
  const id = (await api.post(tasksUrl(), { key: t.adminKey, json: { type: 'review', title: 'Review the reply' } })).body.task.id as string;
  const reviewer = await t.keyWith(['human_task:read', 'human_task:write']);
  const reader = await t.keyWith(['human_task:read']);
  const writerOfAgents = await t.keyWith(['agent:write', 'session:read']);
  expect((await api.get(tasksUrl(), { key: writerOfAgents })).status).toBe(403);
  expect((await api.post(`${tasksUrl()}/${id}/claim`, { key: reader, json: { userId: 'r' } })).status).toBe(403);
  expect((await api.post(`${tasksUrl()}/${id}/claim`, { key: reviewer, json: { userId: 'r' } })).status).toBe(200);

  const theirs = await api.get(`${tasksUrl(other.projectId)}/${id}`, { key: other.adminKey });
  expect(theirs.status).toBe(404);
  const viaOwnProject = await api.post(`${tasksUrl(other.projectId)}/${id}/resolve`, { key: other.adminKey, json: { respondedBy: 'x' } });
  expect(viaOwnProject.status).toBe(404);
  expect((await api.get(`${tasksUrl()}/ht_00000000000000000000000000000000`, { key: t.adminKey })).status).toBe(404);
});
