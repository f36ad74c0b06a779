// Async tools end to end on the real stack: the call suspends the session (202 with its suspension)
// after sending the request with a callback URL and secret; a signed callback resumes it exactly
// once, whatever the duplicates; a bad or missing signature, a wrong content type or an unknown id
// change nothing; an expired wait resumes the session with a tool_timeout; the resume route is the
// polling alternative; a callback that cannot be handed over answers 503 and can be retried.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../../../api/app';
import { redeliverStaleClaims, STALE_CLAIM_MS } from '../../../core/callbacks/stale-claims';
import { requireEncryptor } from '../../../core/llm/runtime';
import { CALLBACK_PAYLOAD_PURPOSE } from '../../../db/suspension';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import type { AppContext } from '../../../api/context';
import { client } from '../../support/http';
import { paymentAgent, publishAgent } from '../../support/agents';
import { sendCallback, signCallback } from '../../support/callbacks';
import { eventually } from '../../support/eventually';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(90_000);

interface Received {
  path: string;
  body: { amount?: number; notify?: { url?: string; callbackSecret?: string } };
}

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let external: Server;
let temporal: Client;
const received: Received[] = [];
/** What the callback the `/early` endpoint sent before acknowledging was answered. */
const earlyAnswers: { status: number; body: unknown }[] = [];


beforeAll(async () => {
  external = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body || '{}') as Received['body'];
      received.push({ path: req.url ?? '', body: parsed });
      // An async API acknowledges with 202 and no body; the verdict comes by callback.
      const ack = () => {
        res.writeHead(202);
        res.end();
      };
      // A fast one calls back before it acknowledges: the session's turn is still running then.
      if (req.url === '/early') {
        const result = JSON.stringify({ status: 'completed', transactionId: 'tx_early' });
        void sendCallback(parsed.notify!.url!, parsed.notify!.callbackSecret!, result).then(async (r) => {
          earlyAnswers.push({ status: r.status, body: await r.json() });
          ack();
        });
        return;
      }
      ack();
    });
  });
  await new Promise<void>((r) => external.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(external.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [origin] } });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Payments', paymentAgent({ name: 'Payments', endpoint: `${origin}/pay` }));
  await publishAgent(api, t, 'Quick_Payments', paymentAgent({ name: 'Quick_Payments', endpoint: `${origin}/quick`, timeout: 'timeout_seconds: 2' }));
  await publishAgent(api, other, 'Payments', paymentAgent({ name: 'Payments', endpoint: `${origin}/other` }));
  await publishAgent(api, t, 'Early_Payments', paymentAgent({ name: 'Early_Payments', endpoint: `${origin}/early` }));
  await publishAgent(api, t, 'Greeter', 'AGENT: Greeter\nGOAL: "Greet."\nON_START:\n  RESPOND: "Hello."\n');
  temporal = new Client({ connection: await Connection.connect({ address: stack.config.TEMPORAL_ADDRESS }), dataConverter: switchboardDataConverter(stack.ctx.payloadCodec) });
});
afterAll(async () => {
  await temporal.connection.close();
  await stack.close();
  external.closeAllConnections();
  await new Promise((r) => external.close(r));
});

/** Starts a session that suspends at its payment call; returns it with the request the tool server got. */
async function suspendedSession(agentId = 'Payments', owner = t) {
  const before = received.length;
  const res = await api.post('/api/v1/chat/agent', { key: owner.adminKey, json: { projectId: owner.projectId, agentId, message: 'pay please' } });
  expect(res.status).toBe(202);
  const request = received[before]!;
  expect(received).toHaveLength(before + 1);
  return { res, sessionId: res.body.sessionId as string, suspensionId: res.body.suspensionId as string, request };
}

