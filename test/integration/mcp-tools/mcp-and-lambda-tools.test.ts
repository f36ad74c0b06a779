// `type: mcp` and `type: lambda` tools through the real stack: an agent answers from a real MCP
// server written with the official SDK (streamable HTTP started here, and stdio run by node from
// the worker's allow-list) whose bearer token is a tool secret, and from a project function run in
// the code-tool sandbox; the project resources that declare them are tenant-scoped.
import { join } from 'node:path';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { chatOnce, publishAgent, type TraceEvent } from '../../support/agents';
import { toolResult } from '../../support/sandbox-agents';
import { startHttpMcpServer, type HttpMcpServer } from '../../support/mcp-server';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

const TOKEN = 'mcp-test-token-7f3a9c';
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
let mcp: HttpMcpServer;

beforeAll(async () => {
  mcp = await startHttpMcpServer(TOKEN);
  const root = join(__dirname, '../../..');
  stack = await startTestStack({
    worker: true,
    allowPrivate: { tools: [mcp.url] },
    env: {
      MCP_STDIO_SERVERS: JSON.stringify({
        orders: { command: process.execPath, args: ['--import', 'tsx', join(root, 'test/support/mcp-server.ts')], cwd: root },
      }),
    },
  });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
  await mcp.close();
});

/** An agent whose one flow step calls `tool` and answers with `respond`, or "Failed." (ON_FAIL). */
function agent(name: string, binding: string[], call: string, respond: string): string {
  return `AGENT: ${name}
GOAL: "Look orders up."
TOOLS:
  ${call.replace(/\(.*$/, '')}(id: string) -> object
${binding.map((l) => `    ${l}`).join('\n')}
FLOW:
  steps: [go]
  go:
    REASONING: false
    CALL: ${call}
    AS: out
    ON_SUCCESS:
      RESPOND: "${respond}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "Failed."
      THEN: COMPLETE
`;
}

const put = (path: string, json: unknown, key = t.adminKey) => api.put(`/api/projects/${t.projectId}${path}`, { key, json });
const toolCall = (events: TraceEvent[]) => events.find((e) => e.type === 'tool_call')!.data;

