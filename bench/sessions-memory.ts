// What idle sessions cost: the worker's memory (RSS and live JS heap by thread, after a full GC),
// the API server's, Temporal's and the store's, and a turn on an idle session, as open sessions
// that each had one turn pile up.
//   node --import tsx bench/sessions-memory.ts [--sessions 1000,10000] [--lanes 16] [--cache N] [--until HH:MM] [--idle-timeout-min 1440] [--keep]
// Starts its own stack (bench/support/stack.ts: the API in this process, the worker as its own
// process with bench/support/memory-probe.js preloaded, Temporal on a SQLite file so its size can
// be read). `--sessions` are cumulative points; each session is started by a first turn through
// the HTTP API (`--lanes` at a time) and then left idle. `--cache` sets WORKER_MAX_CACHED_WORKFLOWS
// (default: the product's 1,000). `--until` (UTC) stops starting sessions at that time and reports
// the count reached as a last point. `--idle-timeout-min` sets SESSION_IDLE_TIMEOUT_MS (default a
// day here, against the product's 30 minutes, so that no session ends during the run); `--keep`
// leaves the stack's temp dir for bench/sessions-reopen.ts. A cached session's cost is the
// workflow thread's live heap growth divided by the sessions it caches; past the cache bound a
// session costs the worker nothing until its next turn. At each point a second turn goes to one of
// the oldest sessions (evicted past the cache bound, so it replays) and to the newest (cached), timed.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
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
    until: { type: 'string' },
    'idle-timeout-min': { type: 'string', default: '1440' },
    keep: { type: 'boolean', default: false },
  },
});
const POINTS = values.sessions
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => n > 0)
  .sort((a, b) => a - b);
const LANES = Number(values.lanes);
/** `--until HH:MM` (UTC, today or tomorrow): when to stop starting sessions. */
const UNTIL = (() => {
  if (!values.until) return Infinity;
  const [h, m] = values.until.split(':').map(Number);
  const at = new Date();
  at.setUTCHours(h!, m!, 0, 0);
  if (at.getTime() < Date.now()) at.setUTCDate(at.getUTCDate() + 1);
  return at.getTime();
})();
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

/** A process's resident set (VmRSS) in bytes, 0 when gone. */
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Bytes of the files under a directory (or of one file and its SQLite `-wal`/`-shm` siblings). */
function sizeOn(target: string | undefined): number {
  if (!target) return 0;
  let total = 0;
  try {
    const st = statSync(target);
    if (st.isFile()) {
      for (const f of [target, `${target}-wal`, `${target}-shm`]) {
        try {
          total += statSync(f).size;
        } catch {
          // no such sibling
        }
      }
      return total;
    }
    for (const entry of readdirSync(target, { withFileTypes: true })) {
      const full = path.join(target, entry.name);
      total += entry.isDirectory() ? sizeOn(full) : entry.isFile() ? statSync(full).size : 0;
    }
  } catch {
    // vanished mid-walk (PostgreSQL's temp files)
  }
  return total;
}

/** The SDK's workflow thread: the one thread that is not the main one and holds the most heap. */
const workflowThread = (m: WorkerMemory) => m.threads.filter((t) => !t.main).sort((a, b) => b.heapUsed - a.heapUsed)[0];

