// A streamed agent turn (POST /api/v1/chat/agent/stream) with the offline `local` model: time to
// the `turn` event, to the first `delta` and to the `response`, next to the same turn through the
// plain route (POST /api/v1/chat/agent: its floor). Prints figures; asserts nothing.
//   node --import tsx bench/agent-stream.ts [--turns 40]
// Starts its own stack (bench/support/stack.ts: Temporal dev server, FerretDB in a temp dir, the
// API in this process and the worker as its own process, as in production), so the deltas cross
// processes through the store as they would in production. The plain and streamed turns
// alternate, each in a session of its own kind, continued turn after turn.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { createParser } from 'eventsource-parser';
import { ensureDevTenant } from '../infra/seed';
import { startBenchStack } from './support/stack';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '40' } } });
const TURNS = Number(values.turns);
const WARMUP = 5;

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  return { n: sorted.length, p50: at(50), p95: at(95) };
}
const fmt = (label: string, samples: number[]) => {
  const s = stats(samples);
  return `${label.padEnd(40)} n=${s.n}  p50 ${s.p50.toFixed(1)} ms  p95 ${s.p95.toFixed(1)} ms`;
};

const AGENT = 'AGENT: Forecaster\nGOAL: "Answer questions about the weather in a few sentences."\n';

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const stack = await startBenchStack({ name: 'agentstream', env: { RATE_LIMIT_REQUESTS: '1000000', SESSION_MESSAGES_PER_MINUTE: '100000' } });
  try {
    const { credentials } = await ensureDevTenant(stack.ctx.models, path.join(stack.dir, 'creds.json'), stack.baseUrl);
    const headers = { authorization: `Bearer ${credentials.apiKey}`, 'content-type': 'application/json' };
    const call = (p: string, body: unknown) => fetch(`${stack.baseUrl}${p}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const created = await call(`/api/projects/${credentials.projectId}/agents`, { name: 'Forecaster', dslContent: AGENT });
    const versioned = await call(`/api/projects/${credentials.projectId}/agents/Forecaster/versions`, {});
    if (created.status !== 201 || versioned.status !== 201) throw new Error(`publishing the agent: ${created.status} ${versioned.status}`);

    const plain: number[] = [];
    const toTurn: number[] = [];
    const toDelta: number[] = [];
    const toResponse: number[] = [];
    let deltaCount = 0;
    let plainSession: string | undefined;
    let streamSession: string | undefined;
    for (let i = 0; i < WARMUP + TURNS; i++) {
      const message = `Will it rain on day ${i}?`;
      let started = performance.now();
      const res = await call('/api/v1/chat/agent', { projectId: credentials.projectId, agentId: 'Forecaster', message, ...(plainSession ? { sessionId: plainSession } : {}) });
      const body = (await res.json()) as { sessionId: string };
      const plainMs = performance.now() - started;
      plainSession = body.sessionId;

      started = performance.now();
      const streamed = await call('/api/v1/chat/agent/stream', { projectId: credentials.projectId, agentId: 'Forecaster', message, ...(streamSession ? { sessionId: streamSession } : {}) });
      const marks: Record<string, number> = {};
      let deltas = 0;
      const parser = createParser({
        onEvent(event) {
          const at = performance.now() - started;
          if (event.event === 'delta') deltas++;
          marks[event.event ?? 'message'] ??= at;
          if (event.event === 'turn') streamSession = (JSON.parse(event.data) as { sessionId: string }).sessionId;
        },
      });
      const reader = streamed.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
      if (i < WARMUP) continue;
      plain.push(plainMs);
      toTurn.push(marks.turn!);
      if (marks.delta !== undefined) toDelta.push(marks.delta);
      toResponse.push(marks.response!);
      deltaCount += deltas;
    }
    process.stdout.write(`${TURNS} turns each way (after ${WARMUP} warm-up), continued sessions, worker in its own process\n`);
    process.stdout.write(`${fmt('plain route: the answer', plain)}\n`);
    process.stdout.write(`${fmt('stream: `turn` event', toTurn)}\n`);
    process.stdout.write(`${fmt('stream: first `delta`', toDelta)}\n`);
    process.stdout.write(`${fmt('stream: `response`', toResponse)}\n`);
    process.stdout.write(`deltas per turn: ${(deltaCount / TURNS).toFixed(1)}\n`);
  } finally {
    await stack.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
