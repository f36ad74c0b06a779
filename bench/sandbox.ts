// Benchmark: sandboxed code tool calls on this machine. JavaScript (QuickJS in worker threads):
// cold call (a new engine: thread start and WebAssembly load), warm call latency p50/p95, and calls
// per second with the pool busy; next to them the floor, a bare QuickJS eval on one reused context
// in this thread. Python: cold and warm calls, throughput, and a Pyodide loaded in this process as its
// floor. Prints figures, asserts nothing.
//   node --import tsx bench/sandbox.ts [--warm 500] [--cold 5] [--calls 2000] [--threads 2] [--py-calls 20]
import { getQuickJS } from 'quickjs-emscripten';
import { createJavaScriptEngine } from '../activities/tools/sandbox/javascript';
import { createPythonEngine } from '../activities/tools/sandbox/python';
import { type SandboxEngine, type SandboxRun } from '../activities/tools/sandbox/engine';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}
const WARM = arg('warm', 500);
const COLD = arg('cold', 5);
const CALLS = arg('calls', 2000);
const THREADS = arg('threads', 2);

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const fmt = (ms: number): string => `${ms.toFixed(2)} ms`;
function summary(label: string, samples: number[]): void {
  const s = [...samples].sort((a, b) => a - b);
  console.log(`${label}: p50 ${fmt(pct(s, 50))}, p95 ${fmt(pct(s, 95))}, min ${fmt(s[0]!)}, max ${fmt(s[s.length - 1]!)} (${s.length} calls)`);
}

interface Case {
  runtime: string;
  make: (threads: number) => Promise<SandboxEngine>;
  code: string;
}

const base = { entrypoint: null, params: { items: [3, 1, 2], city: 'Paris' }, timeoutMs: 5000, memoryMb: 128, maxOutputBytes: 1024 * 1024, memory: null } satisfies Omit<SandboxRun, 'code'>;

async function benchEngine(c: Case): Promise<void> {
  const run = { ...base, code: c.code };
  const cold: number[] = [];
  for (let i = 0; i < COLD; i++) {
    const engine = await c.make(1);
    const t0 = performance.now();
    const outcome = await engine.run(run);
    cold.push(performance.now() - t0);
    if (!outcome.ok) throw new Error(`${c.runtime}: ${outcome.kind} ${outcome.message}`);
    await engine.close();
  }
  summary(`${c.runtime} cold call (new engine)`, cold);

  const engine = await c.make(THREADS);
  for (let i = 0; i < 20; i++) await engine.run(run);
  const warm: number[] = [];
  for (let i = 0; i < WARM; i++) {
    const t0 = performance.now();
    await engine.run(run);
    warm.push(performance.now() - t0);
  }
  summary(`${c.runtime} warm call, one at a time`, warm);

  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: THREADS * 4 }, async () => {
      while (next++ < CALLS) await engine.run(run);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  console.log(`${c.runtime} throughput: ${(CALLS / seconds).toFixed(0)} calls/s (${CALLS} calls, ${THREADS} threads, ${THREADS * 4} in flight)`);
  await engine.close();
}

async function floor(): Promise<void> {
  const QuickJS = await getQuickJS();
  const code = 'function main(p) { return { sorted: p.items.slice().sort(), c: p.city.toUpperCase() }; } JSON.stringify(main({ items: [3, 1, 2], city: "Paris" }))';
  const rt = QuickJS.newRuntime();
  const ctx = rt.newContext();
  const reused: number[] = [];
  for (let i = 0; i < WARM; i++) {
    const t0 = performance.now();
    const r = ctx.evalCode(code);
    ctx.unwrapResult(r).dispose();
    reused.push(performance.now() - t0);
  }
  ctx.dispose();
  rt.dispose();
  summary('floor: bare QuickJS eval, one reused context, this thread', reused);
  const fresh: number[] = [];
  for (let i = 0; i < WARM; i++) {
    const t0 = performance.now();
    const r2 = QuickJS.newRuntime();
    const c2 = r2.newContext();
    c2.unwrapResult(c2.evalCode(code)).dispose();
    c2.dispose();
    r2.dispose();
    fresh.push(performance.now() - t0);
  }
  summary('floor: fresh QuickJS runtime + context per eval, this thread', fresh);
}

async function main(): Promise<void> {
  console.log(`sandbox bench: ${WARM} warm calls, ${COLD} cold, ${CALLS} for throughput, ${THREADS} threads`);
  const js = 'function main(params) { return { sorted: params.items.slice().sort(), c: params.city.toUpperCase() }; }';
  await benchEngine({ runtime: 'javascript', make: async (threads) => createJavaScriptEngine({ threads }), code: js });
  await floor();
  await benchPython();
}

/**
 * Python (Pyodide, one sandboxed child process per call): the cold call has no loaded child
 * waiting; the warm call finds one (the bench waits for the pool to refill between calls, as calls
 * spaced apart do); throughput with every call slot busy. The floor: Pyodide running the same
 * function in an interpreter already loaded in this process, with no child and no boundary.
 */
async function benchPython(): Promise<void> {
  const PY_CALLS = arg('py-calls', 20);
  const code = 'def main(params):\n    return {"sorted": sorted(params["items"]), "c": params["city"].upper()}\n';
  const run = { ...base, code };
  const cold: number[] = [];
  for (let i = 0; i < Math.min(COLD, 3); i++) {
    const engine = createPythonEngine({ warm: 0, maxConcurrent: 1 });
    const t0 = performance.now();
    const outcome = await engine.run(run);
    cold.push(performance.now() - t0);
    if (!outcome.ok) {
      console.log(`python: ${outcome.kind} ${outcome.message}`);
      await engine.close();
      return;
    }
    await engine.close();
  }
  summary('python cold call (no loaded child waiting)', cold);

  const engine = createPythonEngine({ warm: 1, maxConcurrent: THREADS });
  await engine.run(run);
  const warm: number[] = [];
  for (let i = 0; i < PY_CALLS; i++) {
    await new Promise((r) => setTimeout(r, 2500));
    const t0 = performance.now();
    await engine.run(run);
    warm.push(performance.now() - t0);
  }
  summary('python warm call (a loaded child waiting)', warm);

  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: THREADS * 2 }, async () => {
      while (next++ < PY_CALLS) await engine.run(run);
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  console.log(`python throughput: ${(PY_CALLS / seconds).toFixed(2)} calls/s (${PY_CALLS} calls, ${THREADS} at once)`);
  await engine.close();

  const { loadPyodide } = (await import('pyodide')) as { loadPyodide: () => Promise<{ runPython(code: string): unknown }> };
  const pyodide = await loadPyodide();
  pyodide.runPython(`${code}\nimport json`);
  const bare: number[] = [];
  for (let i = 0; i < WARM; i++) {
    const s0 = performance.now();
    pyodide.runPython('json.dumps(main({"items": [3, 1, 2], "city": "Paris"}))');
    bare.push(performance.now() - s0);
  }
  summary('floor: the same function in a Pyodide loaded in this process (no child, no boundary)', bare);
}

void main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
