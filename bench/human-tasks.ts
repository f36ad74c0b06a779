// Human tasks: list latency with 10,000 open tasks, and how fast a resolve turns into the waiting
// session's resumed answer.
//   node --import tsx bench/human-tasks.ts [--tasks 10000] [--sessions 100] [--samples 50]
// Starts its own stack (Temporal dev server in memory, FerretDB in a temp dir, the API in this
// process, the worker as its own process). `--sessions` sessions escalate for real (each waits on
// its task's workflow); the other open tasks are written straight into the projection (the rows
// a HumanTask workflow writes, spread over the same sessions, agents, types, priorities and
// teams), since a list reads only the projection and a session waits on one task at a time.
// List: each filter `--samples` times, one request at a time, over HTTP. Resolve: each session's
// task resolved one at a time; a figure runs from sending the resolve to the timestamp of the
// resumed reply in the transcript (the workflow's clock as it recorded it), so no polling blurs it.
// Floors, in the same run: for each list, the driver's own `find` (same filter, sort, skip and
// limit) and `countDocuments` on the collection, which is what the store alone costs at that
// size; for resolve → answer, a bare Temporal update round trip on a probe workflow.
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { freePort, startFerretDb, startTemporalDevServer } from '../infra/processes';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { PRIORITY_RANK } from '../db/human-task';
import { driverCollection } from '../db/driver-collection';
import { findOwned } from '../db/owned';
import { ZListTasksQuery } from '../api/human-tasks/schemas';
import { TASK_LIST_PROJECTION, TASK_LIST_SORT, taskListFilter } from '../core/human-tasks/tasks';
import { pingUpdate } from '../workflows/definitions';
import { startWorkerProcess } from '../test/support/worker-process';
import { jsonClient } from './support/json-client';
import { addCounts, countMongoCommands, countsSince, perOpCounts, snapshotCounts, type CommandCounts } from './support/mongo-commands';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '10000' },
    sessions: { type: 'string', default: '100' },
    samples: { type: 'string', default: '5' },
  },
});
const TASKS = Number(values.tasks);
const SESSIONS = Number(values.sessions);
const SAMPLES = Number(values.samples);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const line = (label: string, samples: number[], extra = '') => {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(48)} n=${String(sorted.length).padStart(3)}  p50 ${percentile(sorted, 50).toFixed(1).padStart(6)} ms  p99 ${percentile(sorted, 99).toFixed(1).padStart(6)} ms${extra}`;
};

const AGENTS = ['Refunds', 'Claims', 'Returns', 'Disputes'];
const TYPES = ['approval', 'data_entry', 'review', 'decision', 'escalation'];
const PRIORITIES = ['low', 'medium', 'high', 'critical'] as const;
const TEAMS = ['billing', 'claims', 'support', 'fraud'];

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-human-tasks-'));
  const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null });
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const apiPort = await freePort();
  const config = loadConfig({
    PORT: String(apiPort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
    // Command monitoring on: the bench counts the API's store commands per list and per resolve.
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/humantasks?monitorCommands=true`,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'human-tasks',
    JWT_SECRET: 'h'.repeat(40),
    ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '10000000',
    SESSION_MESSAGES_PER_MINUTE: '1000000',
    MAX_CONCURRENT_SESSIONS: '1000000',
    SESSION_PROJECTION_FLUSH_MS: '0',
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const apiOps = countMongoCommands(ctx);
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(apiPort, '127.0.0.1', r));
  const worker = await startWorkerProcess(config);
  const load = () => os.loadavg().map((x) => x.toFixed(1)).join(' ');
  process.stdout.write(`load average at start: ${load()}\n`);
  try {
    const tenant = await createTenant(ctx.models, { name: 'Human tasks bench', slug: 'human-tasks-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'Human tasks' });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
    const http = jsonClient(`http://127.0.0.1:${apiPort}`, 64);
    const auth = { authorization: `Bearer ${key}` };
    const agent = `AGENT: Refunds
GOAL: "Approve large refunds."
ESCALATE:
  triggers:
    - WHEN: amount > 500 AND human IS NOT SET
      REASON: "Refund of {{amount}} needs approval"
      PRIORITY: high
      TAGS: [refund, approval]
  on_human_complete:
    - IF human.resolved == true: CONTINUE
FLOW:
  steps: [ask, answer]
  ask:
    REASONING: false
    GATHER:
      - amount: required
        type: number
        prompt: "How much?"
    THEN: answer
  answer:
    REASONING: false
    RESPOND: "Refund {{human.decision}}."
`;
    const created = await http.post(`/api/projects/${project._id}/agents`, { name: 'Refunds', dslContent: agent }, auth);
    if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
    await http.post(`/api/projects/${project._id}/agents/Refunds/versions`, {}, auth);

    // 1. Sessions that escalate for real, 16 at a time.
    const began = Date.now();
    const escalated: { sessionId: string; taskId: string }[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < SESSIONS) {
          next++;
          const res = await http.post('/api/v1/chat/agent', { projectId: project._id, message: '900' }, auth);
          const body = res.body as { sessionId: string; action?: { humanTask?: { id: string } } };
          if (res.status !== 200 || !body.action?.humanTask) throw new Error(`escalate: ${res.status} ${JSON.stringify(res.body)}`);
          escalated.push({ sessionId: body.sessionId, taskId: body.action.humanTask.id });
        }
      }),
    );
    process.stdout.write(`${SESSIONS} sessions escalated in ${((Date.now() - began) / 1000).toFixed(1)} s\n`);

    // 2. The other open tasks, straight into the projection, spread over those sessions.
    const now = Date.now();
    const rows = Array.from({ length: Math.max(0, TASKS - SESSIONS) }, (_, i) => {
      const priority = PRIORITIES[i % 4]!;
      const createdAt = new Date(now - (i % 86_400) * 1000);
      const status = i % 3 === 0 ? 'assigned' : i % 7 === 0 ? 'in_progress' : 'pending';
      return {
        _id: `ht_${randomUUID().replace(/-/g, '')}`,
        tenantId: tenant._id,
        projectId: project._id,
        sessionId: escalated[i % escalated.length]!.sessionId,
        agentName: AGENTS[i % AGENTS.length],
        type: TYPES[i % TYPES.length],
        title: `Task ${i}`,
        status,
        priority,
        priorityRank: PRIORITY_RANK[priority],
        tags: [],
        contextJson: JSON.stringify({ n: i }),
        fields: [],
        routing: null,
        assignedTo: status === 'pending' ? null : `user-${i % 50}`,
        assignedToTeam: TEAMS[i % TEAMS.length],
        claimedAt: null,
        dueAt: null,
        resolution: null,
        cancelReason: null,
        history: [{ action: 'created', from: null, to: 'pending', by: 'bench', at: createdAt.toISOString() }],
        createdBy: 'bench',
        revision: 1,
        createdAt,
        updatedAt: createdAt,
      };
    });
    for (let i = 0; i < rows.length; i += 1000) await ctx.models.HumanTask.insertMany(rows.slice(i, i + 1000), { ordered: false });
    const total = await ctx.models.HumanTask.countDocuments({ tenantId: tenant._id });
    process.stdout.write(`${total} open tasks across ${SESSIONS} sessions\n\n`);

    // 3. List latency per filter.
    const base = `/api/projects/${project._id}/human-tasks`;
    const from = new Date(now - 3_600_000).toISOString();
    const filters: [string, string][] = [
      ['no filter (first page of 50)', ''],
      ['status=pending', '?status=pending'],
      ['type=review', '?type=review'],
      ['priority=critical', '?priority=critical'],
      ['assignedTo=user-7', '?assignedTo=user-7'],
      ['assignedToTeam=claims', '?assignedToTeam=claims'],
      ['sessionId=<one session>', `?sessionId=${escalated[3]!.sessionId}`],
      ['agentName=Claims', '?agentName=Claims'],
      ['created in the last hour', `?createdFrom=${encodeURIComponent(from)}`],
      ['status=pending&priority=high', '?status=pending&priority=high'],
      ['status=pending, offset 5000', '?status=pending&offset=5000'],
    ];
    const tasks = driverCollection(ctx.models.HumanTask);
    const scope = { tenantId: tenant._id, projectId: project._id };
    for (const [label, query] of filters) {
      const samples: number[] = [];
      let matched = 0;
      const listOps: CommandCounts = new Map();
      for (let i = 0; i < SAMPLES; i++) {
        const opsBefore = snapshotCounts(apiOps);
        const started = performance.now();
        const res = await http.get(`${base}${query}`, auth);
        samples.push(performance.now() - started);
        addCounts(listOps, countsSince(apiOps, opsBefore));
        if (res.status !== 200) throw new Error(`list ${query}: ${res.status} ${JSON.stringify(res.body)}`);
        matched = (res.body as { total: number }).total;
      }
      process.stdout.write(`${line(`list ${label}`, samples, `  (${matched} match)`)}\n  API store commands per list: ${perOpCounts(listOps, SAMPLES, true)}\n`);
      // The floor: the same filter, sort, skip and limit, and the count, straight to the driver.
      const q = ZListTasksQuery.parse(Object.fromEntries(new URLSearchParams(query)));
      const filter = taskListFilter(scope, q);
      const finds: number[] = [];
      const counts: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        let started = performance.now();
        await tasks.find(filter, { projection: TASK_LIST_PROJECTION }).sort(TASK_LIST_SORT).skip(q.offset).limit(q.limit).toArray();
        finds.push(performance.now() - started);
        started = performance.now();
        await tasks.countDocuments(filter);
        counts.push(performance.now() - started);
      }
      process.stdout.write(`${line('  floor: driver find (sort, page)', finds)}\n${line('  floor: driver countDocuments', counts)}\n`);
    }

    // 4. Resolve → resumed answer, one task at a time; its floor, a bare update round trip on a
    // probe workflow, as many times, one at a time.
    const client = await ctx.temporal.client();
    const probeOp = new WithStartWorkflowOperation('probeWorkflow', { workflowId: 'probe-human-tasks', taskQueue: config.TEMPORAL_TASK_QUEUE, workflowIdConflictPolicy: 'USE_EXISTING' });
    await client.workflow.executeUpdateWithStart(pingUpdate, { args: [{ n: 0 }], startWorkflowOperation: probeOp });
    const probe = client.workflow.getHandle('probe-human-tasks');
    // And the owned read a resolve makes of its task (tenant and project in the filter), alone.
    const ownedReads: number[] = [];
    for (const { taskId } of escalated) {
      const started = performance.now();
      await findOwned(ctx.models.HumanTask, taskId, scope);
      ownedReads.push(performance.now() - started);
    }
    // And the filter of the projection write each transition makes (owner and revision guard),
    // matching nothing here, so it costs the lookup without a write.
    const ownedWrites: number[] = [];
    for (const { taskId } of escalated) {
      const started = performance.now();
      await tasks.updateOne({ _id: taskId, ...scope, revision: { $lt: 0 } }, { $set: { revision: 0 } });
      ownedWrites.push(performance.now() - started);
    }
    const floor: number[] = [];
    for (let i = 1; i <= escalated.length; i++) {
      const started = performance.now();
      await probe.executeUpdate(pingUpdate, { args: [{ n: i }] });
      floor.push(performance.now() - started);
    }
    const resumed: number[] = [];
    const resolveCalls: number[] = [];
    const resolveOps: CommandCounts = new Map();
    for (const { sessionId, taskId } of escalated) {
      const sentAt = Date.now();
      const opsBefore = snapshotCounts(apiOps);
      const started = performance.now();
      const res = await http.post(`${base}/${taskId}/resolve`, { respondedBy: 'bench', decision: 'approved' }, auth);
      resolveCalls.push(performance.now() - started);
      addCounts(resolveOps, countsSince(apiOps, opsBefore));
      if (res.status !== 200) throw new Error(`resolve: ${res.status} ${JSON.stringify(res.body)}`);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const row = await ctx.models.TranscriptMessage.findOne({ sessionId, role: 'assistant', content: 'Refund approved.' }, { timestamp: 1 }).lean();
        if (row) {
          resumed.push(row.timestamp.getTime() - sentAt);
          break;
        }
        if (Date.now() > deadline) throw new Error(`session ${sessionId} did not resume`);
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    process.stdout.write(`\n${line('resolve call (200 answered)', resolveCalls)}\n  API store commands per resolve: ${perOpCounts(resolveOps, resolveCalls.length, true)}\n`);
    process.stdout.write(`${line('resolve -> resumed answer recorded', resumed)}\n`);
    process.stdout.write(`${line('floor: bare update round trip (probe)', floor)}\n`);
    process.stdout.write(`${line('floor: owned read of one task (driver)', ownedReads)}\n`);
    process.stdout.write(`${line('floor: owned projection-write lookup (driver)', ownedWrites)}\n`);
    process.stdout.write(`load average at end: ${load()}\n`);
  } finally {
    await worker.stop();
    await new Promise((r) => server.close(r));
    await closeAppContext(ctx);
    await temporal.process.stop();
    await ferret.process.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
