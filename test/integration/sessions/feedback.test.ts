// POST /api/v1/feedback through the real API and a real session: a rating of an agent reply
// (`up`, `down`, 1-5) becomes one analytics event of category `feedback` with the session id; a
// reply is rated once (the same rating again is 200, a different one 409); bad ratings are 400.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { echoAgent, publishAgent } from '../../support/agents';

jest.setTimeout(90_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Echo', echoAgent());
});
afterAll(async () => {
  await stack?.close();
});

/** A session with two turns, and its transcript's user and agent message ids. */
async function conversation() {
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Echo', message: 'Hello' } });
  expect(first.status).toBe(200);
  const sessionId = first.body.sessionId as string;
  expect((await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: 'Again' } })).status).toBe(200);
  const transcript = await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey });
  expect(transcript.status).toBe(200);
  const messages = transcript.body.messages as { id: string; role: string }[];
  return { sessionId, user: messages.filter((m) => m.role === 'user').map((m) => m.id), agent: messages.filter((m) => m.role === 'assistant').map((m) => m.id) };
}

const rate = (json: unknown, key = t.adminKey) => api.post('/api/v1/feedback', { key, json });

it('records a rating as a feedback analytics event with the session id, and answers it', async () => {
  const c = await conversation();
  const res = await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 'up', comment: '  Quick and right  ' });
  expect(res.status).toBe(201);
  expect(res.body).toEqual({
    success: true,
    feedback: { id: `${c.sessionId}:fb:${c.agent[0]}`, sessionId: c.sessionId, messageId: c.agent[0], rating: 'up', score: 1, comment: 'Quick and right', createdAt: expect.any(String) },
  });
  const events = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, sessionId: c.sessionId, category: 'feedback' }).lean();
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({
    _id: `${c.sessionId}:fb:${c.agent[0]}`,
    projectId: t.projectId,
    eventType: 'feedback.submitted',
    agentName: 'Echo',
    channel: 'api',
    metadata: { messageId: c.agent[0], rating: 'up', score: 1, comment: 'Quick and right' },
  });
});

it('takes down and the integers 1 to 5, each scored from 0 to 1', async () => {
  const c = await conversation();
  const down = await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 'down' });
  expect(down.status).toBe(201);
  expect(down.body.feedback).toMatchObject({ rating: 'down', score: 0, comment: null });
  const stars = await rate({ sessionId: c.sessionId, messageId: c.agent[1], rating: 4 });
  expect(stars.status).toBe(201);
  expect(stars.body.feedback).toMatchObject({ rating: 4, score: 0.75 });
  for (const rating of [1, 5]) {
    const again = await conversation();
    const res = await rate({ sessionId: again.sessionId, messageId: again.agent[0], rating });
    expect(res.status).toBe(201);
    expect(res.body.feedback.score).toBe((rating - 1) / 4);
  }
});

it('refuses any other rating, and a comment over 2000 characters, with 400 and records nothing', async () => {
  const c = await conversation();
  for (const rating of [0, 6, 2.5, '3', 'UP', 'meh', null, true, -1]) {
    const res = await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating });
    expect({ rating, status: res.status }).toEqual({ rating, status: 400 });
  }
  expect((await rate({ sessionId: c.sessionId, messageId: c.agent[0] })).status).toBe(400);
  expect((await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 'up', comment: 'x'.repeat(2001) })).status).toBe(400);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ sessionId: c.sessionId, category: 'feedback' })).toBe(0);
});

it('rates a reply once: the same rating again is 200 with the first, a different one is 409', async () => {
  const c = await conversation();
  const first = await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 5, comment: 'Great' });
  expect(first.status).toBe(201);
  const retry = await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 5, comment: 'Great' });
  expect(retry.status).toBe(200);
  expect(retry.body.feedback).toEqual(first.body.feedback);
  const changed = await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 1 });
  expect(changed.status).toBe(409);
  expect(changed.body.error.code).toBe('CONFLICT');
  const events = await stack.ctx.models.AnalyticsEvent.find({ sessionId: c.sessionId, category: 'feedback' }).lean();
  expect(events.map((e) => e.metadata)).toEqual([{ messageId: c.agent[0], rating: 5, score: 1, comment: 'Great' }]);
});

it("answers 404 for another session's message or an unknown one, and 400 for a user's message", async () => {
  const a = await conversation();
  const b = await conversation();
  const cross = await rate({ sessionId: a.sessionId, messageId: b.agent[0], rating: 'up' });
  expect(cross.status).toBe(404);
  expect((await rate({ sessionId: a.sessionId, messageId: `${a.sessionId}:m999`, rating: 'up' })).status).toBe(404);
  expect((await rate({ sessionId: '00000000-0000-4000-8000-000000000000', messageId: a.agent[0], rating: 'up' })).status).toBe(404);
  const user = await rate({ sessionId: a.sessionId, messageId: a.user[0], rating: 'up' });
  expect(user.status).toBe(400);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ sessionId: { $in: [a.sessionId, b.sessionId] }, category: 'feedback' })).toBe(0);
});

it('needs session:execute', async () => {
  const c = await conversation();
  const reader = await t.keyWith(['session:read']);
  expect((await rate({ sessionId: c.sessionId, messageId: c.agent[0], rating: 'up' }, reader)).status).toBe(403);
});
