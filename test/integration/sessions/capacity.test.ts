// The per-tenant active-session count (db/session-capacity.ts) on the real stack: concurrent
// first turns at the cap, places given back when sessions end or fail to start, and the
// reconciliation that repairs a count left wrong by a process dying mid-way.
import { randomUUID } from 'node:crypto';
import { seedDevProject } from '../../../infra/seed-project';
import { readCapacity, reconcileSessionCapacity, releaseSessionSlot } from '../../../db/session-capacity';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from './fixtures';
import { reconcileClosedWorkflows } from '../../../core/sessions/closed-reconciler';

const stacks: TestStack[] = [];
afterAll(async () => {
  for (const s of stacks) await s.close();
});

async function setup(env: Record<string, string>, worker = true) {
  const stack = await startTestStack({ worker, env });
  stacks.push(stack);
  const t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  const api = client(stack.baseUrl);
  const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
  return { stack, t, api, chat };
}

const LIMIT_BODY = {
  success: false,
  error: { code: 'RATE_LIMIT_EXCEEDED', message: 'Concurrent session limit exceeded' },
  retryAfterMs: 60000,
};

async function counted(stack: TestStack, t: SeededTenant) {
  const [state, slots] = await Promise.all([readCapacity(stack.ctx.models, t.tenantId), stack.ctx.models.SessionSlot.countDocuments({ tenantId: t.tenantId })]);
  return { active: state.active, slots };
}

describe('at the cap', () => {
  it('lets exactly as many of 10 concurrent first turns through as the cap allows; the rest get 429', async () => {
    const { stack, t, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '3' });
    const results = await Promise.all(Array.from({ length: 10 }, () => chat({ message: 'hello' })));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(3);
    expect(refused).toHaveLength(7);
    for (const r of refused) {
      expect(r.body).toEqual(LIMIT_BODY);
      expect(r.headers.get('retry-after')).toBe('60');
    }
    expect(await counted(stack, t)).toEqual({ active: 3, slots: 3 });
    expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId, status: 'active' })).toBe(3);
    // Existing sessions keep talking at the cap.
    expect((await chat({ sessionId: ok[0]!.body.sessionId, message: 'still here' })).status).toBe(200);
  });

  it('counts a retried first message (same Idempotency-Key) once', async () => {
    const { stack, t, api } = await setup({ MAX_CONCURRENT_SESSIONS: '2' });
    const send = () =>
      api.post('/api/v1/chat/agent', { key: t.adminKey, headers: { 'idempotency-key': 'first-message' }, json: { projectId: t.projectId, message: 'hello' } });
    const [a, b] = await Promise.all([send(), send()]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.sessionId).toBe(b.body.sessionId);
    expect(await counted(stack, t)).toEqual({ active: 1, slots: 1 });
  });
});

