// HTTP-async channel latency: messages through `POST /api/v1/channels/http-async/message` to the
// reply at a receiver server in this process, next to `/chat/agent` turns of the same agent, a
// bare Temporal signal-with-start (the floor of the 202) and the floors of the design (a bare
// update-with-start, a bare update and a bare POST to the receiver, one after the other: a message
// the conversation takes; and the update and the POST alone: a follow-up the running session takes),
// and the design's bare form (an update whose workflow task schedules an activity that POSTs to the
// receiver) beside a turn's (an update answered by one task) on a worker of their own
// (support/two-task-floor), at the same concurrency, on one stack. The breakdown reads the
// conversations' and their sessions' histories.
//   node --import tsx bench/http-async.ts [--sessions 100] [--messages 20] [--burst] [--rounds 2]
//     [--events agent.response] [--breakdown 10] [--dump-history] [--worker-cpu-prof <dir>]
// Figures and what they mean: docs/performance.md, "HTTP-async channel".
// Each conversation is a chat user: message k+1 is sent once the reply (agent.response) to message
// k has arrived; `--burst` sends a conversation's messages back to back instead (each right after
// the previous 202) and waits for the replies at the end. The agent answers without a model (a
// FLOW step that responds and stays), so what is measured is the channel and the runtime.
// Phases alternate in `--rounds` (the floor, the HTTP-async messages, the chat turns), each round
// sending its share of `--messages` per conversation, so a burst of outside load falls on all.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, WithStartWorkflowOperation } from '@temporalio/client';
import { defineSignal } from '@temporalio/workflow';
import { pingUpdate } from '../workflows/definitions';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { conversationWorkflowId } from '../lib/http-async/session-key';
import { SessionIdKey } from '../workflows/search-attributes';
import { floorMessageUpdate, floorTurnUpdate } from './support/two-task-floor/definitions';
import { CpuMeter, type CpuSnapshot } from './support/cpu';
import { jsonClient } from './support/json-client';
import { startBenchStack } from './support/stack';
import { echoAgent } from '../test/support/agents';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '100' },
    messages: { type: 'string', default: '20' },
    burst: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '2' },
    /** The subscription's events (comma-separated); the API's default is agent.response alone. */
    events: { type: 'string', default: 'agent.response' },
    /** Conversations whose workflow histories are read for the breakdown of a message's time. */
    breakdown: { type: 'string', default: '10' },
    /** Prints the events of the first conversation's history and its session's, with their times (what the breakdown reads). */
    'dump-history': { type: 'boolean', default: false },
    /** A directory for a CPU profile of the worker process (written when it stops). */
    'worker-cpu-prof': { type: 'string' },
  },
});
const SESSIONS = Number(values.sessions);
const MESSAGES = Number(values.messages);
const BURST = values.burst;
const ROUNDS = Math.max(1, Math.min(Number(values.rounds), MESSAGES));
const EVENTS = values.events.split(',').map((e) => e.trim()).filter(Boolean);

