// Tool results through a real turn: a body over TOOL_RESPONSE_MAX_BYTES fails the call and the
// agent takes its ON_FAIL path; a result over TOOL_RESULT_HISTORY_MAX_BYTES reaches the agent, the
// trace, the stored trace and the workflow history only as a cut with markers, never whole.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { chatOnce, publishAgent } from '../../support/agents';
import { flushProjection } from '../../support/projection';
import { payloadText, sessionHistory } from '../../support/workflow-history';

const RESPONSE_MAX = 64 * 1024;
const HISTORY_MAX = 4096;
// The end of the long report: it must not survive the cut anywhere.
const SENTINEL = 'END-OF-REPORT-7f3a';

let tools: Server;
let stack: TestStack;
let t: SeededTenant;

const agent = (name: string, path: string) => `AGENT: ${name}
GOAL: "Read a report."
TOOLS:
  fetch_report() -> {id: string, title: string, body: string}
    type: http
    endpoint: "http://127.0.0.1:${(tools.address() as AddressInfo).port}${path}"
    method: GET
FLOW:
  steps: [fetch]
  fetch:
    REASONING: false
    CALL: fetch_report
    AS: report
    ON_SUCCESS:
      RESPOND: "{{report.id}} {{report.title}}: {{report.body}}"
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "That report is too large to read."
      THEN: COMPLETE
`;

beforeAll(async () => {
  tools = createServer((req, res) => {
    const size = req.url === '/huge' ? RESPONSE_MAX + 1 : 30_000;
    const body = JSON.stringify({ id: 'R-1', title: 'Quarterly', body: 'lorem ipsum '.repeat(size / 12) + SENTINEL });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  const toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [toolsUrl] }, env: { TOOL_RESPONSE_MAX_BYTES: String(RESPONSE_MAX), TOOL_RESULT_HISTORY_MAX_BYTES: String(HISTORY_MAX) } });
  t = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  await publishAgent(api, t, 'Report_Agent', agent('Report_Agent', '/report'));
  await publishAgent(api, t, 'Huge_Agent', agent('Huge_Agent', '/huge'));
});
afterAll(async () => {
  await stack.close();
  tools.closeAllConnections();
  await new Promise((r) => tools.close(r));
});

const ask = (agentId: string) => chatOnce(client(stack.baseUrl), t, agentId, 'the report please');

it('fails a call whose body is over TOOL_RESPONSE_MAX_BYTES, and the agent takes its ON_FAIL path', async () => {
  const res = await ask('Huge_Agent');
  expect(res.response).toBe('That report is too large to read.');
  const result = res.traceEvents.find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({ tool: 'fetch_report', success: false, error: { kind: 'tool_error', message: expect.stringContaining('TOOL_RESPONSE_MAX_BYTES') } });
});

it('keeps only a marked cut of a result over TOOL_RESULT_HISTORY_MAX_BYTES in the reply, the trace and the workflow history', async () => {
  const res = await ask('Report_Agent');
  expect(res.response).toMatch(/^R-1 Quarterly: lorem ipsum .*…\[truncated: \d+ more characters\]$/);
  expect(res.response).not.toContain(SENTINEL);

  const result = res.traceEvents.find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({ tool: 'fetch_report', success: true, output: { id: 'R-1', title: 'Quarterly', body: expect.stringContaining('…[truncated: ') } });
  expect(Buffer.byteLength(JSON.stringify(result?.data.output))).toBeLessThanOrEqual(HISTORY_MAX);

  await flushProjection(stack.ctx, res.sessionId);
  const stored = await stack.ctx.models.TraceEvent.find({ tenantId: t.tenantId, sessionId: res.sessionId }).lean();
  expect(JSON.stringify(stored)).toContain('…[truncated: ');
  expect(JSON.stringify(stored)).not.toContain(SENTINEL);

  const history = payloadText(await sessionHistory(stack, res.sessionId));
  expect(history).toContain('…[truncated: ');
  expect(history).not.toContain(SENTINEL);
});
