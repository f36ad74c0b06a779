// Reopens what bench/sessions-memory.ts left (its temp dir: Temporal's SQLite file and the store)
// with a fresh worker, whose cache is empty, so every session is evicted: prints the worker's
// memory before and after second turns on some of those sessions, each turn timed.
//   node --import tsx bench/sessions-reopen.ts --dir /tmp/sb-sessionsmem-XXXX [--turns 5]
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { jsonClient } from './support/json-client';
import { CpuMeter } from './support/cpu';
import { startBenchStack } from './support/stack';
import { memoryProbeNodeArgs, probeWorkerMemory, rssMb } from './support/worker-memory';

const { values } = parseArgs({ options: { dir: { type: 'string' }, turns: { type: 'string', default: '5' } } });
const out = (text: string) => process.stdout.write(`${text}\n`);

async function main() {
  if (!values.dir) throw new Error('--dir: the temp dir a sessions-memory run left');
  const probeFile = path.join(os.tmpdir(), `sb-sessions-reopen-${process.pid}.jsonl`);
  process.env.MEMORY_PROBE_FILE = probeFile;
  const stack = await startBenchStack({
    name: 'sessionsmem',
    reopen: values.dir,
    temporalDbFile: true,
    env: { SESSION_IDLE_TIMEOUT_MS: String(1440 * 60_000) },
    workerNodeArgs: memoryProbeNodeArgs(),
  });
  try {
    const credentials = JSON.parse(readFileSync(path.join(values.dir, 'creds.json'), 'utf8')) as { projectId: string; apiKey: string };
    const ids: string[] = [];
    for await (const wf of stack.client.workflow.list({ query: 'WorkflowType = "agentSession" AND ExecutionStatus = "Running"' })) ids.push(wf.workflowId.replace(/^session\//, ''));
    out(`running sessions in Temporal: ${ids.length}; Temporal RSS ${rssMb(stack.pids.temporal!).toFixed(0)} MB`);
    const base = await probeWorkerMemory(stack.workerPid!, probeFile);
    out(`fresh worker, nothing cached:\n${base?.text ?? '  no answer'}`);
    const http = jsonClient(stack.baseUrl);
    const auth = { authorization: `Bearer ${credentials.apiKey}` };
    const n = Number(values.turns);
    for (let i = 0; i < n; i++) {
      const id = ids[Math.floor((i * ids.length) / n)]!;
      const before = stack.cpu.snapshot();
      const began = performance.now();
      const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, sessionId: id, message: 'thanks' }, auth);
      out(`  second turn on evicted session ${i + 1}/${n}: ${res.status}, ${(performance.now() - began).toFixed(0)} ms, CPU ${CpuMeter.perOp(before, stack.cpu.snapshot(), 1)}`);
    }
    const after = await probeWorkerMemory(stack.workerPid!, probeFile);
    out(`after the turns:\n${after?.text ?? '  no answer'}`);
    out(`Temporal RSS ${rssMb(stack.pids.temporal!).toFixed(0)} MB`);
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
