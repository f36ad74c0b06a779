// Per-project retention against the real stack: the setting's validation and tenancy, the sweep
// workflow run on demand deleting only what is older than each kind's days in the projects that
// set them (and saying so in its result and on the retention route), and the `data-retention`
// schedule created once and updated after, whose triggered run does the same.
import { randomUUID } from 'node:crypto';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from '../sessions/fixtures';
import { ensureRetentionSchedule, retentionScheduleId } from '../../../core/lifecycle/workflows';
import type { RetentionSweepResult, RetentionSweepWorkflow } from '../../../workflows/definitions';

jest.setTimeout(120_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
const DAY = 24 * 60 * 60 * 1000;
const path = (projectId: string) => `/api/projects/${projectId}/retention`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx);
  globex = await seedTenant(stack.ctx);
});
afterAll(() => stack.close());

/** A session's worth of data at each age (days ago): a transcript message, a trace event and an analytics event. */
async function seedAged(tenantId: string, projectId: string, ages: number[]): Promise<void> {
  const session = await seedSession(stack.ctx, { tenantId, projectId });
  const now = Date.now();
  const m = stack.ctx.models;
  for (const [i, age] of ages.entries()) {
    const at = new Date(now - age * DAY);
    await m.TranscriptMessage.collection.insertOne({ _id: randomUUID() as never, tenantId, projectId, sessionId: session._id, seq: i, turn: i, role: 'user', agent: null, content: `m${i}`, timestamp: at });
    await m.TraceEvent.collection.insertOne({ _id: randomUUID() as never, tenantId, projectId, sessionId: session._id, seq: i, turn: i, type: 'decision', spanId: `s${i}`, parentSpanId: null, timestamp: at, data: {} });
    const hour = new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
    await m.AnalyticsEvent.collection.insertOne({ _id: randomUUID() as never, tenantId, projectId, category: 'system', eventType: 'x', agentName: null, sessionId: session._id, channel: null, timestamp: at, hour, minute: hour, durationMs: null, error: null, tokens: 0, cost: 0, metadata: {} });
  }
}

const counts = async (tenantId: string, projectId: string) => {
  const m = stack.ctx.models;
  const f = { tenantId, projectId };
  return { transcripts: await m.TranscriptMessage.countDocuments(f), traces: await m.TraceEvent.countDocuments(f), analytics: await m.AnalyticsEvent.countDocuments(f) };
};

it('validates the setting with clear 400s that change nothing, and hides another tenant’s project', async () => {
  const empty = await api.get(path(acme.projectId), { key: acme.adminKey });
  expect(empty.status).toBe(200);
  expect(empty.body.retention).toEqual({ days: { transcripts: null, traces: null, analytics: null }, updatedAt: null, lastRun: null });
  for (const bad of [{ transcripts: 0 }, { traces: 3651 }, { analytics: 1.5 }, { transcripts: '30' }, { transcript: 30 }]) {
    const res = await api.put(path(acme.projectId), { key: acme.adminKey, json: bad });
    expect([JSON.stringify(bad), res.status, res.body.success, res.body.error?.code]).toEqual([JSON.stringify(bad), 400, false, 'VALIDATION_ERROR']);
  }
  expect((await api.put(path(acme.projectId), { key: await acme.keyWith(['session:read']), json: { transcripts: 1 } })).status).toBe(403);
  expect((await api.put(path(acme.projectId), { key: globex.adminKey, json: { transcripts: 1 } })).status).toBe(404);
  expect((await api.get(path(acme.projectId), { key: globex.adminKey })).status).toBe(404);
  expect((await api.get(path(acme.projectId), { key: acme.adminKey })).body.retention.updatedAt).toBeNull();
});

