// A session's life with the real AgentSession workflow and the local model: created through the
// API, live state in the detail, a turn recorded in the transcript and traces, reset keeping the
// history, delete closing the workflow by its end signal, and reset refused once it has ended.
import { turnUpdate, endSignal } from '../../../workflows/definitions';
import { ZResetSessionResponseSchema, ZSessionDetailResponseSchema } from '../../../api/sessions/schemas';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createAgent } from './fixtures';

jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-session-life');
  await createAgent(stack.baseUrl, acme.adminKey, acme.projectId, 'Life_Agent');
});
afterAll(() => stack.close());

const base = () => `/api/projects/${acme.projectId}/sessions`;

async function newSession(): Promise<string> {
  const res = await api.post(base(), { key: acme.adminKey, json: { agentId: 'Life_Agent' } });
  expect(res.status).toBe(201);
  return res.body.session.id as string;
}

async function handle(id: string) {
  const temporal = await stack.ctx.temporal.client();
  return temporal.workflow.getHandle(`session/${id}`);
}

async function turn(id: string, clientMessageId: string, message: string) {
  const h = await handle(id);
  return h.executeUpdate(turnUpdate, { args: [{ clientMessageId, message }] });
}

it('shows the live state of a running session', async () => {
  const id = await newSession();
  const res = await api.get(`${base()}/${id}`, { key: acme.adminKey });
  expect(res.status).toBe(200);
  const { session } = ZSessionDetailResponseSchema.parse(res.body);
  expect(session).toMatchObject({ id, status: 'active', live: true, liveUnavailableReason: null, currentAgent: 'Life_Agent' });
  expect(session.gathered).toEqual(expect.any(Object));
  expect(typeof session.turnCount).toBe('number');
});

it('records a turn in the transcript and traces; reset restarts the conversation and keeps the history', async () => {
  const id = await newSession();
  const result = await turn(id, 'c1', 'Hello there');
  expect(result.sessionId).toBe(id);

  const transcript = await api.get(`/api/v1/sessions/${id}/transcripts`, { key: acme.adminKey });
  expect(transcript.status).toBe(200);
  expect(transcript.body.messages[0]).toMatchObject({ role: 'user', content: 'Hello there' });
  expect(transcript.body.messages.some((m: { role: string }) => m.role === 'assistant')).toBe(true);
  const before = transcript.body.total as number;

  const traces = await api.get(`${base()}/${id}/traces`, { key: acme.adminKey });
  expect(traces.body.total).toBeGreaterThan(0);
  const traceTotal = traces.body.total as number;

  const reset = await api.post(`${base()}/${id}/reset`, { key: acme.adminKey });
  expect(reset.status).toBe(200);
  const body = ZResetSessionResponseSchema.parse(reset.body);
  expect(body.session.id).toBe(id);
  expect(Number.isNaN(Date.parse(body.session.resetAt))).toBe(false);

  const after = await api.get(`/api/v1/sessions/${id}/transcripts`, { key: acme.adminKey });
  expect(after.body.total).toBe(before);
  expect((await api.get(`${base()}/${id}/traces`, { key: acme.adminKey })).body.total).toBeGreaterThanOrEqual(traceTotal);

  // The conversation goes on after the reset.
  await turn(id, 'c2', 'Hello again');
  const later = await api.get(`/api/v1/sessions/${id}/transcripts`, { key: acme.adminKey });
  expect(later.body.total).toBeGreaterThan(before);
});

it('deletes a live session: the workflow honours the end signal and every record goes', async () => {
  const id = await newSession();
  await turn(id, 'c1', 'Hi');
  const res = await api.delete(`${base()}/${id}`, { key: acme.adminKey });
  expect(res.status).toBe(200);
  expect(res.body.workflow).toBe('ended');
  expect(res.body.deleted.messages).toBeGreaterThan(0);
  expect(res.body.deleted.traceEvents).toBeGreaterThan(0);
  expect((await (await handle(id)).describe()).status.name).toBe('COMPLETED');
  expect(await stack.ctx.models.Session.exists({ _id: id })).toBeNull();
  expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId: id })).toBe(0);
  expect(await stack.ctx.models.TraceEvent.countDocuments({ sessionId: id })).toBe(0);
});

it('refuses to reset a session whose workflow has ended (409), and the detail says it is no longer live', async () => {
  const id = await newSession();
  const h = await handle(id);
  await h.signal(endSignal, { reason: 'test' });
  await h.result();
  const reset = await api.post(`${base()}/${id}/reset`, { key: acme.adminKey });
  expect(reset.status).toBe(409);
  expect(reset.body.error.code).toBe('CONFLICT');
  const detail = await api.get(`${base()}/${id}`, { key: acme.adminKey });
  expect(detail.status).toBe(200);
  expect(detail.body.session.status === 'ended' || detail.body.session.live === true).toBe(true);
});