it('declares MCP servers per project: a credential only from a secret, listed by name, 404 across tenants', async () => {
  const inClear = await put('/mcp-servers/crm', { transport: 'http', url: mcp.url, headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(inClear.status).toBe(422);
  expect(inClear.body.error.message).toContain('{{secrets.');
  expect((await put('/mcp-servers/ws', { transport: 'websocket', url: 'wss://example.com/mcp' })).status).toBe(400);

  const created = await put('/mcp-servers/crm', { transport: 'http', url: mcp.url, headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}' } });
  expect(created.status).toBe(201);
  expect(created.body.server).toMatchObject({ name: 'crm', transport: 'http', url: mcp.url, headers: { Authorization: 'Bearer {{secrets.CRM_TOKEN}}' }, toolsCacheSeconds: 300 });
  expect((await put('/mcp-servers/local', { transport: 'stdio', stdioServer: 'orders' })).status).toBe(201);
  expect((await put('/mcp-servers/rogue', { transport: 'stdio', stdioServer: 'not-allowed' })).status).toBe(201);
  const list = await api.get(`/api/projects/${t.projectId}/mcp-servers?limit=2`, { key: t.adminKey });
  expect(list.status).toBe(200);
  expect(list.body).toMatchObject({ total: 3, offset: 0, limit: 2 });
  expect(list.body.servers.map((s: { name: string }) => s.name)).toEqual(['crm', 'local']);

  const other = await seedTenant(stack.ctx);
  expect((await api.get(`/api/projects/${t.projectId}/mcp-servers/crm`, { key: other.adminKey })).status).toBe(404);
  expect((await api.put(`/api/projects/${t.projectId}/mcp-servers/crm`, { key: other.adminKey, json: { transport: 'stdio', stdioServer: 'orders' } })).status).toBe(404);
  expect((await api.get(`/api/projects/${t.projectId}/mcp-servers/crm`, { key: t.adminKey })).body.server.transport).toBe('http');

  const secret = await api.post('/api/tool-secrets', {
    key: t.adminKey,
    json: { projectId: t.projectId, toolName: '*', secretKey: 'CRM_TOKEN', value: TOKEN, allowedHosts: [new URL(mcp.url).host] },
  });
  expect(secret.status).toBe(201);
});

it('answers from a streamable HTTP server with the secret as bearer token, scrubbed from the result', async () => {
  await publishAgent(api, t, 'Orders', agent('Orders', ['type: mcp', 'server: crm', 'server_tool: lookup_order', 'timeout: 10000'], 'lookup(id = "A1")', 'Order {{out.id}} is {{out.status}}.'));
  const res = await chatOnce(api, t, 'Orders', 'where is my order');
  expect(res.response).toBe('Order A1 is shipped.');
  expect(toolCall(res.traceEvents)).toMatchObject({ tool: 'lookup', toolType: 'mcp', server: 'crm' });
  // The server saw the token; the session keeps only its scrubbed echo.
  expect(toolResult(res.traceEvents)).toMatchObject({ success: true, output: { id: 'A1', status: 'shipped', seenAuth: 'Bearer [secret]' } });
  expect(res.text).not.toContain(TOKEN);
  const history = await sessionHistory(stack, res.sessionId);
  expect(patchIdsIn(history)).toContain('mcp-lambda-tools-v1');
  expect(JSON.stringify(history)).not.toContain(TOKEN);
  await replayWithTodaysCode(history, `session/${res.sessionId}`);

  // The tool list is cached for the server: a second call lists no tools again.
  const lists = mcp.listCalls();
  await publishAgent(api, t, 'Notes', agent('Notes', ['type: mcp', 'server: crm', 'tool: order_note'], 'note(id = "B2")', 'Note: {{out}}'));
  expect((await chatOnce(api, t, 'Notes', 'note')).response).toBe('Note: Order B2 left the warehouse');
  expect(mcp.listCalls()).toBe(lists);
});

it('makes a tool the server does not list, an isError answer and a stdio server off the allow-list tool errors', async () => {
  const failures: Array<[string, string[], RegExp]> = [
    ['Missing', ['type: mcp', 'server: crm', 'tool: no_such_tool'], /MCP server "crm" has no tool "no_such_tool" \(it lists: .*lookup_order/],
    ['Refused', ['type: mcp', 'server: crm', 'tool: cancel_order'], /answered an error: order C3 cannot be cancelled: already shipped/],
    ['Rogue', ['type: mcp', 'server: rogue'], /names the stdio server "not-allowed", which this worker's MCP_STDIO_SERVERS does not list/],
    ['Nowhere', ['type: mcp', 'server: undeclared'], /MCP server "undeclared" is not declared in the project/],
  ];
  for (const [name, binding, message] of failures) {
    await publishAgent(api, t, name, agent(name, binding, 'act(id = "C3")', 'Done.'));
    const res = await chatOnce(api, t, name, 'go');
    expect(res.response).toBe('Failed.');
    const result = toolResult(res.traceEvents);
    expect(result).toMatchObject({ success: false, error: { kind: 'tool_error' } });
    expect((result.error as { message: string }).message).toMatch(message);
  }
});

it('answers from an allow-listed stdio server the worker starts', async () => {
  await publishAgent(api, t, 'Local', agent('Local', ['type: mcp', 'server: local', 'tool: lookup_order', 'timeout: 20000'], 'lookup(id = "D4")', 'Order {{out.id}} is {{out.status}}.'));
  const res = await chatOnce(api, t, 'Local', 'go');
  expect(res.response).toBe('Order D4 is pending.');
});

it('runs a lambda tool\'s function from the project registry in the sandbox', async () => {
  const fn = await put('/functions/vat', { runtime: 'javascript', code: 'function main(params) { return { id: params.id, total: 120 }; }' });
  expect(fn.status).toBe(201);
  const other = await seedTenant(stack.ctx);
  expect((await api.get(`/api/projects/${t.projectId}/functions/vat`, { key: other.adminKey })).status).toBe(404);
  await publishAgent(api, t, 'Vat', agent('Vat', ['type: lambda', 'function: vat'], 'vat(id = "E5")', '{{out.id}} costs {{out.total}}.'));
  const res = await chatOnce(api, t, 'Vat', 'go');
  expect(res.response).toBe('E5 costs 120.');
  expect(toolCall(res.traceEvents)).toMatchObject({ toolType: 'lambda', function: 'vat' });

  // The registry's current code runs: a replaced function answers differently, a deleted one fails.
  expect((await put('/functions/vat', { runtime: 'javascript', code: 'return { id: id, total: 240 };' })).status).toBe(200);
  expect((await chatOnce(api, t, 'Vat', 'go')).response).toBe('E5 costs 240.');
  expect((await api.delete(`/api/projects/${t.projectId}/functions/vat`, { key: t.adminKey })).status).toBe(200);
  const gone = await chatOnce(api, t, 'Vat', 'go');
  expect(gone.response).toBe('Failed.');
  expect((toolResult(gone.traceEvents).error as { message: string }).message).toContain('function "vat" is not in the project\'s function registry');
});
