// What idle sessions cost in memory: the worker's (RSS and live JS heap by thread, after a full GC)
// and the API server's, as open sessions that each had one turn pile up.
//   node --import tsx bench/sessions-memory.ts [--sessions 1000,10000] [--lanes 16] [--cache N] [--agents sample|one]
// Starts its own stack (bench/support/stack.ts: the API in this process, the worker as its own
// process with bench/support/memory-probe.js preloaded). `--sessions` are cumulative points; each
// session is started by a first turn through the HTTP API (`--lanes` at a time) and then left
// idle. `--cache` sets WORKER_MAX_CACHED_WORKFLOWS (default: the product's 1,000). A cached
// session's cost is the workflow thread's live heap growth divided by the sessions it caches; past
// the cache bound a session costs the worker nothing until its next turn.
import path from 'node:path';
import { parseArgs } from 'node:util';
import v8 from 'node:v8';
import vm from 'node:vm';
import { seedDevProject } from '../infra/seed-project';
import { ensureDevTenant } from '../infra/seed';
import { jsonClient } from './support/json-client';
import { CpuMeter } from './support/cpu';
import { startBenchStack } from './support/stack';
import { memoryProbeNodeArgs, probeWorkerMemory, type WorkerMemory } from './support/worker-memory';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000,10000' },
    lanes: { type: 'string', default: '16' },
    cache: { type: 'string' },
  },
});
const POINTS = values.sessions
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => n > 0)
  .sort((a, b) => a - b);
const LANES = Number(values.lanes);
const MB = 1024 * 1024;
const out = (text: string) => process.stdout.write(`${text}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// A full GC in this process (the API and the bench client), for its heap figures.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

function apiMemory(): string {
  gc();
  const m = process.memoryUsage();
  return `API process (the bench client in it): RSS ${(m.rss / MB).toFixed(0)} MB, JS heap used ${(m.heapUsed / MB).toFixed(0)} MB of ${(m.heapTotal / MB).toFixed(0)} MB, external ${(m.external / MB).toFixed(0)} MB`;
}

/** The SDK's workflow thread: the one thread that is not the main one and holds the most heap. */
const workflowThread = (m: WorkerMemory) => m.threads.filter((t) => !t.main).sort((a, b) => b.heapUsed - a.heapUsed)[0];

async function main() {
  const probeFile = path.join((await import('node:os')).tmpdir(), `sb-sessions-memory-${process.pid}.jsonl`);
  process.env.MEMORY_PROBE_FILE = probeFile;
  const stack = await startBenchStack({
    name: 'sessionsmem',
    env: { ...(values.cache ? { WORKER_MAX_CACHED_WORKFLOWS: values.cache } : {}) },
    workerNodeArgs: memoryProbeNodeArgs(),
  });
  const { ctx, baseUrl, config, cpu } = stack;
  const workerPid = stack.workerPid!;
  const cacheBound = config.WORKER_MAX_CACHED_WORKFLOWS;
  try {
    const { credentials } = await ensureDevTenant(ctx.models, path.join(stack.dir, 'creds.json'), baseUrl);
    await seedDevProject(ctx.models, credentials);
    const http = jsonClient(baseUrl);
    const auth = { authorization: `Bearer ${credentials.apiKey}` };
    let failed = 0;
    const start = async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, message: 'hello' }, auth);
        if (res.status === 200) return;
        failed++;
        await sleep(500);
      }
      throw new Error('a first turn failed five times');
    };
    const startMany = async (n: number) => {
      let next = 0;
      await Promise.all(Array.from({ length: Math.min(LANES, n) }, async () => {
        while (next < n) {
          next++;
          await start();
        }
      }));
    };
    const settle = () => sleep(config.SESSION_PROJECTION_FLUSH_MS + 2000);

    // Warm-up: the worker's first sessions load the workflow bundle and the compiled project.
    await startMany(20);
    await settle();
    const base = await probeWorkerMemory(workerPid, probeFile);
    out(`worker cache bound (WORKER_MAX_CACHED_WORKFLOWS): ${cacheBound}; sessions are the sample support desk's, one turn each ("hello")`);
    out(`after 20 warm-up sessions:`);
    out(base?.text ?? '  memory probe: no answer from the worker');
    out(`  ${apiMemory()}`);
    let open = 20;
    for (const point of POINTS) {
      const adding = point - open;
      if (adding <= 0) continue;
      const began = Date.now();
      const before = cpu.snapshot();
      await startMany(adding);
      const took = (Date.now() - began) / 1000;
      const perSession = CpuMeter.perOp(before, cpu.snapshot(), adding);
      open = point;
      await settle();
      const now = await probeWorkerMemory(workerPid, probeFile);
      out(`\n${point} idle sessions (the last ${adding} in ${took.toFixed(0)} s, ${(took / adding * 1000).toFixed(0)} ms each, ${LANES} at a time; CPU per session: ${perSession}; ${failed} first turns retried so far):`);
      out(now?.text ?? '  memory probe: no answer from the worker');
      out(`  ${apiMemory()}`);
      const wfNow = now && workflowThread(now);
      const wfBase = base && workflowThread(base);
      if (wfNow && wfBase) {
        const cached = Math.min(point, cacheBound) - Math.min(20, cacheBound);
        const growth = wfNow.heapUsed - wfBase.heapUsed;
        out(
          `  workflow thread: live heap ${(wfNow.heapUsed / MB).toFixed(1)} MB, +${(growth / MB).toFixed(1)} MB over the warm-up` +
            (cached > 0 ? ` for ${cached} more cached sessions: ${(growth / cached / 1024).toFixed(0)} KB per cached session` : ''),
        );
        out(`  whole worker: RSS +${((now.rss - base!.rss) / MB).toFixed(0)} MB, live JS heap (all threads) +${((now.heapUsed - base!.heapUsed) / MB).toFixed(1)} MB over the warm-up`);
      }
    }
    http.close();
  } finally {
    await stack.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
