// Tool destination rules end to end, with the protection on as in production: an agent turn whose
// HTTP tool aims at loopback (a literal, its IPv6 spelling, a name resolving to it) gets a tool
// error and the server there receives nothing, while the one host:port the stack allows answers.
// `type: workflow` tools here too: the shipped `deliver_webhook` workflow, started as the session's
// child (sync and async), posts to that allowed host under the same rules; a workflow the worker
// does not offer to agents is refused; the session history replays with today's code. And HOOKS
// after_agent when the API ends a session: its CALL reaches the allowed host before the end.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { eventually } from '../../support/eventually';
import { patchIdsIn, replayWithTodaysCode, sessionHistory } from '../../support/workflow-history';

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
const hooks: { url: string; body: string }[] = [];

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
  allowed = createServer((req, res) => {
    if (req.url?.startsWith('/ended')) {
      hooks.push({ url: req.url, body: '' });
      answer(res);
      return;
    }
    if (req.url?.startsWith('/hook')) {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        hooks.push({ url: req.url ?? '', body });
        res.writeHead(204).end();
      });
      return;
    }
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
  await publishAgent(api, t, 'Notify_Sync', workflowAgent('Notify_Sync', 'deliver_webhook', 'sync', `http://127.0.0.1:${allowedPort}/hook/sync`));
  await publishAgent(api, t, 'Notify_Async', workflowAgent('Notify_Async', 'deliver_webhook', 'async', `http://127.0.0.1:${allowedPort}/hook/async`));
  await publishAgent(api, t, 'Leaving_Agent', leavingAgent(`http://127.0.0.1:${allowedPort}/ended`));
  await publishAgent(api, t, 'Notify_Platform', workflowAgent('Notify_Platform', 'agentSession', 'sync', `http://127.0.0.1:${allowedPort}/hook/no`));
});

const leavingAgent = (endpoint: string) => `AGENT: Leaving_Agent
GOAL: "Say goodbye."
TOOLS:
  log_end(q: string) -> {answer: string}
    type: http
    endpoint: "${endpoint}"
    method: GET
HOOKS:
  after_agent:
    CALL: log_end(q = "bye")
    RESPOND: "[closed]"
FLOW:
  steps: [wait]
  wait:
    REASONING: false
    GATHER:
      - count: required
        type: number
        prompt: "How many?"
    THEN: COMPLETE
`;

const workflowAgent = (name: string, workflowId: string, mode: 'sync' | 'async', target: string) => `AGENT: ${name}
GOAL: "Notify the back office."
TOOLS:
  notify(target: string, note: string) -> {status: number}
    type: workflow
    workflow_id: ${workflowId}
    mode: ${mode}
    timeout_ms: 20000
    param_mapping:
      url: target
      payload: note
FLOW:
  steps: [send]
  send:
    REASONING: false
    CALL: notify(target = "${target}", note = "order 42 is ready")
    AS: sent
    ON_SUCCESS:
      RESPOND: "Sent: {{sent.status}} {{sent.workflow}}"
    ON_FAIL:
      RESPOND: "Not sent"
`;
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

describe('workflow tools', () => {
  it('sync: runs deliver_webhook as a child of the session and answers with its result; the history replays', async () => {
    const res = await turn('Notify_Sync');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('Sent: 204 ');
    expect(hooks.filter((h) => h.url === '/hook/sync')).toEqual([{ url: '/hook/sync', body: '"order 42 is ready"' }]);
    const history = await sessionHistory(stack, res.body.sessionId as string);
    expect(patchIdsIn(history)).toContain('workflow-tools-v1');
    const child = history.events?.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    expect(child?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowType?.name).toBe('deliverWebhookWorkflow');
    expect(child?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId).toMatch(new RegExp(`^session/${res.body.sessionId as string}/t1/workflow-`));
    await replayWithTodaysCode(history, `session/${res.body.sessionId as string}`);
  });

  it('async: answers "started" at once and the child delivers on its own', async () => {
    const res = await turn('Notify_Async');
    expect(res.body.response).toBe('Sent: started deliver_webhook');
    const result = (res.body.traceEvents as Trace[]).find((e) => e.type === 'tool_result');
    expect(result?.data).toMatchObject({ success: true, output: { workflow: 'deliver_webhook', version: '1', workflow_id: expect.stringMatching(/^session\/.+\/workflow-/) } });
    const seen = await eventually(async () => hooks.filter((h) => h.url === '/hook/async'), (h) => h.length > 0, 15_000);
    expect(seen).toEqual([{ url: '/hook/async', body: '"order 42 is ready"' }]);
  });

  it('refuses a workflow the worker does not offer to agents (a platform workflow)', async () => {
    const res = await turn('Notify_Platform');
    expect(res.body.response).toBe('Not sent');
    const result = (res.body.traceEvents as Trace[]).find((e) => e.type === 'tool_result');
    expect(result?.data).toMatchObject({ success: false, error: { kind: 'tool_error', message: 'Workflow agentSession is not offered to agents by this worker' } });
    expect(hooks.some((h) => h.url === '/hook/no')).toBe(false);
  });
});

it('runs after_agent when the API ends the session: its CALL goes out before the session ends', async () => {
  const res = await turn('Leaving_Agent');
  expect(res.body.response).toContain('How many?');
  expect(res.body.state).toMatchObject({ status: 'active' });
  const sessionId = res.body.sessionId as string;
  expect(hooks.some((h) => h.url.startsWith('/ended'))).toBe(false);
  const del = await api.delete(`/api/projects/${t.projectId}/sessions/${sessionId}`, { key: t.adminKey });
  expect(del.status).toBeLessThan(300);
  const seen = await eventually(async () => hooks.filter((h) => h.url.startsWith('/ended')), (h) => h.length > 0, 15_000);
  expect(seen).toEqual([{ url: '/ended?q=bye', body: '' }]);
  const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`);
  expect(await handle.result()).toEqual({ status: 'ended', reason: 'deleted' });
  const history = await sessionHistory(stack, sessionId);
  expect(patchIdsIn(history)).toContain('session-end-hooks-v1');
});
