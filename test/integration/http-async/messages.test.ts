// The HTTP-async channel end to end on the real stack, with a real receiving server on loopback:
// 202 once queued, the reply POSTed with the same message_id and the spec's body, canonical
// session keys, ordering of 20 rapid messages, the follow-up rules, scope, tenancy and bad bodies.
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';
import { ZAgentMediaEvent, ZAgentResponseEvent, ZAgentStatusEvent } from '../../../api/http-async/webhooks';
import { createHash } from 'node:crypto';
import { conversationWorkflowId } from '../../../lib/http-async/session-key';
import { endSignal, httpAsyncAcceptUpdate, httpAsyncStateQuery } from '../../../workflows/definitions';
import { TURN_DELIVERS_REPLY_PATCH } from '../../../workflows/http-async-conversation';
import { decodeEncryptedPayloads } from '../../fixtures/histories/history-json';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';
import { ChannelKey, TenantIdKey } from '../../../workflows/search-attributes';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import type { CommandStartedEvent } from 'mongodb';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { createProject } from '../../../core/tenancy/accounts';
import { flushProjection } from '../../support/projection';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startReceiver, type ReceivedRequest, type Receiver } from '../../support/receiver';

jest.setTimeout(120_000);

// Stays in its one step: every message gets "Noted <metadata.n>." and the step's rich content.
const ECHO_AGENT = echoAgent('    RICH_CONTENT:\n      markdown: "**Anything else?**"\n    ACTIONS:\n      - id: done\n        label: "Done"\n');

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let other: SeededTenant;
let receiver: Receiver;
let receiverUrl: string;
let deliveries: ReceivedRequest[];
/** What the stack's connection (the API's and the in-process worker's) sent to the store, as `<command> <collection>`. */
const storeCommands: string[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  deliveries = receiver.received;
  receiverUrl = `${receiver.origin}/hooks`;
  stack = await startTestStack({ worker: true, allowPrivate: { httpAsync: [receiverUrl] }, monitorCommands: true });
  stack.ctx.models.Project.db.getClient().on('commandStarted', (e: CommandStartedEvent) => {
    const collection = e.command[e.commandName];
    if (typeof collection === 'string') storeCommands.push(`${e.commandName} ${collection}`);
  });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', ECHO_AGENT);
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
});

const MESSAGE = '/api/v1/channels/http-async/message';
const send = (json: Record<string, unknown>, key = t.adminKey, extra: Record<string, string> = {}) => api.post<Record<string, unknown> & { error?: { code: string; message: string; details?: Record<string, unknown> } }>(MESSAGE, { headers: { 'x-api-key': key, ...extra }, json });

async function subscribe(owner = t, events = ['agent.response', 'agent.status', 'agent.media']) {
  const res = await api.post<{ subscription: { id: string }; signingSecret: string }>(`/api/projects/${owner.projectId}/channels/http-async/subscriptions`, {
    key: owner.adminKey,
    json: { name: 'Front end', callbackUrl: receiverUrl, events },
  });
  expect(res.status).toBe(201);
  return { id: res.body.subscription.id, secret: res.body.signingSecret };
}

const responsesFor = (sessionKey: string) => deliveries.filter((d) => d.body.event === 'agent.response' && d.body.session_key === sessionKey);
const statusesForAll = async (sessionKey: string) => deliveries.filter((d) => d.body.session_key === sessionKey);
const statusesFor = (sessionKey: string) => deliveries.filter((d) => d.body.event === 'agent.status' && d.body.session_key === sessionKey).map((d) => d.body.status);

