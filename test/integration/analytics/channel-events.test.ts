// The HTTP-async channel's analytics events on the real stack, with a real receiver: the accepted
// message once its session answered it, and the reply's delivery, both with the session's id.
import { type AnalyticsEventDoc } from '../../../db/analytics-event';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startReceiver, type Receiver } from '../../support/receiver';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startTestStack({ worker: true, allowPrivate: { httpAsync: [`${receiver.origin}/hooks`] } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', echoAgent());
});
afterAll(async () => {
  await stack.close();
  await receiver.close();
});

it("records an HTTP-async message its session answered and the reply's delivery, with the session id", async () => {
  const sub = await api.post<{ subscription: { id: string } }>(`/api/projects/${t.projectId}/channels/http-async/subscriptions`, {
    key: t.adminKey,
    json: { name: 'Front end', callbackUrl: `${receiver.origin}/hooks`, events: ['agent.response'] },
  });
  expect(sub.status).toBe(201);
  const subscriptionId = sub.body.subscription.id;
  const sent = await api.post<{ message_id: string }>('/api/v1/channels/http-async/message', {
    headers: { 'x-api-key': t.adminKey },
    json: { project_id: t.projectId, subscription_id: subscriptionId, message: 'Hello there', session_key: 'customer-1' },
  });
  expect(sent.status).toBe(202);
  const messageId = sent.body.message_id;

  const events = await eventually(
    () => stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, category: 'channel' }).sort({ timestamp: 1 }).lean<AnalyticsEventDoc[]>(),
    (found) => found.length >= 2,
    60_000,
  );
  expect(events.map((e) => e.eventType).sort()).toEqual(['channel.message_accepted', 'channel.reply_delivered']);
  const accepted = events.find((e) => e.eventType === 'channel.message_accepted')!;
  const delivered = events.find((e) => e.eventType === 'channel.reply_delivered')!;
  expect(accepted).toMatchObject({ projectId: t.projectId, channel: 'http_async', error: null, metadata: expect.objectContaining({ message_id: messageId, chars: 11 }) });
  expect(typeof accepted.sessionId).toBe('string');
  expect(delivered).toMatchObject({ projectId: t.projectId, channel: 'http_async', sessionId: accepted.sessionId, error: null });
  expect(delivered.metadata).toMatchObject({ subscription_id: subscriptionId, message_id: messageId, event: 'agent.response', outcome: 'delivered' });
  expect(JSON.stringify(events)).not.toContain('Hello there');
});
