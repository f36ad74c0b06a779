// One long conversation: --turns messages (a tool call in most) in one session through the HTTP
// API with the offline `local` model, against the sample back-end, and what it leaves in Temporal.
//   node --import tsx bench/long-session.ts [--turns 500] [--window 20] [--max-history-events N]
// Starts its own stack (bench/support/stack.ts, the worker as its own process, the projection
// flush of production). Each turn is followed by a bare Temporal update of a probe workflow (the
// floor), so both see the same machine. Then it reads every run of the session's workflow and
// prints: the bytes and events each turn added (by turn, across continue-as-new), each run's
// history bytes, events, turns and the input it handed the next run, and the turn latency over
// the first and the last --window turns, each next to the floor of the same window.
import { parseArgs } from 'node:util';
import path from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { pingUpdate, stateQuery } from '../workflows/definitions';
import { seedDevProject } from '../infra/seed-project';
import { ensureDevTenant } from '../infra/seed';
import { freePort } from '../infra/processes';
import { sampleBackendToolEnv, startSampleBackend } from '../infra/sample-backend';
import { jsonClient } from './support/json-client';
import { startBenchStack } from './support/stack';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '500' },
    window: { type: 'string', default: '20' },
    'max-history-events': { type: 'string' },
  },
});
const TURNS = Number(values.turns);
const WINDOW = Math.max(1, Math.min(Number(values.window), Math.floor(TURNS / 2)));

// The sample support desk's loop, four turns: the hub hands off to the billing agent (the model's
// handoff tool call), an unknown invoice (the tool fails, it asks again), a known one (the tool
// answers, it offers a refund), "no" (the billing agent completes and the hub has the session again).
const CYCLE = ['I have a question about my invoice', 'INV-999999', 'INV-654321', 'no'];

