// Async tool callbacks: how fast a signed callback turns into the session's resumed answer, next
// to a bare Temporal update round trip (the floor), and what suspended sessions cost the worker.
//   node --import tsx bench/callbacks.ts [--concurrent 100] [--rounds 3] [--suspended 1000,10000]
// Starts its own stack (bench/support/stack.ts: Temporal dev server in memory, FerretDB in a temp
// dir, the API in this process, the worker as its own process so its memory is its own) and an async tool server that
// acknowledges with 202. Latency: `--concurrent` sessions are suspended, then all their callbacks
// are fired at once; a session's figure runs from sending its callback to the timestamp of the
// resumed reply in its transcript (the workflow's clock as it recorded the reply), so no polling
// blurs it. Memory: the worker's RSS once `--suspended` sessions (cumulative) wait at once.
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type Client, WithStartWorkflowOperation } from '@temporalio/client';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { pingUpdate } from '../workflows/definitions';
import { jsonClient } from './support/json-client';
import { CpuMeter, type CpuSnapshot } from './support/cpu';
import { startBenchStack } from './support/stack';
import { memoryProbeNodeArgs, probeWorkerMemory, rssMb } from './support/worker-memory';
import { addCounts, countMongoCommands, countsSince, perOpCounts, snapshotCounts, type CommandCounts } from './support/mongo-commands';