async function main() {
  const probeFile = path.join((await import('node:os')).tmpdir(), `sb-sessions-memory-${process.pid}.jsonl`);
  process.env.MEMORY_PROBE_FILE = probeFile;
  const stack = await startBenchStack({
    name: 'sessionsmem',
    env: {
      ...(values.cache ? { WORKER_MAX_CACHED_WORKFLOWS: values.cache } : {}),
      // Sessions must stay open (idle) for the whole run: the product's default ends one after 30
      // minutes without a message, and a run to 100,000 takes hours.
      SESSION_IDLE_TIMEOUT_MS: String(Number(values['idle-timeout-min']) * 60_000),
    },
    workerNodeArgs: memoryProbeNodeArgs(),
    temporalDbFile: true,
    keep: values.keep,
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
    const sessionIds: string[] = [];
    let lastFailure = '';
    const start = async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        // A refused or dropped request is retried like an error status, and what it was is kept.
        const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, message: 'hello' }, auth).catch((err: unknown) => ({ status: 0, body: String(err) }));
        if (res.status === 200) {
          sessionIds.push((res.body as { sessionId: string }).sessionId);
          return;
        }
        failed++;
        lastFailure = `${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
        await sleep(500 * (attempt + 1));
      }
      throw new Error(`a first turn failed five times, the last: ${lastFailure}`);
    };
    /** Starts n sessions, `LANES` at a time, until `UNTIL`; prints the rate every 1,000; returns how many started. */
    const startMany = async (n: number) => {
      let next = 0;
      let done = 0;
      let mark = Date.now();
      await Promise.all(Array.from({ length: Math.min(LANES, n) }, async () => {
        while (next < n && Date.now() < UNTIL) {
          next++;
          await start();
          done++;
          if (done % 1000 === 0) {
            const now = Date.now();
            process.stderr.write(`  ${new Date(now).toISOString().slice(11, 19)} ${sessionIds.length} sessions; last 1,000 at ${(1000 / ((now - mark) / 1000)).toFixed(1)}/s; load ${os.loadavg()[0]!.toFixed(1)}\n`);
            mark = now;
          }
        }
      }));
      return done;
    };
    /** A second turn on a session, timed (ms), and whether it answered 200. */
    const turnOn = async (sessionId: string) => {
      const began = performance.now();
      const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, sessionId, message: 'thanks' }, auth);
      return { ms: performance.now() - began, status: res.status };
    };
    const otherMemory = () =>
      `  Temporal server RSS ${(rssOf(stack.pids.temporal) / MB).toFixed(0)} MB, its SQLite file (with WAL) ${(sizeOn(stack.temporalDbFile) / MB).toFixed(0)} MB; ` +
      `store: FerretDB RSS ${(rssOf(stack.pids.ferret) / MB).toFixed(0)} MB, PostgreSQL postmaster RSS ${(rssOf(stack.pids.postgres) / MB).toFixed(0)} MB, ` +
      `PostgreSQL's tables and indexes (base/) ${(sizeOn(path.join(stack.storeDir, 'base')) / MB).toFixed(0)} MB and its WAL ${(sizeOn(path.join(stack.storeDir, 'pg_wal')) / MB).toFixed(0)} MB`;
    const settle = () => sleep(config.SESSION_PROJECTION_FLUSH_MS + 2000);

    // Warm-up: the worker's first sessions load the workflow bundle and the compiled project.
    await startMany(20);
    await settle();
    const base = await probeWorkerMemory(workerPid, probeFile);
    if (values.keep) out(`stack's temp dir, kept at the end (bench/sessions-reopen.ts --dir): ${stack.dir}`);
    out(`worker cache bound (WORKER_MAX_CACHED_WORKFLOWS): ${cacheBound}; sessions are the sample support desk's, one turn each ("hello"), idle timeout ${config.SESSION_IDLE_TIMEOUT_MS / 60_000} min`);
    out(`after 20 warm-up sessions:`);
    out(base?.text ?? '  memory probe: no answer from the worker');
    out(`  ${apiMemory()}`);
    out(otherMemory());
    let open = 20;
    let measured = 0;
    for (const target of POINTS) {
      if (Date.now() >= UNTIL) break;
      const wanted = target - open;
      if (wanted <= 0) continue;
      const began = Date.now();
      const before = cpu.snapshot();
      const adding = await startMany(wanted);
      if (adding === 0) break;
      const tookMs = Date.now() - began;
      const took = tookMs / 1000;
      const after = cpu.snapshot();
      const perSession = CpuMeter.perOp(before, after, adding);
      const cpuMs = Object.keys(after).reduce((sum, name) => sum + after[name]! - (before[name] ?? 0), 0);
      open += adding;
      const point = open;
      await settle();
      const now = await probeWorkerMemory(workerPid, probeFile);
      out(
        `\n${point} idle sessions${point < target ? ` (stopped by --until short of ${target})` : ''} (the last ${adding} in ${took.toFixed(0)} s: ${(adding / took).toFixed(1)} sessions/s, ${LANES} at a time; ` +
          `CPU per session: ${perSession}; the stack used ${(cpuMs / tookMs).toFixed(2)} of ${os.cpus().length} cores, load average ${os.loadavg()[0]!.toFixed(1)} at the end; ${failed} first turns retried so far${lastFailure ? `, the last for ${lastFailure}` : ''}):`,
      );
      out(now?.text ?? '  memory probe: no answer from the worker');
      out(`  ${apiMemory()}`);
      out(otherMemory());
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
      // A turn on an idle session: one of the oldest, a different one each point (evicted past the cache bound: its history replays on
      // a worker) and the newest (still cached), one at a time, after the starts have stopped.
      const cpuBefore = cpu.snapshot();
      const oldest = await turnOn(sessionIds[measured++]!);
      const cpuOld = cpu.snapshot();
      const newest = await turnOn(sessionIds[sessionIds.length - 1]!);
      const cpuNew = cpu.snapshot();
      out(
        `  a second turn on one of the oldest sessions (${point > cacheBound ? 'evicted' : 'cached'}): ${oldest.status}, ${oldest.ms.toFixed(0)} ms, CPU ${CpuMeter.perOp(cpuBefore, cpuOld, 1)}; ` +
          `on the newest (cached): ${newest.status}, ${newest.ms.toFixed(0)} ms, CPU ${CpuMeter.perOp(cpuOld, cpuNew, 1)}`,
      );
    }
    http.close();
  } catch (err) {
    // Printed before the stack closes: a Temporal call still retrying then throws on its closed channel.
    process.stderr.write(`stopped: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    throw err;
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
