// Benchmark: parse + compile + validate a generated project of 100 agents (~10,000 lines) in
// memory, several runs; prints min/median time, the CPU each run used (steadier than wall time on a
// shared machine) and peak memory. Prints figures, asserts nothing.

import { compileProject } from '../abl';
import { AGENTS, generatedProject } from './support/generated-project';

const RUNS = 7;

function main(): void {
  const files = generatedProject();
  const lines = files.reduce((n, f) => n + f.content.split('\n').length, 0);
  const bytes = files.reduce((n, f) => n + f.content.length, 0);
  let peakRss = process.memoryUsage().rss;
  let peakHeap = process.memoryUsage().heapUsed;
  const times: number[] = [];
  const cpu: number[] = [];
  let errors = 0;
  let warnings = 0;
  compileProject(files); // warm-up (JIT)
  for (let r = 0; r < RUNS; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const out = compileProject(files);
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    errors = out.diagnostics.filter((d) => d.severity === 'error').length;
    if (r === 0) for (const d of out.diagnostics.slice(0, 3)) console.log(`  ${d.path}:${d.line}:${d.column} ${d.code} ${d.message}`);
    warnings = out.diagnostics.length - errors;
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MB`;
  console.log(`ABL compile bench: ${AGENTS} agents, ${files.length} files, ${lines} lines, ${(bytes / 1024).toFixed(0)} KiB`);
  console.log(`diagnostics: ${errors} errors, ${warnings} warnings`);
  console.log(`parse+compile+validate over ${RUNS} runs: min ${times[0]?.toFixed(1)} ms, median ${times[Math.floor(RUNS / 2)]?.toFixed(1)} ms, max ${times[RUNS - 1]?.toFixed(1)} ms`);
  console.log(`CPU per run (all threads, the collector's included): min ${cpu[0]?.toFixed(1)} ms, median ${cpu[Math.floor(RUNS / 2)]?.toFixed(1)} ms`);
  console.log(`peak memory: rss ${mb(peakRss)}, heapUsed ${mb(peakHeap)}`);
}

// Only when run, not when another bench imports the project.
if (require.main === module) main();
