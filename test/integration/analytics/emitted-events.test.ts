// What the platform writes to analytics_events, through the real API, worker, Temporal and store:
// a chat turn's events (recorded with the turn, by its recording activity) with the session id,
// the LLM calls' model, tokens and cost, the tool call and its result; a retried recording writes
// nothing twice; deployments and key, scope and tool-secret changes are events too; every event
// carries its tenant and project.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { createRecordTurn, type RecordTurnInput } from '../../../activities/persistence/record-turn';
import { type AnalyticsEventDoc } from '../../../db/analytics-event';
import { analyticsWriteFailures, emitAnalyticsEvents } from '../../../core/analytics/ingest';
import { flushHeldAnalyticsEvents } from '../../../core/analytics/batcher';
import { startFakeOpenAI } from '../../support/fake-openai';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent, useFakeOpenAI } from '../../support/agents';
import { flushProjection } from '../../support/projection';
import { seedSession } from '../sessions/fixtures';

jest.setTimeout(90_000);

let stack: TestStack;
let t: SeededTenant;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;
let api: ReturnType<typeof client>;
let toolServer: Server;

const desk = (port: number) => `AGENT: Order_Desk
GOAL: "Answer questions about orders."
TOOLS:
  lookup_order(order_id: string) -> {status: string}
    type: http
    endpoint: "http://127.0.0.1:${port}/orders"
    method: GET
    timeout: 5000
`;

beforeAll(async () => {
  toolServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'shipped' }));
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  const port = (toolServer.address() as AddressInfo).port;
  fake = await startFakeOpenAI({ apiKey: 'sk-analytics' });
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [`http://127.0.0.1:${port}`], llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Order_Desk', desk(port));
  await useFakeOpenAI(api, t, fake.baseURL, 'sk-analytics');
});
afterAll(async () => {
  await stack.close();
  await fake.close();
  toolServer.closeAllConnections();
  await new Promise((r) => toolServer.close(r));
});

const sessionEvents = (sessionId: string) =>
  stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, sessionId }).sort({ timestamp: 1, _id: 1 }).lean<AnalyticsEventDoc[]>();

async function chatTurn(): Promise<string> {
  fake.script([
    { toolCalls: [{ id: 'call_1', name: 'lookup_order', arguments: { order_id: 'A-17' } }], usage: { inputTokens: 400, outputTokens: 25 } },
    { text: 'Your order has shipped.', usage: { inputTokens: 480, outputTokens: 9 } },
  ]);
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Order_Desk', message: 'Where is order A-17?' } });
  expect(res.status).toBe(200);
  expect(res.body.response).toBe('Your order has shipped.');
  const sessionId = res.body.sessionId as string;
  await flushProjection(stack.ctx, sessionId);
  return sessionId;
}

it("records a chat turn's analytics events with the session id, the LLM calls' tokens and cost, and the tool call", async () => {
  const sessionId = await chatTurn();
  const events = await sessionEvents(sessionId);
  expect(events.map((e) => e.eventType)).toEqual(
    expect.arrayContaining(['session.started', 'message.user', 'llm.call', 'tool.call', 'tool.result', 'message.assistant']),
  );
  for (const e of events) {
    expect(e).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId, sessionId, channel: 'api' });
    expect(e._id.startsWith(`${sessionId}:`)).toBe(true);
  }

  const llm = events.filter((e) => e.eventType === 'llm.call');
  expect(llm.map((e) => [e.category, e.agentName, e.metadata.model, e.metadata.provider, e.metadata.tokens_in, e.metadata.tokens_out, e.tokens])).toEqual([
    ['llm', 'Order_Desk', 'gpt-4o-mini', 'openai', 400, 25, 425],
    ['llm', 'Order_Desk', 'gpt-4o-mini', 'openai', 480, 9, 489],
  ]);
  for (const e of llm) {
    expect(e.cost).toBeGreaterThan(0);
    expect(e.metadata.cost).toBe(e.cost);
    expect(typeof e.durationMs).toBe('number');
  }
  // The LLM events add up to the session summary's cost and tokens.
  const session = await stack.ctx.models.Session.findById(sessionId).lean();
  expect(llm.reduce((sum, e) => sum + e.cost, 0)).toBeCloseTo(session!.estimatedCost, 12);
  expect(llm.reduce((sum, e) => sum + e.tokens, 0)).toBe(session!.tokenCount);

  const result = events.find((e) => e.eventType === 'tool.result')!;
  expect(result).toMatchObject({ category: 'tool', agentName: 'Order_Desk', error: null, metadata: expect.objectContaining({ tool: 'lookup_order', success: true }) });
  expect(typeof result.durationMs).toBe('number');
  // Names, counts and timings: neither what the user typed nor what the tool answered.
  expect(JSON.stringify(events)).not.toMatch(/A-17|shipped/);
});

