// When a session's projection (transcript, trace events, summary) reaches MongoDB: shortly after
// each turn on its own, at once when the API reads it, before the reply with
// SESSION_PROJECTION_FLUSH_MS=0, and after a worker crash while rows were held.
import { Client, Connection } from '@temporalio/client';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant } from '../../support/stack';
import { client } from '../../support/http';
import { FAST_FAILOVER_ENV, startWorkerProcess } from '../../support/worker-process';
import { eventually } from '../../support/eventually';
import { silentRuntime } from '../../../core/sessions/silent-runtime';

jest.setTimeout(90_000);

async function setup(env: Record<string, string>, worker = true) {
  const stack = await startTestStack({ worker, env });
  const t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  const api = client(stack.baseUrl);
  const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
  const stored = (sessionId: string) => stack.ctx.models.TranscriptMessage.countDocuments({ sessionId });
  return { stack, t, api, chat, stored };
}

describe('rows held for 30 s after a turn', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  let temporal: Client;
  let sessionId: string;
  beforeAll(async () => {
    ctx = await setup({ SESSION_PROJECTION_FLUSH_MS: '30000' });
    temporal = new Client({ connection: await Connection.connect({ address: ctx.stack.config.TEMPORAL_ADDRESS }), dataConverter: switchboardDataConverter(ctx.stack.ctx.payloadCodec) });
  });
  afterAll(async () => {
    await temporal.connection.close();
    await ctx.stack.close();
  });
  const path = () => `/api/v1/sessions/${sessionId}/transcripts`;

  it('answers before writing, and a transcript read right after the reply sees the turn', async () => {
    const res = await ctx.chat({ message: 'hello there' });
    expect(res.status).toBe(200);
    sessionId = res.body.sessionId;
    expect(await ctx.stored(sessionId)).toBe(0);
    const transcript = await ctx.api.get(path(), { key: ctx.t.adminKey });
    expect(transcript.status).toBe(200);
    expect(transcript.body.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(await ctx.stored(sessionId)).toBe(2);
    const summary = await ctx.stack.ctx.models.Session.findById(sessionId).lean();
    expect(summary).toMatchObject({ messageCount: 2, status: 'active' });
  });

  it('leaves no history behind when a read finds nothing held', async () => {
    const handle = temporal.workflow.getHandle(`session/${sessionId}`);
    const before = (await handle.describe()).historyLength;
    for (let i = 0; i < 3; i++) expect((await ctx.api.get(path(), { key: ctx.t.adminKey })).status).toBe(200);
    expect((await handle.describe()).historyLength).toBe(before);
  });

  it('brings traces, metrics and the session detail up to date as well', async () => {
    const res = await ctx.chat({ sessionId, message: 'I have a question about my invoice' });
    expect(res.status).toBe(200);
    const base = `/api/projects/${ctx.t.projectId}/sessions/${sessionId}`;
    const traces = await ctx.api.get(`${base}/traces?limit=200`, { key: ctx.t.adminKey });
    expect(traces.body.traceEvents.some((e: { type: string }) => e.type === 'handoff')).toBe(true);
    const detail = await ctx.api.get(base, { key: ctx.t.adminKey });
    expect(detail.body.session.messageCount).toBe(4);
    const metrics = await ctx.api.get(`${base}/metrics`, { key: ctx.t.adminKey });
    expect(metrics.status).toBe(200);
  });

  it('lets reads that come at once share their flushes (test/unit/sessions/flush-coalescing.test.ts), each read seeing the turn', async () => {
    const res = await ctx.chat({ sessionId, message: 'one more thing' });
    expect(res.status).toBe(200);
    const reads = await Promise.all(Array.from({ length: 12 }, () => ctx.api.get(path(), { key: ctx.t.adminKey })));
    for (const read of reads) {
      expect(read.status).toBe(200);
      expect(read.body.messages.map((m: { content: string }) => m.content)).toContain('one more thing');
    }
  });

  it('writes what it holds when the session ends', async () => {
    const res = await ctx.chat({ message: 'hello' });
    const id = res.body.sessionId as string;
    expect(await ctx.stored(id)).toBe(0);
    const deleted = await temporal.workflow.getHandle(`session/${id}`);
    await deleted.signal('end', { reason: 'test' });
    await deleted.result();
    expect(await ctx.stored(id)).toBe(2);
    expect(await ctx.stack.ctx.models.Session.findById(id).lean()).toMatchObject({ status: 'ended', endReason: 'test' });
  });
});

