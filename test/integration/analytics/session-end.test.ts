// A session's start and end as analytics events on the real stack: a session that goes idle ends
// (SESSION_IDLE_TIMEOUT_MS, 1.5 s here), and its last recording writes `session.ended` with the
// end's reason, the session's duration and totals, once.
import { type AnalyticsEventDoc } from '../../../db/analytics-event';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: { SESSION_IDLE_TIMEOUT_MS: '1500' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', echoAgent());
});
afterAll(() => stack.close());

it('records session.started with the first turn and session.ended when the session ends', async () => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Echo', message: 'hello' } });
  expect(res.status).toBe(200);
  const sessionId = res.body.sessionId as string;

  const events = await eventually(
    () => stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, sessionId, category: 'session' }).sort({ timestamp: 1 }).lean<AnalyticsEventDoc[]>(),
    (found) => found.some((e) => e.eventType === 'session.ended'),
    30_000,
  );
  expect(events.map((e) => [e._id, e.eventType])).toEqual([
    [`${sessionId}:started`, 'session.started'],
    [`${sessionId}:ended`, 'session.ended'],
  ]);
  const session = await stack.ctx.models.Session.findById(sessionId).lean();
  const ended = events[1]!;
  expect(ended).toMatchObject({ projectId: t.projectId, channel: 'api', agentName: 'Echo', tokens: 0, cost: 0 });
  expect(ended.metadata).toMatchObject({ end_reason: 'idle_timeout', message_count: session!.messageCount, token_count: session!.tokenCount });
  expect(ended.durationMs).toBeGreaterThanOrEqual(1500);
  expect(ended.timestamp.getTime()).toBe(session!.endedAt!.getTime());
});
