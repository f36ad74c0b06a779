// {{secrets.NAME}} through a real turn: the tool activity resolves the tool's own secret and the
// project-wide one, sends them to the tool server, sees a rotation at the very next call, and
// fails with a clear tool_error naming an expired or missing secret. No value reaches the reply,
// the trace, the stored transcript and trace, the API's answers or the workflow history.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '../../../lib/logger';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { chatOnce, publishAgent } from '../../support/agents';
import { flushProjection } from '../../support/projection';
import { payloadText, sessionHistory } from '../../support/workflow-history';

const TOKEN_V1 = 'tok-first-8d2f6b1e';
const TOKEN_V2 = 'tok-second-3a9c7e55';
const PROJECT_KEY = 'proj-wide-41f0c2aa';
const ALL_VALUES = [TOKEN_V1, TOKEN_V2, PROJECT_KEY];

let tools: Server;
let toolsUrl: string;
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const received: IncomingHttpHeaders[] = [];
// Every line the API and the worker log, at the most verbose level.
const logLines: string[] = [];

const agent = (name: string, tokenName: string) => `AGENT: ${name}
GOAL: "Check an order."
TOOLS:
  check_order() -> {status: string, echoed: string}
    type: http
    endpoint: "${toolsUrl}/orders/42"
    method: GET
    auth: bearer
    auth_config:
      token: "{{secrets.${tokenName}}}"
    headers:
      X-Project-Key: "{{secrets.PROJECT_KEY}}"
FLOW:
  steps: [check]
  check:
    REASONING: false
    CALL: check_order
    AS: order
    ON_SUCCESS:
      RESPOND: "Order is {{order.status}} (server saw {{order.echoed}})"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "I could not check the order."
      THEN: COMPLETE
`;

beforeAll(async () => {
  // The fake tool server records the headers it receives and, carelessly, echoes the credential.
  tools = createServer((req, res) => {
    received.push(req.headers);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'shipped', echoed: req.headers.authorization ?? '' }));
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [toolsUrl] }, logger: createLogger({ level: 'trace' }, sink) });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Order_Agent', agent('Order_Agent', 'API_TOKEN'));
  await publishAgent(api, t, 'Missing_Agent', agent('Missing_Agent', 'NEVER_STORED'));
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((r) => tools.close(r));
});

const ask = (agentId: string) => chatOnce(api, t, agentId, 'where is my order?');

async function storeSecret(toolName: string, secretKey: string, value: string) {
  const res = await api.post('/api/tool-secrets', { key: t.adminKey, json: { projectId: t.projectId, toolName, secretKey, value, allowedHosts: [new URL(toolsUrl).host] } });
  expect(res.status).toBe(201);
  return res.body.secret.id as string;
}