const callback = (id: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${stack.baseUrl}/api/v1/callbacks/${id}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

async function transcript(sessionId: string): Promise<string[]> {
  await flushProjection(stack.ctx, sessionId);
  const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=200`, { key: t.adminKey });
  return (res.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'assistant').map((m) => m.content);
}

const replies = (sessionId: string, wanted: string) => eventually(() => transcript(sessionId), (lines) => lines.some((l) => l.includes(wanted)), 15_000, 100);

it('sends the request with the callback URL and secret, suspends the session and answers 202', async () => {
  const { res, sessionId, suspensionId, request } = await suspendedSession();
  expect(suspensionId).toMatch(/^cb_[0-9a-f]{32}$/);
  expect(res.body.suspension).toEqual({ id: suspensionId, tool: 'process_payment', expiresAt: expect.any(String) });
  expect(res.body.action).toMatchObject({ type: 'suspend' });
  expect(res.body.response).toContain('Processing your payment.');
  expect(request.body.amount).toBe(42);
  expect(request.body.notify?.url).toBe(`${stack.config.PUBLIC_BASE_URL}/api/v1/callbacks/${suspensionId}`);
  expect(request.body.notify?.callbackSecret).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const traces = res.body.traceEvents as { type: string; data: Record<string, unknown> }[];
  expect(traces.find((e) => e.type === 'suspension')?.data).toMatchObject({ tool: 'process_payment', callbackId: suspensionId });

  // Findable: in the session list, and in the Temporal Web UI by its search attribute.
  await flushProjection(stack.ctx, sessionId);
  const listed = await api.get(`/api/projects/${t.projectId}/sessions?status=suspended`, { key: t.adminKey });
  expect((listed.body.sessions as { id: string }[]).map((s) => s.id)).toContain(sessionId);
  const found = await eventually(
    async () => {
      const ids: string[] = [];
      for await (const w of temporal.workflow.list({ query: `SessionStatus = 'suspended' AND SessionId = '${sessionId}'` })) ids.push(w.workflowId);
      return ids;
    },
    (ids) => ids.length === 1,
    10_000,
    200,
  );
  expect(found).toEqual([`session/${sessionId}`]);

  // Meanwhile a message gets a holding reply.
  const held = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, sessionId, message: 'done yet?' } });
  expect(held.status).toBe(200);
  expect(held.body.response).toMatch(/still waiting for process_payment/);
});

it('refuses a wrong content type, a missing or bad signature and an unknown id, changing nothing', async () => {
  const { sessionId, suspensionId, request } = await suspendedSession();
  const secret = request.body.notify!.callbackSecret!;
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx_bad' });
  const asText = await fetch(`${stack.baseUrl}/api/v1/callbacks/${suspensionId}`, { method: 'POST', headers: { 'content-type': 'text/plain', 'x-callback-signature': signCallback(secret, body) }, body });
  expect(asText.status).toBe(415);
  const unsigned = await callback(suspensionId, body);
  expect(unsigned.status).toBe(401);
  expect(((await unsigned.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/Missing x-callback-signature/) });
  const wrongKey = await callback(suspensionId, body, { 'x-callback-signature': signCallback('not-the-secret', body) });
  expect(wrongKey.status).toBe(401);
  // Signed for another body: the signature covers the bytes sent.
  const otherBody = await callback(suspensionId, body, { 'x-callback-signature': signCallback(secret, JSON.stringify({ status: 'completed' })) });
  expect(otherBody.status).toBe(401);
  const unknown = await callback('cb_0000000000000000000000000000dead', body, { 'x-callback-signature': signCallback(secret, body) });
  expect(unknown.status).toBe(404);
  const doc = await stack.ctx.models.Suspension.findById(suspensionId).lean();
  expect(doc?.status).toBe('pending');
  expect(await transcript(sessionId)).not.toContainEqual(expect.stringContaining('went through'));
});

it('resumes on a signed callback exactly once, whatever the duplicates', async () => {
  const { sessionId, suspensionId, request } = await suspendedSession();
  const secret = request.body.notify!.callbackSecret!;
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx_123' });
  const answers = await Promise.all(Array.from({ length: 200 }, () => callback(suspensionId, body, { 'x-callback-signature': signCallback(secret, body) })));
  const bodies = await Promise.all(answers.map((a) => a.json() as Promise<{ ok: boolean; status?: string }>));
  expect(answers.every((a) => a.status === 200)).toBe(true);
  expect(bodies.filter((b) => b.status === undefined)).toEqual([{ ok: true }]);
  expect(bodies.filter((b) => b.status === 'already_processed')).toHaveLength(199);

  const lines = await replies(sessionId, 'Payment tx_123 went through.');
  expect(lines.filter((l) => l.includes('went through'))).toEqual(['Payment tx_123 went through.']);
  const again = await callback(suspensionId, body, { 'x-callback-signature': signCallback(secret, body) });
  expect(await again.json()).toEqual({ ok: true, status: 'already_processed' });
  expect((await stack.ctx.models.Suspension.findById(suspensionId).lean())?.status).toBe('delivered');

  // One resume, with the wait it ended, in the session's traces.
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  const resumes = (traces.body.traceEvents as { type: string; data: Record<string, unknown> }[]).filter((e) => e.type === 'resume');
  expect(resumes).toHaveLength(1);
  expect(resumes[0]!.data).toMatchObject({ tool: 'process_payment', callbackId: suspensionId, outcome: 'callback', via: 'callback', waitedMs: expect.any(Number) });
  const status = await temporal.workflow.getHandle(`session/${sessionId}`).query<{ status: string }>('state');
  expect(status.status).not.toBe('suspended');
});

it('resumes on a callback that arrives before the call’s turn has finished (the session does not wait on it yet)', async () => {
  const { sessionId, suspensionId } = await suspendedSession('Early_Payments');
  expect(earlyAnswers).toEqual([{ status: 200, body: { ok: true } }]);
  const lines = await replies(sessionId, 'Payment tx_early went through.');
  expect(lines.filter((l) => l.includes('went through'))).toEqual(['Payment tx_early went through.']);
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  expect((traces.body.traceEvents as { type: string; data: Record<string, unknown> }[]).filter((e) => e.type === 'resume').map((e) => e.data.callbackId)).toEqual([suspensionId]);
});

it('delivers a claim whose API process stopped before handing it over, by the stale-claim sweep', async () => {
  const { sessionId, suspensionId, request } = await suspendedSession();
  const secret = request.body.notify!.callbackSecret!;
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx_swept' });
  // What a process leaves when it stops right after its claim: the result kept, no signal sent.
  const claimedAt = new Date(Date.now() - STALE_CLAIM_MS - 1_000);
  const claimedPayload = requireEncryptor(stack.ctx).encrypt(t.tenantId, CALLBACK_PAYLOAD_PURPOSE, body);
  await stack.ctx.models.Suspension.updateOne({ _id: suspensionId, tenantId: t.tenantId, status: 'pending' }, { $set: { status: 'claimed', claimedAt, resumedVia: 'callback', claimedPayload } });
  // The caller's retry is a duplicate of a claimed id: 200 already_processed, as the spec says.
  const retry = await callback(suspensionId, body, { 'x-callback-signature': signCallback(secret, body) });
  expect(await retry.json()).toEqual({ ok: true, status: 'already_processed' });
  // A claim younger than the stale age is left to its process.
  expect(await redeliverStaleClaims(stack.ctx, new Date(claimedAt.getTime() + STALE_CLAIM_MS - 1))).toBe(0);
  expect(await redeliverStaleClaims(stack.ctx)).toBe(1);
  const lines = await replies(sessionId, 'Payment tx_swept went through.');
  expect(lines.filter((l) => l.includes('went through'))).toEqual(['Payment tx_swept went through.']);
  const doc = await stack.ctx.models.Suspension.findById(suspensionId).lean();
  expect(doc).toMatchObject({ status: 'delivered' });
  expect(doc?.claimedPayload).toBeUndefined();
  // Nothing left to sweep.
  expect(await redeliverStaleClaims(stack.ctx, new Date(Date.now() + STALE_CLAIM_MS * 2))).toBe(0);
});

it('takes a payload with status "failed" down the ON_FAIL path', async () => {
  const { sessionId, suspensionId, request } = await suspendedSession();
  const body = JSON.stringify({ status: 'failed', reason: 'card declined' });
  const res = await callback(suspensionId, body, { 'x-callback-signature': signCallback(request.body.notify!.callbackSecret!, body) });
  expect(res.status).toBe(200);
  await replies(sessionId, 'The payment did not go through.');
});

it('resumes with a tool_timeout when the wait expires; a late callback is 410', async () => {
  const { sessionId, suspensionId, request } = await suspendedSession('Quick_Payments');
  const lines = await replies(sessionId, 'The payment did not go through.');
  expect(lines).toContain('The payment did not go through.');
  const body = JSON.stringify({ status: 'completed', transactionId: 'tx_late' });
  const late = await callback(suspensionId, body, { 'x-callback-signature': signCallback(request.body.notify!.callbackSecret!, body) });
  expect(late.status).toBe(410);
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  const resume = (traces.body.traceEvents as { type: string; data: Record<string, unknown> }[]).find((e) => e.type === 'resume');
  expect(resume?.data).toMatchObject({ outcome: 'expired' });
});

it('resumes through the resume route once, for the session owner only', async () => {
  const { sessionId, suspensionId } = await suspendedSession();
  const strangers = await api.post(`/api/v1/sessions/${sessionId}/resume`, { key: other.adminKey, json: { toolResult: { status: 'completed', transactionId: 'tx_x' } } });
  expect(strangers.status).toBe(404);
  const res = await api.post(`/api/v1/sessions/${sessionId}/resume`, { key: t.adminKey, json: { toolResult: { status: 'completed', transactionId: 'tx_poll' } } });
  expect(res.status).toBe(200);
  expect(res.body).toEqual({ success: true, sessionId, suspensionId, status: 'resumed' });
  await replies(sessionId, 'Payment tx_poll went through.');
  const again = await api.post(`/api/v1/sessions/${sessionId}/resume`, { key: t.adminKey, json: { toolResult: { status: 'completed' } } });
  expect(again.body.status).toBe('already_processed');
  const traces = await api.get(`/api/projects/${t.projectId}/sessions/${sessionId}/traces?limit=200`, { key: t.adminKey });
  expect((traces.body.traceEvents as { type: string; data: Record<string, unknown> }[]).find((e) => e.type === 'resume')?.data).toMatchObject({ via: 'resume' });

  // A session that waits on nothing.
  const idle = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Greeter', message: 'hello' } });
  expect(idle.status).toBe(200);
  const nothing = await api.post(`/api/v1/sessions/${idle.body.sessionId}/resume`, { key: t.adminKey, json: { toolResult: {} } });
  expect(nothing.status).toBe(409);
});

it('answers 503 and keeps the suspension when the result cannot be handed over; a retry delivers it', async () => {
  const { sessionId, suspensionId, request } = await suspendedSession();
  // The same API with Temporal unreachable.
  const down: AppContext = { ...stack.ctx, temporal: { ...stack.ctx.temporal, client: () => Promise.reject(new Error('connect ECONNREFUSED')) } as AppContext['temporal'] };
  const server = createServer(createApp(down));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const body = JSON.stringify({ status: 'completed', transactionId: 'tx_retry' });
    const headers = { 'content-type': 'application/json', 'x-callback-signature': signCallback(request.body.notify!.callbackSecret!, body) };
    const failed = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/callbacks/${suspensionId}`, { method: 'POST', headers, body });
    expect(failed.status).toBe(503);
    expect((await stack.ctx.models.Suspension.findById(suspensionId).lean())?.status).toBe('pending');
    const retried = await callback(suspensionId, body, { 'x-callback-signature': headers['x-callback-signature'] });
    expect(await retried.json()).toEqual({ ok: true });
    await replies(sessionId, 'Payment tx_retry went through.');
  } finally {
    await new Promise((r) => server.close(r));
  }
});
