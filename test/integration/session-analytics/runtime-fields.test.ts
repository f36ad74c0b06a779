// The session fields the public analytics filter on are recorded by the runtime for every
// session: real turns on the real stack, then the public list shows their message, trace-event
// and token counts, the `_meta` dimensions the agent set, the containment type and status (a
// session the agent completed, one still going, one escalated to a person), and the app user's
// channel identity; a call's caller number is kept only as a blind index, found by any spelling.
import { client } from '../../support/http';
import { escalationAgent, publishAgent } from '../../support/agents';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { scopedKey } from '../telephony/recording-fixtures';
import { startSession } from '../../../core/sessions/start';
import { callerNumberIndexOf } from '../../../core/telephony/caller-number';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let key: string;

const tagger = `AGENT: Tagger
GOAL: "Tag the session, then finish."
FLOW:
  steps: [greet, done]
  greet:
    REASONING: false
    SET:
      - _meta.region = "emea"
      - _meta.tier = 3
    RESPOND: "Hello."
    ON_INPUT:
      - ELSE:
        THEN: done
  done:
    REASONING: false
    RESPOND: "Bye."
    THEN: COMPLETE
`;

const chatter = `AGENT: Chatter
GOAL: "Keep talking."
FLOW:
  steps: [talk]
  talk:
    REASONING: false
    SET:
      - _meta = {channel_kind: "test", vip: true}
    RESPOND: "Go on."
    ON_INPUT:
      - ELSE:
        THEN: talk
`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Tagger', tagger);
  await publishAgent(api, t, 'Chatter', chatter);
  await publishAgent(api, t, 'Approvals', escalationAgent({ name: 'Approvals', goal: 'Approve big amounts.', over: 100, reason: 'Amount {{amount}}', respond: 'Approved.' }));
  ({ key } = await scopedKey(stack.ctx, t, ['SESSIONS_LIST']));
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const chat = async (body: Record<string, unknown>) => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...body } });
  expect(res.status).toBe(200);
  return res.body as { sessionId: string };
};

async function summary(sessionId: string) {
  await flushProjection(stack.ctx, sessionId);
  const res = await api.get(`/api/public/analytics/projects/${t.projectId}/sessions?sessionIds=${sessionId}`, { headers: { 'x-api-key': key } });
  expect(res.status).toBe(200);
  expect(res.body.sessions).toHaveLength(1);
  return res.body.sessions[0];
}

it('a session the agent completed: contained_resolved, completed, its counts and the _meta dimensions it set', async () => {
  // The first message is the step's input: the agent answers and completes in that turn.
  const { sessionId } = await chat({ agentId: 'Tagger', message: 'hi' });
  const s = await summary(sessionId);
  expect(s).toMatchObject({
    id: sessionId,
    channel: 'api',
    environment: 'dev',
    status: 'completed',
    containmentType: 'contained_resolved',
    messageCount: { user: 1, agent: 1, total: 2 },
    traceDimensions: { region: 'emea', tier: 3 },
    isTest: null,
  });
  expect(s.endedAt).toEqual(expect.any(String));
  expect(s.traceEventCount.total).toBeGreaterThan(0);
  expect(s.traceEventCount.error).toBe(0);
  expect(s.durationMs).toBe(Date.parse(s.endedAt) - Date.parse(s.createdAt));

  // Found by its dimensions, in the query string and in a body (where a number stays a number).
  const byQuery = await api.get(`/api/public/analytics/projects/${t.projectId}/sessions?sessionIds=${sessionId}&traceDimensions[region]=emea&traceDimensions[tier]=3`, { headers: { 'x-api-key': key } });
  expect(byQuery.body.sessions.map((x: { id: string }) => x.id)).toEqual([sessionId]);
  const miss = await api.get(`/api/public/analytics/projects/${t.projectId}/sessions?sessionIds=${sessionId}&traceDimensions[region]=apac`, { headers: { 'x-api-key': key } });
  expect(miss.body.sessions).toEqual([]);
  const byBody = await api.post(`/api/public/analytics/projects/${t.projectId}/sessions`, { headers: { 'x-api-key': key }, json: { sessionIds: [sessionId], traceDimensions: { tier: [2, 3] }, containmentType: ['contained_resolved'], status: 'completed' } });
  expect(byBody.status).toBe(200);
  expect(byBody.body.sessions.map((x: { id: string }) => x.id)).toEqual([sessionId]);
});

it('a session still going is contained and active; `_meta = {…}` sets several dimensions', async () => {
  const { sessionId } = await chat({ agentId: 'Chatter', message: 'one' });
  await chat({ sessionId, message: 'two' });
  const s = await summary(sessionId);
  expect(s).toMatchObject({ status: 'active', containmentType: 'contained', endedAt: null, traceDimensions: { channel_kind: 'test', vip: true } });
  expect(s.messageCount).toEqual({ user: 2, agent: 2, total: 4 });
  const vip = await api.post(`/api/public/analytics/projects/${t.projectId}/sessions`, { headers: { 'x-api-key': key }, json: { sessionIds: [sessionId], traceDimensions: { vip: true }, status: 'active' } });
  expect(vip.body.sessions).toHaveLength(1);
});

it('a session handed to a person is escalated, in containment and status', async () => {
  const { sessionId } = await chat({ agentId: 'Approvals', message: 'approve please' });
  await chat({ sessionId, message: '500' });
  const s = await summary(sessionId);
  expect(s).toMatchObject({ status: 'escalated', containmentType: 'escalated' });
  expect(s.traceEventCount.decision).toBeGreaterThan(0);
  const escalatedOnly = await api.get(`/api/public/analytics/projects/${t.projectId}/sessions?sessionIds=${sessionId}&containmentType=escalated&status=escalated`, { headers: { 'x-api-key': key } });
  expect(escalatedOnly.body.sessions).toHaveLength(1);
});

it("keeps a call's caller number only as a blind index, found by any spelling of it", async () => {
  const identity = { callerNumberIndex: callerNumberIndexOf(stack.ctx, t.tenantId, '+1 (415) 555-0100'), channelUId: 'u-caller' };
  const { session } = await startSession(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId, agentId: null, agentName: 'Chatter', channel: 'voice', identity });
  const stored = await stack.ctx.models.Session.findById(session._id).lean();
  // The number appears nowhere; the index is a hash, which may hold the digits by chance.
  const { callerNumberIndex: _index, ...rest } = stored!;
  expect(JSON.stringify(rest)).not.toContain('415');
  expect(stored!.callerNumberIndex).toMatch(/^[0-9a-f]{64}$/);
  for (const spelling of ['+14155550100', '14155550100', 'tel:+1-415-555-0100']) {
    const res = await api.post(`/api/public/analytics/projects/${t.projectId}/sessions`, { headers: { 'x-api-key': key }, json: { sessionIds: [session._id], callerNumber: [spelling] } });
    expect(res.status).toBe(200);
    expect(res.body.sessions.map((x: { id: string }) => x.id)).toEqual([session._id]);
  }
  const other = await api.post(`/api/public/analytics/projects/${t.projectId}/sessions`, { headers: { 'x-api-key': key }, json: { sessionIds: [session._id], callerNumber: ['4155550100'] } });
  expect(other.body.sessions).toEqual([]);
  const byUser = await api.get(`/api/public/analytics/projects/${t.projectId}/sessions?sessionIds=${session._id}&channelUId=u-caller&channel=voice_realtime`, { headers: { 'x-api-key': key } });
  expect(byUser.body.sessions).toHaveLength(1);
});