describe('ending a session', () => {
  it('frees its place when the session is deleted', async () => {
    const { stack, t, api, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '1' });
    const first = await chat({ message: 'hello' });
    expect(first.status).toBe(200);
    expect((await chat({ message: 'hello' })).body).toEqual(LIMIT_BODY);
    const deleted = await api.delete(`/api/projects/${t.projectId}/sessions/${first.body.sessionId}`, { key: t.adminKey });
    expect(deleted.status).toBe(200);
    expect(await counted(stack, t)).toEqual({ active: 0, slots: 0 });
    expect((await chat({ message: 'hello' })).status).toBe(200);
  });

  it('gives a place back once, however many paths see the session end at the same time', async () => {
    const { stack, t, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '3' });
    const sessions = await Promise.all([chat({ message: 'hello' }), chat({ message: 'hello' })]);
    expect(sessions.map((r) => r.status)).toEqual([200, 200]);
    const sessionId = sessions[0]!.body.sessionId as string;
    const released = await Promise.all(Array.from({ length: 5 }, () => releaseSessionSlot(stack.ctx.models, { tenantId: t.tenantId, sessionId })));
    expect(released.filter(Boolean)).toHaveLength(1);
    expect(await counted(stack, t)).toEqual({ active: 1, slots: 1 });
    // Another tenant's slot id is not this tenant's.
    expect(await releaseSessionSlot(stack.ctx.models, { tenantId: 'another-tenant', sessionId: sessions[1]!.body.sessionId as string })).toBe(false);
    expect(await counted(stack, t)).toEqual({ active: 1, slots: 1 });
  });

  it('frees its place when the session ends on its own (idle timeout), once', async () => {
    const { stack, t, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '1', SESSION_IDLE_TIMEOUT_MS: '1500' });
    const first = await chat({ message: 'hello' });
    expect(first.status).toBe(200);
    expect((await chat({ message: 'hello' })).status).toBe(429);
    const ended = await eventually(
      () => stack.ctx.models.Session.findOne({ _id: first.body.sessionId, tenantId: t.tenantId }).lean(),
      (s) => s?.status === 'ended',
      20_000,
      100,
    );
    expect(ended?.status).toBe('ended');
    expect(await eventually(() => counted(stack, t), (c) => c.active === 0, 5000)).toEqual({ active: 0, slots: 0 });
    expect((await chat({ message: 'hello' })).status).toBe(200);
    expect(await counted(stack, t)).toEqual({ active: 1, slots: 1 });
  });
});

describe('a start that fails after claiming its place', () => {
  it('gives the place back (chat and POST sessions, workflow start refused by Temporal)', async () => {
    // A namespace Temporal does not know: the connection works, every start is refused.
    const { stack, t, api, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '1', TEMPORAL_NAMESPACE: `missing-${randomUUID()}` }, false);
    const turn = await chat({ message: 'hello' });
    expect(turn.status).toBe(503);
    expect(turn.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/namespace does not exist/) });
    expect(await counted(stack, t)).toEqual({ active: 0, slots: 0 });
    expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId })).toBe(0);
    const created = await api.post(`/api/projects/${t.projectId}/sessions`, { key: t.adminKey, json: { agentId: 'Support_Hub' } });
    expect(created.status).toBe(503);
    expect(created.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(await counted(stack, t)).toEqual({ active: 0, slots: 0 });
    expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId })).toBe(0);
  });
});

describe('reconciliation', () => {
  let stack: TestStack;
  let t: SeededTenant;
  let chat: Awaited<ReturnType<typeof setup>>['chat'];
  beforeAll(async () => {
    ({ stack, t, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '5' }));
  });

  it('sets a count left too high by a lost decrement back to the sessions that hold a place', async () => {
    expect((await chat({ message: 'hello' })).status).toBe(200);
    // A process died after deleting a slot, before decrementing: the count is 4 too high.
    await stack.ctx.models.SessionCapacityCount.updateOne({ _id: t.tenantId }, { $inc: { rev: 1, active: 4 }, $set: { at: new Date(Date.now() - 120_000) } });
    expect((await counted(stack, t)).active).toBe(5);
    expect((await chat({ message: 'hello' })).status).toBe(429);
    const outcome = await reconcileSessionCapacity(stack.ctx.models, t.tenantId);
    expect(outcome).toEqual({ released: 0, adopted: 0, corrected: -4 });
    expect(await counted(stack, t)).toEqual({ active: 1, slots: 1 });
    expect((await chat({ message: 'hello' })).status).toBe(200);
  });

  it('leaves a count alone that changed within the settle time', async () => {
    const state = await readCapacity(stack.ctx.models, t.tenantId);
    await stack.ctx.models.SessionCapacityCount.updateOne({ _id: t.tenantId }, { $inc: { rev: 1, active: 1 }, $set: { at: new Date() } });
    expect(await reconcileSessionCapacity(stack.ctx.models, t.tenantId)).toEqual({ released: 0, adopted: 0, corrected: null });
    expect((await counted(stack, t)).active).toBe(state.active + 1);
    expect(await reconcileSessionCapacity(stack.ctx.models, t.tenantId, 0)).toEqual({ released: 0, adopted: 0, corrected: -1 });
  });

  it('gives back the place of a session that ended without giving it back, and counts sessions that never had one', async () => {
    const before = await counted(stack, t);
    const started = await chat({ message: 'hello' });
    expect(started.status).toBe(200);
    // Its end was written, but the process died before the place went back.
    await stack.ctx.models.Session.updateOne({ _id: started.body.sessionId, tenantId: t.tenantId }, { $set: { status: 'ended' } });
    // A session written before the count existed.
    const old = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId });
    expect(await counted(stack, t)).toEqual({ active: before.active + 1, slots: before.slots + 1 });
    expect(await reconcileSessionCapacity(stack.ctx.models, t.tenantId, 0)).toEqual({ released: 1, adopted: 1, corrected: null });
    expect(await counted(stack, t)).toEqual({ active: before.active + 1, slots: before.slots + 1 });
    expect(await stack.ctx.models.SessionSlot.exists({ _id: `${t.tenantId}/${old._id}` })).toBeTruthy();
    // Nothing left to repair, and a repeated run changes nothing.
    expect(await reconcileSessionCapacity(stack.ctx.models, t.tenantId, 0)).toEqual({ released: 0, adopted: 0, corrected: null });
  });
});

