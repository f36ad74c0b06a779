// HTTP-async delivery on the real stack, against a real receiving server on loopback that fails,
// goes down, answers 410 or succeeds on command: retries with the same message_id and bytes, the
// growing waits, failure after the window with its `delivery_failed` status, pause/resume, and
// every callback verified with the documented code (examples/http-async/verify-signature.ts).
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';
import { conversationWorkflowId } from '../../../lib/http-async/session-key';
import { DELIVERY_WINDOW_FROM_QUEUE_PATCH } from '../../../workflows/http-async-conversation';
import { laneHistory, laneState } from '../../support/http-async-lane';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { patchIdsIn, replayWithTodaysCode } from '../../support/workflow-history';

jest.setTimeout(120_000);

// A short schedule: waits of 200 ms doubling, never capped within the attempts below (so each
// wait is at least the one before it, jitter or not), and a window of 10 s from when an event is queued.
const SCHEDULE = { HTTP_ASYNC_RETRY_INITIAL_MS: '200', HTTP_ASYNC_RETRY_MAX_INTERVAL_MS: '3200', HTTP_ASYNC_DELIVERY_WINDOW_MS: '10000', HTTP_ASYNC_PAUSED_CHECK_MS: '200' };

const ECHO_AGENT = echoAgent();

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
  at: number;
  /** What the receiver answered: a status, 'dropped' when it cut the connection, 'held' when it never answered. */
  answered: number | 'dropped' | 'held';
}

/** What the receiver does with one request on a path: answer a status, cut the connection, or never answer. */
type Behaviour = (body: Record<string, unknown>, n: number) => number | 'drop' | 'hold';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let receiver: Server;
let origin: string;
const received: Received[] = [];
const behaviours = new Map<string, Behaviour>();

beforeAll(async () => {
  receiver = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      const path = req.url ?? '';
      const n = received.filter((r) => r.path === path).length;
      const body = JSON.parse(raw) as Record<string, unknown>;
      const decision = (behaviours.get(path) ?? (() => 200))(body, n);
      received.push({ path, headers: req.headers, raw, body, at: Date.now(), answered: decision === 'drop' ? 'dropped' : decision === 'hold' ? 'held' : decision });
      if (decision === 'drop') req.socket.destroy();
      if (typeof decision !== 'number') return;
      res.writeHead(decision);
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, env: SCHEDULE, allowPrivate: { httpAsync: [origin] } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', ECHO_AGENT);
});
afterAll(async () => {
  await stack.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

// Each case has a subscription, a receiving path and a conversation of its own, and most wait out
// retry windows: they run at the same time (it.concurrent) on the one stack.

const SUBS = () => `/api/projects/${t.projectId}/channels/http-async/subscriptions`;

async function subscribe(path: string, events: string[], behaviour: Behaviour) {
  behaviours.set(path, behaviour);
  const res = await api.post<{ subscription: { id: string }; signingSecret: string }>(SUBS(), { key: t.adminKey, json: { name: path, callbackUrl: origin + path, events } });
  expect(res.status).toBe(201);
  return { id: res.body.subscription.id, secret: res.body.signingSecret, path };
}
type Sub = Awaited<ReturnType<typeof subscribe>>;

async function send(sub: Sub, sessionKey: string, n: number) {
  const res = await api.post<{ message_id: string; session_key: string }>('/api/v1/channels/http-async/message', {
    headers: { 'x-api-key': t.adminKey },
    json: { project_id: t.projectId, subscription_id: sub.id, message: `message ${n}`, session_key: sessionKey, metadata: { n } },
  });
  expect(res.status).toBe(202);
  return res.body;
}

const at = (sub: Sub) => received.filter((r) => r.path === sub.path);
const withId = (sub: Sub, messageId: string) => at(sub).filter((r) => r.body.message_id === messageId);

interface ListedDelivery {
  messageId: string;
  event: string;
  status: string;
  attempts: number;
  statusCode: number | null;
  lastError: string | null;
}
async function listed(sub: Sub, messageId: string): Promise<ListedDelivery | undefined> {
  const res = await api.get<{ deliveries: ListedDelivery[] }>(`${SUBS()}/${sub.id}/deliveries`, { key: t.adminKey });
  expect(res.status).toBe(200);
  return res.body.deliveries.find((d) => d.messageId === messageId);
}

/** Every callback a subscription received verifies with its secret, through the documented code. */
function expectAllSigned(sub: Sub) {
  const all = at(sub);
  expect(all.length).toBeGreaterThan(0);
  for (const r of all) {
    expect(verifyAblSignature(sub.secret, r.raw, r.headers['x-abl-timestamp'] as string, r.headers['x-abl-signature'] as string)).toBe(true);
    // …and with no other secret.
    expect(verifyAblSignature(sub.secret + 'x', r.raw, r.headers['x-abl-timestamp'] as string, r.headers['x-abl-signature'] as string)).toBe(false);
  }
}

/** The history of the workflow that runs the conversation's lane (its session, while that runs). */
const history = async (sessionKey: string) => (await laneHistory(stack, sessionKey)).history;

/** The outcomes the delivery activity answered to the conversation, in order, from its history. */
async function deliveryOutcomes(sessionKey: string): Promise<string[]> {
  const events = (await history(sessionKey)).events ?? [];
  const delivering = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverHttpAsyncEvent').map((e) => String(e.eventId)));
  return events
    .filter((e) => e.activityTaskCompletedEventAttributes && delivering.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId)))
    .map((e) => (JSON.parse(Buffer.from(e.activityTaskCompletedEventAttributes!.result!.payloads![0]!.data!).toString('utf8')) as { outcome: string }).outcome);
}

