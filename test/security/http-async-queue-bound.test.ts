// An HTTP-async conversation's queues are bounded where the message is accepted: past the messages
// waiting for their turn, or the events waiting for delivery, a message gets 429 QUEUE_FULL and
// nothing is queued, however many requests arrive at once (the workflow itself judges each one).
import type { Client } from '@temporalio/client';
import { conversationWorkflowId } from '../../lib/http-async/session-key';
import { laneState, laneWorkflowId } from '../support/http-async-lane';
import { echoAgent, publishAgent, useFakeOpenAI } from '../support/agents';
import { eventually } from '../support/eventually';
import { startFakeOpenAI, type FakeLlmServer } from '../support/fake-openai';
import { client } from '../support/http';
import { startReceiver, type Receiver } from '../support/receiver';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { startWorkerProcess } from '../support/worker-process';

jest.setTimeout(180_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let receiver: Receiver;
let openai: FakeLlmServer;
let temporal: Client;

beforeAll(async () => {
  // The receiver fails every delivery to /down (retried an hour later), and takes the others.
  receiver = await startReceiver((r) => (r.path === '/down' ? 500 : 200));
  openai = await startFakeOpenAI({ apiKey: 'sk-queue' });
  stack = await startTestStack({
    worker: true,
    allowPrivate: { httpAsync: [receiver.origin], llm: [openai.baseURL] },
    env: { HTTP_ASYNC_MAX_QUEUED_MESSAGES: '2', HTTP_ASYNC_MAX_PENDING_DELIVERIES: '3', HTTP_ASYNC_RETRY_INITIAL_MS: '3600000' },
  });
  api = client(stack.baseUrl);
  temporal = await stack.ctx.temporal.client();
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
  await openai?.close();
});

const MESSAGE = '/api/v1/channels/http-async/message';
type Answer = { message_id?: string; session_key?: string; retryAfterMs?: number; error?: { code: string; message: string } };

async function subscribe(owner: SeededTenant, path: string): Promise<string> {
  const res = await api.post<{ subscription: { id: string } }>(`/api/projects/${owner.projectId}/channels/http-async/subscriptions`, {
    key: owner.adminKey,
    json: { name: 'Front end', callbackUrl: `${receiver.origin}${path}`, events: ['agent.response'] },
  });
  expect(res.status).toBe(201);
  return res.body.subscription.id;
}

const send = (owner: SeededTenant, subscriptionId: string, sessionKey: string, message: string) =>
  api.post<Answer>(MESSAGE, { headers: { 'x-api-key': owner.adminKey }, json: { project_id: owner.projectId, subscription_id: subscriptionId, message, session_key: sessionKey } });

/** The conversation's queues as the workflow that runs its lane counts them (its session, while that runs). */
const state = (sessionKey: string) => laneState(stack, sessionKey);

it('refuses a message with 429 QUEUE_FULL while the delivery lane holds its limit of events, and queues nothing', async () => {
  const t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', echoAgent());
  const sub = await subscribe(t, '/down');
  const first = await send(t, sub, `lane-${Date.now()}`, 'one');
  expect(first.status).toBe(202);
  const key = first.body.session_key!;
  // Each answered message leaves its reply in the lane (the receiver is down).
  await eventually(() => state(key), (s) => s.pendingDeliveries === 1 && s.queued === 0, 60_000, 100);
  for (const n of [2, 3]) {
    expect((await send(t, sub, key, `message ${n}`)).status).toBe(202);
    await eventually(() => state(key), (s) => s.pendingDeliveries === n && s.queued === 0, 60_000, 100);
  }

  const refused = await send(t, sub, key, 'one too many');
  expect(refused.status).toBe(429);
  expect(refused.body.error?.code).toBe('QUEUE_FULL');
  expect(refused.body.error?.message).toMatch(/3 events are waiting for delivery/);
  expect(refused.body.retryAfterMs).toBe(5000);
  expect(refused.headers.get('retry-after')).toBe('5');
  // Nothing was queued: no turn ran for it, and the lane holds the same three replies.
  const after = await state(key);
  expect(after).toMatchObject({ queued: 0, pendingDeliveries: 3 });
  // Three messages taken in all: the first by the conversation, the two follow-ups by its session.
  const acceptedIn = async (workflowId: string) => ((await temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  expect(await acceptedIn(conversationWorkflowId(key))).toBe(1);
  expect(await acceptedIn(await laneWorkflowId(stack, key))).toBe(2);
});

it('takes exactly as many messages as the queue holds from many sent at once while a turn runs', async () => {
  const t = await seedTenant(stack.ctx);
  await useFakeOpenAI(api, t, openai.baseURL, 'sk-queue');
  await publishAgent(api, t, 'Helper', 'AGENT: Helper\nGOAL: "Help with anything."\n');
  const sub = await subscribe(t, '/ok');
  // The first turn waits on a model call that does not answer: later messages wait in the queue.
  openai.script({ text: 'Much later.', hold: true });
  const before = openai.requests.length;
  const first = await send(t, sub, `inbox-${Date.now()}`, 'first');
  expect(first.status).toBe(202);
  const key = first.body.session_key!;
  await eventually(async () => openai.requests.length, (n) => n > before, 60_000, 100);
  await eventually(() => state(key), (s) => s.queued === 0, 30_000, 100);

  const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => send(t, sub, key, `burst ${n}`)));
  const statuses = answers.map((a) => a.status).sort();
  expect(statuses).toEqual([202, 202, 429, 429, 429, 429, 429, 429]);
  for (const a of answers.filter((x) => x.status === 429)) {
    expect(a.body.error?.code).toBe('QUEUE_FULL');
    expect(a.body.error?.message).toMatch(/2 messages are waiting for their turn/);
  }
  expect(await state(key)).toMatchObject({ queued: 2 });

  // Done: the conversation, then its session, so the turn waiting on the model ends now.
  await temporal.workflow.getHandle(conversationWorkflowId(key)).terminate('test done');
  for (const s of await stack.ctx.models.Session.find({ tenantId: t.tenantId }).lean()) {
    await temporal.workflow.getHandle(`session/${s._id}`).terminate('test done').catch(() => undefined);
  }
});

describe('while no worker runs', () => {
  let idle: TestStack;
  let worker: Awaited<ReturnType<typeof startWorkerProcess>> | null = null;
  beforeAll(async () => {
    idle = await startTestStack({ worker: false, allowPrivate: { httpAsync: [receiver.origin] }, env: { HTTP_ASYNC_MAX_QUEUED_MESSAGES: '2' } });
  });
  afterAll(async () => {
    await worker?.stop();
    await idle?.close();
  });

  it('records the messages, and the worker that comes later answers those within the limit and the rest with QUEUE_FULL', async () => {
    const idleApi = client(idle.baseUrl);
    const t = await seedTenant(idle.ctx);
    await publishAgent(idleApi, t, 'Echo', echoAgent());
    const created = await idleApi.post<{ subscription: { id: string } }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions`, {
      key: t.adminKey,
      json: { name: 'Front end', callbackUrl: `${receiver.origin}/idle`, events: ['agent.response'] },
    });
    const sub = created.body.subscription.id;
    const post = (sessionKey: string, message: string) =>
      idleApi.post<Answer>(MESSAGE, { headers: { 'x-api-key': t.adminKey }, json: { project_id: t.projectId, subscription_id: sub, message, session_key: sessionKey } });
    // No worker takes the update: each message is recorded as a signal, still answered 202.
    const first = await post(`idle-${Date.now()}`, 'first');
    expect(first.status).toBe(202);
    const key = first.body.session_key!;
    const more = await Promise.all([1, 2, 3].map((n) => post(key, `more ${n}`)));
    expect(more.map((m) => m.status)).toEqual([202, 202, 202]);
    const ids = [first, ...more].map((m) => m.body.message_id!);

    worker = await startWorkerProcess(idle.config);
    const replies = await eventually(
      async () => receiver.received.filter((r) => r.path === '/idle' && r.body.session_key === key),
      (r) => r.length >= 4,
      120_000,
      100,
    );
    expect(replies.map((r) => r.body.message_id).sort()).toEqual([...ids].sort());
    const refused = replies.filter((r) => (r.body.outcome as { error?: { code?: string } } | undefined)?.error?.code === 'QUEUE_FULL');
    // Two fit the queue (the turn lane had not started when the worker read them); two did not.
    expect(refused).toHaveLength(2);
    expect(replies.filter((r) => (r.body.outcome as { status?: string }).status === 'ok')).toHaveLength(2);
  });
});