describe('a session workflow closed outside the platform', () => {
  it('ends and gives its place back: cancelled (it ends itself), terminated (recorded by the reconciliation)', async () => {
    const { stack, t, chat } = await setup({ MAX_CONCURRENT_SESSIONS: '2' });
    const [a, b, kept] = [await chat({ message: 'hello' }), await chat({ message: 'hello' }), null];
    expect([a.status, b.status, kept]).toEqual([200, 200, null]);
    expect(await counted(stack, t)).toEqual({ active: 2, slots: 2 });
    // The cap is reached: a third session is refused while the two are open.
    expect((await chat({ message: 'hello' })).status).toBe(429);
    const since = new Date(Date.now() - 60_000);
    const temporal = await stack.ctx.temporal.client();
    // What an operator does in the Web UI: the workflow ends without running the session's own end.
    await temporal.workflow.getHandle(`session/${a.body.sessionId}`).terminate('operator: stuck conversation');
    await temporal.workflow.getHandle(`session/${b.body.sessionId}`).cancel();
    await eventually(
      async () => (await temporal.workflow.getHandle(`session/${b.body.sessionId}`).describe()).status.name,
      (status) => status !== 'RUNNING',
      30_000,
      100,
    );
    const deps = { models: stack.ctx.models, config: stack.ctx.config, logger: stack.ctx.logger, temporalClient: temporal };
    // Visibility lists a close a moment after it: looked at again until both are in.
    await eventually(
      async () => {
        await reconcileClosedWorkflows(deps, since);
        return stack.ctx.models.Session.find({ _id: { $in: [a.body.sessionId, b.body.sessionId] } }, { status: 1, endReason: 1 }).lean();
      },
      (rows) => rows.every((r) => r.status === 'ended'),
      30_000,
      250,
    );
    const terminated = await stack.ctx.models.Session.findById(a.body.sessionId).lean();
    expect(terminated).toMatchObject({ status: 'ended', endReason: 'workflow_terminated', endedAt: expect.any(Date) });
    // A cancellation request is an end request: the session wrote its own end and completed.
    expect(await stack.ctx.models.Session.findById(b.body.sessionId).lean()).toMatchObject({ status: 'ended', endReason: 'workflow_canceled' });
    expect((await temporal.workflow.getHandle(`session/${b.body.sessionId}`).describe()).status.name).toBe('COMPLETED');
    expect(await counted(stack, t)).toEqual({ active: 0, slots: 0 });
    // Running it again changes nothing; the places are free for new sessions.
    expect((await reconcileClosedWorkflows(deps, since)).recorded).toBe(0);
    expect((await chat({ message: 'hello' })).status).toBe(200);
  });
});
