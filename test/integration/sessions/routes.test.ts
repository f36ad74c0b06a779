// Session routes as scenarios on the real stack: creating a session starts its workflow with
// search attributes; the list pages and filters; the detail falls back to MongoDB; delete closes
// the workflow and removes every record; traces, span children, metrics and transcripts.
import { AgentNameKey, ChannelKey, EnvironmentKey, ProjectIdKey, SessionIdKey, TenantIdKey } from '../../../workflows/search-attributes';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import {
  ZCreateSessionResponseSchema,
  ZDeleteSessionResponseSchema,
  ZListSessionsResponseSchema,
  ZMetricsResponseSchema,
  ZSessionDetailResponseSchema,
  ZSpanChildrenResponseSchema,
  ZTracesResponseSchema,
  ZTranscriptResponseSchema,
} from '../../../api/sessions/schemas';
import { createAgent, seedSession, seedTrace, seedTranscript } from './fixtures';

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let supportAgentId: string;

const sessionsPath = (projectId: string) => `/api/projects/${projectId}/sessions`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-sessions');
  supportAgentId = await createAgent(stack.baseUrl, acme.adminKey, acme.projectId, 'Support_Agent');
  await createAgent(stack.baseUrl, acme.adminKey, acme.projectId, 'Billing_Agent');
});
afterAll(() => stack.close());

async function describeWorkflow(sessionId: string) {
  const temporal = await stack.ctx.temporal.client();
  return temporal.workflow.getHandle(`session/${sessionId}`).describe();
}