it('writes nothing twice when the turn is recorded again, and nothing for a session of another tenant', async () => {
  const sessionId = await chatTurn();
  const before = await sessionEvents(sessionId);
  // The activity's retry: the same rows again, as the workflow would send them.
  const [messages, traceEvents] = await Promise.all([
    stack.ctx.models.TranscriptMessage.find({ sessionId }).lean(),
    stack.ctx.models.TraceEvent.find({ sessionId }).lean(),
  ]);
  const input: RecordTurnInput = {
    tenantId: t.tenantId,
    projectId: t.projectId,
    sessionId,
    turn: 1,
    messages: messages.map((m) => ({ seq: m.seq, role: m.role, agent: m.agent, content: m.content, timestamp: m.timestamp.toISOString() })),
    traceEvents: traceEvents.map((e) => ({ seq: e.seq, type: e.type, spanId: e.spanId, parentSpanId: e.parentSpanId, timestamp: e.timestamp.toISOString(), data: e.data })),
    summary: { channel: 'api', currentAgent: 'Order_Desk', lastActivityAt: new Date().toISOString() },
  };
  const recordTurn = createRecordTurn({ models: stack.ctx.models });
  await recordTurn(input);
  await recordTurn(input);
  expect((await sessionEvents(sessionId)).map((e) => e._id).sort()).toEqual(before.map((e) => e._id).sort());

  // Named with another tenant, the write finds no session, and writes no analytics event either.
  const other = await seedTenant(stack.ctx);
  const foreign = await seedSession(stack.ctx, { tenantId: other.tenantId, projectId: other.projectId });
  await recordTurn({ ...input, sessionId: foreign._id });
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ sessionId: foreign._id })).toBe(0);
});

it("records a completion API call as an LLM event with its tokens and cost, held for the process's next batch", async () => {
  fake.script({ text: 'Done.', usage: { inputTokens: 70, outputTokens: 5 } });
  const res = await api.post('/api/v1/chat/complete', { key: t.adminKey, json: { projectId: t.projectId, modelId: 'gpt-4o-mini', sessionId: 'client-label-1', messages: [{ role: 'user', content: 'Say done' }] } });
  expect(res.status).toBe(200);
  await flushHeldAnalyticsEvents(stack.ctx.models);
  const events = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, 'metadata.source': 'completions_api' }).lean();
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({
    projectId: t.projectId,
    category: 'llm',
    eventType: 'llm.call',
    sessionId: null,
    tokens: 75,
    metadata: expect.objectContaining({ model: 'gpt-4o-mini', provider: 'openai', tokens_in: 70, tokens_out: 5, client_session_id: 'client-label-1' }),
  });
  expect(events[0]!.cost).toBeGreaterThan(0);
  expect(events[0]!.cost).toBeCloseTo(res.body.usage.estimatedCost as number, 12);
});

it("records a deployment's creation and retirement with who did it", async () => {
  const created = await api.post(`/api/projects/${t.projectId}/deployments`, {
    key: t.adminKey,
    json: { environment: 'staging', agentVersionManifest: { Order_Desk: 'auto' }, entryAgentName: 'Order_Desk', label: 'spring' },
  });
  expect(created.status).toBe(201);
  const id = created.body.deployment.id as string;
  expect((await api.post(`/api/projects/${t.projectId}/deployments/${id}/retire`, { key: t.adminKey })).status).toBe(200);

  const events = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, category: 'deployment', 'metadata.deployment_id': id }).sort({ timestamp: 1 }).lean();
  expect(events.map((e) => e.eventType)).toEqual(['deployment.created', 'deployment.retired']);
  for (const e of events) {
    expect(e).toMatchObject({ projectId: t.projectId, agentName: 'Order_Desk', sessionId: null });
    expect(e.metadata).toMatchObject({ environment: 'staging', label: 'spring', agent_versions: { Order_Desk: expect.any(String) } });
    expect(typeof e.metadata.actor).toBe('string');
  }
  expect(events[1]!.metadata.retire_reason).toBe('retired');
});