const { values } = parseArgs({
  options: {
    concurrent: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    suspended: { type: 'string', default: '1000,10000' },
    lanes: { type: 'string', default: '16' },
    'flush-ms': { type: 'string' },
    /** Writes a V8 CPU profile of the worker process into this directory when it stops. */
    'worker-cpu-prof': { type: 'string' },
    /**
     * At each `--suspended` point, also splits the worker's memory by thread: live JS heap after a
     * full GC in the main thread and in the SDK's workflow thread (bench/support/memory-probe.js).
     */
    'memory-probe': { type: 'boolean', default: false },
  },
});
/** Sessions suspended at once (first turns in flight) while the bench fills the worker. */
const LANES = Number(values.lanes);
const CONCURRENT = Number(values.concurrent);
const ROUNDS = Number(values.rounds);
const MEMORY_POINTS = values.suspended
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => n > 0);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const line = (label: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(34)} n=${sorted.length}  p50 ${percentile(sorted, 50).toFixed(1)} ms  p99 ${percentile(sorted, 99).toFixed(1)} ms  max ${sorted[sorted.length - 1]!.toFixed(1)} ms`;
};
const out = (text: string) => process.stdout.write(`${text}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The events after the callback's signal in a session's history: what one resume costs Temporal. */
async function resumeHistory(client: Client, sessionId: string): Promise<string> {
  const history = await client.workflow.getHandle(`session/${sessionId}`).fetchHistory();
  const events = history.events ?? [];
  const signalAt = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
  if (signalAt < 0) return 'no signal in history';
  const kinds = events.slice(signalAt).map((e) => {
    const kind = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? 'unknown';
    const marker = e.markerRecordedEventAttributes?.markerName;
    return kind.replace(/EventAttributes$/, '') + (marker ? `(${marker})` : '');
  });
  const tally = new Map<string, number>();
  for (const k of kinds) tally.set(k, (tally.get(k) ?? 0) + 1);
  return `${kinds.length} events from the signal on: ${[...tally].map(([k, n]) => `${n}x ${k}`).join(', ')}`;
}

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-callbacks-'));
  // The outside system: records each request's callback URL and secret, acknowledges with 202.
  const requests = new Map<string, { url: string; secret: string }>();
  const tool = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { callbackUrl: string; callbackSecret: string };
      requests.set(parsed.callbackUrl.split('/').pop()!, { url: parsed.callbackUrl, secret: parsed.callbackSecret });
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  const toolHost = `127.0.0.1:${(tool.address() as AddressInfo).port}`;

  const probeFile = path.join(tmp, 'worker-memory.jsonl');
  if (values['memory-probe']) process.env.MEMORY_PROBE_FILE = probeFile;
  // The API (this process) has its MongoDB commands counted; the worker's connection is left plain.
  const stack = await startBenchStack({
    name: 'callbacks',
    env: {
      ...(values['flush-ms'] !== undefined ? { SESSION_PROJECTION_FLUSH_MS: values['flush-ms'] } : {}),
      TOOL_ALLOWED_PRIVATE_DESTINATIONS: toolHost,
    },
    monitorApiCommands: true,
    workerNodeArgs: [
      ...(values['worker-cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${values['worker-cpu-prof']}`] : []),
      ...(values['memory-probe'] ? memoryProbeNodeArgs() : []),
    ],
  });
  const { ctx, config, client, baseUrl, cpu } = stack;
  const workerPid = stack.workerPid!;
  out('store: FerretDB on the embedded PostgreSQL; "mongo" is FerretDB, "postgres" the cluster');
  const apiOps = countMongoCommands(ctx);
  // The untimed wait after a phase: the held projection write and its settle land in that phase.
  const settleMs = config.SESSION_PROJECTION_FLUSH_MS + 750;
  try {
    const tenant = await createTenant(ctx.models, { name: 'Callbacks bench', slug: 'callbacks-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'Callbacks' });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
    const http = jsonClient(baseUrl, 128);
    const auth = { authorization: `Bearer ${key}` };
    const agent = `AGENT: Payments
GOAL: "Take a payment."
TOOLS:
  process_payment(amount: number) -> {status: string, transactionId: string}
    type: async_webhook
    endpoint: "http://${toolHost}/pay"
    method: POST
FLOW:
  steps: [pay, done]
  pay:
    REASONING: false
    CALL: process_payment
      WITH:
        amount: 42
      AS: payment
    ON_SUCCESS:
      THEN: done
  done:
    REASONING: false
    RESPOND: "Payment {{payment.transactionId}} went through."
`;
    const created = await http.post(`/api/projects/${project._id}/agents`, { name: 'Payments', dslContent: agent }, auth);
    if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
    await http.post(`/api/projects/${project._id}/agents/Payments/versions`, {}, auth);

    /** Suspends `n` new sessions, `lanes` at a time; returns their session and callback ids. */
    const suspendCpu: CpuSnapshot = {};
    const suspendOps: CommandCounts = new Map();
    let suspendedCount = 0;
    let unanswered = 0;
    const failedCallbacks: string[] = [];
    const suspend = async (n: number, lanes = LANES) => {
      const before = cpu.snapshot();
      const opsBefore = snapshotCounts(apiOps);
      const out: { sessionId: string; callbackId: string }[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: lanes }, async () => {
          while (next < n) {
            next++;
            // No Idempotency-Key: with one, a first turn looks for an earlier session, which FerretDB
            // answers with a scan of every session. A first turn the API stopped waiting for (503
            // on a loaded machine) goes on in its workflow and suspends all the same; it is counted
            // as waiting, without its ids.
            const res = await http.post('/api/v1/chat/agent', { projectId: project._id, message: 'pay' }, auth);
            if (res.status === 503) {
              unanswered++;
              continue;
            }
            const body = res.body as { sessionId: string; suspensionId?: string };
            if (res.status !== 202 || !body.suspensionId) throw new Error(`suspend: ${res.status} ${JSON.stringify(res.body)}`);
            out.push({ sessionId: body.sessionId, callbackId: body.suspensionId });
          }
        }),
      );
      await sleep(settleMs);
      CpuMeter.accumulate(suspendCpu, before, cpu.snapshot());
      addCounts(suspendOps, countsSince(apiOps, opsBefore));
      suspendedCount += n;
      return out;
    };

    // Floor: bare update round trips at the same concurrency, on probe workflows.
    const probes = await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const op = new WithStartWorkflowOperation('probeWorkflow', { workflowId: `probe-${i}`, taskQueue: 'callbacks', workflowIdConflictPolicy: 'USE_EXISTING' });
        await client.workflow.executeUpdateWithStart(pingUpdate, { args: [{ n: 0 }], startWorkflowOperation: op });
        return client.workflow.getHandle(`probe-${i}`);
      }),
    );
    /**
     * Fires the callbacks of `batch` all at once and waits for every resumed reply; returns each
     * session's callback-to-reply time, and adds the phase's CPU and API commands to the totals.
     */
    const fireCallbacks = async (batch: { sessionId: string; callbackId: string }[], cpuTotal: CpuSnapshot, opsTotal: CommandCounts) => {
      const sentAt = new Map<string, number>();
      const before = cpu.snapshot();
      const opsBefore = snapshotCounts(apiOps);
      await Promise.all(
        batch.map(async ({ sessionId, callbackId }) => {
          const { secret } = requests.get(callbackId)!;
          const payload = { status: 'completed', transactionId: `tx_${callbackId.slice(-6)}` };
          const signature = `sha256=${createHmac('sha256', secret).update(JSON.stringify(payload)).digest('hex')}`;
          sentAt.set(sessionId, Date.now());
          let res = await http.post(`/api/v1/callbacks/${callbackId}`, payload, { 'x-callback-signature': signature });
          // A failed delivery is sent again, as the caller's retry policy would (counted and printed).
          for (let retry = 0; res.status !== 200 && retry < 3; retry++) {
            failedCallbacks.push(`${res.status} ${JSON.stringify(res.body)}`);
            await sleep(1000);
            res = await http.post(`/api/v1/callbacks/${callbackId}`, payload, { 'x-callback-signature': signature });
          }
          if (res.status !== 200) throw new Error(`callback: ${res.status} ${JSON.stringify(res.body)}`);
        }),
      );
      // Wait for every resumed reply, then read when each was recorded. The polls (one query a
      // second) are counted in the phase's CPU; they are a small share of it.
      const ids = batch.map((b) => b.sessionId);
      const deadline = Date.now() + 600_000;
      let rows: { sessionId: string; timestamp: Date }[] = [];
      while (Date.now() < deadline) {
        // The resumed reply (the first turn also left a holding reply).
        rows = await ctx.models.TranscriptMessage.find({ sessionId: { $in: ids }, role: 'assistant', content: /went through/ }, { sessionId: 1, timestamp: 1 }).lean();
        if (rows.length >= ids.length) break;
        await sleep(1000);
      }
      if (rows.length < ids.length) throw new Error(`only ${rows.length} of ${ids.length} sessions resumed`);
      await sleep(settleMs);
      CpuMeter.accumulate(cpuTotal, before, cpu.snapshot());
      addCounts(opsTotal, countsSince(apiOps, opsBefore));
      return rows.map((row) => row.timestamp.getTime() - sentAt.get(row.sessionId)!);
    };

    const floor: number[] = [];
    const resumed: number[] = [];
    const floorCpu: CpuSnapshot = {};
    const callbackCpu: CpuSnapshot = {};
    const callbackOps: CommandCounts = new Map();
    let lastSession = '';
    for (let round = 0; round < ROUNDS; round++) {
      const before = cpu.snapshot();
      await Promise.all(
        probes.map(async (h, i) => {
          const started = performance.now();
          await h.executeUpdate(pingUpdate, { args: [{ n: round * CONCURRENT + i }] });
          floor.push(performance.now() - started);
        }),
      );
      CpuMeter.accumulate(floorCpu, before, cpu.snapshot());
      const batch = await suspend(CONCURRENT);
      resumed.push(...(await fireCallbacks(batch, callbackCpu, callbackOps)));
      lastSession = batch[batch.length - 1]!.sessionId;
    }
    const callbacks = resumed.length;
    if (ROUNDS > 0) {
    out(
      `${ROUNDS} rounds of ${CONCURRENT} concurrent callbacks (projection flush ${config.SESSION_PROJECTION_FLUSH_MS} ms, worker: ${config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS} workflow tasks, ` +
        `${config.WORKER_MAX_CONCURRENT_LOCAL_ACTIVITIES} local activities at once, ${config.WORKER_MAX_CACHED_WORKFLOWS} cached workflows)`,
    );
    out('Latency is noisy on a shared machine (the load average is printed at the end); CPU per operation is the steadier figure.');
    out(line('bare update round trip (floor)', floor));
    out(line('callback -> resumed answer', resumed));
    out(`CPU per bare update (ms): ${CpuMeter.perOp({}, floorCpu, floor.length)}`);
    out(`CPU per callback    (ms): ${CpuMeter.perOp({}, callbackCpu, callbacks)}  [bench = API + this client]`);
    out(`CPU per suspension  (ms): ${CpuMeter.perOp({}, suspendCpu, suspendedCount)}`);
    out(`API MongoDB commands per callback:   ${perOpCounts(callbackOps, callbacks, true)}`);
    out(`API MongoDB commands per suspension: ${perOpCounts(suspendOps, suspendedCount, true)}`);
    out(`one resume in the session's history: ${await resumeHistory(client, lastSession)}`);
    }

    // Memory: the worker's RSS with this many sessions waiting at once (the ones above have ended).
    out(`worker RSS before: ${rssMb(workerPid).toFixed(0)} MB`);
    if (values['memory-probe']) out((await probeWorkerMemory(workerPid, probeFile))?.text ?? '  memory probe: no answer from the worker');
    let waiting = 0;
    const oldest: { sessionId: string; callbackId: string }[] = [];
    for (const point of MEMORY_POINTS) {
      const added = point - waiting;
      const began = Date.now();
      const before = cpu.snapshot();
      const batch = await suspend(added);
      if (oldest.length < CONCURRENT) oldest.push(...batch.slice(0, CONCURRENT - oldest.length));
      const cpuPerSession = CpuMeter.perOp(before, cpu.snapshot(), added);
      const tookS = (Date.now() - began) / 1000;
      waiting = point;
      await sleep(5_000);
      out(
        `worker RSS with ${String(point).padStart(6)} suspended sessions: ${rssMb(workerPid).toFixed(0)} MB ` +
          `(the last ${added} took ${Math.round(tookS)} s, ${LANES} at a time, ${unanswered} first turns answered 503 so far; CPU per suspension: ${cpuPerSession})`,
      );
      if (values['memory-probe']) out((await probeWorkerMemory(workerPid, probeFile))?.text ?? '  memory probe: no answer from the worker');
    }
    if (failedCallbacks.length > 0) out(`callbacks answered with an error and sent again: ${failedCallbacks.length} (${[...new Set(failedCallbacks)].join('; ')})`);
    out(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    if (oldest.length > 0) {
      // The sessions that have waited longest: evicted from the worker's cache once more than
      // WORKER_MAX_CACHED_WORKFLOWS wait, so each resume replays its history first.
      const evictedCpu: CpuSnapshot = {};
      const times = await fireCallbacks(oldest, evictedCpu, new Map());
      out(`callbacks to the ${oldest.length} oldest of ${waiting} waiting sessions (out of the worker's cache when ${waiting} > ${config.WORKER_MAX_CACHED_WORKFLOWS}):`);
      out(line('callback -> resumed answer', times));
      out(`CPU per callback    (ms): ${CpuMeter.perOp({}, evictedCpu, times.length)}`);
    }
  } finally {
    await stack.close();
    tool.closeAllConnections();
    await new Promise((r) => tool.close(r));
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
