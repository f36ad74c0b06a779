// Agent-backed chat end to end: HTTP → update-with-start → AgentSession workflow → interpreter →
// local model and tools → persisted transcript, traces and summary.
import { Client, Connection } from '@temporalio/client';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let other: SeededTenant;
let temporal: Client;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  temporal = new Client({ connection: await Connection.connect({ address: stack.config.TEMPORAL_ADDRESS }), dataConverter: switchboardDataConverter(stack.ctx.payloadCodec) });
});
afterAll(async () => {
  await temporal.connection.close();
  await stack.close();
});

const chat = (json: Record<string, unknown>, options: { key?: string; headers?: Record<string, string> } = {}) =>
  api.post('/api/v1/chat/agent', { key: options.key ?? t.adminKey, json: { projectId: t.projectId, ...json }, headers: options.headers });

describe('a conversation', () => {
  let sessionId: string;

  it('creates a session on the first message and greets from the entry agent', async () => {
    const res = await chat({ message: 'hello there' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, sessionId: expect.stringMatching(/^[0-9a-f-]{36}$/), response: expect.any(String), action: { type: 'continue' } });
    expect(res.body.response).toContain('Hi! I can help');
    expect(res.body.state.agent).toBe('Support_Hub');
    sessionId = res.body.sessionId;
    await flushProjection(stack.ctx, sessionId);
    const summary = await stack.ctx.models.Session.findById(sessionId).lean();
    expect(summary).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId, agentName: 'Support_Hub', status: 'active', channel: 'api', messageCount: 2 });
  });

  it('hands off to the billing specialist and records the handoff', async () => {
    const res = await chat({ sessionId, message: 'I have a question about my invoice' });
    expect(res.status).toBe(200);
    expect(res.body.state.agent).toBe('Billing_Agent');
    expect(res.body.response).toContain('invoice number');
    expect(res.body.metadata).toEqual({ models: ['local:local'], note: expect.stringContaining('offline local model') });
    const handoff = res.body.traceEvents.find((e: { type: string }) => e.type === 'handoff');
    expect(handoff.data).toEqual(expect.objectContaining({ fromAgent: 'Support_Hub', toAgent: 'Billing_Agent', reason: expect.any(String), timestamp: expect.any(String) }));
    expect(handoff.spanId).toEqual(expect.any(String));
    await flushProjection(stack.ctx, sessionId);
    const summary = await stack.ctx.models.Session.findById(sessionId).lean();
    expect(summary?.handoffCount).toBe(1);
    expect(summary?.currentAgent).toBe('Billing_Agent');
  });

  it('runs a flow step with a mocked tool when testContext asks', async () => {
    const res = await chat({
      sessionId,
      message: 'it is INV-123456',
      testContext: { toolMocks: [{ toolName: 'get_invoice', response: { id: 'INV-123456', amount: 120, status: 'open' } }] },
    });
    expect(res.status).toBe(200);
    expect(res.body.response).toContain('INV-123456');
    expect(res.body.response).toContain('Want a refund?');
    const types = res.body.traceEvents.map((e: { type: string }) => e.type);
    expect(types).toEqual(expect.arrayContaining(['tool_call', 'tool_result', 'response']));
    const call = res.body.traceEvents.find((e: { type: string }) => e.type === 'tool_call');
    const result = res.body.traceEvents.find((e: { type: string }) => e.type === 'tool_result');
    expect(result.parentSpanId).toBe(call.spanId);
    expect(result.data).toMatchObject({ tool: 'get_invoice', success: true, mocked: true });
  });

  it('keeps the transcript and the trace in MongoDB', async () => {
    await flushProjection(stack.ctx, sessionId);
    const messages = await stack.ctx.models.TranscriptMessage.find({ sessionId }).sort({ seq: 1 }).lean();
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(messages[0]!.content).toBe('hello there');
    const traces = await stack.ctx.models.TraceEvent.countDocuments({ sessionId });
    const summary = await stack.ctx.models.Session.findById(sessionId).lean();
    expect(summary?.traceEventCount).toBe(traces);
    expect(summary?.messageCount).toBe(6);
  });

  it('tags the workflow so an operator can find it in the Web UI', async () => {
    const description = await temporal.workflow.getHandle(`session/${sessionId}`).describe();
    expect(description.status.name).toBe('RUNNING');
    const attrs = description.searchAttributes as Record<string, unknown[]>;
    expect(attrs.TenantId).toEqual([t.tenantId]);
    expect(attrs.ProjectId).toEqual([t.projectId]);
    expect(attrs.SessionId).toEqual([sessionId]);
    expect(attrs.AgentName).toEqual(['Support_Hub']);
    expect(attrs.Channel).toEqual(['api']);
  });
});

