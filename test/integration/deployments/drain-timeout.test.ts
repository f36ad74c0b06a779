// The drain's timeout on the real stack: a session that is far from idle is still ended once
// DEPLOYMENT_DRAIN_TIMEOUT_MS has passed since the retire; the drain reports `timed_out`. A
// deployment rolled back while its drain runs is no longer drained: its sessions carry on.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';

jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

const speaker = `AGENT: Chatty
GOAL: "Keep talking."
FLOW:
  entry_point: hello
  steps: [hello]
  hello:
    REASONING: false
    RESPOND: "Still here."
    ON_INPUT:
      - ELSE:
        THEN: hello
`;

beforeAll(async () => {
  // Idle never triggers within the test: only the timeout can end a session.
  stack = await startTestStack({ worker: true, env: { DEPLOYMENT_DRAIN_IDLE_MS: '600000', DEPLOYMENT_DRAIN_POLL_MS: '200', DEPLOYMENT_DRAIN_TIMEOUT_MS: '5000' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx, 'drain-timeout');
  await publishAgent(api, t, 'Chatty', speaker);
});
afterAll(() => stack.close());

const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
const deploy = async () =>
  (await api.post(`/api/projects/${t.projectId}/deployments`, { key: t.adminKey, json: { environment: 'dev', agentVersionManifest: { Chatty: 'auto' }, entryAgentName: 'Chatty' } })).body.deployment as { id: string };

it('ends a session that is not idle at the drain timeout', async () => {
  const deployment = await deploy();
  const first = await chat({ deploymentId: deployment.id, message: 'hi' });
  expect(first.status).toBe(200);
  expect((await api.post(`/api/projects/${t.projectId}/deployments/${deployment.id}/retire`, { key: t.adminKey })).status).toBe(200);
  const drain = (await stack.ctx.temporal.client()).workflow.getHandle(`deployment-drain/${deployment.id}`);
  expect(await drain.result()).toEqual({ outcome: 'timed_out', endedSessions: 1 });
  const session = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${first.body.sessionId}`);
  expect(await session.result()).toEqual({ status: 'ended', reason: 'deployment_retired' });
});

it('stops draining a deployment that is rolled back, and its sessions carry on', async () => {
  const deployment = await deploy();
  const first = await chat({ deploymentId: deployment.id, message: 'hi' });
  const sessionId = first.body.sessionId as string;
  // The rollback comes within a few requests, long before the timeout (5 s) and idle (10 min).
  expect((await api.post(`/api/projects/${t.projectId}/deployments/${deployment.id}/retire`, { key: t.adminKey })).status).toBe(200);
  expect((await api.post(`/api/projects/${t.projectId}/deployments/${deployment.id}/rollback`, { key: t.adminKey })).status).toBe(200);
  const drain = (await stack.ctx.temporal.client()).workflow.getHandle(`deployment-drain/${deployment.id}`);
  // `reactivated` when it saw the retire before the rollback, `not_retired` when it looked after.
  const result = await drain.result();
  expect(result.endedSessions).toBe(0);
  expect(['reactivated', 'not_retired']).toContain(result.outcome);
  const again = await chat({ sessionId, message: 'still there?' });
  expect(again.status).toBe(200);
  expect((await stack.ctx.models.Session.findById(sessionId).lean())?.status).toBe('active');
});