describe('POST /api/v1/channels/http-async/message', () => {
  it('answers 202 with a canonical key, then POSTs the reply with the same message_id, signed, metadata echoed', async () => {
    const sub = await subscribe();
    const callerKey = `customer-${Date.now()}`;
    const res = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'Hello there', session_key: callerKey, metadata: { ticket: 'T-1', nested: { a: [1, 2] }, n: 1, 'x.y': [[1], []] } });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ message_id: expect.stringMatching(/^ham-/), session_key: `http_async:${t.projectId}:${sub.id}:${callerKey}`, status: 'accepted', _note: expect.any(String) });
    const sessionKey = res.body.session_key as string;

    const [reply] = await eventually(async () => responsesFor(sessionKey), (r) => r.length >= 1, 30_000);
    expect(reply).toBeDefined();
    expect(verifyAblSignature(sub.secret, reply!.raw, reply!.headers['x-abl-timestamp'] as string, reply!.headers['x-abl-signature'] as string)).toBe(true);
    expect(reply!.headers['x-abl-event']).toBe('agent.response');
    const body = reply!.body;
    expect(body).toMatchObject({
      message_id: res.body.message_id,
      session_key: sessionKey,
      response: expect.any(String),
      channel_output: { kind: 'text', text: body.response },
      outcome: { status: 'ok', usedFallback: false },
      trace_context: { session_id: body.session_id, delivery: 'correlation_only' },
      is_new_session: true,
      response_metadata: { isLlmGenerated: expect.any(Boolean), responseProvenance: { schemaVersion: 1, kind: expect.any(String), disclaimerRequired: expect.any(Boolean), usedLlmInternally: expect.any(Boolean) } },
      metadata: { ticket: 'T-1', nested: { a: [1, 2] }, n: 1, 'x.y': [[1], []] },
    });
    ZAgentResponseEvent.parse(body);
    expect(body).not.toHaveProperty('intent');
    expect(body).not.toHaveProperty('conv_status');
    expect(String(body.response).length).toBeGreaterThan(0);

    // The session runs on channel http_async and its transcript has the turn.
    const session = await stack.ctx.models.Session.findOne({ _id: body.session_id, tenantId: t.tenantId }).lean();
    expect(session?.channel).toBe('http_async');
    // The conversation's key is the end user on the channel, for session analytics' channelUId.
    expect(session?.channelUId).toBe(sessionKey);

    // A follow-up with the canonical key continues the same session.
    const second = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'And another thing', session_key: sessionKey });
    expect(second.status).toBe(202);
    expect(second.body.session_key).toBe(sessionKey);
    const replies = await eventually(async () => responsesFor(sessionKey), (r) => r.length >= 2, 30_000);
    expect(replies[1]!.body).toMatchObject({ message_id: second.body.message_id, session_id: body.session_id, is_new_session: false, metadata: {} });
    // agent.status reported processing for each message, agent.media the step's rich content.
    expect(statusesFor(sessionKey).filter((s) => s === 'processing')).toHaveLength(2);
    const media = await eventually(async () => deliveries.filter((d) => d.body.event === 'agent.media' && d.body.session_key === sessionKey), (m) => m.length >= 2, 10_000);
    expect(media[0]!.headers['x-abl-event']).toBe('agent.media');
    ZAgentMediaEvent.parse(media[0]!.body);
    for (const d of deliveries.filter((x) => x.body.session_key === sessionKey && x.body.event === 'agent.status')) ZAgentStatusEvent.parse(d.body);
    expect(media[0]!.body).toMatchObject({
      message_id: expect.stringMatching(/^ham-/),
      related_message_id: res.body.message_id,
      session_id: body.session_id,
      channel_output: { kind: 'rich', rich_content: { markdown: '**Anything else?**' }, actions: { items: [{ id: 'done', label: 'Done' }] } },
      metadata: { ticket: 'T-1', nested: { a: [1, 2] }, n: 1, 'x.y': [[1], []] },
    });
    // Every delivery is listed under the subscription's recent deliveries, delivered at the first
    // attempt (its record is written once the POST has been answered: it may follow by a moment).
    const listed = await eventually(
      () => api.get<{ deliveries: { messageId: string; status: string; attempts: number; statusCode: number }[] }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}/deliveries`, { key: t.adminKey }),
      (r) => r.body.deliveries.some((d) => d.messageId === res.body.message_id),
      10_000,
    );
    expect(listed.body.deliveries.find((d) => d.messageId === res.body.message_id)).toMatchObject({ status: 'delivered', attempts: 1, statusCode: 200 });
  });

  it('answers 20 rapid messages one turn at a time, in the order they were accepted, the session running the lane', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const callerKey = `rapid-${Date.now()}`;
    // Sent back to back, each right after the previous 202: the first turn is still running (or
    // its session still starting) while the others are accepted, so they wait in a queue.
    const accepted: { message_id: string; session_key: string }[] = [];
    for (let n = 0; n < 20; n++) {
      const res = await send({ project_id: t.projectId, subscription_id: sub.id, message: `message ${n}`, session_key: accepted[0]?.session_key ?? callerKey, metadata: { n } });
      expect(res.status).toBe(202);
      accepted.push(res.body as { message_id: string; session_key: string });
    }
    const sessionKey = accepted[0]!.session_key;
    const replies = await eventually(async () => responsesFor(sessionKey), (r) => r.length >= 20, 60_000);
    expect(replies.map((r) => r.body.message_id)).toEqual(accepted.map((a) => a.message_id));
    // The first turn starts the session: the step's greeting comes before the answer.
    expect(replies.map((r) => String(r.body.response).split('\n\n').pop())).toEqual(accepted.map((_, n) => `Noted ${n}.`));
    expect(replies.map((r) => r.body.metadata)).toEqual(accepted.map((_, n) => ({ n })));
    expect(new Set(replies.map((r) => r.body.session_id)).size).toBe(1);
    // The subscription takes agent.response only: nothing else was sent, nor even queued.
    expect(deliveries.filter((d) => d.body.session_key === sessionKey && d.body.event !== 'agent.response')).toEqual([]);
    // A delivery's record is written once its POST has been answered: the last may follow the reply by a moment.
    const listed = await eventually(
      () => api.get<{ deliveries: { event: string }[] }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}/deliveries?limit=200`, { key: t.adminKey }),
      (res) => res.body.deliveries.length >= 20,
      10_000,
    );
    expect(listed.body.deliveries.map((d) => d.event)).toEqual(Array(20).fill('agent.response'));
    // One session, its transcript in the same order.
    const sessionId = replies[0]!.body.session_id as string;
    await flushProjection(stack.ctx, sessionId);
    const transcript = await stack.ctx.models.TranscriptMessage.find({ tenantId: t.tenantId, sessionId, role: 'user' }).sort({ seq: 1 }).lean();
    expect(transcript.map((m) => m.content)).toEqual(accepted.map((_, n) => `message ${n}`));

    // The session ran the lane: the conversation started it and ran no turn; the session took the
    // messages the conversation held at its start, then the rest straight from the API (the
    // update), and posted each reply from a delivery its turn's end scheduled. Both replay.
    const workflowId = conversationWorkflowId(sessionKey);
    const recorded = await decodeEncryptedPayloads(await (await stack.ctx.temporal.client()).workflow.getHandle(workflowId).fetchHistory(), stack.ctx.payloadCodec);
    const activities = (recorded.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
    expect(activities.filter((a) => a === 'startHttpAsyncSession')).toHaveLength(1);
    expect(activities).not.toContain('runHttpAsyncTurn');
    expect(activities).not.toContain('deliverHttpAsyncEvent');
    await replayWithTodaysCode(recorded, workflowId);
    const inSession = await sessionHistory(stack, sessionId);
    const sessionActivities = (inSession.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
    expect(sessionActivities.filter((a) => a === 'deliverHttpAsyncEvent')).toHaveLength(20);
    // Each reply's first attempt names the subscription's revision its message was accepted
    // under, so the worker's copy of it serves the attempt instead of another read.
    const deliveryInputs = (inSession.events ?? [])
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'deliverHttpAsyncEvent')
      .map((e) => JSON.parse(Buffer.from(e.activityTaskScheduledEventAttributes!.input!.payloads![0]!.data!).toString('utf8')) as { subscriptionRevision?: number });
    expect(deliveryInputs.map((i) => i.subscriptionRevision)).toEqual(Array(20).fill(1));
    const direct = (inSession.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'httpAsyncSessionMessage');
    expect(direct.length).toBeGreaterThanOrEqual(10);
    expect(direct.length).toBeLessThanOrEqual(19);
    await replayWithTodaysCode(inSession, `session/${sessionId}`);
    const record = await stack.ctx.models.HttpAsyncConversation.findOne({ _id: workflowId, tenantId: t.tenantId }).lean();
    expect(record).toMatchObject({ sessionId, laneSessionId: sessionId });
  });

  it('sends a follow-up of a conversation this process last sent to straight to its session, reading only the subscription; a key bound elsewhere is 404', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const first = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'one', session_key: `remembered-${Date.now()}`, metadata: { n: 1 } });
    expect(first.status).toBe(202);
    const key = first.body.session_key as string;
    await eventually(async () => responsesFor(key), (r) => r.length === 1, 30_000);
    // The first follow-up reads the conversation's record for its session (and the project).
    const second = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'two', session_key: key, metadata: { n: 2 } });
    expect(second.status).toBe(202);
    await eventually(async () => responsesFor(key), (r) => r.length === 2, 30_000);

    storeCommands.length = 0;
    const third = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'three', session_key: key, metadata: { n: 3 } });
    expect(third.status).toBe(202);
    const reads = storeCommands.filter((c) => c.startsWith('find '));
    expect(reads).toContain('find http_async_subscriptions');
    expect(reads).not.toContain('find projects');
    expect(reads).not.toContain('find http_async_conversations');
    const replies = await eventually(async () => responsesFor(key), (r) => r.length === 3, 30_000);
    expect(replies.map((r) => r.body.message_id)).toEqual([first.body.message_id, second.body.message_id, third.body.message_id]);
    expect(new Set(replies.map((r) => r.body.session_id)).size).toBe(1);

    // What the process remembers never stands in for the caller's own reach: a key bound to
    // another project, or of another tenant, is 404 and nothing is queued.
    const elsewhere = await createProject(stack.ctx.models, t.tenantId, { name: `Elsewhere ${Date.now()}` });
    const boundElsewhere = await t.keyWith(['admin'], elsewhere._id);
    const refused = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'four', session_key: key }, boundElsewhere);
    expect(refused.status).toBe(404);
    expect((await send({ project_id: t.projectId, subscription_id: sub.id, message: 'four', session_key: key }, other.adminKey)).status).toBe(404);
    // A paused subscription is read, remembered session or not.
    await api.post(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}/pause`, { key: t.adminKey });
    expect((await send({ project_id: t.projectId, subscription_id: sub.id, message: 'four', session_key: key })).status).toBe(409);
    await new Promise((r) => setTimeout(r, 500));
    expect(responsesFor(key)).toHaveLength(3);
  });

  it('reads the project again once the remembered session has ended: a project being deleted is 404 and starts nothing', async () => {
    const u = await seedTenant(stack.ctx);
    await publishAgent(api, u, 'Echo', ECHO_AGENT);
    const sub = await subscribe(u, ['agent.response']);
    const sendAs = (json: Record<string, unknown>) => send({ project_id: u.projectId, subscription_id: sub.id, ...json }, u.adminKey);
    const first = await sendAs({ message: 'one', session_key: `deleting-${Date.now()}`, metadata: { n: 1 } });
    const key = first.body.session_key as string;
    await eventually(async () => responsesFor(key), (r) => r.length === 1, 30_000);
    expect((await sendAs({ message: 'two', session_key: key, metadata: { n: 2 } })).status).toBe(202);
    const replies = await eventually(async () => responsesFor(key), (r) => r.length === 2, 30_000);
    const sessionId = replies[1]!.body.session_id as string;

    const temporal = await stack.ctx.temporal.client();
    await temporal.workflow.getHandle(`session/${sessionId}`).signal(endSignal, { reason: 'operator_ended' });
    await eventually(async () => (await temporal.workflow.getHandle(`session/${sessionId}`).describe()).status.name, (status) => status !== 'RUNNING', 30_000);
    await stack.ctx.models.Project.collection.updateOne({ _id: u.projectId as never }, { $set: { deletingAt: new Date() } });
    storeCommands.length = 0;
    const refused = await sendAs({ message: 'three', session_key: key, metadata: { n: 3 } });
    expect(refused.status).toBe(404);
    expect(storeCommands).toContain('find projects');
    // Nothing was queued: the conversation holds no message, and no session answers one.
    const state = await temporal.workflow.getHandle(conversationWorkflowId(key)).query(httpAsyncStateQuery);
    expect(state).toMatchObject({ queued: 0 });
    await new Promise((r) => setTimeout(r, 300));
    expect(responsesFor(key)).toHaveLength(2);
  });

  it('keeps a conversation started before its sessions ran the lane on its own turns, each reply posted by its turn', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const sessionKey = `http_async:${t.projectId}:${sub.id}:before-${Date.now()}`;
    const workflowId = conversationWorkflowId(sessionKey);
    // Its first message as the API sent it then: an update-with-start whose input has no sessionsRunLane.
    await stack.ctx.models.HttpAsyncConversation.create({ _id: workflowId, tenantId: t.tenantId, projectId: t.projectId, subscriptionId: sub.id, sessionKey, firstMessageId: null });
    const temporal = await stack.ctx.temporal.client();
    const config = stack.ctx.config;
    const { environment } = (await stack.ctx.models.HttpAsyncSubscription.findOne({ _id: sub.id, tenantId: t.tenantId }).lean())!;
    await temporal.workflow.executeUpdateWithStart(httpAsyncAcceptUpdate, {
      args: [{ messageId: 'ham-before-0', text: 'message 0', metadata: { n: 0 }, acceptedAtMs: Date.now() }, { maxQueuedMessages: 100, maxPendingDeliveries: 100, maxQueuedBytes: 1024 * 1024 }],
      updateId: 'ham-before-0',
      startWorkflowOperation: new WithStartWorkflowOperation('httpAsyncConversation', {
        workflowId,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{
          tenantId: t.tenantId, projectId: t.projectId, subscriptionId: sub.id, sessionKey, environment, events: ['agent.response'],
          schedule: { initialIntervalMs: config.HTTP_ASYNC_RETRY_INITIAL_MS, maxIntervalMs: config.HTTP_ASYNC_RETRY_MAX_INTERVAL_MS, windowMs: config.HTTP_ASYNC_DELIVERY_WINDOW_MS, pausedCheckMs: config.HTTP_ASYNC_PAUSED_CHECK_MS },
          sessionIdleTimeoutMs: config.SESSION_IDLE_TIMEOUT_MS,
        }],
      }),
    });
    const accepted = [{ message_id: 'ham-before-0' }];
    for (let n = 1; n < 10; n++) {
      const res = await send({ project_id: t.projectId, subscription_id: sub.id, message: `message ${n}`, session_key: sessionKey, metadata: { n } });
      expect(res.status).toBe(202);
      accepted.push(res.body as { message_id: string });
    }
    const replies = await eventually(async () => responsesFor(sessionKey), (r) => r.length >= 10, 60_000);
    expect(replies.map((r) => r.body.message_id)).toEqual(accepted.map((a) => a.message_id));
    expect(replies.map((r) => String(r.body.response).split('\n\n').pop())).toEqual(accepted.map((_, n) => `Noted ${n}.`));
    // Nothing else waited in the lane, so each turn's activity posted its own reply: the
    // conversation scheduled no delivery activity, and its history replays with today's code.
    const recorded = await decodeEncryptedPayloads(await temporal.workflow.getHandle(workflowId).fetchHistory(), stack.ctx.payloadCodec);
    const activities = (recorded.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
    expect(activities.filter((a) => a === 'runHttpAsyncTurn')).toHaveLength(10);
    expect(activities).not.toContain('deliverHttpAsyncEvent');
    expect(patchIdsIn(recorded)).toContain(TURN_DELIVERS_REPLY_PATCH);
    await replayWithTodaysCode(recorded, workflowId);
    expect(await stack.ctx.models.HttpAsyncConversation.findOne({ _id: workflowId, tenantId: t.tenantId }).lean()).toMatchObject({ laneSessionId: null });
  });

  it('takes a change of the subscription\'s events from the next delivery on', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const first = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'one', session_key: `events-${Date.now()}` });
    const key = first.body.session_key as string;
    await eventually(async () => responsesFor(key), (r) => r.length === 1, 30_000);
    const changed = await api.patch(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}`, { key: t.adminKey, json: { events: ['agent.response', 'agent.status'] } });
    expect(changed.status).toBe(200);
    // The conversation learns of the change with the next delivery (this message's reply) ...
    await send({ project_id: t.projectId, subscription_id: sub.id, message: 'two', session_key: key });
    await eventually(async () => responsesFor(key), (r) => r.length === 2, 30_000);
    // The receiver has the reply before the conversation has the delivery's answer: wait for that.
    const conversation = (await stack.ctx.temporal.client()).workflow.getHandle(conversationWorkflowId(key));
    await eventually(() => conversation.query(httpAsyncStateQuery), (v) => v.pendingDeliveries === 0 && v.queued === 0, 10_000, 50);
    // ... and from then on its statuses are sent.
    const third = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'three', session_key: key });
    await eventually(async () => responsesFor(key), (r) => r.length === 3, 30_000);
    const processing = deliveries.filter((d) => d.body.session_key === key && d.body.status === 'processing');
    expect(processing.map((d) => d.body.related_message_id)).toContain(third.body.message_id);
    expect(processing.map((d) => d.body.related_message_id)).not.toContain(first.body.message_id);
  });

  it('refuses the caller key again once the conversation started (400, with the canonical key), and foreign canonical keys', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const callerKey = `again-${Date.now()}`;
    const first = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'hi', session_key: callerKey });
    expect(first.status).toBe(202);
    const again = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'hi again', session_key: callerKey });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatchObject({ code: 'SESSION_KEY_NOT_CANONICAL', details: { session_key: first.body.session_key }, requestId: expect.stringMatching(/^tr-/) });
    const foreign = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'hi', session_key: `http_async:${t.otherProjectId}:${sub.id}:x` });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error?.code).toBe('SESSION_KEY_NOT_CANONICAL');
  });

  it('takes a message retried with the same Idempotency-Key once, the first message included', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const first = { project_id: t.projectId, subscription_id: sub.id, message: 'first', session_key: `idem-${Date.now()}`, metadata: { n: 1 } };
    const a = await send(first, t.adminKey, { 'idempotency-key': 'req-1' });
    // The answer was lost: the same request again, own key and all.
    const b = await send(first, t.adminKey, { 'idempotency-key': 'req-1' });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body).toEqual(a.body);
    const sessionKey = a.body.session_key as string;
    const follow = { ...first, message: 'second', session_key: sessionKey, metadata: { n: 2 } };
    const c = await send(follow, t.adminKey, { 'idempotency-key': 'req-2' });
    const d = await send(follow, t.adminKey, { 'idempotency-key': 'req-2' });
    expect(d.body.message_id).toBe(c.body.message_id);
    expect(c.body.message_id).not.toBe(a.body.message_id);
    // Another request with a new key and the caller's own key is a follow-up sent wrongly.
    expect((await send(first, t.adminKey, { 'idempotency-key': 'req-3' })).status).toBe(400);
    expect((await send(first, t.adminKey, { 'idempotency-key': 'bad key!' })).status).toBe(400);
    const replies = await eventually(async () => responsesFor(sessionKey), (r) => r.length >= 2, 30_000);
    // Give a duplicate the time to show up, then count: each message answered once.
    await eventually(async () => statusesForAll(sessionKey), () => false, 1_000, 100);
    expect(responsesFor(sessionKey).map((r) => r.body.message_id)).toEqual([a.body.message_id, c.body.message_id]);
    expect(replies.map((r) => r.body.metadata)).toEqual([{ n: 1 }, { n: 2 }]);
  });

  it('forgets a deleted subscription\'s conversations: their keys are 404 afterwards', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const first = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'hi', session_key: `gone-${Date.now()}` });
    expect(first.status).toBe(202);
    await eventually(async () => responsesFor(first.body.session_key as string), (r) => r.length === 1, 30_000);
    expect(await stack.ctx.models.HttpAsyncConversation.countDocuments({ tenantId: t.tenantId, subscriptionId: sub.id })).toBe(1);
    expect((await api.delete(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}`, { key: t.adminKey })).status).toBe(200);
    expect(await stack.ctx.models.HttpAsyncConversation.countDocuments({ tenantId: t.tenantId, subscriptionId: sub.id })).toBe(0);
    expect((await send({ project_id: t.projectId, subscription_id: sub.id, message: 'again', session_key: first.body.session_key })).status).toBe(404);
  });

  it('makes the conversation findable in Temporal by tenant and channel, its id the hash of the session key', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const res = await send({ project_id: t.projectId, subscription_id: sub.id, message: 'find me', session_key: `find-${Date.now()}` });
    expect(res.status).toBe(202);
    const workflowId = `http-async/${createHash('sha256').update(String(res.body.session_key)).digest('hex')}`;
    const connection = await Connection.connect({ address: stack.config.TEMPORAL_ADDRESS });
    try {
      const temporal = new Client({ connection, namespace: stack.config.TEMPORAL_NAMESPACE, dataConverter: switchboardDataConverter(stack.ctx.payloadCodec) });
      const found = await eventually(
        async () => {
          const ids: string[] = [];
          for await (const w of temporal.workflow.list({ query: `${TenantIdKey.name} = '${t.tenantId}' AND ${ChannelKey.name} = 'http_async' AND WorkflowId = '${workflowId}'` })) ids.push(w.workflowId);
          return ids;
        },
        (ids) => ids.length === 1,
        10_000,
        200,
      );
      expect(found).toEqual([workflowId]);
    } finally {
      await connection.close();
    }
  });

  it('is 404 for another tenant\'s project or subscription, 403 without the scope, 409 when paused, 400 for bad bodies', async () => {
    const sub = await subscribe(t, ['agent.response']);
    const base = { project_id: t.projectId, subscription_id: sub.id, message: 'hi', session_key: `edge-${Date.now()}` };
    expect((await send(base, other.adminKey)).status).toBe(404);
    const otherSub = await subscribe(other, ['agent.response']);
    expect((await send({ ...base, subscription_id: otherSub.id })).status).toBe(404);
    expect((await send({ ...base, project_id: t.otherProjectId })).status).toBe(404);
    const readOnly = await t.keyWith(['session:read']);
    expect((await send(base, readOnly)).status).toBe(403);
    expect((await api.post(MESSAGE, { json: base })).status).toBe(401);
    for (const bad of [{ ...base, message: '' }, { ...base, session_key: undefined }, { ...base, extra: 1 }, { ...base, metadata: 'x' }, { ...base, session_key: 'a\u0001b' }]) {
      const res = await send(bad as Record<string, unknown>);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    }
    const paused = await api.post(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}/pause`, { key: t.adminKey });
    expect(paused.status).toBe(200);
    const refused = await send(base);
    expect(refused.status).toBe(409);
    expect(refused.body.error?.code).toBe('SUBSCRIPTION_PAUSED');
    // Nothing was taken: the same caller key opens the conversation once resumed.
    await api.post(`/api/projects/${t.projectId}/channels/http-async/subscriptions/${sub.id}/resume`, { key: t.adminKey });
    expect((await send(base)).status).toBe(202);
  });
});
