// Retiring a deployment while a session on it is mid-conversation, on the real stack: the
// DeploymentDrain workflow lets the turn in progress finish and answer, then the session ends
// (`deployment_retired`) and a further message is 409; the drain reports it drained.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';

jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let tools: Server;
/** Tool calls after the first, held until the test lets them answer. */
const held: ServerResponse[] = [];
let calls = 0;
const answer = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ answer: 'sunny' }));

const agent = (port: number) => `AGENT: Slow_Desk
GOAL: "Look things up slowly."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "http://127.0.0.1:${port}/lookup"
    method: GET
    timeout: 30000
FLOW:
  entry_point: hello
  steps: [hello, fetch]
  hello:
    REASONING: false
    RESPOND: "Ask me."
    ON_INPUT:
      - ELSE:
        THEN: fetch
  fetch:
    REASONING: false
    CALL: lookup(q = "weather")
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
      THEN: hello
    ON_FAIL:
      RESPOND: "Lookup failed"
      THEN: hello
`;

beforeAll(async () => {
  tools = createServer((_req, res) => (++calls === 1 ? answer(res) : held.push(res)));
  await new Promise<void>((resolve) => tools.listen(0, '127.0.0.1', resolve));
  const port = (tools.address() as AddressInfo).port;
  stack = await startTestStack({
    worker: true,
    allowPrivate: { tools: [`http://127.0.0.1:${port}`] },
    env: { DEPLOYMENT_DRAIN_IDLE_MS: '1000', DEPLOYMENT_DRAIN_POLL_MS: '200', DEPLOYMENT_DRAIN_TIMEOUT_MS: '120000' },
  });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx, 'deploy-drain');
  await publishAgent(api, t, 'Slow_Desk', agent(port));
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((resolve) => tools.close(resolve));
});

const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });

it('lets the turn in progress finish, then ends the session; a later message is 409', async () => {
  const deployment = (await api.post(`/api/projects/${t.projectId}/deployments`, { key: t.adminKey, json: { environment: 'production', agentVersionManifest: { Slow_Desk: 'auto' }, entryAgentName: 'Slow_Desk' } })).body.deployment;
  const first = await chat({ environment: 'production', message: 'hi' });
  expect(first.status).toBe(200);
  expect(first.body.response).toBe('Ask me.\n\nFound sunny\n\nAsk me.');
  const sessionId = first.body.sessionId as string;

  // The second turn waits in its tool call while the deployment is retired.
  const turn = chat({ sessionId, message: 'what is the weather?' });
  await eventually(async () => held.length, (n) => n === 1, 10_000);
  const retired = await api.post(`/api/projects/${t.projectId}/deployments/${deployment.id}/retire`, { key: t.adminKey });
  expect(retired.status).toBe(200);

  // The drain tells the session to end once it has been idle (its last message is the first turn's)…
  const session = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`);
  const signalled = await eventually(
    async () => ((await session.fetchHistory()).events ?? []).some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'end'),
    (seen) => seen,
    20_000,
    100,
  );
  expect(signalled).toBe(true);
  // …and the turn in progress still finishes and answers.
  answer(held.shift()!);
  const answered = await turn;
  expect(answered.status).toBe(200);
  expect(answered.body.response).toBe('Found sunny\n\nAsk me.');

  expect(await session.result()).toEqual({ status: 'ended', reason: 'deployment_retired' });
  const late = await chat({ sessionId, message: 'still there?' });
  expect(late.status).toBe(409);
  const drain = (await stack.ctx.temporal.client()).workflow.getHandle(`deployment-drain/${deployment.id}`);
  expect(await drain.result()).toEqual({ outcome: 'drained', endedSessions: 1 });
  const record = await stack.ctx.models.Session.findById(sessionId).lean();
  expect(record).toMatchObject({ status: 'ended', endReason: 'deployment_retired', deploymentId: deployment.id });
});
