// The session that answers an HTTP-async conversation runs its delivery lane, on the real stack:
// it carries what its lane holds across continue-as-new, and at its end hands the lane and what it
// did not answer back to the conversation, which delivers it, reports `ended`, and opens the next
// session after it. Each reply arrives once, in the order the messages were accepted.
import { conversationWorkflowId } from '../../../lib/http-async/session-key';
import { endSignal, httpAsyncStateQuery } from '../../../workflows/definitions';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../support/receiver';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let receiver: Receiver;
/** Paths whose receiver is down (answers 500). */
const down = new Set<string>();
/** Every answer the receiver gave, in order. */
const answers: { request: ReceivedRequest; status: number }[] = [];

beforeAll(async () => {
  receiver = await startReceiver((request) => {
    const status = down.has(request.path) ? 500 : 200;
    answers.push({ request, status });
    return status;
  });
  stack = await startTestStack({
    worker: true,
    allowPrivate: { httpAsync: [receiver.origin] },
    // Short histories, so a session rolls over within a few messages and failed attempts; quick retries.
    env: { SESSION_MAX_HISTORY_EVENTS: '40', HTTP_ASYNC_RETRY_INITIAL_MS: '200', HTTP_ASYNC_RETRY_MAX_INTERVAL_MS: '400' },
  });
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

async function setUp(path: string, events: string[]): Promise<{ t: SeededTenant; subscriptionId: string }> {
  const t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', echoAgent());
  const res = await api.post<{ subscription: { id: string } }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions`, {
    key: t.adminKey,
    json: { name: 'Front end', callbackUrl: `${receiver.origin}${path}`, events },
  });
  expect(res.status).toBe(201);
  return { t, subscriptionId: res.body.subscription.id };
}

async function send(t: SeededTenant, subscriptionId: string, sessionKey: string, n: number, idempotencyKey?: string) {
  const res = await api.post<{ message_id: string; session_key: string }>('/api/v1/channels/http-async/message', {
    headers: { 'x-api-key': t.adminKey, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) },
    json: { project_id: t.projectId, subscription_id: subscriptionId, message: `message ${n}`, session_key: sessionKey, metadata: { n } },
  });
  expect(res.status).toBe(202);
  return res.body;
}

/** The bodies a path took with 200, in the order it took them. */
const delivered = (path: string) => answers.filter((a) => a.request.path === path && a.status === 200).map((a) => a.request.body);

async function laneSessionOf(t: SeededTenant, sessionKey: string): Promise<string> {
  const record = await eventually(() => stack.ctx.models.HttpAsyncConversation.findOne({ _id: conversationWorkflowId(sessionKey), tenantId: t.tenantId }).lean(), (r) => !!r?.laneSessionId, 30_000, 50);
  return record!.laneSessionId!;
}

it('carries what its lane holds across continue-as-new, then delivers every reply once, in order', async () => {
  const path = '/rollover';
  const { t, subscriptionId } = await setUp(path, ['agent.response']);
  down.add(path);
  const first = await send(t, subscriptionId, `rollover-${Date.now()}`, 0);
  const key = first.session_key;
  const sent = [first];
  for (let n = 1; n < 6; n++) sent.push(await send(t, subscriptionId, key, n));
  const sessionId = await laneSessionOf(t, key);

  // Failed attempts fill the session's short history: it continues as new with its lane.
  const temporal = await stack.ctx.temporal.client();
  const runs = async () => {
    const found = [];
    for await (const run of temporal.workflow.list({ query: `WorkflowId = "session/${sessionId}"` })) found.push(run);
    return found;
  };
  await eventually(runs, (r) => r.length >= 2, 60_000, 200);
  const pending = await temporal.workflow.getHandle(`session/${sessionId}`).query(httpAsyncStateQuery);
  expect(pending.pendingDeliveries).toBeGreaterThan(0);

  down.delete(path);
  const bodies = await eventually(async () => delivered(path), (b) => b.length >= 6, 60_000, 50);
  expect(bodies.map((b) => b.message_id)).toEqual(sent.map((s) => s.message_id));
  expect(bodies.map((b) => String(b.response).split('\n\n').pop())).toEqual(sent.map((_, n) => `Noted ${n}.`));
  expect(new Set(bodies.map((b) => b.session_id))).toEqual(new Set([sessionId]));
  // Once each: nothing more is posted with 200 after the six.
  await new Promise((r) => setTimeout(r, 1_000));
  expect(delivered(path)).toHaveLength(6);
  // The run that rolled over replays with today's code.
  const [oldest] = (await runs()).sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  await replayWithTodaysCode(await sessionHistory(stack, sessionId, oldest!.runId), `session/${sessionId}`);
});

it('hands its lane back when it ends: what was left is delivered, `ended` follows it, and the next message opens a new session', async () => {
  const path = '/handback';
  const { t, subscriptionId } = await setUp(path, ['agent.response', 'agent.status']);
  down.add(path);
  const m1 = await send(t, subscriptionId, `handback-${Date.now()}`, 1);
  const key = m1.session_key;
  const m2 = await send(t, subscriptionId, key, 2, 'second');
  const sessionId = await laneSessionOf(t, key);
  // Both turns ran: their statuses and replies wait in the session's lane (the receiver is down).
  const temporal = await stack.ctx.temporal.client();
  await eventually(() => temporal.workflow.getHandle(`session/${sessionId}`).query(httpAsyncStateQuery), (s) => s.pendingDeliveries >= 4, 30_000, 50);

  await temporal.workflow.getHandle(`session/${sessionId}`).signal(endSignal, { reason: 'operator_ended' });
  const conversation = temporal.workflow.getHandle(conversationWorkflowId(key));
  const handedBack = await eventually(() => conversation.query(httpAsyncStateQuery), (s) => s.sessionId === null && s.pendingDeliveries > 0, 30_000, 50);
  expect(handedBack.pendingDeliveries).toBeGreaterThanOrEqual(5);

  // The second message sent again with its key is the same message: not answered twice.
  expect((await send(t, subscriptionId, key, 2, 'second')).message_id).toBe(m2.message_id);
  const m3 = await send(t, subscriptionId, key, 3);
  down.delete(path);

  const bodies = await eventually(async () => delivered(path), (b) => b.some((x) => x.message_id === m3.message_id && x.event === 'agent.response'), 60_000, 50);
  const responses = bodies.filter((b) => b.event === 'agent.response');
  expect(responses.map((b) => b.message_id)).toEqual([m1.message_id, m2.message_id, m3.message_id]);
  expect(responses.map((b) => b.is_new_session)).toEqual([true, false, true]);
  const next = responses[2]!.session_id as string;
  expect(next).not.toBe(sessionId);
  // `ended` (with why) comes after the ended session's last reply and before the next session's first status.
  const order = bodies.map((b) => (b.event === 'agent.status' ? `${String(b.status)}:${String(b.session_id)}` : `reply:${String(b.message_id)}`));
  const endedAt = order.indexOf(`ended:${sessionId}`);
  expect(endedAt).toBeGreaterThan(order.indexOf(`reply:${m2.message_id}`));
  expect(endedAt).toBeLessThan(order.indexOf(`processing:${next}`));
  expect(bodies[endedAt]).toMatchObject({ details: { reason: 'operator_ended' } });
  // Each event once.
  expect(new Set(bodies.map((b) => b.message_id)).size).toBe(bodies.length);
  // The new session runs the lane now, and its record says so.
  expect(await laneSessionOf(t, key)).toBe(next);
});
