// Chat-turn latency and throughput through the HTTP API with the offline `local` model, next to a
// bare Temporal update round trip (the probe workflow's no-op update) on the same stack.
//   node --import tsx bench/chat-turn.ts [--sessions 10] [--turns 60] [--rounds 3] [--worker process|inline]
//     [--first-turns 20] [--active-sessions 10000]
// Starts its own stack (bench/support/stack.ts: Temporal dev server in memory, FerretDB in a temp dir, API, worker).
// Then first turns (the message that starts a session) one at a time, each after the previous
// one's held writes, in a tenant of its own, with
// no active session and again after --active-sessions active session records were written
// straight into MongoDB, each next to a bare update-with-start of a probe workflow (the floor);
// --first-turns 0 skips them.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { createSwitchboardWorker } from '../workers/create-worker';
import { createActivityDeps } from '../workers/activity-deps';
import { pingUpdate, turnUpdate } from '../workflows/definitions';
import { seedDevProject } from '../infra/seed-project';
import { ensureDevTenant } from '../infra/seed';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { driverCollection } from '../db/driver-collection';
import { readCapacity, reconcileSessionCapacity } from '../db/session-capacity';
import { type SessionDoc } from '../db/session';
import { CpuMeter, type CpuSnapshot } from './support/cpu';
import { jsonClient } from './support/json-client';
import { startBenchStack } from './support/stack';
import { addCounts, countMongoCommands, countsSince, perOpCounts, snapshotCounts, type CommandCounts } from './support/mongo-commands';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '10' },
    turns: { type: 'string', default: '60' },
    worker: { type: 'string', default: 'process' },
    rounds: { type: 'string', default: '3' },
    'first-turns': { type: 'string', default: '20' },
    'active-sessions': { type: 'string', default: '10000' },
  },
});
const SESSIONS = Number(values.sessions);
const FIRST_TURNS = Number(values['first-turns']);
const ACTIVE_SESSIONS = Number(values['active-sessions']);
const TURNS = Number(values.turns);
// The bare and chat phases alternate in rounds, so a burst of load from elsewhere on the machine
// falls on both rather than on whichever phase it happened to meet.
const ROUNDS = Math.max(1, Math.min(Number(values.rounds), TURNS));
// A turn leaves work behind it: its projection rows are written up to SESSION_PROJECTION_FLUSH_MS
// later and its rate-limit charges within 500 ms. After each phase the bench waits that long (and
// a little more) untimed and counts the CPU spent meanwhile to the phase that left it, so no phase
// is charged for another's work; the long default phases (20 turns per session) keep the untimed
// tail small next to the steady state, where such work overlaps the turns.
const RATE_LIMIT_BATCH_MS = 500;
const SETTLE_MARGIN_MS = 250;

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  return { n: sorted.length, p50: at(50), p95: at(95), p99: at(99) };
}

