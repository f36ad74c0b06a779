// Reads a bench worker's memory by thread: with bench/support/memory-probe.js preloaded (and
// `--expose-gc`), SIGWINCH makes every thread of the worker run a full GC and append its V8 heap
// figures to MEMORY_PROBE_FILE; this waits for them and sums them up.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const MB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A thread's figures from bench/support/memory-probe.js. */
export interface ProbeLine { tag: string; threadId: number; main: boolean; heapUsed: number; heapTotal: number; heapPhysical: number; external: number; malloced: number; nativeContexts: number; detachedContexts: number; rss: number; arrayBuffers: number }

export interface WorkerMemory {
  rss: number;
  /** V8 heap pages of every thread, and the JS in use in them after the GC. */
  heapPages: number;
  heapUsed: number;
  threads: ProbeLine[];
  /** One line for a bench's output. */
  text: string;
}

/** The worker-process arguments that load the probe. */
export const memoryProbeNodeArgs = () => ['--expose-gc', '--require', path.join(__dirname, 'memory-probe.js')];

let probeThreads = 0;
/** Asks the worker's threads for their heap figures (SIGWINCH); null when none answered. */
export async function probeWorkerMemory(pid: number, file: string): Promise<WorkerMemory | null> {
  const seen = existsSync(file) ? readFileSync(file, 'utf8').length : 0;
  process.kill(pid, 'SIGWINCH');
  // Every thread answers after its own GC, which takes seconds for a large heap on a loaded machine:
  // done once as many threads as ever have answered (the first probe: once nothing came for 2 s).
  let count = -1;
  let quiet = 0;
  for (let i = 0; i < 240; i++) {
    await sleep(500);
    const lines = existsSync(file) ? readFileSync(file, 'utf8').slice(seen).split('\n').filter(Boolean).map((l) => JSON.parse(l) as ProbeLine) : [];
    quiet = lines.length === count ? quiet + 1 : 0;
    count = lines.length;
    // The first probe also waits for a thread besides the main one (the workflow thread answers
    // last on a loaded machine) and for 5 s of quiet.
    if ((probeThreads > 0 && lines.length >= probeThreads) || (probeThreads === 0 && quiet >= 10 && lines.some((l) => l.main) && lines.some((l) => !l.main))) {
      probeThreads = Math.max(probeThreads, lines.length);
      const heapUsed = lines.reduce((sum, l) => sum + l.heapUsed, 0);
      const heapPages = lines.reduce((sum, l) => sum + l.heapPhysical, 0);
      const rss = Math.max(...lines.map((l) => l.rss));
      const threads = lines.sort((a, b) => a.threadId - b.threadId);
      const perThread = threads.map((l) => `${l.main ? 'main' : `thread ${l.threadId}`}: heap used ${(l.heapUsed / MB).toFixed(0)} of ${(l.heapPhysical / MB).toFixed(0)} MB, ${l.nativeContexts} contexts (${l.detachedContexts} detached), external ${(l.external / MB).toFixed(0)} MB`);
      const text =
        `  after a full GC: RSS ${(rss / MB).toFixed(0)} MB = V8 heap pages ${(heapPages / MB).toFixed(0)} MB (JS in use ${(heapUsed / MB).toFixed(0)} MB) ` +
        `+ outside the V8 heaps ${((rss - heapPages) / MB).toFixed(0)} MB; ${perThread.join('; ')}`;
      return { rss, heapPages, heapUsed, threads, text };
    }
  }
  return null;
}

/** A process's resident set from /proc, in MB. */
export const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