describe('idempotency and ordering', () => {
  it('answers a retried first message once, in the same session', async () => {
    const headers = { 'idempotency-key': `first-${Date.now()}` };
    const a = await chat({ message: 'hello' }, { headers });
    const b = await chat({ message: 'hello' }, { headers });
    expect(a.status).toBe(200);
    expect(b.body.sessionId).toBe(a.body.sessionId);
    expect(b.body.response).toBe(a.body.response);
    await flushProjection(stack.ctx, a.body.sessionId);
    expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: a.body.sessionId, role: 'user' })).toBe(1);
  });

  it('answers a retried turn once', async () => {
    const first = await chat({ message: 'hello' });
    const headers = { 'idempotency-key': `turn-${Date.now()}` };
    const a = await chat({ sessionId: first.body.sessionId, message: 'what can you do?' }, { headers });
    const b = await chat({ sessionId: first.body.sessionId, message: 'what can you do?' }, { headers });
    expect(b.body).toEqual(a.body);
    await flushProjection(stack.ctx, first.body.sessionId);
    expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: first.body.sessionId, role: 'user' })).toBe(2);
  });

  it('runs two turns sent at once one after the other', async () => {
    const first = await chat({ message: 'hello' });
    const sessionId = first.body.sessionId;
    const [a, b] = await Promise.all([chat({ sessionId, message: 'first of two' }), chat({ sessionId, message: 'second of two' })]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    await flushProjection(stack.ctx, sessionId);
    const messages = await stack.ctx.models.TranscriptMessage.find({ sessionId }).sort({ seq: 1 }).lean();
    // user, agent, user, agent: each turn's reply directly follows its own message.
    const tail = messages.slice(2).map((m) => m.role);
    expect(tail).toEqual(['user', 'assistant', 'user', 'assistant']);
    const turns = new Set(messages.slice(2).map((m) => m.turn));
    expect(turns.size).toBe(2);
  });
});

describe('errors', () => {
  it('rejects bad requests with 400 and changes nothing', async () => {
    const before = await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId });
    expect((await chat({ message: '' })).status).toBe(400);
    expect((await chat({ message: 'x', environment: 'qa' })).status).toBe(400);
    const big = await chat({ message: 'x', metadata: { blob: 'y'.repeat(20_000) } });
    expect(big.status).toBe(400);
    expect(big.body.error.message).toContain('Invalid message metadata');
    const deep = await chat({ message: 'x', metadata: { a: { b: { c: { d: { e: { f: 1 } } } } } } });
    expect(deep.status).toBe(400);
    expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId })).toBe(before);
  });

  it('needs agent:write for testContext', async () => {
    const key = await t.keyWith(['session:execute']);
    const res = await chat({ message: 'hello', testContext: { skipOnStart: true } }, { key });
    expect(res.status).toBe(403);
    expect((await chat({ message: 'hello' }, { key })).status).toBe(200);
  });

  it("answers 404 for another tenant's session or project, and for a project without agents", async () => {
    const mine = await chat({ message: 'hello' });
    const theirs = await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: other.projectId, sessionId: mine.body.sessionId, message: 'hi' } });
    expect(theirs.status).toBe(404);
    expect(theirs.body.error.message).toMatch(/Project not found or has no agents|Session not found/);
    const cross = await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: t.projectId, message: 'hi' } });
    expect(cross.status).toBe(404);
    const empty = await chat({ projectId: t.otherProjectId, message: 'hi' });
    expect(empty.status).toBe(404);
    expect(empty.body.error.message).toBe('Project not found or has no agents');
    const unknown = await chat({ sessionId: '00000000-0000-4000-8000-000000000000', message: 'hi' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.message).toBe('Session not found');
    expect((await chat({ deploymentId: 'dep_1', message: 'hi' })).status).toBe(404);
  });

  it('refuses to start an agent that has no version, by chat or by POST /sessions', async () => {
    const created = await api.post(`/api/projects/${t.projectId}/agents`, {
      key: t.adminKey,
      json: { name: 'Draft_Only', dslContent: 'AGENT: Draft_Only\nGOAL: "Not released yet."\n' },
    });
    expect(created.status).toBe(201);
    const viaChat = await chat({ agentId: 'Draft_Only', message: 'hi' });
    expect(viaChat.status).toBe(404);
    expect(viaChat.body.error.message).toContain('has no version');
    const viaSessions = await api.post(`/api/projects/${t.projectId}/sessions`, { key: t.adminKey, json: { agentId: 'Draft_Only' } });
    expect(viaSessions.status).toBe(404);
  });
});
