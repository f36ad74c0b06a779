// Resolved secrets are scrubbed from what a tool call returns or throws before anything is cut
// short: a tool server that echoes a credential right where its answer is cut (the 4xx body kept
// in the failure's details) must not leave the first part of the secret in clear in the trace,
// the stored records or workflow history.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { publishAgent } from '../support/agents';
import { flushProjection } from '../support/projection';
import { payloadText, sessionHistory } from '../support/workflow-history';

const SECRET = 'zq7Kx9PwLm3Rt8VbN2sYc4Hd';
/** A piece of the secret that falls before the cut. */
const HEAD = SECRET.slice(0, 8);

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let tools: Server;
let toolsUrl: string;

beforeAll(async () => {
  // Answers 400 with a body that echoes the credential across the 500th character.
  tools = createServer((req, res) => {
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    res.writeHead(400, { 'content-type': 'text/plain' });
    res.end('e'.repeat(490) + token + ' and more text after it');
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [toolsUrl] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(
    api,
    t,
    'Echo_Agent',
    `AGENT: Echo_Agent
GOAL: "Look something up."
TOOLS:
  look_up() -> {status: string}
    type: http
    endpoint: "${toolsUrl}/lookup"
    method: GET
    auth: bearer
    auth_config:
      token: "{{secrets.LOOKUP_TOKEN}}"
FLOW:
  steps: [go]
  go:
    REASONING: false
    CALL: look_up
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.status}}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "The lookup failed."
      THEN: COMPLETE
`,
  );
  const created = await api.post('/api/tool-secrets', {
    key: t.adminKey,
    json: { projectId: t.projectId, toolName: 'look_up', secretKey: 'LOOKUP_TOKEN', value: SECRET, allowedHosts: [new URL(toolsUrl).host] },
  });
  // Without a host list (code before lists) the secret is created the old way.
  if (created.status !== 201) {
    const legacy = await api.post('/api/tool-secrets', { key: t.adminKey, json: { projectId: t.projectId, toolName: 'look_up', secretKey: 'LOOKUP_TOKEN', value: SECRET } });
    expect(legacy.status).toBe(201);
  }
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((r) => tools.close(r));
});

it('leaves no part of a secret cut at the 4xx body limit in the trace, the records or workflow history', async () => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Echo_Agent', message: 'look it up' } });
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('The lookup failed.');
  const sessionId = res.body.sessionId as string;
  await flushProjection(stack.ctx, sessionId);
  const recorded = [
    res.text,
    JSON.stringify(await stack.ctx.models.TraceEvent.find({ tenantId: t.tenantId, sessionId }).lean()),
    (await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces`, { key: t.adminKey })).text,
    payloadText(await sessionHistory(stack, sessionId)),
  ].join('\n');
  // The failure's details did reach history: the test looks where the cut body is kept.
  expect(recorded).toContain('e'.repeat(400));
  expect(recorded).toContain('[secret]');
  expect(recorded).not.toContain(HEAD);
});
