// Tool destination rules end to end, with the protection on as in production: an agent turn whose
// HTTP tool aims at loopback (a literal, its IPv6 spelling, a name resolving to it) gets a tool
// error and the server there receives nothing, while the one host:port the stack allows answers.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(60_000);

interface Trace {
  type: string;
  data: Record<string, unknown>;
}

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let internal: Server;
let allowed: Server;
const internalRequests: string[] = [];
let allowedRequests = 0;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

const lookupAgent = (name: string, endpoint: string) => `AGENT: ${name}
GOAL: "Look the weather up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "${endpoint}"
    method: GET
FLOW:
  steps: [fetch]
  fetch:
    REASONING: false
    CALL: lookup(q = "weather")
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
    ON_FAIL:
      RESPOND: "Lookup failed"
`;

const answer = (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ answer: 'sunny' }));
};

let internalPort: number;

beforeAll(async () => {
  internal = createServer((req, res) => {
    internalRequests.push(req.url ?? '');
    answer(res);
  });
  allowed = createServer((_req, res) => {
    allowedRequests += 1;
    answer(res);
  });
  internalPort = await listen(internal);
  const allowedPort = await listen(allowed);
  // The stack allows the one tool server it is told about, as TOOL_ALLOWED_PRIVATE_DESTINATIONS would.
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [`http://127.0.0.1:${allowedPort}`] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Loopback_Literal', lookupAgent('Loopback_Literal', `http://127.0.0.1:${internalPort}/literal`));
  await publishAgent(api, t, 'Mapped_Literal', lookupAgent('Mapped_Literal', `http://[::ffff:127.0.0.1]:${internalPort}/mapped`));
  await publishAgent(api, t, 'Loopback_Name', lookupAgent('Loopback_Name', `http://localhost:${internalPort}/name`));
  await publishAgent(api, t, 'Allowed_Tool', lookupAgent('Allowed_Tool', `http://127.0.0.1:${allowedPort}/ok`));
});
afterAll(async () => {
  await stack.close();
  for (const server of [internal, allowed]) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

const turn = (agentId: string) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message: 'weather please' } });

it.each(['Loopback_Literal', 'Mapped_Literal', 'Loopback_Name'])('refuses the tool call of %s with a tool error; the server receives nothing', async (agentId) => {
  const res = await turn(agentId);
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Lookup failed');
  const result = (res.body.traceEvents as Trace[]).find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({
    tool: 'lookup',
    success: false,
    error: { kind: 'tool_error', message: expect.stringContaining('non-public addresses are refused') },
  });
  expect(internalRequests).toEqual([]);
});

it('reaches the host:port the configuration allows', async () => {
  const res = await turn('Allowed_Tool');
  expect(res.body.response).toBe('Found sunny');
  expect(allowedRequests).toBe(1);
  expect(internalRequests).toEqual([]);
});
