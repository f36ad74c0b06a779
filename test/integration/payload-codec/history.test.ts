// Nothing secret in Temporal history: a session's messages, its tool calls' headers and the
// tenant's API key never appear in the stored history's bytes, which only the payload codec
// (worker, API, the /codec endpoint) turns back into what the workflow saw.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { historyBytes, rawSessionHistory, sessionHistory, storedHistory } from '../../support/workflow-history';

const HEADER_MARKER = 'hdr-marker-9c41e7a2';
/** In a tool's name, so the failure message of its HTTP 404 ("Tool <name> answered HTTP 404") carries it. */
const FAILURE_MARKER = 'missing_tool_marker_4d7e';
const MESSAGE_MARKER = 'msg-marker-5b02d8f3';

let tools: Server;
let stack: TestStack;
let t: SeededTenant;
const seenHeaders: IncomingHttpHeaders[] = [];

const agent = (port: number) => `AGENT: Vault_Agent
GOAL: "Look up an account."
TOOLS:
  lookup() -> {status: string}
    type: http
    endpoint: "http://127.0.0.1:${port}/lookup"
    method: GET
    headers:
      X-Vault-Token: "${HEADER_MARKER}"
FLOW:
  steps: [look]
  look:
    REASONING: false
    CALL: lookup
    AS: found
    ON_SUCCESS:
      RESPOND: "Account is {{found.status}}."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Lookup failed."
      THEN: COMPLETE
`;

beforeAll(async () => {
  tools = createServer((req, res) => {
    seenHeaders.push(req.headers);
    if (req.url === '/missing') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'open' }));
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  const port = (tools.address() as AddressInfo).port;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [`http://127.0.0.1:${port}`] } });
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), t, 'Vault_Agent', agent(port));
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((r) => tools.close(r));
});

it('keeps messages, tool headers and the API key out of the stored history, and the codec reads them back', async () => {
  expect(stack.ctx.payloadCodec).not.toBeNull();
  const res = await client(stack.baseUrl).post('/api/v1/chat/agent', {
    key: t.adminKey,
    json: { projectId: t.projectId, agentId: 'Vault_Agent', message: `check account ${MESSAGE_MARKER}` },
  });
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Account is open.');
  // The tool really was called with the header: the marker travelled through the session.
  expect(seenHeaders.map((h) => h['x-vault-token'])).toContain(HEADER_MARKER);

  // What an ops team's tools read: the history straight from Temporal, with the default converter.
  const raw = await storedHistory(stack, `session/${res.body.sessionId}`);
  expect(raw.events?.length).toBeGreaterThan(5);
  const stored = historyBytes(raw);
  for (const secret of [HEADER_MARKER, MESSAGE_MARKER, t.adminKey]) {
    expect(stored.includes(secret)).toBe(false);
    expect(stored.includes(Buffer.from(secret).toString('base64'))).toBe(false);
  }
  // The payloads are there, encrypted and naming their key.
  expect(stored.includes('binary/encrypted')).toBe(true);
  expect(stored.includes(stack.ctx.payloadCodec!.currentKeyId)).toBe(true);

  // The same history through the codec holds both markers (and still no API key).
  const decoded = historyBytes(await sessionHistory(stack, res.body.sessionId));
  expect(decoded.includes(HEADER_MARKER)).toBe(true);
  expect(decoded.includes(MESSAGE_MARKER)).toBe(true);
  expect(decoded.includes(t.adminKey)).toBe(false);
  // The raw history read through the API's client is the same ciphertext: fetchHistory never decodes.
  expect(historyBytes(await rawSessionHistory(stack, res.body.sessionId)).includes(MESSAGE_MARKER)).toBe(false);
});

it('keeps failure messages out of the stored history too, and the workflow still sees them', async () => {
  const agentText = `AGENT: Failing_Agent
GOAL: "Call a tool that is not there."
TOOLS:
  ${FAILURE_MARKER}() -> {status: string}
    type: http
    endpoint: "http://127.0.0.1:${(tools.address() as AddressInfo).port}/missing"
    method: GET
FLOW:
  steps: [look]
  look:
    REASONING: false
    CALL: ${FAILURE_MARKER}
    AS: found
    ON_SUCCESS:
      RESPOND: "Found."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Lookup failed."
      THEN: COMPLETE
`;
  await publishAgent(client(stack.baseUrl), t, 'Failing_Agent', agentText);
  const res = await client(stack.baseUrl).post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Failing_Agent', message: 'look it up' } });
  expect(res.status).toBe(200);
  // The workflow saw the failure (its type reached ON_FAIL) through the codec.
  expect(res.body.response).toBe('Lookup failed.');

  const raw = await storedHistory(stack, `session/${res.body.sessionId}`);
  const failed = (raw.events ?? []).filter((e) => e.activityTaskFailedEventAttributes);
  expect(failed.length).toBeGreaterThan(0);
  // The failure's message and stack trace are in its encoded attributes, which the codec encrypted.
  const failure = failed[0]!.activityTaskFailedEventAttributes!.failure!;
  expect(failure.message).toBe('Encoded failure');
  expect(failure.encodedAttributes?.metadata?.encoding && Buffer.from(failure.encodedAttributes.metadata.encoding).toString()).toBe('binary/encrypted');
  const stored = historyBytes(raw);
  expect(stored.includes(`Tool ${FAILURE_MARKER} answered HTTP 404`)).toBe(false);
  // Decoded, the message is back.
  const decoded = historyBytes(await sessionHistory(stack, res.body.sessionId));
  expect(decoded.includes(`Tool ${FAILURE_MARKER} answered HTTP 404`)).toBe(true);
});