const fmt = (label: string, s: ReturnType<typeof stats>, wallMs: number) =>
  `${label.padEnd(22)} n=${s.n}  p50 ${s.p50.toFixed(1)} ms  p95 ${s.p95.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  ${((s.n / wallMs) * 1000).toFixed(1)} /s`;

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const stack = await startBenchStack({
    name: 'bench',
    // The projection write delay can be tried from the environment (default 1000 ms).
    env: { RATE_LIMIT_REQUESTS: '1000000', SESSION_MESSAGES_PER_MINUTE: '100000', MAX_CONCURRENT_SESSIONS: '100000', SESSION_PROJECTION_FLUSH_MS: process.env.SESSION_PROJECTION_FLUSH_MS },
    // As in production, the worker is its own process by default (`--worker inline` shares this one).
    worker: values.worker === 'inline' ? 'none' : 'process',
    // The API's store commands are counted per turn, per no-op request and per first turn.
    monitorApiCommands: true,
  });
  const { ctx, config, baseUrl, client, cpu } = stack;
  const apiOps = countMongoCommands(ctx);
  const chatOps: CommandCounts = new Map();
  const settle = () => new Promise((resolve) => setTimeout(resolve, config.SESSION_PROJECTION_FLUSH_MS + RATE_LIMIT_BATCH_MS + SETTLE_MARGIN_MS));
  let stopWorker = async () => {};
  if (values.worker === 'inline') {
    const nativeConnection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
    const worker = await createSwitchboardWorker({
      connection: nativeConnection,
      namespace: 'default',
      taskQueue: 'bench',
      deps: createActivityDeps({ config, models: ctx.models, logger: ctx.logger }),
      payloadCodec: ctx.payloadCodec,
    });
    const running = worker.run();
    stopWorker = async () => {
      worker.shutdown();
      await running;
      await nativeConnection.close();
    };
  }
  const { credentials } = await ensureDevTenant(ctx.models, path.join(stack.dir, 'creds.json'), baseUrl);
  const agents = await seedDevProject(ctx.models, credentials);
  process.stdout.write(`stack up; agents: ${agents.join(', ')}; ${SESSIONS} sessions x ${TURNS} turns\n`);

  // Bare Temporal: one probe workflow per session, TURNS no-op updates each, same concurrency.
  const bare: number[] = [];
  // Starts are not turns: every probe workflow exists before the clock starts.
  const probes = await Promise.all(
    Array.from({ length: SESSIONS }, async (_, s) => {
      const op = new WithStartWorkflowOperation('probeWorkflow', { workflowId: `probe-${s}`, taskQueue: 'bench', workflowIdConflictPolicy: 'USE_EXISTING' });
      await client.workflow.executeUpdateWithStart(pingUpdate, { args: [{ n: 0 }], startWorkflowOperation: op });
      return client.workflow.getHandle(`probe-${s}`);
    }),
  );
  // Chat turns through the HTTP API. The first message of each session creates it (update-with-
  // start, the session record): that happens before the clock starts, as the probes' starts do.
  const turns: number[] = [];
  const messages = ['hello', 'I have a question about my invoice', 'INV-123456', 'yes', 'thanks'];
  const http = jsonClient(baseUrl);
  const auth = { authorization: `Bearer ${credentials.apiKey}` };
  const chat = async (message: string, sessionId?: string): Promise<string> => {
    const res = await http.post(
      '/api/v1/chat/agent',
      {
        projectId: credentials.projectId,
        message,
        ...(sessionId ? { sessionId } : {}),
        // The sample's billing API is not reachable from here: answer its tool from the request.
        testContext: { toolMocks: [{ toolName: 'get_invoice', response: { id: 'INV-123456', amount: 120, status: 'open' } }] },
      },
      auth,
    );
    const body = res.body as { sessionId?: string; error?: unknown };
    if (res.status !== 200) throw new Error(`chat failed: ${res.status} ${JSON.stringify(body)}`);
    return body.sessionId!;
  };
  const sessionIds = await Promise.all(Array.from({ length: SESSIONS }, () => chat(messages[0]!)));

  // Timed: TURNS operations per session in each phase, split over ROUNDS alternating rounds.
  const bareCpuTotal: CpuSnapshot = {};
  const chatCpuTotal: CpuSnapshot = {};
  let bareWall = 0;
  let chatWall = 0;
  const turnsIn = (round: number) => Math.floor((TURNS * (round + 1)) / ROUNDS) - Math.floor((TURNS * round) / ROUNDS);
  let sent = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const count = turnsIn(round);
    let before = cpu.snapshot();
    let wall = Date.now();
    await Promise.all(
      probes.map(async (handle) => {
        for (let t = 0; t < count; t++) {
          const started = performance.now();
          await handle.executeUpdate(pingUpdate, { args: [{ n: t }] });
          bare.push(performance.now() - started);
        }
      }),
    );
    bareWall += Date.now() - wall;
    await settle();
    CpuMeter.accumulate(bareCpuTotal, before, cpu.snapshot());

    before = cpu.snapshot();
    const opsBefore = snapshotCounts(apiOps);
    wall = Date.now();
    await Promise.all(
      sessionIds.map(async (sessionId) => {
        for (let t = 1; t <= count; t++) {
          const started = performance.now();
          await chat(messages[(sent + t) % messages.length]!, sessionId);
          turns.push(performance.now() - started);
        }
      }),
    );
    chatWall += Date.now() - wall;
    await settle();
    CpuMeter.accumulate(chatCpuTotal, before, cpu.snapshot());
    addCounts(chatOps, countsSince(apiOps, opsBefore));
    sent += count;
  }
  const bareCpuPerOp = CpuMeter.perOp({}, bareCpuTotal, SESSIONS * TURNS);
  const chatCpuPerOp = CpuMeter.perOp({}, chatCpuTotal, SESSIONS * TURNS);

  // Breakdown: an authenticated no-op request (the API's fixed cost), and the turn update sent
  // straight to a session's workflow (the runtime's cost without the HTTP edge).
  const authOnly: number[] = [];
  const direct: number[] = [];
  const sessions = await ctx.models.Session.find({ tenantId: credentials.tenantId }).limit(SESSIONS).lean();
  const noOpOps: CommandCounts = new Map();
  await Promise.all(
    sessions.map(async (session) => {
      const handle = client.workflow.getHandle(session.runtimeSessionId);
      for (let t = 0; t < TURNS; t++) {
        const opsBefore = snapshotCounts(apiOps);
        let started = performance.now();
        await http.get('/api/auth/me', auth);
        authOnly.push(performance.now() - started);
        addCounts(noOpOps, countsSince(apiOps, opsBefore));
        started = performance.now();
        await handle.executeUpdate(turnUpdate, { args: [{ clientMessageId: `direct-${session._id}-${t}`, message: 'thanks' }] });
        direct.push(performance.now() - started);
      }
    }),
  );

  const b = stats(bare);
  const c = stats(turns);
  process.stdout.write(`${fmt('bare update', b, bareWall)}\n${fmt('chat turn (HTTP, local)', c, chatWall)}\n`);
  process.stdout.write(`breakdown: authenticated no-op request p50 ${stats(authOnly).p50.toFixed(1)} ms; turn update without the API p50 ${stats(direct).p50.toFixed(1)} ms\n`);
  process.stdout.write(`CPU per bare update (ms): ${bareCpuPerOp}\nCPU per chat turn (ms): ${chatCpuPerOp}\n`);
  // Counted while the requests overlap: a command answered meanwhile for another request may land in one's count.
  process.stdout.write(`API store commands per chat turn: ${perOpCounts(chatOps, SESSIONS * TURNS, true)}\n`);
  process.stdout.write(`API store commands per authenticated no-op request (concurrent with direct updates): ${perOpCounts(noOpOps, authOnly.length, true)}\n`);
  // The no-op request alone, one at a time: its time next to the store's share of it.
  const lone: number[] = [];
  const loneOps: CommandCounts = new Map();
  for (let i = 0; i < 100; i++) {
    const opsBefore = snapshotCounts(apiOps);
    const started = performance.now();
    await http.get('/api/auth/me', auth);
    lone.push(performance.now() - started);
    addCounts(loneOps, countsSince(apiOps, opsBefore));
  }
  process.stdout.write(`authenticated no-op request, one at a time: p50 ${stats(lone).p50.toFixed(1)} ms; store commands per request: ${perOpCounts(loneOps, lone.length, true)}\n`);
  process.stdout.write(
    `ratio p50 ${(c.p50 / b.p50).toFixed(2)}x (target <= 2x); throughput ${((turns.length / chatWall) / (bare.length / bareWall)).toFixed(2)} of bare (target >= 0.5)\n`,
  );

  if (FIRST_TURNS > 0) {
    // First turns in a tenant of its own: the session's start (capacity claim, record, workflow
    // start with the turn) is what is timed. One at a time, each followed by a bare
    // update-with-start of a new probe workflow, so both see the same machine.
    const tenant = await createTenant(ctx.models, { name: 'First turns' });
    const project = await createProject(ctx.models, tenant._id, { name: 'First turns' });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
    await seedDevProject(ctx.models, { tenantId: tenant._id, projectId: project._id });
    const firstTurnPhase = async (label: string) => {
      const first: number[] = [];
      const floor: number[] = [];
      const written: number[] = [];
      const ops: CommandCounts = new Map();
      for (let i = 0; i < FIRST_TURNS; i++) {
        const opsBefore = snapshotCounts(apiOps);
        let started = performance.now();
        const res = await http.post('/api/v1/chat/agent', { projectId: project._id, message: messages[0] }, { authorization: `Bearer ${key}` });
        if (res.status !== 200) throw new Error(`first turn failed: ${res.status} ${JSON.stringify(res.body)}`);
        const answered = performance.now();
        addCounts(ops, countsSince(apiOps, opsBefore));
        first.push(answered - started);
        started = performance.now();
        const op = new WithStartWorkflowOperation('probeWorkflow', { workflowId: `first-probe-${label}-${i}`, taskQueue: 'bench', workflowIdConflictPolicy: 'USE_EXISTING' });
        await client.workflow.executeUpdateWithStart(pingUpdate, { args: [{ n: 0 }], startWorkflowOperation: op });
        floor.push(performance.now() - started);
        // The turn's held projection write (its summary update finds the session by id, tenant and
        // project: on FerretDB a scan of the sessions collection) lands before the next first turn,
        // so each is timed alone and the phases compare starts, not writes. Polled by `_id` alone
        // (the bench's own look, not the product's): the cheapest read FerretDB has.
        const sessionId = (res.body as { sessionId: string }).sessionId;
        for (;;) {
          const doc = await driverCollection(ctx.models.Session).findOne({ _id: sessionId }, { projection: { messageCount: 1 } });
          if ((doc?.messageCount ?? 0) > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        written.push(performance.now() - answered - config.SESSION_PROJECTION_FLUSH_MS);
        await settle();
      }
      return { first: stats(first), floor: stats(floor), written: stats(written), ops: perOpCounts(ops, FIRST_TURNS, true) };
    };
    const line = (label: string, r: Awaited<ReturnType<typeof firstTurnPhase>>) =>
      `first turn, ${label.padEnd(24)} n=${r.first.n}  p50 ${r.first.p50.toFixed(1)} ms  p95 ${r.first.p95.toFixed(1)} ms; bare update-with-start p50 ${r.floor.p50.toFixed(1)} ms  p95 ${r.floor.p95.toFixed(1)} ms; held write seen ${r.written.p50.toFixed(0)} ms after its timer (p50)\n  API store commands per first turn (until its answer): ${r.ops}`;
    const empty = await firstTurnPhase('empty');
    process.stdout.write(`${line('0 active sessions', empty)}\n`);

    // ACTIVE_SESSIONS active session records written straight into MongoDB, then counted by the
    // reconciliation, as a deployment that predates the count has them counted.
    const writtenAt = new Date();
    const records: SessionDoc[] = Array.from({ length: ACTIVE_SESSIONS }, (_, i) => {
      const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      return {
        _id: id, tenantId: tenant._id, projectId: project._id, agentId: null, agentName: 'Support_Hub', currentAgent: 'Support_Hub',
        status: 'active', runtimeStatus: 'active', channel: 'api', environment: 'dev', deploymentId: null, runtimeSessionId: `session/${id}`,
        messageCount: 0, traceEventCount: 0, tokenCount: 0, errorCount: 0, estimatedCost: 0, durationMs: 0, handoffCount: 0,
        createdAt: writtenAt, lastActivityAt: writtenAt, endedAt: null, endReason: null,
      };
    });
    for (let i = 0; i < records.length; i += 1000) await driverCollection(ctx.models.Session).insertMany(records.slice(i, i + 1000));
    await reconcileSessionCapacity(ctx.models, tenant._id);
    const counted = await readCapacity(ctx.models, tenant._id);
    const full = await firstTurnPhase('full');
    process.stdout.write(`${line(`${counted.active} active sessions`, full)}\n`);
    process.stdout.write(`first turn p50 with ${counted.active} active sessions / with 0: ${(full.first.p50 / empty.first.p50).toFixed(2)} (target within 20 %)\n`);
  }

  http.close();
  await stopWorker();
  await stack.close();
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