/**
 * The waits the lane started between attempts, in ms: the timers started by the workflow task that
 * read an attempt's answer (the session's other timers, its idle and write timers, left out).
 */
async function retryWaits(sessionKey: string): Promise<number[]> {
  const events = (await history(sessionKey)).events ?? [];
  const delivering = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverHttpAsyncEvent').map((e) => String(e.eventId)));
  const afterAnswer = new Set<string>();
  let answered = false;
  for (const e of events) {
    if (e.activityTaskCompletedEventAttributes && delivering.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId))) answered = true;
    if (e.workflowTaskCompletedEventAttributes && answered) {
      afterAnswer.add(String(e.eventId));
      answered = false;
    }
  }
  return events
    .filter((e) => e.timerStartedEventAttributes && afterAnswer.has(String(e.timerStartedEventAttributes.workflowTaskCompletedEventId)))
    .map((e) => e.timerStartedEventAttributes!.startToFireTimeout!)
    .map((d) => Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6));
}

it.concurrent('retries a receiver that fails three times with the same message_id and bytes, waiting longer each time, and lists one delivery of 4 attempts', async () => {
  const sub = await subscribe('/hooks/flaky', ['agent.response'], (_req, n) => (n < 3 ? 500 : 200));
  const sent = await send(sub, `flaky-${Date.now()}`, 1);

  const attempts = await eventually(async () => at(sub), (r) => r.length >= 4, 60_000, 50);
  expect(attempts.map((r) => r.answered)).toEqual([500, 500, 500, 200]);
  expect(attempts.map((r) => r.body.message_id)).toEqual(Array(4).fill(sent.message_id));
  // One logical delivery: the bytes posted do not change between attempts.
  expect(new Set(attempts.map((r) => r.raw)).size).toBe(1);
  expect(attempts[0]!.body).toMatchObject({ event: 'agent.response', session_key: sent.session_key, metadata: { n: 1 } });
  expectAllSigned(sub);

  const record = await eventually(() => listed(sub, sent.message_id), (d) => d?.status === 'delivered', 10_000);
  expect(record).toMatchObject({ event: 'agent.response', status: 'delivered', attempts: 4, statusCode: 200, lastError: null });
  // Only one delivery record for the message, and no further attempt once a 2xx came.
  const all = await api.get<{ deliveries: ListedDelivery[] }>(`${SUBS()}/${sub.id}/deliveries`, { key: t.adminKey });
  expect(all.body.deliveries.filter((d) => d.messageId === sent.message_id)).toHaveLength(1);

  // The waits the workflow took between attempts grow (doubling, with jitter taking off at most half),
  // and the receiver saw each of them pass between two attempts.
  const waits = await retryWaits(sent.session_key);
  expect(waits).toHaveLength(3);
  expect(waits[1]!).toBeGreaterThanOrEqual(waits[0]!);
  expect(waits[2]!).toBeGreaterThanOrEqual(waits[1]!);
  expect(waits[2]!).toBeGreaterThan(waits[0]!);
  for (let i = 1; i < 4; i++) expect(attempts[i]!.at - attempts[i - 1]!.at).toBeGreaterThanOrEqual(waits[i - 1]! - 1);
  // The session ran the lane: all four attempts are its delivery activities, and it replays.
  expect(await deliveryOutcomes(sent.session_key)).toEqual(['failed', 'failed', 'failed', 'delivered']);
  const { history: recorded, workflowId } = await laneHistory(stack, sent.session_key);
  expect(workflowId).toMatch(/^session\//);
  await replayWithTodaysCode(recorded, workflowId);
  // Nothing is left to deliver, so nothing more is posted.
  await eventually(() => laneState(stack, sent.session_key), (s) => s.pendingDeliveries === 0, 30_000, 50);
  expect(at(sub)).toHaveLength(4);
});

it.concurrent('marks a delivery failed once the receiver was down for the whole window, reports it in agent.status, and moves on', async () => {
  let down = true;
  const sub = await subscribe('/hooks/down', ['agent.response', 'agent.status'], () => (down ? 'drop' : 200));
  const first = await send(sub, `down-${Date.now()}`, 1);

  const failed = await eventually(() => listed(sub, first.message_id), (d) => d?.status === 'failed', 60_000, 100);
  expect(failed).toMatchObject({ event: 'agent.response', status: 'failed', statusCode: null, lastError: expect.stringMatching(/could not reach the receiver/) });
  // Its window ran from when it was queued, alongside the status before it: it was tried at least once.
  expect(failed!.attempts).toBeGreaterThanOrEqual(1);
  expect(withId(sub, first.message_id)).toHaveLength(failed!.attempts);
  // The `processing` status before it failed the same way; a status event that fails reports nothing.
  const processing = at(sub).find((r) => r.body.event === 'agent.status' && r.body.status === 'processing');
  expect(await listed(sub, processing!.body.message_id as string)).toMatchObject({ event: 'agent.status', status: 'failed' });

  // The receiver comes back: the `delivery_failed` status is delivered, naming the message it concerns.
  down = false;
  const report = await eventually(
    async () => at(sub).find((r) => r.body.status === 'delivery_failed' && r.answered === 200),
    (r) => r !== undefined,
    30_000,
    50,
  );
  expect(report!.headers['x-abl-event']).toBe('agent.status');
  expect(report!.body).toMatchObject({
    event: 'agent.status',
    session_key: first.session_key,
    status: 'delivery_failed',
    related_message_id: first.message_id,
    details: { event: 'agent.response', attempts: failed!.attempts, reason: 'failed', last_error: expect.stringMatching(/could not reach the receiver/) },
  });
  // Only for the reply: the failed status event is not reported in turn.
  expect(new Set(at(sub).filter((r) => r.body.status === 'delivery_failed').map((r) => r.body.message_id)).size).toBe(1);

  // The next message of the conversation is answered: the lane moved on.
  const second = await send(sub, first.session_key, 2);
  const reply = await eventually(async () => withId(sub, second.message_id), (r) => r.some((x) => x.answered === 200), 30_000, 50);
  expect(reply[0]!.body).toMatchObject({ event: 'agent.response', session_key: first.session_key, is_new_session: false, metadata: { n: 2 } });
  expect(String(reply[0]!.body.response)).toContain('Noted 2.');
  expectAllSigned(sub);
});

it.concurrent('holds a pending delivery while its subscription is paused, posting nothing, and delivers it once resumed', async () => {
  let failing = true;
  const sub = await subscribe('/hooks/paused', ['agent.response'], () => (failing ? 500 : 200));
  const sent = await send(sub, `paused-${Date.now()}`, 1);
  await eventually(async () => at(sub), (r) => r.length >= 1, 30_000, 20);
  expect((await api.post(`${SUBS()}/${sub.id}/pause`, { key: t.adminKey })).status).toBe(200);

  // The workflow found the subscription paused (an attempt in flight when it was paused may still land).
  const seen = await eventually(() => deliveryOutcomes(sent.session_key), (o) => o.includes('paused'), 30_000, 50);
  const postedBefore = at(sub).length;
  // It looked again, several times, and sent nothing meanwhile.
  const pausedChecks = seen.filter((o) => o === 'paused').length;
  await eventually(() => deliveryOutcomes(sent.session_key), (o) => o.filter((x) => x === 'paused').length >= pausedChecks + 3, 30_000, 50);
  expect(at(sub)).toHaveLength(postedBefore);
  expect(at(sub).every((r) => r.answered === 500)).toBe(true);

  failing = false;
  expect((await api.post(`${SUBS()}/${sub.id}/resume`, { key: t.adminKey })).status).toBe(200);
  const delivered = await eventually(async () => withId(sub, sent.message_id), (r) => r.some((x) => x.answered === 200), 30_000, 50);
  expect(delivered).toHaveLength(postedBefore + 1);
  // Held checks are not attempts: the record counts the POSTs only.
  const record = await eventually(() => listed(sub, sent.message_id), (d) => d?.status === 'delivered', 10_000);
  expect(record).toMatchObject({ status: 'delivered', attempts: postedBefore + 1, statusCode: 200 });
  expectAllSigned(sub);
});

it.concurrent('pauses the subscription when the receiver answers 410, and fails the delivery without retrying', async () => {
  const sub = await subscribe('/hooks/gone', ['agent.response'], () => 410);
  const sent = await send(sub, `gone-${Date.now()}`, 1);

  const record = await eventually(() => listed(sub, sent.message_id), (d) => d?.status === 'failed', 30_000, 50);
  expect(record).toMatchObject({ status: 'failed', attempts: 1, statusCode: 410, lastError: expect.stringMatching(/410/) });
  const got = await api.get<{ subscription: { status: string } }>(`${SUBS()}/${sub.id}`, { key: t.adminKey });
  expect(got.body.subscription.status).toBe('paused');
  // Nothing is left to deliver (its `delivery_failed` status is not subscribed to), so nothing more is posted.
  await eventually(() => laneState(stack, sent.session_key), (s) => s.pendingDeliveries === 0, 30_000, 50);
  expect(withId(sub, sent.message_id)).toHaveLength(1);
  expect(at(sub)).toHaveLength(1);
  expectAllSigned(sub);
  // A paused subscription takes no new messages until it is resumed.
  const refused = await api.post<{ error: { code: string } }>('/api/v1/channels/http-async/message', {
    headers: { 'x-api-key': t.adminKey },
    json: { project_id: t.projectId, subscription_id: sub.id, message: 'anyone?', session_key: sent.session_key },
  });
  expect(refused.status).toBe(409);
  expect(refused.body.error.code).toBe('SUBSCRIPTION_PAUSED');
});

it.concurrent('counts only the POSTs made when a paused subscription outlasts the window, and reports the held delivery once resumed', async () => {
  const sub = await subscribe('/hooks/paused-long', ['agent.response', 'agent.status'], (body) => (body.event === 'agent.response' ? 500 : 200));
  const sent = await send(sub, `paused-long-${Date.now()}`, 1);
  await eventually(async () => withId(sub, sent.message_id), (r) => r.length >= 1, 30_000, 20);
  expect((await api.post(`${SUBS()}/${sub.id}/pause`, { key: t.adminKey })).status).toBe(200);

  // Still paused when its window ends: failed, with the attempts it made before the pause.
  const record = await eventually(() => listed(sub, sent.message_id), (d) => d?.status === 'failed', 60_000, 100);
  const posts = withId(sub, sent.message_id);
  expect(posts.every((r) => r.answered === 500)).toBe(true);
  expect(record).toMatchObject({ status: 'failed', attempts: posts.length, statusCode: 500, lastError: expect.stringMatching(/paused/) });

  // Its `delivery_failed` status waited for the resume, and says the same.
  expect((await api.post(`${SUBS()}/${sub.id}/resume`, { key: t.adminKey })).status).toBe(200);
  const report = await eventually(async () => at(sub).find((r) => r.body.status === 'delivery_failed' && r.answered === 200), (r) => r !== undefined, 30_000, 50);
  expect(report!.body).toMatchObject({ related_message_id: sent.message_id, details: { event: 'agent.response', attempts: posts.length, reason: 'paused' } });
  expectAllSigned(sub);
});

it.concurrent('runs a delivery\'s window from when it was queued, so one that waited out its window behind a slow one gets one last attempt', async () => {
  let back = false;
  // The conversation's first event (its `processing` status) is held open twice until the POST
  // times out (10 s each), twice the 10 s window of the reply queued right behind it.
  const sub = await subscribe('/hooks/slow', ['agent.response', 'agent.status'], (_body, n) => (n < 2 ? 'hold' : back ? 200 : 503));
  const sent = await send(sub, `slow-${Date.now()}`, 1);

  const record = await eventually(() => listed(sub, sent.message_id), (d) => d?.status === 'failed', 90_000, 100);
  expect(at(sub).slice(0, 2).map((r) => [r.body.status, r.answered])).toEqual([
    ['processing', 'held'],
    ['processing', 'held'],
  ]);
  expect(record).toMatchObject({ status: 'failed', attempts: 1, statusCode: 503 });
  expect(withId(sub, sent.message_id)).toHaveLength(1);

  back = true;
  const report = await eventually(async () => at(sub).find((r) => r.body.status === 'delivery_failed' && r.answered === 200), (r) => r !== undefined, 30_000, 50);
  expect(report!.body).toMatchObject({ related_message_id: sent.message_id, details: { event: 'agent.response', attempts: 1, reason: 'failed', last_error: 'receiver answered 503' } });
  expectAllSigned(sub);

  // The run recorded the marker that chose this window, and replays with today's code.
  const { history: recorded, workflowId } = await laneHistory(stack, sent.session_key);
  expect(patchIdsIn(recorded)).toContain(DELIVERY_WINDOW_FROM_QUEUE_PATCH);
  await replayWithTodaysCode(recorded, workflowId);
});

it.concurrent('keeps the lane going when the delivery activity itself fails for good, and answers the next message', async () => {
  const sub = await subscribe('/hooks/unreadable', ['agent.response'], () => 200);
  const first = await send(sub, `unreadable-${Date.now()}`, 1);
  await eventually(async () => withId(sub, first.message_id), (r) => r.length === 1, 30_000, 50);

  // The activity cannot read the subscription (its events are gone): every attempt throws, as it
  // would with MongoDB unreachable, until Temporal gives up retrying it. Like every change, it
  // raises the revision, so no worker's copy of the subscription stands in for the read.
  await stack.ctx.models.HttpAsyncSubscription.collection.updateOne({ _id: sub.id as never }, { $unset: { events: '' }, $inc: { revision: 1 } });
  const second = await send(sub, first.session_key, 2);
  const workflowId = conversationWorkflowId(first.session_key);
  // Temporal retries the activity briefly, then the conversation has it as a failed attempt.
  const gaveUp = await eventually(
    async () => ((await history(first.session_key)).events ?? []).some((e) => e.activityTaskFailedEventAttributes),
    (failed) => failed,
    60_000,
    200,
  );
  expect(gaveUp).toBe(true);
  await stack.ctx.models.HttpAsyncSubscription.collection.updateOne({ _id: sub.id as never }, { $set: { events: ['agent.response'] }, $inc: { revision: 1 } });

  // The conversation is not stuck: the next message is answered and delivered.
  const third = await send(sub, first.session_key, 3);
  const reply = await eventually(async () => withId(sub, third.message_id), (r) => r.some((x) => x.answered === 200), 60_000, 100);
  expect(reply.map((r) => r.answered)).toContain(200);
  expect(reply[0]!.body).toMatchObject({ session_key: first.session_key, metadata: { n: 3 } });
  const described = await (await stack.ctx.temporal.client()).workflow.getHandle(workflowId).describe();
  expect(described.status.name).toBe('RUNNING');
  // The message whose reply was being tried then is delivered at a later attempt or reported failed, never lost silently.
  const record = await eventually(() => listed(sub, second.message_id), (d) => d?.status === 'delivered' || d?.status === 'failed', 30_000, 100);
  expect(['delivered', 'failed']).toContain(record?.status);
  expectAllSigned(sub);
});
