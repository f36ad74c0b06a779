// OpenTelemetry traces end to end against the real stack with tracing on, exported over OTLP/HTTP to
// a collector in this process: one message through POST /api/v1/chat/agent is one trace from the
// HTTP span through the Temporal client, the session workflow and its activities to the tool call
// and the LLM call; a callback or a human task's resolution that resumes a suspended session links
// back to the turn's trace; no
// span attribute holds the message's text; the history holds nothing new in clear but the trace
// header, and a traced session's history replays with today's workflow code.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { client } from '../../support/http';
import { escalationAgent, paymentAgent, publishAgent } from '../../support/agents';
import { sendCallback } from '../../support/callbacks';
import { eventually } from '../../support/eventually';
import { historyBytes, replayWithTodaysCode, sessionHistory, storedHistory } from '../../support/workflow-history';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(90_000);

/** A span as the collector decoded it from the exporter's OTLP/JSON request. */
interface CollectedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpAnyValue[] };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpAnyValue }[];
  links?: { traceId: string; spanId: string }[];
}
interface OtlpRequest {
  resourceSpans?: { scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

const anyValue = (v: OtlpAnyValue): unknown =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue ?? v.boolValue ?? v.arrayValue?.values?.map(anyValue);

/** The message sent, and a marker inside it that no span may carry. */
const MARKER = 'zebra-7731-private';
const MESSAGE = `What is the weather forecast? My note: ${MARKER}`;

let collector: Server;
let tools: Server;
let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;
const spans: CollectedSpan[] = [];
const paymentRequests: { notify?: { url?: string; callbackSecret?: string } }[] = [];

beforeAll(async () => {
  // The collector: OTLP/HTTP with JSON bodies, as @opentelemetry/exporter-trace-otlp-http sends them.
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest;
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
                name: s.name,
                kind: s.kind,
                attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, anyValue(a.value)])),
                links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
              });
            }
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  tools = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/pay') {
        paymentRequests.push(JSON.parse(body || '{}') as (typeof paymentRequests)[number]);
        res.writeHead(202);
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ forecast: 'sunny', high: 24 }));
    });
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  const toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
  stack = await startTestStack({
    worker: true,
    allowPrivate: { tools: [toolsUrl] },
    env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}/v1/traces`, OTEL_SERVICE_NAME: 'switchboard-test' },
  });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  // No FLOW: the (offline) model answers, and calls the tool whose words the message shares.
  await publishAgent(
    api,
    t,
    'Forecaster',
    `AGENT: Forecaster
GOAL: "Tell the weather."
TOOLS:
  weather_forecast() -> object
    description: "Weather forecast lookup"
    type: http
    endpoint: "${toolsUrl}/forecast"
`,
  );
  await publishAgent(api, t, 'Payments', paymentAgent({ name: 'Payments', endpoint: `${toolsUrl}/pay` }));
  await publishAgent(api, t, 'Approvals', escalationAgent({ name: 'Approvals', goal: "Get a manager's approval.", over: 100, reason: 'Approve {{amount}}', respond: 'Decided.' }));
});

afterAll(async () => {
  await stack.close();
  for (const server of [collector, tools]) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** Flushes the process's spans to the collector until `ok` holds for what it has. */
async function collected(ok: (all: CollectedSpan[]) => boolean): Promise<CollectedSpan[]> {
  return eventually(
    async () => {
      await stack.ctx.tracing!.forceFlush();
      return [...spans];
    },
    ok,
    20_000,
    100,
  );
}

/** The span and its ancestors, up to the trace's root (or the first parent not collected). */
function ancestry(all: CollectedSpan[], span: CollectedSpan): CollectedSpan[] {
  const chain = [span];
  for (let parent = span.parentSpanId; parent; ) {
    const next = all.find((s) => s.spanId === parent && s.traceId === span.traceId);
    if (!next) break;
    chain.push(next);
    parent = next.parentSpanId;
  }
  return chain;
}

const SERVER_KIND = 2; // OTLP's SPAN_KIND_SERVER

let sessionId: string;

it('follows a message in one trace from the HTTP request to the tool call and the LLM call', async () => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Forecaster', message: MESSAGE } });
  expect(res.status).toBe(200);
  expect(String(res.body.response)).toContain('weather_forecast returned');
  sessionId = res.body.sessionId as string;

  const all = await collected((s) => s.some((x) => x.name === 'tool.call') && s.some((x) => x.name.startsWith('chat ')) && s.some((x) => x.name === 'POST /api/v1/chat/agent'));
  const http = all.find((s) => s.name === 'POST /api/v1/chat/agent')!;
  expect(http.kind).toBe(SERVER_KIND);
  expect(http.parentSpanId).toBeUndefined();
  expect(http.attributes).toMatchObject({ 'http.route': '/api/v1/chat/agent', 'http.request.method': 'POST', 'http.response.status_code': 200 });

  // The tool's span: under its activity, scheduled by the workflow, started by the client call the route made.
  const tool = all.find((s) => s.name === 'tool.call')!;
  expect(tool.attributes).toMatchObject({ 'switchboard.tool.name': 'weather_forecast', 'switchboard.tool.kind': 'http', 'switchboard.tool.async': false });
  const toolChain = ancestry(all, tool).map((s) => s.name);
  expect(tool.traceId).toBe(http.traceId);
  expect(toolChain[1]).toBe('RunActivity:callTool');
  expect(toolChain[2]).toBe('StartActivity:callTool');
  expect(toolChain.some((n) => /^(RunWorkflow|HandleUpdate):/.test(n))).toBe(true);
  expect(toolChain.some((n) => /^(StartWorkflowUpdate|UpdateWithStartWorkflow|StartWorkflow)/.test(n))).toBe(true);
  expect(toolChain.at(-1)).toBe('POST /api/v1/chat/agent');

  // The LLM call's span (the offline model runs as a local activity): model, provider, tokens.
  const llm = all.filter((s) => s.name.startsWith('chat ') && s.traceId === http.traceId);
  expect(llm.length).toBeGreaterThanOrEqual(2); // the tool call it chose, then the answer
  expect(llm[0]!.attributes).toMatchObject({ 'gen_ai.system': 'local', 'gen_ai.operation.name': 'chat' });
  expect(llm[0]!.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
  expect(llm[0]!.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
  const llmChain = ancestry(all, llm[0]!).map((s) => s.name);
  expect(llmChain[1]).toMatch(/^RunActivity:callLlm/);
  expect(llmChain[2]).toMatch(/^StartActivity:callLlm/);
  expect(llmChain.at(-1)).toBe('POST /api/v1/chat/agent');

  // Attributes hold ids, names, counts and statuses: never the message, nor the tool's answer.
  for (const span of all) {
    const text = JSON.stringify(span.attributes);
    expect(text).not.toContain(MARKER);
    expect(text).not.toContain('sunny');
  }
});

it('keeps nothing new in clear in the history but the trace context, and replays the traced history', async () => {
  const stored = await storedHistory(stack, `session/${sessionId}`);
  // Temporal's headers are not run through the payload codec: the only header is the trace
  // context, and it holds the W3C ids and nothing else.
  const headerFields = (stored.events ?? []).flatMap((e) =>
    Object.values(e)
      .filter((attrs): attrs is { header?: { fields?: Record<string, { data?: Uint8Array }> } } => !!attrs && typeof attrs === 'object' && 'header' in attrs)
      .flatMap((attrs) => Object.entries(attrs.header?.fields ?? {})),
  );
  expect(headerFields.length).toBeGreaterThan(0);
  for (const [name, payload] of headerFields) {
    expect(name).toBe('_tracer-data');
    const carrier = JSON.parse(Buffer.from(payload.data!).toString('utf8')) as Record<string, string>;
    expect(Object.keys(carrier)).toEqual(['traceparent']);
    expect(carrier.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
  }
  expect(historyBytes(stored).includes(MARKER)).toBe(false);
  await replayWithTodaysCode(await sessionHistory(stack, sessionId), `session/${sessionId}`);
});

it('links the span that resumes a suspended session to the trace of the turn that suspended it', async () => {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Payments', message: 'pay please' } });
  expect(res.status).toBe(202);
  const suspension = await stack.ctx.models.Suspension.findOne({ _id: res.body.suspensionId as string, tenantId: t.tenantId }).lean();
  const [, originalTraceId] = /^00-([0-9a-f]{32})-/.exec(suspension!.traceparent!)!;
  const turns = await collected((s) => s.some((x) => x.name === 'POST /api/v1/chat/agent' && x.traceId === originalTraceId));
  expect(turns.some((x) => x.name === 'tool.call' && x.traceId === originalTraceId && x.attributes['switchboard.tool.async'] === true)).toBe(true);

  const request = paymentRequests.at(-1)!;
  const delivered = await sendCallback(request.notify!.url!, request.notify!.callbackSecret!, JSON.stringify({ status: 'ok', transactionId: 'tx-1' }));
  expect(delivered.status).toBe(200);
  const all = await collected((s) => s.some((x) => x.name === 'session.resume'));
  const resume = all.find((s) => s.name === 'session.resume')!;
  // Its own trace (the callback's request), linked to the turn's.
  expect(resume.traceId).not.toBe(originalTraceId);
  expect(resume.links).toEqual([{ traceId: originalTraceId, spanId: expect.stringMatching(/^[0-9a-f]{16}$/) }]);
  expect(ancestry(all, resume).at(-1)!.name).toBe('POST /api/v1/callbacks/:callbackId');
  expect(resume.attributes).toMatchObject({ 'switchboard.session.id': res.body.sessionId, 'switchboard.tool.name': 'process_payment', 'switchboard.resume.via': 'callback' });
  // The session handles the callback's signal in the callback's trace.
  await collected((s) => s.some((x) => x.name === 'HandleSignal:callback' && x.traceId === resume.traceId));
});

it('links the resolution of a human task to the trace of the turn that escalated', async () => {
  const first = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Approvals', message: 'hi' } });
  const second = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId: first.body.sessionId, message: '250' } });
  expect(second.body.action).toMatchObject({ type: 'escalate', humanTask: { id: expect.any(String) } });
  const taskId = second.body.action.humanTask.id as string;
  const task = await stack.ctx.models.HumanTask.findOne({ _id: taskId, tenantId: t.tenantId }).lean();
  const [, escalatedIn] = /^00-([0-9a-f]{32})-/.exec(task!.traceparent!)!;
  await collected((s) => s.some((x) => x.name === 'POST /api/v1/chat/agent' && x.traceId === escalatedIn));

  const resolved = await api.post(`/api/projects/${t.projectId}/human-tasks/${taskId}/resolve`, { key: t.adminKey, json: { decision: 'approved' } });
  expect(resolved.status).toBe(200);
  const all = await collected((s) => s.some((x) => x.name === 'human_task.resolve'));
  const resolve = all.find((s) => s.name === 'human_task.resolve')!;
  expect(resolve.traceId).not.toBe(escalatedIn);
  expect(resolve.links).toEqual([{ traceId: escalatedIn, spanId: expect.stringMatching(/^[0-9a-f]{16}$/) }]);
  expect(resolve.attributes).toMatchObject({ 'switchboard.human_task.id': taskId, 'switchboard.session.id': first.body.sessionId });
  expect(ancestry(all, resolve).at(-1)!.name).toBe('POST /api/projects/:projectId/human-tasks/:taskId/resolve');
});