// Answers every message from its one step, without a model.
const ECHO_AGENT = echoAgent();

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const summary = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? NaN };
};
const line = (label: string, samples: number[]) => {
  const s = summary(samples);
  return `${label.padEnd(40)} n=${s.n}  p50 ${s.p50.toFixed(1)} ms  p99 ${s.p99.toFixed(1)} ms  max ${s.max.toFixed(1)} ms`;
};
const out = (text: string) => process.stdout.write(`${text}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const share = (round: number) => Math.floor((MESSAGES * (round + 1)) / ROUNDS) - Math.floor((MESSAGES * round) / ROUNDS);

/** The caller's server: answers 200 at once and notes when each agent.response arrived. */
function startReceiver() {
  const arrived = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const counts = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      // The design floor's bare POST: answered at once, not counted.
      if (req.url === '/floor') return void res.writeHead(200).end();
      // The two-task floor's reply: its arrival noted as a reply's is.
      if (req.url?.startsWith('/floor/')) {
        res.writeHead(200).end();
        arrived.set(req.url, at);
        return void waiting.get(req.url)?.(at);
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { event: string; message_id: string; status?: string };
      const kind = body.event === 'agent.status' ? `agent.status ${body.status}` : body.event;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
      res.writeHead(200);
      res.end();
      if (body.event !== 'agent.response') return;
      arrived.set(body.message_id, at);
      waiting.get(body.message_id)?.(at);
    });
  });
  return {
    server,
    counts,
    /** When the reply to `messageId` (or the two-task floor's POST to `/floor/…`) arrived (now, or once it does). */
    reply(messageId: string): Promise<number> {
      const at = arrived.get(messageId);
      if (at !== undefined) return Promise.resolve(at);
      return new Promise((resolve) => waiting.set(messageId, resolve));
    },
  };
}

/** The two-task floor's worker process (bench/support/two-task-floor/worker.ts), resolved once it polls. */
async function startTwoTaskFloorWorker(temporalAddress: string, taskQueue: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'support', 'two-task-floor', 'worker.ts')], {
    env: { ...process.env, TEMPORAL_ADDRESS: temporalAddress, FLOOR_TASK_QUEUE: taskQueue },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`the two-task floor's worker exited (${code})`)));
  });
  const exited = new Promise((r) => child.once('exit', r));
  return {
    pid: child.pid!,
    taskQueue,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function main() {
  const receiver = startReceiver();
  await new Promise<void>((r) => receiver.server.listen(0, '127.0.0.1', r));
  const receiverHost = `127.0.0.1:${(receiver.server.address() as AddressInfo).port}`;
  const receiverUrl = `http://${receiverHost}/hooks`;
  const stack = await startBenchStack({
    name: 'http-async',
    env: { HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS: receiverHost },
    workerNodeArgs: values['worker-cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${values['worker-cpu-prof']}`] : [],
  });
  const { ctx, client, cpu, config } = stack;
  const floorWorker = await startTwoTaskFloorWorker(config.TEMPORAL_ADDRESS, `${config.TEMPORAL_TASK_QUEUE}-floor`).catch(async (err: unknown) => {
    await stack.close();
    throw err;
  });
  const floorCpu = new CpuMeter({ floorWorker: floorWorker.pid });
  try {
    const tenant = await createTenant(ctx.models, { name: 'HTTP-async bench', slug: 'http-async-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'HTTP-async' });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
    const http = jsonClient(stack.baseUrl, 2 * SESSIONS + 8);
    const auth = { authorization: `Bearer ${key}` };
    const expect201 = (what: string, res: { status: number; body: unknown }) => {
      if (res.status !== 201) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    };
    expect201('agent', await http.post(`/api/projects/${project._id}/agents`, { name: 'Echo', dslContent: ECHO_AGENT }, auth));
    expect201('version', await http.post(`/api/projects/${project._id}/agents/Echo/versions`, {}, auth));
    const sub = expect201(
      'subscription',
      await http.post(`/api/projects/${project._id}/channels/http-async/subscriptions`, { name: 'Bench front end', callbackUrl: receiverUrl, events: EVENTS }, auth),
    ) as { subscription: { id: string } };
    const subscriptionId = sub.subscription.id;

    const accepted: number[] = [];
    const toCallback: number[] = [];
    /** Answers other than the expected one, sent again after a second as a caller would (counted, printed). */
    const refused: string[] = [];
    const post = async (path: string, body: unknown, headers: Record<string, string>, expected: number) => {
      for (let tries = 0; ; tries++) {
        const res = await http.post(path, body, headers);
        if (res.status === expected) return res;
        const retryable = res.status === 429 || res.status >= 500;
        if (!retryable || tries >= 5) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
        refused.push(`${path.split('/').pop()} ${res.status} ${(res.body as { error?: { code?: string } })?.error?.code ?? ''}`);
        await sleep(1000);
      }
    };
    /**
     * Sends one message; resolves with its id once the 202 is in (its accept time recorded). A
     * message answered 503 may still have been recorded: its reply is not waited for, the one of
     * the message sent again is (the receiver is idempotent on message_id, as docs/http-async.md asks).
     */
    const send = async (sessionKey: string, text: string, samples: { accepted: number[] } | null) => {
      const sentAt = performance.now();
      const res = await post('/api/v1/channels/http-async/message', { project_id: project._id, subscription_id: subscriptionId, session_key: sessionKey, message: text }, { 'x-api-key': key }, 202);
      samples?.accepted.push(performance.now() - sentAt);
      const body = res.body as { message_id: string; session_key: string };
      return { messageId: body.message_id, sessionKey: body.session_key, sentAt };
    };
    /** `count` messages of one conversation, as a chat user or (--burst) back to back. */
    const converse = async (state: { key: string }, count: number, timed: boolean) => {
      const sink = timed ? { accepted } : null;
      const sent: { messageId: string; sentAt: number }[] = [];
      for (let k = 0; k < count; k++) {
        const m = await send(state.key, `message ${k + 1}`, sink);
        state.key = m.sessionKey;
        if (BURST) sent.push(m);
        else {
          const at = await receiver.reply(m.messageId);
          if (timed) toCallback.push(at - m.sentAt);
        }
      }
      for (const m of sent) {
        const at = await receiver.reply(m.messageId);
        if (timed) toCallback.push(at - m.sentAt);
      }
    };

    const chatTurns: number[] = [];
    const chat = async (state: { sessionId?: string }, count: number, timed: boolean) => {
      for (let k = 0; k < count; k++) {
        const started = performance.now();
        const res = await post('/api/v1/chat/agent', { projectId: project._id, message: `message ${k + 1}`, ...(state.sessionId ? { sessionId: state.sessionId } : {}) }, auth, 200);
        if (timed) chatTurns.push(performance.now() - started);
        state.sessionId ??= (res.body as { sessionId: string }).sessionId;
      }
    };

    // The floor of a 202: a bare signal-with-start of a trivial workflow (the probe, which leaves
    // the signal buffered), one workflow per lane, back to back, as many lanes as conversations.
    const benchSignal = defineSignal<[{ n: number }]>('benchSignal');
    const floor: number[] = [];
    const signalLane = async (lane: number, count: number, from: number) => {
      for (let k = 0; k < count; k++) {
        const started = performance.now();
        await client.workflow.signalWithStart('probeWorkflow', { workflowId: `signal-probe-${lane}`, taskQueue: config.TEMPORAL_TASK_QUEUE, signal: benchSignal, signalArgs: [{ n: from + k }] });
        floor.push(performance.now() - started);
      }
    };

    // The floor of the design: what a message costs with nothing of ours in it. A bare
    // update-with-start of the probe (the accept: the conversation's workflow takes the message),
    // then a bare update of another probe (the session's turn), then a bare POST of a small JSON
    // body to the receiver (the reply), one after the other, one pair of probes per lane.
    const designFloor: number[] = [];
    /** The floor's three parts, each on its own. */
    const floorParts = { uws: [] as number[], update: [] as number[], post: [] as number[] };
    const floorPost = async () => {
      const res = await fetch(`http://${receiverHost}/floor`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"event":"floor"}' });
      await res.arrayBuffer();
    };
    const designLane = async (lane: number, count: number, from: number, sink: number[] | null) => {
      for (let k = 0; k < count; k++) {
        const started = performance.now();
        await client.workflow.executeUpdateWithStart(pingUpdate, {
          args: [{ n: from + k }],
          startWorkflowOperation: new WithStartWorkflowOperation('probeWorkflow', { workflowId: `accept-probe-${lane}`, taskQueue: config.TEMPORAL_TASK_QUEUE, workflowIdConflictPolicy: 'USE_EXISTING' }),
        });
        const accepted = performance.now();
        // The turn probe was started by the untimed first pass (sink null).
        if (sink) await client.workflow.getHandle(`turn-probe-${lane}`).executeUpdate(pingUpdate, { args: [{ n: from + k }] });
        else {
          await client.workflow.executeUpdateWithStart(pingUpdate, {
            args: [{ n: from + k }],
            startWorkflowOperation: new WithStartWorkflowOperation('probeWorkflow', { workflowId: `turn-probe-${lane}`, taskQueue: config.TEMPORAL_TASK_QUEUE, workflowIdConflictPolicy: 'USE_EXISTING' }),
          });
        }
        const turned = performance.now();
        await floorPost();
        const done = performance.now();
        sink?.push(done - started);
        if (sink) {
          floorParts.uws.push(accepted - started);
          floorParts.update.push(turned - accepted);
          floorParts.post.push(done - turned);
        }
      }
    };

    // The design's bare form: an update taken by one workflow task, which schedules an activity
    // that POSTs the reply to the receiver (whose completion is a second task), one workflow per
    // lane, a message sent once the previous one's POST arrived; and beside it the bare form of a
    // chat turn, an update answered by one task. Both on a worker of their own with the SDK's
    // defaults (bench/support/two-task-floor), so nothing of the platform runs in either.
    const twoTaskFloor: number[] = [];
    const oneTaskFloor: number[] = [];
    let floorSeq = 0;
    // Its own client, with the SDK's default payload converter (the platform's encrypts).
    const floorClient = new Client({ connection: client.connection });
    const floorHandle = (lane: number) => floorClient.workflow.getHandle(`two-task-floor-${lane}`);
    const twoTaskLane = async (lane: number, count: number, sink: number[] | null) => {
      for (let k = 0; k < count; k++) {
        const replyPath = `/floor/${lane}/${floorSeq++}`;
        const started = performance.now();
        await floorHandle(lane).executeUpdate(floorMessageUpdate, { args: [{ n: k, url: `http://${receiverHost}${replyPath}` }] });
        const at = await receiver.reply(replyPath);
        sink?.push(at - started);
      }
    };
    const oneTaskLane = async (lane: number, count: number, sink: number[] | null) => {
      for (let k = 0; k < count; k++) {
        const started = performance.now();
        await floorHandle(lane).executeUpdate(floorTurnUpdate, { args: [{ n: k }] });
        sink?.push(performance.now() - started);
      }
    };

    // Warm-up (untimed): a few conversations and chat sessions of two messages each.
    await Promise.all(Array.from({ length: 5 }, (_, i) => converse({ key: `warm-${i}` }, 2, false)));
    await Promise.all(Array.from({ length: 5 }, () => chat({}, 2, false)));
    await Promise.all(Array.from({ length: 5 }, (_, i) => signalLane(SESSIONS + i, 2, 0)));
    // Both probes of every lane started before anything is timed.
    await Promise.all(Array.from({ length: SESSIONS }, (_, i) => designLane(i, 1, 0, null)));
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, i) => {
        await floorClient.workflow.start('twoTaskFloorWorkflow', { workflowId: `two-task-floor-${i}`, taskQueue: floorWorker.taskQueue });
        await twoTaskLane(i, 2, null);
        await oneTaskLane(i, 2, null);
      }),
    );

    const conversations = Array.from({ length: SESSIONS }, (_, i) => ({ key: `caller-${i}` }));
    const chatSessions = Array.from({ length: SESSIONS }, () => ({}) as { sessionId?: string });
    // Untimed wait after a phase: held projection writes and rate-limit charges land in its CPU.
    const settle = () => sleep(config.SESSION_PROJECTION_FLUSH_MS + 750);
    const cpuOf: Record<string, CpuSnapshot> = { floor: {}, designFloor: {}, twoTaskFloor: {}, oneTaskFloor: {}, httpAsync: {}, chat: {} };
    const wallOf: Record<string, number> = { floor: 0, designFloor: 0, twoTaskFloor: 0, oneTaskFloor: 0, httpAsync: 0, chat: 0 };
    const snapshot = () => ({ ...cpu.snapshot(), ...floorCpu.snapshot() });
    const phase = async (name: string, run: () => Promise<unknown>) => {
      process.stderr.write(`${new Date().toISOString()} ${name}\n`);
      const before = snapshot();
      const began = performance.now();
      await run();
      wallOf[name]! += performance.now() - began;
      await settle();
      CpuMeter.accumulate(cpuOf[name]!, before, snapshot());
    };
    let sentSoFar = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const count = share(round);
      await phase('floor', () => Promise.all(conversations.map((_, i) => signalLane(i, count, sentSoFar))));
      await phase('designFloor', () => Promise.all(conversations.map((_, i) => designLane(i, count, 1 + sentSoFar, designFloor))));
      await phase('twoTaskFloor', () => Promise.all(conversations.map((_, i) => twoTaskLane(i, count, twoTaskFloor))));
      await phase('oneTaskFloor', () => Promise.all(conversations.map((_, i) => oneTaskLane(i, count, oneTaskFloor))));
      await phase('httpAsync', () => Promise.all(conversations.map((c) => converse(c, count, true))));
      await phase('chat', () => Promise.all(chatSessions.map((s) => chat(s, count, true))));
      sentSoFar += count;
    }

    const total = SESSIONS * MESSAGES;
    out(`${SESSIONS} conversations x ${MESSAGES} messages${BURST ? ', burst (back to back)' : ', each sent once the previous reply arrived'}, ${ROUNDS} rounds; subscription events: ${EVENTS.join(', ')}`);
    out('Latency is noisy on a shared machine (the load average is printed at the end); CPU per operation is the steadier figure.');
    out(line('floor: bare signal-with-start', floor));
    out(line('HTTP-async accept (sent -> 202)', accepted));
    out(line('HTTP-async message -> agent.response', toCallback));
    out(line('/chat/agent turn, same agent', chatTurns));
    out(line('floor: update-with-start+update+POST', designFloor));
    out(`  ${line('its update-with-start', floorParts.uws)}`);
    out(`  ${line('its update', floorParts.update)}`);
    out(`  ${line('its POST', floorParts.post)}`);
    // What a follow-up needs when the session runs the lane: its update, then the reply's POST.
    const laneFloor = floorParts.update.map((u, i) => u + floorParts.post[i]!);
    out(line('floor: update+POST (session runs lane)', laneFloor));
    out(line('floor: two tasks (update, activity POST)', twoTaskFloor));
    out(line('floor: one task (update)', oneTaskFloor));
    const a = summary(accepted);
    const m = summary(toCallback);
    const c = summary(chatTurns);
    out(`accept p99 ${a.p99.toFixed(1)} ms (target < 20 ms; floor p99 ${summary(floor).p99.toFixed(1)} ms)`);
    const d = summary(designFloor);
    const l = summary(laneFloor);
    out(`message -> callback p50 / chat turn p50: ${(m.p50 / c.p50).toFixed(2)}x (target <= 2x); the design's floor / chat turn p50: ${(d.p50 / c.p50).toFixed(2)}x; message -> callback / the floor: ${(m.p50 / d.p50).toFixed(2)}x; the session-lane floor / chat turn p50: ${(l.p50 / c.p50).toFixed(2)}x`);
    const two = summary(twoTaskFloor);
    const one = summary(oneTaskFloor);
    out(`the design's bare form: two-task floor / one-task floor p50: ${(two.p50 / one.p50).toFixed(2)}x (the target's ratio with nothing of ours in it); message -> callback / two-task floor: ${(m.p50 / two.p50).toFixed(2)}x; chat turn / one-task floor: ${(c.p50 / one.p50).toFixed(2)}x`);
    out(`throughput: HTTP-async ${((total / wallOf.httpAsync!) * 1000).toFixed(1)} replies/s, chat ${((total / wallOf.chat!) * 1000).toFixed(1)} turns/s, floor ${((total / wallOf.floor!) * 1000).toFixed(1)} signals/s`);
    out(`CPU per bare signal (ms):          ${CpuMeter.perOp({}, cpuOf.floor!, total)}`);
    out(`CPU per design floor (ms):         ${CpuMeter.perOp({}, cpuOf.designFloor!, total)}`);
    out(`CPU per two-task floor (ms):       ${CpuMeter.perOp({}, cpuOf.twoTaskFloor!, total)}  [bench = client + receiver]`);
    out(`CPU per one-task floor (ms):       ${CpuMeter.perOp({}, cpuOf.oneTaskFloor!, total)}  [bench = client]`);
    out(`CPU per HTTP-async message (ms):   ${CpuMeter.perOp({}, cpuOf.httpAsync!, total)}  [bench = API + client + receiver]`);
    out(`CPU per chat turn (ms):            ${CpuMeter.perOp({}, cpuOf.chat!, total)}  [bench = API + client]`);
    if (refused.length > 0) out(`answers other than 202/200, sent again: ${refused.length} (${[...new Set(refused)].join('; ')})`);
    out(`deliveries received: ${[...receiver.counts].map(([k, n]) => `${k} ${n}`).join(', ')}`);
    out(await breakdown(stack.client, conversations.slice(0, Number(values.breakdown)).map((c) => c.key)));
    // One at a time, nothing else in flight: an accept (each message sent once the previous reply
    // arrived), a bare signal-with-start, and an authenticated no-op request (the API's fixed cost).
    await settle();
    const alone = { accepted: [] as number[], floor: [] as number[], noop: [] as number[] };
    const lone = { key: 'alone' };
    for (let k = 0; k < 30; k++) {
      const m = await send(lone.key, `message ${k + 1}`, alone);
      lone.key = m.sessionKey;
      await receiver.reply(m.messageId);
    }
    for (let k = 0; k < 30; k++) {
      let started = performance.now();
      await client.workflow.signalWithStart('probeWorkflow', { workflowId: 'signal-probe-alone', taskQueue: config.TEMPORAL_TASK_QUEUE, signal: benchSignal, signalArgs: [{ n: k }] });
      alone.floor.push(performance.now() - started);
      started = performance.now();
      const me = await http.get('/api/auth/me', auth);
      if (me.status !== 200) throw new Error(`auth/me: ${me.status}`);
      alone.noop.push(performance.now() - started);
    }
    out('one at a time (nothing else in flight):');
    out(`  ${line('HTTP-async accept', alone.accepted.slice(1))}`);
    out(`  ${line('bare signal-with-start', alone.floor)}`);
    out(`  ${line('authenticated no-op request', alone.noop)}`);
    if (values['dump-history']) {
      const conversationId = conversationWorkflowId(conversations[0]!.key);
      out(`${conversationId}:\n${await dumpHistory(stack.client, conversationId)}`);
      const sessionId = (await stack.client.workflow.getHandle(conversationId).describe()).typedSearchAttributes.get(SessionIdKey);
      if (sessionId) out(`session/${sessionId}:\n${await dumpHistory(stack.client, `session/${sessionId}`)}`);
    }
    out(`load average at the end: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    http.close();
  } catch (err) {
    // Said before the stack goes down (a client call still retrying then fails on its own).
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  } finally {
    await floorWorker.stop();
    await stack.close();
    receiver.server.closeAllConnections();
    await new Promise((r) => receiver.server.close(r));
  }
}

const eventMs = (e: { eventTime?: { seconds?: unknown; nanos?: number | null } | null }) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

interface Step {
  type: string;
  scheduled: number;
  started: number;
  completed: number;
}

/**
 * Where a message's time goes, from the conversation workflows' histories (server timestamps):
 * for each message, the signal, its turn activity, and the delivery activities that follow it up
 * to its reply, each activity split into waiting for a worker (scheduled -> started) and running.
 */
async function breakdown(client: Awaited<ReturnType<typeof startBenchStack>>['client'], sessionKeys: string[]): Promise<string> {
  const spans = new Map<string, number[]>();
  const add = (name: string, ms: number) => spans.set(name, [...(spans.get(name) ?? []), ms]);
  for (const sessionKey of sessionKeys) {
    const history = await client.workflow.getHandle(conversationWorkflowId(sessionKey)).fetchHistory();
    const time = eventMs;
    const steps = new Map<number, Step>();
    const signals: number[] = [];
    const order: Step[] = [];
    for (const e of history.events ?? []) {
      const id = Number(e.eventId);
      // A message comes as an update (accepted) or, while no worker answered, as a signal.
      if (e.workflowExecutionSignaledEventAttributes || e.workflowExecutionUpdateAcceptedEventAttributes) signals.push(time(e));
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled) {
        const step = { type: scheduled.activityType?.name ?? '?', scheduled: time(e), started: NaN, completed: NaN };
        steps.set(id, step);
        order.push(step);
      }
      const started = e.activityTaskStartedEventAttributes;
      if (started) steps.get(Number(started.scheduledEventId))!.started = time(e);
      const completed = e.activityTaskCompletedEventAttributes;
      if (completed) steps.get(Number(completed.scheduledEventId))!.completed = time(e);
    }
    // Each turn (runHttpAsyncTurn) answers the next message; its reply is the first delivery
    // scheduled after the turn completed (the ones before it carry earlier events), unless the
    // turn's own activity delivered it (no delivery scheduled before the next turn).
    const turns = order.filter((s) => s.type === 'runHttpAsyncTurn');
    const deliveries = order.filter((s) => s.type === 'deliverHttpAsyncEvent');
    turns.forEach((turn, i) => {
      const signal = signals[i];
      const next = turns[i + 1]?.scheduled ?? Infinity;
      const reply = deliveries.find((d) => d.scheduled >= turn.completed && d.scheduled < next);
      if (signal === undefined) return;
      if (!reply) {
        add('signal -> turn activity scheduled', turn.scheduled - signal);
        add('turn activity waiting for a worker', turn.started - turn.scheduled);
        add('turn activity running (turn update + reply POST)', turn.completed - turn.started);
        add('signal -> turn (and reply) done (server clock)', turn.completed - signal);
        return;
      }
      add('signal -> turn activity scheduled', turn.scheduled - signal);
      add('turn activity waiting for a worker', turn.started - turn.scheduled);
      add('turn activity running (the turn update)', turn.completed - turn.started);
      add('turn done -> reply delivery scheduled', reply.scheduled - turn.completed);
      add('reply delivery waiting for a worker', reply.started - reply.scheduled);
      add('reply delivery running (read, sign, POST, record)', reply.completed - reply.started);
      add('signal -> reply delivered (server clock)', reply.completed - signal);
    });
    for (const d of deliveries) add('any delivery running', d.completed - d.started);
    // Conversations whose session runs the lane: the follow-ups are the session's updates.
    const sessionId = (await client.workflow.getHandle(conversationWorkflowId(sessionKey)).describe()).typedSearchAttributes.get(SessionIdKey);
    if (sessionId) sessionSpans(await client.workflow.getHandle(`session/${sessionId}`).fetchHistory(), add);
  }
  const rows = [...spans].map(([name, samples]) => `  ${line(name, samples)}`);
  return `where a message's time goes (${sessionKeys.length} conversations' histories, all rounds):\n${rows.join('\n')}`;
}

/**
 * A session that runs its conversation's lane: each message it took as an update (the workflow
 * task that accepted it, which runs its turn) and the reply's delivery activity that task scheduled.
 */
function sessionSpans(history: Awaited<ReturnType<ReturnType<Awaited<ReturnType<typeof startBenchStack>>['client']['workflow']['getHandle']>['fetchHistory']>>, add: (name: string, ms: number) => void): void {
  const events = history.events ?? [];
  const steps = new Map<number, Step>();
  const messages: { taskScheduled: number; taskStarted: number; accepted: number }[] = [];
  let taskScheduled = NaN;
  let taskStarted = NaN;
  const deliveries: Step[] = [];
  for (const e of events) {
    const id = Number(e.eventId);
    if (e.workflowTaskScheduledEventAttributes) taskScheduled = eventMs(e);
    if (e.workflowTaskStartedEventAttributes) taskStarted = eventMs(e);
    if (e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'httpAsyncSessionMessage') messages.push({ taskScheduled, taskStarted, accepted: eventMs(e) });
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'deliverHttpAsyncEvent') {
      const step = { type: 'deliverHttpAsyncEvent', scheduled: eventMs(e), started: NaN, completed: NaN };
      steps.set(id, step);
      deliveries.push(step);
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started && steps.has(Number(started.scheduledEventId))) steps.get(Number(started.scheduledEventId))!.started = eventMs(e);
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed && steps.has(Number(completed.scheduledEventId))) steps.get(Number(completed.scheduledEventId))!.completed = eventMs(e);
  }
  for (const m of messages) {
    const reply = deliveries.find((d) => d.scheduled >= m.accepted);
    add('session: message -> its workflow task started', m.taskStarted - m.taskScheduled);
    add('session: that task (accepts, runs the turn)', m.accepted - m.taskStarted);
    if (!reply) continue;
    add('session: turn done -> reply delivery scheduled', reply.scheduled - m.accepted);
    add('session: reply delivery waiting for a worker', reply.started - reply.scheduled);
    add('session: reply delivery running (read, sign, POST, record)', reply.completed - reply.started);
    add('session: message -> reply delivered (server clock)', reply.completed - m.taskScheduled);
  }
}

/** The events of one workflow history, each with its time after the first event. */
async function dumpHistory(client: Awaited<ReturnType<typeof startBenchStack>>['client'], workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const t0 = eventMs(events[0]!);
  return events
    .map((e) => {
      const kind = Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? '?';
      const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
      return `  ${String(e.eventId).padStart(4)} ${(eventMs(e) - t0).toFixed(1).padStart(9)} ms  ${kind.replace(/EventAttributes$/, '')}${activity ? ` ${activity}` : ''}`;
    })
    .join('\n');
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
