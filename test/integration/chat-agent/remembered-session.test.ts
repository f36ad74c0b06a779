// A continuing turn for a session this API process saw running skips the session read and goes
// to the workflow. These tests end or delete sessions behind the process's back (as another API
// replica would) and check the answers are the ones a fresh read gives: 409 for an ended session,
// 404 for a deleted one, 404 for another tenant, and a refused message's charge handed back.
import { Client, Connection } from '@temporalio/client';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import { seedDevProject } from '../../../infra/seed-project';
import { endSignal } from '../../../workflows/definitions';
import { sessionWorkflowId } from '../../../core/sessions/workflow-client';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { inFreshWindow } from '../../support/rate-window';

const BUDGET = 4;

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let other: SeededTenant;
let temporal: Client;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: { SESSION_MESSAGES_PER_MINUTE: String(BUDGET) } });
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

const chat = (json: Record<string, unknown>, key = t.adminKey) => api.post('/api/v1/chat/agent', { key, json: { projectId: t.projectId, ...json } });

/** A session with one continuing turn behind it, so this process remembers it as running. */
async function runningSession(): Promise<string> {
  const first = await chat({ message: 'hello' });
  expect(first.status).toBe(200);
  const sessionId = first.body.sessionId as string;
  expect((await chat({ sessionId, message: 'hello again' })).status).toBe(200);
  return sessionId;
}

/** Messages charged to the session's budget in the current window. */
async function charged(sessionId: string): Promise<number> {
  const res = await stack.ctx.sessionMessageLimiter.get(`session:${sessionId}`);
  return res?.consumedPoints ?? 0;
}

it('answers 409 for a session ended elsewhere, and hands every refused message its charge back', async () => {
  await inFreshWindow();
  const sessionId = await runningSession();
  await temporal.workflow.getHandle(sessionWorkflowId(sessionId)).signal(endSignal, { reason: 'ended by another replica' });
  await temporal.workflow.getHandle(sessionWorkflowId(sessionId)).result();
  // More refused messages than the budget holds: without the refunds the last would be a 429.
  for (let i = 0; i < BUDGET; i += 1) {
    const res = await chat({ sessionId, message: `still there? ${i}` });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'CONFLICT', message: 'Session has ended; start a new session' });
  }
  expect(await eventually(() => charged(sessionId), (n) => n === 1)).toBe(1);
});

it('answers 404 for a session deleted elsewhere', async () => {
  const sessionId = await runningSession();
  // What another replica's DELETE does: close the workflow, remove the records.
  await temporal.workflow.getHandle(sessionWorkflowId(sessionId)).terminate('deleted by another replica');
  await stack.ctx.models.Session.deleteOne({ _id: sessionId });
  const res = await chat({ sessionId, message: 'anyone?' });
  expect(res.status).toBe(404);
  expect(res.body.error.message).toBe('Session not found');
});

it("never lets another tenant reach a remembered session", async () => {
  const sessionId = await runningSession();
  const theirs = await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: other.projectId, sessionId, message: 'hi' } });
  expect(theirs.status).toBe(404);
  const cross = await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: t.projectId, sessionId, message: 'hi' } });
  expect(cross.status).toBe(404);
  // The session itself was not touched: it still answers its own tenant.
  expect((await chat({ sessionId, message: 'still mine' })).status).toBe(200);
});

it('keeps answering a remembered session from the right project only', async () => {
  const sessionId = await runningSession();
  const elsewhere = await chat({ projectId: t.otherProjectId, sessionId, message: 'wrong project' });
  expect(elsewhere.status).toBe(404);
});