describe('the default interval', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => (ctx = await setup({})));
  afterAll(() => ctx.stack.close());

  it('writes turns shortly after them without any read', async () => {
    const first = await ctx.chat({ message: 'hello' });
    const sessionId = first.body.sessionId as string;
    await ctx.chat({ sessionId, message: 'what can you do?' });
    const count = await eventually(() => ctx.stored(sessionId), (n) => n === 4, 10_000);
    expect(count).toBe(4);
    const summary = await eventually(
      () => ctx.stack.ctx.models.Session.findById(sessionId).lean(),
      (s) => s?.messageCount === 4,
    );
    expect(summary?.messageCount).toBe(4);
  });
});

describe('SESSION_PROJECTION_FLUSH_MS=0', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => (ctx = await setup({ SESSION_PROJECTION_FLUSH_MS: '0' })));
  afterAll(() => ctx.stack.close());

  it('writes the turn before replying', async () => {
    const res = await ctx.chat({ message: 'hello' });
    expect(res.status).toBe(200);
    expect(await ctx.stored(res.body.sessionId)).toBe(2);
    expect((await ctx.stack.ctx.models.Session.findById(res.body.sessionId).lean())?.messageCount).toBe(2);
  });
});

/** A turn answered by a worker that is then killed (SIGKILL) while the turn's rows are held. */
async function heldTurnThenWorkerKilled(ctx: Awaited<ReturnType<typeof setup>>): Promise<string> {
  const first = await startWorkerProcess(ctx.stack.config);
  const res = await ctx.chat({ message: 'hello' });
  expect(res.status).toBe(200);
  const sessionId = res.body.sessionId as string;
  expect(await ctx.stored(sessionId)).toBe(0);
  first.child.kill('SIGKILL');
  await first.exited;
  return sessionId;
}

describe('a worker killed while rows are held', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => (ctx = await setup({ ...FAST_FAILOVER_ENV, SESSION_PROJECTION_FLUSH_MS: '30000' }, false)));
  afterAll(() => ctx.stack.close());

  it('loses nothing: the next worker rebuilds the held rows from history and writes them', async () => {
    const sessionId = await heldTurnThenWorkerKilled(ctx);
    const second = await startWorkerProcess(ctx.stack.config);
    try {
      // The read asks the session to write; the server hands the session to the new worker once
      // the dead worker's sticky queue times out (WORKER_STICKY_QUEUE_TIMEOUT_MS), so the read may come back before the
      // write: it answers with what MongoDB has rather than wait, and the write lands soon after.
      const transcript = await ctx.api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: ctx.t.adminKey });
      expect(transcript.status).toBe(200);
      expect(await eventually(() => ctx.stored(sessionId), (n) => n === 2, 30_000)).toBe(2);
      const after = await ctx.api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: ctx.t.adminKey });
      expect(after.body.messages.map((m: { content: string }) => m.content)[0]).toBe('hello');
    } finally {
      await second.stop();
    }
  });
});

describe('reads while no worker runs', () => {
  let ctx: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => (ctx = await setup({ ...FAST_FAILOVER_ENV, SESSION_PROJECTION_FLUSH_MS: '30000' }, false)));
  afterAll(() => ctx.stack.close());

  it('answer from MongoDB, try only briefly once the session went unanswered, and are live again when a worker answers', async () => {
    const sessionId = await heldTurnThenWorkerKilled(ctx);
    const memory = silentRuntime(ctx.stack.ctx);
    expect(memory.isSilent()).toBe(false);

    const detailPath = `/api/projects/${ctx.t.projectId}/sessions/${sessionId}`;
    const detail = await ctx.api.get(detailPath, { key: ctx.t.adminKey });
    expect(detail.status).toBe(200);
    expect(detail.body.session).toMatchObject({ status: 'active', live: false, liveUnavailableReason: 'unreachable' });
    // The held turn is not in MongoDB yet, and this process now remembers the silence.
    expect(detail.body.session.messageCount).toBe(0);
    expect(memory.isSilent()).toBe(true);
    const transcript = await ctx.api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: ctx.t.adminKey });
    expect(transcript.status).toBe(200);
    expect(transcript.body.messages).toEqual([]);
    expect(memory.isSilent()).toBe(true);

    const second = await startWorkerProcess(ctx.stack.config);
    try {
      // The session moves to the new worker once the dead one's sticky queue times out (WORKER_STICKY_QUEUE_TIMEOUT_MS).
      // The first read it answers has the held turn written too, even when its live-state query
      // was answered after its flush had just missed.
      const live = await eventually(
        async () => (await ctx.api.get(detailPath, { key: ctx.t.adminKey })).body.session,
        (s) => s?.live === true,
        40_000,
      );
      expect(live).toMatchObject({ live: true, liveUnavailableReason: null, messageCount: 2 });
      expect(memory.isSilent()).toBe(false);
    } finally {
      await second.stop();
    }
  });
});
