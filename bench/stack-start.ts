// How long `npm start` takes to say "Switchboard is running": once with an empty data directory
// (the store's cluster created, the dev tenant seeded) and then warm, `--runs` times, each stopped
// with SIGTERM before the next. Ports are free ones and the data lives in a temp directory, so it
// runs beside a dev stack of your own.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { devStackEnv, freeDevStackPorts, type DevStackPorts } from '../infra/dev-stack-env';
import { ROOT } from '../infra/processes';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const RUNS = Number(values.runs);

async function startOnce(dataDir: string, ports: DevStackPorts): Promise<number> {
  const env = devStackEnv(dataDir, ports);
  const started = performance.now();
  // `npm start` is these two commands (package.json); spawned directly so SIGTERM reaches the stack.
  const child = spawn('sh', ['-c', 'node infra/bootstrap.js >/dev/null && exec node --import tsx infra/dev-stack.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const ready = new Promise<number>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d.toString();
      if (output.includes('Switchboard is running')) resolve(performance.now() - started);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`the stack exited (${code}) before it was running:\n${output}`)));
  });
  const ms = await ready;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return ms;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-start-'));
  try {
    const ports = await freeDevStackPorts();
    const cold = await startOnce(dataDir, ports);
    console.log(`first start, empty data directory: ${(cold / 1000).toFixed(1)} s`);
    const warm: number[] = [];
    for (let i = 0; i < RUNS; i++) warm.push(await startOnce(dataDir, ports));
    console.log(`warm start (${RUNS} runs): ${warm.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s`);
    console.log(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
