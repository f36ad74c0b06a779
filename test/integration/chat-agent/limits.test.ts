// The chat endpoint's limits and configuration errors: 503 runtime not configured, the session
// message rate and the concurrent-session cap (429 with retryAfterMs), per-turn metadata.
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { inFreshWindow } from '../../support/rate-window';

const stacks: TestStack[] = [];
afterAll(async () => {
  for (const s of stacks) await s.close();
});

async function setup(env: Record<string, string>) {
  const stack = await startTestStack({ worker: true, env });
  stacks.push(stack);
  const t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  const api = client(stack.baseUrl);
  const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
  return { stack, t, api, chat };
}

it('answers 503 runtime not configured when no model resolves, and starts nothing', async () => {
  const { stack, t, chat } = await setup({ LLM_TIER_FAST: 'openai:gpt-4o-mini', LLM_TIER_BALANCED: 'openai:gpt-4o-mini', LLM_TIER_POWERFUL: 'openai:gpt-4o-mini' });
  const res = await chat({ message: 'hello' });
  expect(res.status).toBe(503);
  expect(res.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('Runtime not configured') });
  expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId })).toBe(0);
});

it('limits messages per session per minute with a 429 carrying retryAfterMs', async () => {
  await inFreshWindow();
  const { chat } = await setup({ SESSION_MESSAGES_PER_MINUTE: '2' });
  const first = await chat({ message: 'hello' });
  const sessionId = first.body.sessionId;
  expect((await chat({ sessionId, message: 'one' })).status).toBe(200);
  expect((await chat({ sessionId, message: 'two' })).status).toBe(200);
  const limited = await chat({ sessionId, message: 'three' });
  expect(limited.status).toBe(429);
  expect(limited.body).toEqual({
    success: false,
    error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Session message rate limit exceeded' },
    retryAfterMs: expect.any(Number),
  });
  expect(limited.headers.get('retry-after')).toEqual(expect.any(String));
  // Another session is not affected.
  expect((await chat({ message: 'hello' })).status).toBe(200);
});

it('caps concurrent active sessions per tenant', async () => {
  const { chat } = await setup({ MAX_CONCURRENT_SESSIONS: '2' });
  expect((await chat({ message: 'hello' })).status).toBe(200);
  const second = await chat({ message: 'hello' });
  expect(second.status).toBe(200);
  const third = await chat({ message: 'hello' });
  expect(third.status).toBe(429);
  expect(third.body.error.message).toBe('Concurrent session limit exceeded');
  expect(third.body.retryAfterMs).toBeGreaterThan(0);
  // Existing sessions keep talking.
  expect((await chat({ sessionId: second.body.sessionId, message: 'still here' })).status).toBe(200);
});

it('makes metadata visible for its own turn only', async () => {
  const { t, api, chat } = await setup({});
  const source = `AGENT: Meta_Agent
GOAL: "Echo the plan."
FLOW:
  steps: [echo]
  echo:
    REASONING: false
    RESPOND: "Plan: {{session.messageMetadata.plan}}."
    ON_INPUT:
      - ELSE:
        THEN: echo
`;
  await publishAgent(api, t, 'Meta_Agent', source);
  const first = await chat({ agentId: 'Meta_Agent', message: 'hi', metadata: { plan: 'gold' } });
  expect(first.status).toBe(200);
  expect(first.body.response).toContain('Plan: gold.');
  const second = await chat({ sessionId: first.body.sessionId, message: 'again' });
  expect(second.body.response).toContain('Plan: .');
});

it('sheds load with 429 QUEUE_FULL when too many turns are in flight', async () => {
  const { chat } = await setup({ MAX_TURNS_IN_FLIGHT: '1' });
  const results = await Promise.all(Array.from({ length: 6 }, () => chat({ message: 'hello' })));
  const statuses = results.map((r) => r.status);
  expect(statuses).toContain(200);
  const full = results.find((r) => r.status === 429);
  expect(full?.body).toEqual({ success: false, error: { code: 'QUEUE_FULL', message: 'Execution queue full' }, retryAfterMs: 1000 });
  expect(full?.headers.get('retry-after')).toBe('1');
});

it('counts sessions made with POST /sessions against the same cap', async () => {
  const { t, api } = await setup({ MAX_CONCURRENT_SESSIONS: '1' });
  const create = () => api.post(`/api/projects/${t.projectId}/sessions`, { key: t.adminKey, json: { agentId: 'Support_Hub' } });
  expect((await create()).status).toBe(201);
  const refused = await create();
  expect(refused.status).toBe(429);
  expect(refused.body).toMatchObject({ error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Concurrent session limit exceeded' }, retryAfterMs: 60000 });
});

it('seeds the first turn from testContext: variables, caller and the starting step', async () => {
  const { t, api, chat } = await setup({});
  const source = `AGENT: Context_Agent
GOAL: "Show what the test seeded."
FLOW:
  steps: [intro, show]
  intro:
    REASONING: false
    RESPOND: "Intro."
    THEN: show
  show:
    REASONING: false
    RESPOND: "{{tier}} / {{caller.userId}} / {{channel}}"
    ON_INPUT:
      - ELSE:
        THEN: show
`;
  await publishAgent(api, t, 'Context_Agent', source);
  const res = await chat({
    agentId: 'Context_Agent',
    message: 'hi',
    testContext: { sessionVariables: { tier: 'gold' }, callerContext: { userId: 'u-7', channel: 'web_debug' }, startAtStep: 'show' },
  });
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('gold / u-7 / web_debug');
  expect(res.body.response).not.toContain('Intro.');
});

it('hands channels the waiting step\'s rich content and actions', async () => {
  const { t, api, chat } = await setup({});
  const source = `AGENT: Choice_Agent
GOAL: "Ask a yes/no question."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    RESPOND: "Shall I go on?"
    RICH_CONTENT:
      markdown: "**Shall I go on?**"
    ACTIONS:
      - id: yes
        label: "Yes"
      - id: no
        label: "No"
    ON_INPUT:
      - IF: yes
        THEN: done
      - ELSE:
        THEN: ask
  done:
    REASONING: false
    RESPOND: "Done."
`;
  await publishAgent(api, t, 'Choice_Agent', source);
  const first = await chat({ agentId: 'Choice_Agent', message: 'hi' });
  expect(first.status).toBe(200);
  expect(first.body.richContent).toEqual({ markdown: '**Shall I go on?**' });
  expect(first.body.actions).toEqual({ items: [{ id: 'yes', label: 'Yes' }, { id: 'no', label: 'No' }] });
  const second = await chat({ sessionId: first.body.sessionId, message: 'yes' });
  expect(second.body.response).toContain('Done.');
  expect(second.body.actions).toBeUndefined();
});