it('records scope, key, tool-secret and channel-connection changes as audit events that name what changed, never a value', async () => {
  const scope = await api.post(`/api/public/apps/${t.projectId}/scopes`, { key: t.adminKey, json: { scope_name: 'audited', permissions: { SESSIONS_LIST: 'YES' } } });
  expect(scope.status).toBe(201);
  const key = await api.post('/api/public/apikeys/create', { key: t.adminKey, json: { scope_name: 'audited', api_key_name: 'backend', app_id: t.projectId } });
  expect(key.status).toBe(201);
  const keyId = key.body.api_key.key_id as string;
  expect((await api.delete(`/api/public/apikeys/${keyId}`, { key: t.adminKey })).status).toBe(200);
  const secret = await api.post('/api/tool-secrets', {
    key: t.adminKey,
    json: { projectId: t.projectId, toolName: 'lookup_order', secretKey: 'ORDERS_TOKEN', value: 'tok-very-secret-value', allowedHosts: ['orders.example.com'] },
  });
  expect(secret.status).toBe(201);
  const secretId = secret.body.secret.id as string;
  expect((await api.put(`/api/tool-secrets/${secretId}`, { key: t.adminKey, json: { value: 'tok-rotated-secret-value' } })).status).toBe(200);
  expect((await api.delete(`/api/tool-secrets/${secretId}`, { key: t.adminKey })).status).toBe(200);

  const connections = `/api/projects/${t.projectId}/channel-connections`;
  const connection = await api.post(connections, {
    key: t.adminKey,
    json: { name: 'Support line', accountSid: `AC${'a'.repeat(32)}`, authToken: 'twilio-auth-token-secret-value', callerNumber: '+15551234567' },
  });
  expect(connection.status).toBe(201);
  const connectionId = connection.body.data.id as string;
  expect((await api.patch(`${connections}/${connectionId}`, { key: t.adminKey, json: { name: 'Sales line', authToken: 'new-auth-token-secret-value' } })).status).toBe(200);
  expect((await api.delete(`${connections}/${connectionId}`, { key: t.adminKey })).status).toBe(200);

  const events = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, category: 'audit' }).sort({ timestamp: 1, _id: 1 }).lean();
  expect(events.map((e) => e.eventType)).toEqual(
    expect.arrayContaining(['audit.scope_created', 'audit.api_key_created', 'audit.api_key_revoked', 'audit.tool_secret_created', 'audit.tool_secret_rotated', 'audit.tool_secret_deleted']),
  );
  expect(events.filter((e) => e.metadata.channel_connection_id === connectionId).map((e) => [e.eventType, e.metadata.name, e.metadata.fields])).toEqual([
    ['audit.channel_connection_created', 'Support line', undefined],
    ['audit.channel_connection_updated', 'Sales line', ['authToken', 'name']],
    ['audit.channel_connection_deleted', 'Sales line', undefined],
  ]);
  expect(events.find((e) => e.eventType === 'audit.api_key_revoked')!.metadata).toMatchObject({ key_id: keyId, scope_id: scope.body.scope.scope_id });
  expect(events.find((e) => e.eventType === 'audit.tool_secret_rotated')!.metadata).toMatchObject({ secret_id: secretId, tool_name: 'lookup_order', secret_key: 'ORDERS_TOKEN', version: 2 });
  for (const e of events) expect(e.projectId).toBe(t.projectId);
  const text = JSON.stringify(events);
  expect(text).not.toContain('secret-value');
  expect(text).not.toContain(key.body.api_key.apikey as string);
  expect(text).not.toContain('15551234567');
});

it('sets the tenant and project on every event it wrote', async () => {
  const all = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId }).lean();
  expect(all.length).toBeGreaterThan(10);
  expect(all.filter((e) => e.projectId !== t.projectId)).toEqual([]);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ $or: [{ tenantId: null }, { projectId: null }] })).toBe(0);
});

it('logs and counts an analytics write the store refuses, without throwing, and does not count a retried batch', async () => {
  const warnings: unknown[][] = [];
  const logger = { warn: (...args: unknown[]) => void warnings.push(args) };
  const event = { id: `refused-${Date.now()}`, tenantId: t.tenantId, projectId: t.projectId, category: 'system' as const, eventType: 'error.test', timestamp: new Date() };
  const before = analyticsWriteFailures();
  // Over the store's 16 MiB document limit: refused by the store itself.
  await expect(emitAnalyticsEvents(stack.ctx.models, logger, [{ ...event, metadata: { blob: 'x'.repeat(17 * 1024 * 1024) } }])).resolves.toBeUndefined();
  expect(analyticsWriteFailures()).toBe(before + 1);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]![1]).toBe('Analytics events were not written');
  expect(JSON.stringify(warnings[0]![0]).length).toBeLessThan(2000);

  // The same id twice: the second batch is a retry, skipped without a failure.
  await emitAnalyticsEvents(stack.ctx.models, logger, [event]);
  await emitAnalyticsEvents(stack.ctx.models, logger, [event]);
  expect(analyticsWriteFailures()).toBe(before + 1);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ _id: event.id })).toBe(1);
});