type Event = proto.api.history.v1.IHistoryEvent;
const eventBytes = (e: Event): number => proto.api.history.v1.HistoryEvent.encode(e).finish().length;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
};
const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const backend = await startSampleBackend(await freePort());
  const stack = await startBenchStack({
    name: 'longsession',
    env: { ...sampleBackendToolEnv(backend), ...(values['max-history-events'] ? { SESSION_MAX_HISTORY_EVENTS: values['max-history-events'] } : {}) },
  });
  const { ctx, client, baseUrl } = stack;
  try {
    const { credentials } = await ensureDevTenant(ctx.models, path.join(stack.dir, 'creds.json'), baseUrl);
    await seedDevProject(ctx.models, credentials, { sampleBackendUrl: backend.url });
    const http = jsonClient(baseUrl);
    const auth = { authorization: `Bearer ${credentials.apiKey}` };
    const probe = async (n: number) => {
      const op = new WithStartWorkflowOperation('probeWorkflow', { workflowId: 'long-probe', taskQueue: 'longsession', workflowIdConflictPolicy: 'USE_EXISTING' });
      await client.workflow.executeUpdateWithStart(pingUpdate, { args: [{ n }], startWorkflowOperation: op });
    };
    await probe(0);

    const turnMs: number[] = [];
    const bareMs: number[] = [];
    const queryMs: number[] = [];
    const replies: string[] = [];
    let sessionId: string | undefined;
    const started = Date.now();
    for (let i = 0; i < TURNS; i++) {
      const message = CYCLE[i % CYCLE.length]!;
      let t0 = performance.now();
      const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, message, ...(sessionId ? { sessionId } : {}) }, auth);
      turnMs.push(performance.now() - t0);
      const body = res.body as { sessionId?: string; response?: string };
      if (res.status !== 200 || !body.sessionId) throw new Error(`turn ${i + 1} failed: ${res.status} ${JSON.stringify(res.body)}`);
      sessionId = body.sessionId;
      replies.push(body.response ?? '');
      t0 = performance.now();
      await probe(i + 1);
      bareMs.push(performance.now() - t0);
      t0 = performance.now();
      await client.workflow.getHandle(`session/${sessionId}`).query(stateQuery);
      queryMs.push(performance.now() - t0);
      if ((i + 1) % 100 === 0) process.stdout.write(`  ${i + 1} turns, ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    }
    process.stdout.write(`\nfirst replies:\n${replies.slice(0, 2 * CYCLE.length).map((r, i) => `  ${i + 1}: ${JSON.stringify(r.slice(0, 90))}`).join('\n')}\n`);
    // The last turn's held projection write lands after the reply.
    await new Promise((r) => setTimeout(r, stack.config.SESSION_PROJECTION_FLUSH_MS + 1500));

    // Every run of the session's workflow, oldest first (list() gives the newest first).
    const workflowId = `session/${sessionId}`;
    const runIds: string[] = [];
    for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runIds.push(w.runId);
    runIds.reverse();
    // Each event's bytes go to the turn whose update was accepted last before it (a run's first
    // events to the turn that follows).
    const perTurn: { bytes: number; events: number }[] = [];
    let turn = 0;
    process.stdout.write(`\nrun  turns  events   history  bytes/turn  input (carried state)\n`);
    for (const [r, runId] of runIds.entries()) {
      const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
      const firstTurn = turn;
      let bytes = 0;
      let input = 0;
      for (const e of events) {
        if (e.workflowExecutionUpdateAcceptedEventAttributes) turn++;
        const b = eventBytes(e);
        bytes += b;
        if (e.workflowExecutionStartedEventAttributes) input = (e.workflowExecutionStartedEventAttributes.input?.payloads ?? []).reduce((n, p) => n + (p.data?.length ?? 0), 0);
        const at = Math.max(0, turn - 1);
        perTurn[at] ??= { bytes: 0, events: 0 };
        perTurn[at]!.bytes += b;
        perTurn[at]!.events++;
      }
      const turnsInRun = turn - firstTurn;
      process.stdout.write(
        `${String(r + 1).padStart(3)}  ${String(turnsInRun).padStart(5)}  ${String(events.length).padStart(6)}  ${kb(bytes).padStart(10)}  ${String(Math.round(bytes / Math.max(1, turnsInRun))).padStart(10)}  ${input} bytes\n`,
      );
    }
    const biggest = Math.max(...perTurn.map((p) => p.bytes));
    process.stdout.write(`\nbytes each turn added, mean over each 20 turns (five rounds of the loop; a run's start counts to its first turn):\n`);
    const marks = [20, 40, 100, 200, 300, 400, TURNS].filter((m, i, a) => m <= TURNS && a.indexOf(m) === i);
    for (const m of marks) {
      const slice = perTurn.slice(Math.max(0, m - 20), m);
      const mean = slice.reduce((n, p) => n + p.bytes, 0) / slice.length;
      const ev = slice.reduce((n, p) => n + p.events, 0) / slice.length;
      process.stdout.write(`  turns ${String(Math.max(1, m - 19)).padStart(3)}-${String(m).padEnd(3)}  ${mean.toFixed(0).padStart(6)} bytes  ${ev.toFixed(1)} events\n`);
    }
    const steady = perTurn.slice(1);
    const half = Math.floor(steady.length / 2);
    const meanOf = (xs: { bytes: number }[]) => xs.reduce((n, p) => n + p.bytes, 0) / Math.max(1, xs.length);
    process.stdout.write(`  turns 2-${half + 1}: ${meanOf(steady.slice(0, half)).toFixed(0)} bytes a turn; turns ${half + 2}-${TURNS}: ${meanOf(steady.slice(half)).toFixed(0)} bytes a turn; largest turn ${biggest} bytes\n`);

    const first = { turn: turnMs.slice(0, WINDOW), bare: bareMs.slice(0, WINDOW), query: queryMs.slice(0, WINDOW) };
    const last = { turn: turnMs.slice(-WINDOW), bare: bareMs.slice(-WINDOW), query: queryMs.slice(-WINDOW) };
    // The first turn starts the session: the early window starts at turn 2.
    first.turn = turnMs.slice(1, WINDOW + 1);
    first.bare = bareMs.slice(1, WINDOW + 1);
    first.query = queryMs.slice(1, WINDOW + 1);
    const line = (label: string, w: typeof first) =>
      `${label.padEnd(16)} turn p50 ${median(w.turn).toFixed(1)} ms  bare update p50 ${median(w.bare).toFixed(1)} ms  ratio ${(median(w.turn) / median(w.bare)).toFixed(2)}×  state query p50 ${median(w.query).toFixed(1)} ms`;
    process.stdout.write(`\nlatency (p50 of ${WINDOW} turns, each next to a bare update of a probe workflow):\n`);
    process.stdout.write(`${line(`turns 2-${WINDOW + 1}`, first)}\n${line(`turns ${TURNS - WINDOW + 1}-${TURNS}`, last)}\n`);
    // The same by blocks of 50 turns, to show a trend within a run and the rollover.
    process.stdout.write(`by 50 turns:  turns    turn p50   bare p50   ratio   state query p50\n`);
    for (let from = 0; from < TURNS; from += 50) {
      const to = Math.min(TURNS, from + 50);
      const t = median(turnMs.slice(Math.max(1, from), to));
      const b = median(bareMs.slice(Math.max(1, from), to));
      process.stdout.write(`              ${String(from + 1).padStart(3)}-${String(to).padEnd(3)}  ${t.toFixed(1).padStart(7)}  ${b.toFixed(1).padStart(8)}  ${(t / b).toFixed(2).padStart(5)}×  ${median(queryMs.slice(from, to)).toFixed(1).padStart(8)}\n`);
    }
    process.stdout.write(`turn ${Math.min(10, TURNS)}: ${turnMs[Math.min(10, TURNS) - 1]!.toFixed(1)} ms (bare ${bareMs[Math.min(10, TURNS) - 1]!.toFixed(1)}); turn ${TURNS}: ${turnMs[TURNS - 1]!.toFixed(1)} ms (bare ${bareMs[TURNS - 1]!.toFixed(1)})\n`);
    const late = median(last.turn) / median(last.bare);
    const early = median(first.turn) / median(first.bare);
    process.stdout.write(`late / early, each against its floor: ${(late / early).toFixed(2)} (target within 1.20); raw p50: ${(median(last.turn) / median(first.turn)).toFixed(2)}\n`);
    http.close();
  } finally {
    await stack.close();
    await backend.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