it('the sweep deletes only what is older than each kind’s days, per project, and says what it deleted', async () => {
  // acme's main project: transcripts 30 days, traces 7, analytics kept. Its other project sets
  // nothing; globex's project keeps traces 1 day. Data aged 0, 10 and 40 days everywhere.
  await seedAged(acme.tenantId, acme.projectId, [0, 10, 40]);
  await seedAged(acme.tenantId, acme.otherProjectId, [0, 10, 40]);
  await seedAged(globex.tenantId, globex.projectId, [0, 10, 40]);
  const put = await api.put(path(acme.projectId), { key: acme.adminKey, json: { transcripts: 30, traces: 7 } });
  expect(put.status).toBe(200);
  expect(put.body.retention.days).toEqual({ transcripts: 30, traces: 7, analytics: null });
  expect((await api.put(path(globex.projectId), { key: globex.adminKey, json: { traces: 1 } })).status).toBe(200);

  const temporal = await stack.ctx.temporal.client();
  const result: RetentionSweepResult = await temporal.workflow.execute<RetentionSweepWorkflow>('retentionSweep', {
    workflowId: `retention-sweep-test-${randomUUID()}`,
    taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
    args: [{}],
  });
  expect(result.projects).toBe(2);
  expect(result.deleted).toEqual({ transcripts: 1, traces: 4, analytics: 0 });
  expect(result.byProject).toEqual(
    expect.arrayContaining([
      { tenantId: acme.tenantId, projectId: acme.projectId, deleted: { transcripts: 1, traces: 2, analytics: 0 } },
      { tenantId: globex.tenantId, projectId: globex.projectId, deleted: { transcripts: 0, traces: 2, analytics: 0 } },
    ]),
  );
  expect(await counts(acme.tenantId, acme.projectId)).toEqual({ transcripts: 2, traces: 1, analytics: 3 });
  expect(await counts(acme.tenantId, acme.otherProjectId)).toEqual({ transcripts: 3, traces: 3, analytics: 3 });
  expect(await counts(globex.tenantId, globex.projectId)).toEqual({ transcripts: 3, traces: 1, analytics: 3 });

  const shown = await api.get(path(acme.projectId), { key: acme.adminKey });
  expect(shown.body.retention.lastRun).toMatchObject({ deleted: { transcripts: 1, traces: 2, analytics: 0 }, cutoffs: { analytics: null } });
  expect(Date.parse(shown.body.retention.lastRun.cutoffs.transcripts)).toBeLessThan(Date.now() - 29 * DAY);
  // Run again: nothing older is left, and the last run says so.
  const again: RetentionSweepResult = await temporal.workflow.execute<RetentionSweepWorkflow>('retentionSweep', {
    workflowId: `retention-sweep-test-${randomUUID()}`,
    taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
    args: [{}],
  });
  expect(again).toMatchObject({ projects: 2, deleted: { transcripts: 0, traces: 0, analytics: 0 }, byProject: [] });
  expect((await api.get(path(acme.projectId), { key: acme.adminKey })).body.retention.lastRun.deleted).toEqual({ transcripts: 0, traces: 0, analytics: 0 });
});

it('the data-retention schedule is created once, updated after, and its triggered run enforces retention', async () => {
  const temporal = await stack.ctx.temporal.client();
  try {
    expect(await ensureRetentionSchedule(temporal, { taskQueue: stack.config.TEMPORAL_TASK_QUEUE, everyHours: 24 })).toBe('created');
    expect(await ensureRetentionSchedule(temporal, { taskQueue: stack.config.TEMPORAL_TASK_QUEUE, everyHours: 12 })).toBe('updated');
    const handle = temporal.schedule.getHandle(retentionScheduleId(stack.config.TEMPORAL_TASK_QUEUE));
    const described = await handle.describe();
    expect(described.scheduleId).toBe(`data-retention/${stack.config.TEMPORAL_TASK_QUEUE}`);
    expect(described.spec.intervals?.[0]?.every).toBe(12 * 60 * 60 * 1000);
    await seedAged(acme.tenantId, acme.projectId, [40]);
    await handle.trigger();
    const run = await eventually(() => handle.describe(), (d) => d.info.recentActions.length > 0, 30_000, 200);
    const started = run.info.recentActions[0]!.action;
    const result: RetentionSweepResult = await temporal.workflow.getHandle(started.workflow.workflowId, started.workflow.firstExecutionRunId).result();
    expect(result.byProject).toEqual([{ tenantId: acme.tenantId, projectId: acme.projectId, deleted: { transcripts: 1, traces: 1, analytics: 0 } }]);
  } finally {
    await temporal.schedule.getHandle(retentionScheduleId(stack.config.TEMPORAL_TASK_QUEUE)).delete().catch(() => undefined);
  }
});
