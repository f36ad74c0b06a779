// Prometheus metrics end to end, on the real API and worker processes: after chat turns (one with
// an HTTP tool call, one with an LLM call) the API's /metrics counts and times the requests by
// route template and status and times the turns; the worker's times the LLM and tool calls and
// appends the Temporal SDK's worker metrics; the cluster gauges report running sessions and the
// task queue's backlog. No label value carries a tenant, project or session id or a message's
// text, the public port does not serve /metrics, and the scrape listener wants its token.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { freePorts, type ManagedProcess } from '../../infra/processes';
import { seedDevProject } from '../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { startWorkerProcess } from '../support/worker-process';
import { startApiProcess, type ApiProcess } from '../support/api-process';
import { publishAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { sdkSeriesUsed } from '../support/dashboard';

jest.setTimeout(120_000);

const TOKEN = randomBytes(24).toString('hex');
const TOOL_MESSAGE = 'weather please, from metrics-test-4242';
const LLM_MESSAGE = 'hello there from metrics-test-4343';

let stack: TestStack;
let t: SeededTenant;
let tool: Server;
let worker: ManagedProcess;
let apiProc: ApiProcess;
let apiMetricsUrl: string;
let workerMetricsUrl: string;
const sessionIds: string[] = [];

async function scrape(url: string, token: string | null = TOKEN): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, text: await res.text() };
}

/** The value of the series `name{labels}` whose labels include all of `labels` (summed over the others); 0 when absent. */
function valueOf(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => present[k] === v)) total += Number(match[3]);
  }
  return total;
}

/** Every label value of every series. */
function labelValues(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .flatMap((line) => [...line.matchAll(/[a-zA-Z_][a-zA-Z0-9_]*="((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!));
}

beforeAll(async () => {
  tool = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ answer: 'sunny' }));
  });
  await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
  const toolPort = (tool.address() as AddressInfo).port;
  stack = await startTestStack({ allowPrivate: { tools: [`http://127.0.0.1:${toolPort}`] } });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  const [workerPort, apiPort] = await freePorts(2);
  [worker, apiProc] = await Promise.all([
    startWorkerProcess(stack.config, [], { WORKER_METRICS_PORT: String(workerPort), METRICS_TOKEN: TOKEN }),
    startApiProcess(stack.config, { METRICS_PORT: String(apiPort), METRICS_TOKEN: TOKEN, METRICS_REFRESH_MS: '1000' }),
  ]);
  workerMetricsUrl = `http://127.0.0.1:${workerPort}/metrics`;
  apiMetricsUrl = `http://127.0.0.1:${apiPort}/metrics`;
  await publishAgent(client(apiProc.baseUrl), { adminKey: t.adminKey, projectId: t.otherProjectId }, 'Weather_Agent', `AGENT: Weather_Agent
GOAL: "Look the weather up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "http://127.0.0.1:${toolPort}/lookup"
    method: GET
    timeout: 3000
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
`);
  const api = client(apiProc.baseUrl);
  const withTool = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.otherProjectId, message: TOOL_MESSAGE } });
  expect(withTool.status).toBe(200);
  expect(withTool.body.response).toBe('Found sunny');
  const withLlm = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: LLM_MESSAGE } });
  expect(withLlm.status).toBe(200);
  expect(withLlm.body.metadata).toMatchObject({ models: ['local:local'] });
  sessionIds.push(withTool.body.sessionId as string, withLlm.body.sessionId as string);
});

afterAll(async () => {
  await Promise.all([apiProc?.proc.stop(), worker?.stop()]);
  await stack?.close();
  tool?.closeAllConnections();
  await new Promise((resolve) => tool?.close(resolve));
});