/** Everything a session left behind that someone could read: none may hold a secret value. */
async function everythingRecorded(sessionId: string): Promise<string> {
  await flushProjection(stack.ctx, sessionId);
  const stored = [
    await stack.ctx.models.TraceEvent.find({ tenantId: t.tenantId, sessionId }).lean(),
    await stack.ctx.models.TranscriptMessage.find({ tenantId: t.tenantId, sessionId }).lean(),
  ];
  const transcript = await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey });
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces`, { key: t.adminKey });
  const listed = await api.get(`/api/tool-secrets?projectId=${t.projectId}`, { key: t.adminKey });
  const audit = await api.get(`/api/projects/${t.projectId}/tool-secrets/audit`, { key: t.adminKey });
  return [JSON.stringify(stored), transcript.text, traces.text, listed.text, audit.text, payloadText(await sessionHistory(stack, sessionId))].join('\n');
}

it("sends the tool's own secret and the project-wide one, uses a rotated value at the next call, and records no value anywhere", async () => {
  const tokenId = await storeSecret('check_order', 'API_TOKEN', TOKEN_V1);
  await storeSecret('*', 'PROJECT_KEY', PROJECT_KEY);
  // A row for another tool under the same key is not this tool's.
  await storeSecret('other_tool', 'API_TOKEN', 'not-for-this-tool-0000');

  const first = await ask('Order_Agent');
  expect(received.at(-1)).toMatchObject({ authorization: `Bearer ${TOKEN_V1}`, 'x-project-key': PROJECT_KEY });
  // The echoed credential is scrubbed from the result before the agent, the trace or history see it.
  expect(first.response).toBe('Order is shipped (server saw Bearer [secret])');

  const rotated = await api.put(`/api/tool-secrets/${tokenId}`, { key: t.adminKey, json: { value: TOKEN_V2 } });
  expect(rotated.body.secret.version).toBe(2);
  const second = await ask('Order_Agent');
  expect(received.at(-1)).toMatchObject({ authorization: `Bearer ${TOKEN_V2}`, 'x-project-key': PROJECT_KEY });
  expect(second.response).toBe('Order is shipped (server saw Bearer [secret])');

  for (const res of [first, second]) {
    const recorded = res.text + (await everythingRecorded(res.sessionId));
    expect(recorded).toContain('[secret]');
    for (const value of ALL_VALUES) expect(recorded).not.toContain(value);
  }
});

it("uses the secrets of the session's environment: a staging deployment's session gets the staging row", async () => {
  const staging = await api.post('/api/tool-secrets', {
    key: t.adminKey,
    json: { projectId: t.projectId, toolName: 'check_order', secretKey: 'API_TOKEN', value: 'staging-token-5150', environment: 'staging', allowedHosts: [new URL(toolsUrl).host] },
  });
  expect(staging.status).toBe(201);
  const projectWide = await api.post('/api/tool-secrets', {
    key: t.adminKey,
    json: { projectId: t.projectId, toolName: '*', secretKey: 'PROJECT_KEY', value: 'staging-project-5150', environment: 'staging', allowedHosts: [new URL(toolsUrl).host] },
  });
  expect(projectWide.status).toBe(201);
  const deployed = await api.post(`/api/projects/${t.projectId}/deployments`, {
    key: t.adminKey,
    json: { environment: 'staging', agentVersionManifest: { Order_Agent: 'auto' }, entryAgentName: 'Order_Agent' },
  });
  expect(deployed.status).toBe(201);
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, environment: 'staging', message: 'where is my order?' } });
  expect(res.status).toBe(200);
  expect(received.at(-1)).toMatchObject({ authorization: 'Bearer staging-token-5150', 'x-project-key': 'staging-project-5150' });
});

it('fails the call with a tool_error naming an expired secret, and the agent takes its ON_FAIL path', async () => {
  const before = received.length;
  const row = await stack.ctx.models.ToolSecret.findOne({ tenantId: t.tenantId, toolName: 'check_order', secretKey: 'API_TOKEN' }).lean();
  // Past its expiry now (a create or rotate only takes a future one).
  await stack.ctx.models.ToolSecret.updateOne({ _id: row!._id, tenantId: t.tenantId }, { $set: { expiresAt: new Date(Date.now() - 1000) } });

  const res = await ask('Order_Agent');
  expect(res.response).toBe('I could not check the order.');
  expect(received.length).toBe(before);
  const result = res.traceEvents.find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({
    tool: 'check_order',
    success: false,
    error: { kind: 'tool_error', message: expect.stringMatching(/^Tool check_order: secret "API_TOKEN" for tool check_order in environment "dev" expired at /) },
  });
  const recorded = res.text + (await everythingRecorded(res.sessionId));
  expect(recorded).toContain('secret \\"API_TOKEN\\"');
  for (const value of ALL_VALUES) expect(recorded).not.toContain(value);
});

it('fails the call with a tool_error naming a secret that was never stored', async () => {
  const res = await ask('Missing_Agent');
  expect(res.response).toBe('I could not check the order.');
  const result = res.traceEvents.find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({
    success: false,
    error: { kind: 'tool_error', message: expect.stringContaining('secret "NEVER_STORED" is not set for tool check_order in environment "dev"') },
  });
});

it('logs no secret value, at any level', () => {
  expect(logLines.length).toBeGreaterThan(0);
  const logged = logLines.join('');
  for (const value of ALL_VALUES) expect(logged).not.toContain(value);
});