describe('POST /api/projects/:projectId/sessions', () => {
  it('creates an active session record and starts its workflow with search attributes and a summary', async () => {
    const res = await api.post(sessionsPath(acme.projectId), { key: acme.adminKey, json: { agentId: 'Support_Agent' } });
    expect(res.status).toBe(201);
    const body = ZCreateSessionResponseSchema.parse(res.body);
    expect(body.session).toEqual({ id: expect.any(String), agentId: supportAgentId, agentName: 'Support_Agent', createdAt: expect.any(String) });

    const stored = await stack.ctx.models.Session.findById(body.session.id).lean();
    expect(stored).toMatchObject({
      tenantId: acme.tenantId,
      projectId: acme.projectId,
      agentName: 'Support_Agent',
      status: 'active',
      channel: 'api',
      environment: 'dev',
      runtimeSessionId: `session/${body.session.id}`,
    });

    const description = await describeWorkflow(body.session.id);
    expect(description.type).toBe('agentSession');
    expect(description.taskQueue).toBe(stack.config.TEMPORAL_TASK_QUEUE);
    const attrs = description.typedSearchAttributes;
    expect(attrs.get(TenantIdKey)).toBe(acme.tenantId);
    expect(attrs.get(ProjectIdKey)).toBe(acme.projectId);
    expect(attrs.get(SessionIdKey)).toBe(body.session.id);
    expect(attrs.get(AgentNameKey)).toBe('Support_Agent');
    expect(attrs.get(ChannelKey)).toBe('api');
    expect(attrs.get(EnvironmentKey)).toBe('dev');
    expect(await description.staticSummary()).toBe('agent Support_Agent · api');
  });

  it.each([
    ['an agent path', 'main/Billing_Agent', 'Billing_Agent'],
    ['an agent id', () => supportAgentId, 'Support_Agent'],
  ] as const)('resolves agentId given as %s', async (_label, ref, name) => {
    const agentId = typeof ref === 'function' ? ref() : ref;
    const res = await api.post(sessionsPath(acme.projectId), { key: acme.adminKey, json: { agentId, channel: 'web_debug' } });
    expect(res.status).toBe(201);
    expect(res.body.session.agentName).toBe(name);
    expect((await stack.ctx.models.Session.findById(res.body.session.id).lean())?.channel).toBe('web_debug');
  });

  it('answers 404 for an unknown agent and for a project without agents, creating nothing', async () => {
    const before = await stack.ctx.models.Session.countDocuments({});
    const unknown = await api.post(sessionsPath(acme.projectId), { key: acme.adminKey, json: { agentId: 'Nobody_Agent' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    const empty = await api.post(sessionsPath(acme.otherProjectId), { key: acme.adminKey, json: { agentId: 'Support_Agent' } });
    expect(empty.status).toBe(404);
    expect(empty.body.error).toEqual({ code: 'NOT_FOUND', message: 'Project not found or has no agents' });
    expect(await stack.ctx.models.Session.countDocuments({})).toBe(before);
  });

  it.each([
    ['a missing agentId', {}],
    ['an empty agentId', { agentId: '' }],
    ['a number', { agentId: 42 }],
    ['an unknown channel', { agentId: 'Support_Agent', channel: 'voice' }],
    ['an unknown environment', { agentId: 'Support_Agent', environment: 'qa' }],
  ])('answers 400 VALIDATION_ERROR for %s', async (_label, json) => {
    const res = await api.post(sessionsPath(acme.projectId), { key: acme.adminKey, json });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  });
});

describe('GET /api/projects/:projectId/sessions', () => {
  let tenant: SeededTenant;
  beforeAll(async () => {
    tenant = await seedTenant(stack.ctx, 'acme-session-list');
    const scope = { tenantId: tenant.tenantId, projectId: tenant.projectId };
    const base = Date.parse('2025-03-01T00:00:00Z');
    for (let i = 0; i < 7; i++) {
      await seedSession(stack.ctx, scope, {
        createdAt: new Date(base + i * 60_000),
        lastActivityAt: new Date(base + i * 60_000 + 5_000),
        agentName: `Agent_${i}`,
        status: i % 2 === 0 ? 'active' : 'ended',
        channel: i < 3 ? 'api' : i < 5 ? 'web_debug' : 'voice',
        messageCount: i,
        tokenCount: i * 10,
        estimatedCost: i / 100,
        handoffCount: i % 3,
      });
    }
    // Other project of the same tenant: never listed.
    await seedSession(stack.ctx, { tenantId: tenant.tenantId, projectId: tenant.otherProjectId });
  });

  it('lists newest first with the list-item fields and the spec defaults', async () => {
    const res = await api.get(sessionsPath(tenant.projectId), { key: tenant.adminKey });
    expect(res.status).toBe(200);
    const body = ZListSessionsResponseSchema.parse(res.body);
    expect(body).toMatchObject({ success: true, total: 7, offset: 0, limit: 50 });
    expect(body.sessions.map((s) => s.agentName)).toEqual(['Agent_6', 'Agent_5', 'Agent_4', 'Agent_3', 'Agent_2', 'Agent_1', 'Agent_0']);
    expect(Object.keys(body.sessions[0]!).sort()).toEqual(
      [
        'id', 'runtimeSessionId', 'agentName', 'status', 'channel', 'messageCount', 'traceEventCount', 'tokenCount',
        'errorCount', 'estimatedCost', 'durationMs', 'createdAt', 'lastActivityAt', 'handoffCount',
      ].sort(),
    );
    expect(body.sessions[0]).toMatchObject({ status: 'active', channel: 'voice', messageCount: 6, tokenCount: 60, estimatedCost: 0.06, handoffCount: 0 });
    expect(body.sessions[0]!.runtimeSessionId).toBe(`session/${body.sessions[0]!.id}`);
    expect(body.sessions[0]!.createdAt).toBe('2025-03-01T00:06:00.000Z');
  });

  it('pages with limit and offset', async () => {
    const res = await api.get(`${sessionsPath(tenant.projectId)}?limit=3&offset=2`, { key: tenant.adminKey });
    expect(res.body).toMatchObject({ total: 7, offset: 2, limit: 3 });
    expect(res.body.sessions.map((s: { agentName: string }) => s.agentName)).toEqual(['Agent_4', 'Agent_3', 'Agent_2']);
    const past = await api.get(`${sessionsPath(tenant.projectId)}?offset=50`, { key: tenant.adminKey });
    expect(past.body).toMatchObject({ total: 7, sessions: [] });
  });

  it('filters by status and channel', async () => {
    const ended = await api.get(`${sessionsPath(tenant.projectId)}?status=ended`, { key: tenant.adminKey });
    expect(ended.body.total).toBe(3);
    expect(ended.body.sessions.every((s: { status: string }) => s.status === 'ended')).toBe(true);
    const webDebug = await api.get(`${sessionsPath(tenant.projectId)}?channel=web_debug`, { key: tenant.adminKey });
    expect(webDebug.body.sessions.map((s: { agentName: string }) => s.agentName)).toEqual(['Agent_4', 'Agent_3']);
    const both = await api.get(`${sessionsPath(tenant.projectId)}?channel=api&status=active`, { key: tenant.adminKey });
    expect(both.body.sessions.map((s: { agentName: string }) => s.agentName)).toEqual(['Agent_2', 'Agent_0']);
  });

  it.each([
    ['limit=0'],
    ['limit=201'],
    ['limit=abc'],
    ['offset=-1'],
    ['status=idle'],
    ['channel=sms'],
  ])('answers 400 VALIDATION_ERROR for ?%s', async (qs) => {
    const res = await api.get(`${sessionsPath(tenant.projectId)}?${qs}`, { key: tenant.adminKey });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  });
});

describe('GET /api/projects/:projectId/sessions/:id', () => {
  it('answers an ended session from MongoDB with live: false', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, {
      status: 'ended',
      runtimeStatus: 'completed',
      currentAgent: 'Billing_Agent',
      endedAt: new Date('2025-03-01T01:00:00Z'),
      endReason: 'completed',
      handoffCount: 1,
    });
    const res = await api.get(`${sessionsPath(acme.projectId)}/${session._id}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const body = ZSessionDetailResponseSchema.parse(res.body);
    expect(body.session).toMatchObject({
      id: session._id,
      status: 'ended',
      currentAgent: 'Billing_Agent',
      runtimeStatus: 'completed',
      live: false,
      liveUnavailableReason: 'ended',
      step: null,
      gathered: null,
      pending: null,
      endedAt: '2025-03-01T01:00:00.000Z',
      endReason: 'completed',
      handoffCount: 1,
    });
  });

  it('answers an active session whose workflow does not exist with live: false, not_running', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
    const res = await api.get(`${sessionsPath(acme.projectId)}/${session._id}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body.session).toMatchObject({ status: 'active', live: false, liveUnavailableReason: 'not_running' });
  });

  it('looks up an id that is not a UUID: unknown is 404 (test/integration/sessions/session-ids.test.ts has the rules)', async () => {
    const res = await api.get(`${sessionsPath(acme.projectId)}/not-a-uuid`, { key: acme.adminKey });
    expect(res.status).toBe(404);
    expect(res.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
  });
});

describe('DELETE /api/projects/:projectId/sessions/:id', () => {
  it('closes the workflow and removes the summary, trace events and transcript; a second DELETE is 404', async () => {
    const created = await api.post(sessionsPath(acme.projectId), { key: acme.adminKey, json: { agentId: 'Support_Agent' } });
    const id: string = created.body.session.id;
    const session = (await stack.ctx.models.Session.findById(id).lean())!;
    await seedTrace(stack.ctx, session, [
      { type: 'llm_call', spanId: 's1' },
      { type: 'response', spanId: 's2', parentSpanId: 's1' },
    ]);
    await seedTranscript(stack.ctx, session, [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
      { role: 'user', content: 'bye' },
    ]);
    const keep = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
    await seedTrace(stack.ctx, keep, [{ type: 'llm_call', spanId: 'k1' }]);

    const res = await api.delete(`${sessionsPath(acme.projectId)}/${id}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const body = ZDeleteSessionResponseSchema.parse(res.body);
    // The workflow may record its own end before it closes, so at least the seeded records go.
    expect(body.deleted.sessionId).toBe(id);
    expect(body.deleted.traceEvents).toBeGreaterThanOrEqual(2);
    expect(body.deleted.messages).toBeGreaterThanOrEqual(3);
    expect(['ended', 'terminated']).toContain(body.workflow);

    expect(await stack.ctx.models.Session.exists({ _id: id })).toBeNull();
    expect(await stack.ctx.models.TraceEvent.countDocuments({ sessionId: id })).toBe(0);
    expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: id })).toBe(0);
    expect(await stack.ctx.models.TraceEvent.countDocuments({ sessionId: keep._id })).toBe(1);
    expect((await describeWorkflow(id)).status.name).not.toBe('RUNNING');

    const again = await api.delete(`${sessionsPath(acme.projectId)}/${id}`, { key: acme.adminKey });
    expect(again.status).toBe(404);
    expect(again.body.error).toEqual({ code: 'NOT_FOUND', message: 'Session not found' });
  });

  it('deletes a session whose workflow no longer exists', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
    const res = await api.delete(`${sessionsPath(acme.projectId)}/${session._id}`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, deleted: { sessionId: session._id, traceEvents: 0, messages: 0 }, workflow: 'not_running' });
  });
});

describe('POST /api/projects/:projectId/sessions/:id/reset', () => {
  it('answers 409 CONFLICT for an ended session', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, { status: 'ended' });
    const res = await api.post(`${sessionsPath(acme.projectId)}/${session._id}/reset`, { key: acme.adminKey });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
  });

  it('answers 409 CONFLICT when the workflow is gone', async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
    const res = await api.post(`${sessionsPath(acme.projectId)}/${session._id}/reset`, { key: acme.adminKey });
    expect(res.status).toBe(409);
  });
});

describe('traces, span children, metrics and transcripts', () => {
  let sessionId: string;
  beforeAll(async () => {
    const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, { durationMs: 4_000 });
    sessionId = session._id;
    await seedTrace(stack.ctx, session, [
      { type: 'decision', spanId: 't1', turn: 1, data: { decisionKind: 'routing', decision: 'stay', agent: 'Support_Agent' } },
      { type: 'llm_call', spanId: 't1.l1', parentSpanId: 't1', turn: 1, data: { model: 'local', usage: { inputTokens: 100, outputTokens: 20 }, latencyMs: 40 } },
      { type: 'tool_call', spanId: 't1.c1', parentSpanId: 't1', turn: 1, data: { tool: 'lookup' } },
      { type: 'tool_result', spanId: 't1.r1', parentSpanId: 't1.c1', turn: 1, data: { tool: 'lookup', result: { ok: 1 } } },
      { type: 'guardrail_eval', spanId: 't1.g1', parentSpanId: 't1', turn: 1, data: { guardrail: 'pii', passed: true, action: 'block' } },
      { type: 'response', spanId: 't1.x', parentSpanId: 't1', turn: 1, data: { text: 'hi' } },
      { type: 'decision', spanId: 't2', turn: 2, data: { decisionKind: 'flow', decision: 'next' } },
      { type: 'llm_call', spanId: 't2.l1', parentSpanId: 't2', turn: 2, data: { model: 'local', usage: { inputTokens: 50, outputTokens: 5 } } },
      { type: 'tool_call', spanId: 't2.c1', parentSpanId: 't2', turn: 2, data: { tool: 'lookup' } },
      { type: 'tool_result', spanId: 't2.r1', parentSpanId: 't2.c1', turn: 2, data: { tool: 'lookup', error: 'HTTP 500' } },
      { type: 'guardrail_eval', spanId: 't2.g1', parentSpanId: 't2', turn: 2, data: { guardrail: 'pii', passed: false, action: 'block' } },
      { type: 'handoff', spanId: 't2.h', parentSpanId: 't2', turn: 2, data: { fromAgent: 'Support_Agent', toAgent: 'Billing_Agent', reason: 'billing' } },
    ]);
    await seedTranscript(stack.ctx, session, [
      { role: 'user', content: 'first', turn: 1 },
      { role: 'assistant', content: 'one', turn: 1 },
      { role: 'user', content: 'second', turn: 2 },
      { role: 'assistant', content: 'two', turn: 2 },
      { role: 'user', content: 'third', turn: 3 },
    ]);
  });
  const tracesPath = () => `${sessionsPath(acme.projectId)}/${sessionId}/traces`;

  it('lists trace events in order with type, span ids, timestamp and data', async () => {
    const res = await api.get(tracesPath(), { key: acme.adminKey });
    expect(res.status).toBe(200);
    const body = ZTracesResponseSchema.parse(res.body);
    expect(body.total).toBe(12);
    expect(body.metrics).toBeUndefined();
    expect(body.traceEvents.map((e) => e.spanId).slice(0, 3)).toEqual(['t1', 't1.l1', 't1.c1']);
    expect(body.traceEvents[1]).toEqual({
      id: `${sessionId}:1`,
      type: 'llm_call',
      spanId: 't1.l1',
      parentSpanId: 't1',
      timestamp: expect.any(String),
      turn: 1,
      data: { model: 'local', usage: { inputTokens: 100, outputTokens: 20 }, latencyMs: 40 },
    });
  });

  it('filters by eventType (one or several), decisionKind and spanId, and pages', async () => {
    const llm = await api.get(`${tracesPath()}?eventType=llm_call`, { key: acme.adminKey });
    expect(llm.body.traceEvents.map((e: { spanId: string }) => e.spanId)).toEqual(['t1.l1', 't2.l1']);
    const tools = await api.get(`${tracesPath()}?eventType=tool_call,tool_result`, { key: acme.adminKey });
    expect(tools.body.total).toBe(4);
    const flow = await api.get(`${tracesPath()}?decisionKind=flow`, { key: acme.adminKey });
    expect(flow.body.traceEvents.map((e: { spanId: string }) => e.spanId)).toEqual(['t2']);
    const one = await api.get(`${tracesPath()}?spanId=t2.h`, { key: acme.adminKey });
    expect(one.body.traceEvents).toHaveLength(1);
    expect(one.body.traceEvents[0].data.toAgent).toBe('Billing_Agent');
    const page = await api.get(`${tracesPath()}?limit=2&offset=10`, { key: acme.adminKey });
    expect(page.body).toMatchObject({ total: 12, offset: 10, limit: 2 });
    expect(page.body.traceEvents.map((e: { spanId: string }) => e.spanId)).toEqual(['t2.g1', 't2.h']);
  });

  it('adds metrics with include=metrics, and serves them on /metrics', async () => {
    const res = await api.get(`${tracesPath()}?include=metrics&limit=1`, { key: acme.adminKey });
    const { metrics } = ZTracesResponseSchema.parse(res.body);
    expect(metrics).toMatchObject({
      sessionLatencyMs: 4_000,
      turnCount: 3,
      tokens: { input: 150, output: 25, total: 175 },
      toolCallCount: 2,
      toolSuccessRate: 0.5,
      guardrailEvalCount: 2,
      guardrailBlockRate: 0.5,
      handoffCount: 1,
      delegateCount: 0,
      errorCount: 0,
      truncated: false,
    });
    expect(metrics!.llmCalls).toEqual([
      { spanId: 't1.l1', turn: 1, model: 'local', inputTokens: 100, outputTokens: 20, latencyMs: 40 },
      { spanId: 't2.l1', turn: 2, model: 'local', inputTokens: 50, outputTokens: 5, latencyMs: null },
    ]);
    expect(metrics!.turns.map((t) => [t.turn, t.llmCalls, t.toolCalls])).toEqual([[1, 1, 1], [2, 1, 1], [3, 0, 0]]);
    const direct = await api.get(`${sessionsPath(acme.projectId)}/${sessionId}/metrics`, { key: acme.adminKey });
    expect(ZMetricsResponseSchema.parse(direct.body).metrics).toEqual(metrics);
  });

  it('lists the children of a span', async () => {
    const res = await api.get(`${tracesPath()}/t1/children`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const body = ZSpanChildrenResponseSchema.parse(res.body);
    expect(body.traceEvents.map((e) => e.spanId)).toEqual(['t1.l1', 't1.c1', 't1.g1', 't1.x']);
    expect(body.traceEvents.every((e) => e.parentSpanId === 't1')).toBe(true);
    const leaf = await api.get(`${tracesPath()}/t1.x/children`, { key: acme.adminKey });
    expect(leaf.body).toMatchObject({ total: 0, traceEvents: [] });
  });

  it.each([['eventType=LLM'], ['include=everything'], ['limit=500']])('answers 400 for ?%s', async (qs) => {
    const res = await api.get(`${tracesPath()}?${qs}`, { key: acme.adminKey });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('returns the transcript in order, paged', async () => {
    const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: acme.adminKey });
    expect(res.status).toBe(200);
    const body = ZTranscriptResponseSchema.parse(res.body);
    expect(body).toMatchObject({ success: true, sessionId, total: 5, offset: 0, limit: 50 });
    expect(body.messages.map((m) => m.content)).toEqual(['first', 'one', 'second', 'two', 'third']);
    expect(body.messages[1]).toEqual({
      id: `${sessionId}:m1`,
      role: 'assistant',
      content: 'one',
      timestamp: '2025-01-01T10:00:01.000Z',
      agent: 'Seeded_Agent',
      turn: 1,
    });
    const page = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=2&offset=2`, { key: acme.adminKey });
    expect(page.body.messages.map((m: { content: string }) => m.content)).toEqual(['second', 'two']);
  });
});