describe('the API /metrics', () => {
  it('counts and times requests by route template and status, and times the turns', async () => {
    const labels = { method: 'POST', route: '/api/v1/chat/agent', status: '200' };
    const { text } = await eventually(
      () => scrape(apiMetricsUrl),
      ({ text }) => valueOf(text, 'switchboard_http_requests_total', labels) >= 2,
    );
    expect(valueOf(text, 'switchboard_http_requests_total', labels)).toBe(2);
    expect(valueOf(text, 'switchboard_http_request_duration_seconds_count', labels)).toBe(2);
    expect(valueOf(text, 'switchboard_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(2);
    // The agent's creation: its template, never the project's id in a path.
    expect(valueOf(text, 'switchboard_http_requests_total', { method: 'POST', route: '/api/projects/:projectId/agents', status: '201' })).toBe(1);
    expect(valueOf(text, 'switchboard_turn_duration_seconds_count', { channel: 'api', outcome: 'ok' })).toBe(2);
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('reports the running sessions and the task queue backlog from Temporal', async () => {
    const { text } = await eventually(
      () => scrape(apiMetricsUrl),
      ({ text }) => valueOf(text, 'switchboard_sessions', { status: 'active' }) >= 1,
      15_000,
      250,
    );
    // The test's task queue only: the greeting's session runs on; the weather agent's one-step flow has completed.
    expect(valueOf(text, 'switchboard_sessions', { status: 'active' })).toBe(1);
    expect(text).toMatch(/^switchboard_sessions\{status="suspended"\} 0$/m);
    expect(text).toMatch(new RegExp(`^switchboard_task_queue_backlog\\{task_queue="${stack.config.TEMPORAL_TASK_QUEUE}",task_type="workflow"\\} \\d+$`, 'm'));
    expect(text).toMatch(/^switchboard_task_queue_backlog_age_seconds\{[^}]*task_type="activity"\} [\d.e-]+$/m);
    expect(valueOf(text, 'switchboard_cluster_gauge_refresh_failures_total', {})).toBe(0);
  });
});

describe('the worker /metrics', () => {
  it('times the tool and LLM calls, counts tokens and appends the SDK worker metrics', async () => {
    const { status, text } = await eventually(
      () => scrape(workerMetricsUrl),
      ({ text }) => sdkSeriesUsed().every((name) => text.includes(name)),
      10_000,
      250,
    );
    expect(status).toBe(200);
    expect(valueOf(text, 'switchboard_tool_call_duration_seconds_count', { tool_type: 'http', outcome: 'ok' })).toBe(1);
    expect(valueOf(text, 'switchboard_llm_call_duration_seconds_count', { provider: 'local', model: 'local', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(valueOf(text, 'switchboard_llm_tokens_total', { provider: 'local', model: 'local', direction: 'output' })).toBeGreaterThan(0);
    for (const name of sdkSeriesUsed()) expect(text).toContain(`\n${name}`);
  });

  it('puts no tenant, project or session id and no message text in any label, on either process', async () => {
    const texts = [(await scrape(apiMetricsUrl)).text, (await scrape(workerMetricsUrl)).text];
    const secrets = [t.tenantId, t.projectId, t.otherProjectId, ...sessionIds, 'metrics-test-4242', 'metrics-test-4343', 'weather'];
    const values = texts.flatMap(labelValues);
    expect(values.length).toBeGreaterThan(50);
    for (const value of values) for (const secret of secrets) expect(value).not.toContain(secret);
  });
});

describe('who can read them', () => {
  it('are not served on the public port, and the scrape listener wants its token', async () => {
    const publicPort = await fetch(`${apiProc.baseUrl}/metrics`);
    expect(publicPort.status).toBe(404);
    expect(await publicPort.text()).not.toContain('switchboard_');
    for (const url of [apiMetricsUrl, workerMetricsUrl]) {
      const anonymous = await scrape(url, null);
      expect(anonymous.status).toBe(401);
      expect(anonymous.text).not.toContain('switchboard_');
      expect((await scrape(url, TOKEN.replace(/.$/, (c) => (c === '0' ? '1' : '0')))).status).toBe(401);
      expect((await scrape(url.replace('/metrics', '/'))).status).toBe(404);
    }
  });
});
