// Faults, measured: 2 API processes and 3 worker processes against one Temporal dev server (its
// state in a SQLite file) and one store (FerretDB on PostgreSQL), with concurrent conversations
// running while a random worker is killed with SIGKILL every few seconds and restarted, and the
// Temporal dev server and the store are each restarted once. Then every conversation is checked
// against its expected transcript.
//   node --import tsx bench/chaos.ts [--conversations 50] [--turns 5] [--kills 100] [--kill-every 3000]
// Each conversation: a handoff to a second agent and back (turns 1–2), then turns that call an
// HTTP tool whose calls a local endpoint counts per conversation and turn. Clients send every turn
// with an Idempotency-Key and resend it (to either API) on 503, 429, a dropped connection or no
// answer in time, as docs/chat-api.md says; anything else is counted as "not answered".
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import http from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { bundleWorkflowCode } from '@temporalio/worker';
import { connectMongo } from '../db/connection';
import { createModels } from '../db/models';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { freePort, manage, ROOT, startFerretDb, startTemporalDevServer, waitForHttpOk, type ManagedProcess } from '../infra/processes';
import { loadConfig, type Config } from '../lib/config';
import { FAILURE_CONVERTER_PATH } from '../lib/payload-codec';
import { PAYLOAD_CONVERTER_PATH, WORKFLOWS_PATH } from '../workers/create-worker';
import { type ApiProcess } from '../test/support/api-process';
import { childEnv, FAST_FAILOVER_ENV, startWorkerProcess } from '../test/support/worker-process';

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '50' },
    turns: { type: 'string', default: '5' },
    kills: { type: 'string', default: '100' },
    'kill-every': { type: 'string', default: '3000' },
    workers: { type: 'string', default: '3' },
    apis: { type: 'string', default: '2' },
    /** A file for the API and worker processes' warnings and errors (JSON lines). */
    log: { type: 'string' },
    /** How long a client waits for an answer before it resends the turn. */
    'client-timeout': { type: 'string', default: '60000' },
  },
});
const LANES = Number(values.conversations);
const TURNS = Math.max(3, Number(values.turns));
const KILLS = Number(values.kills);
const KILL_EVERY_MS = Number(values['kill-every']);
const WORKERS = Number(values.workers);
const APIS = Number(values.apis);
const CLIENT_TIMEOUT_MS = Number(values['client-timeout']);
/** How long the check waits for a conversation's transcript to show every answered turn (rows are written after the reply, retried while the store is away). */
const TRANSCRIPT_WAIT_MS = 90_000;

const logFile: WriteStream | null = values.log ? createWriteStream(values.log) : null;
/** Keeps a process's warnings and errors (pino levels 40 and up) in the log file. */
function keepLog(name: string, stream: NodeJS.ReadableStream | null): void {
  if (!logFile || !stream) return;
  let rest = '';
  stream.on('data', (d: Buffer) => {
    const lines = (rest + d.toString()).split('\n');
    rest = lines.pop() ?? '';
    for (const l of lines) if (/"level":(4|5|6)0/.test(l) || !l.startsWith('{')) logFile.write(`${name} ${l}\n`);
  });
}

/** The API as its own process (api/server.ts), its log kept. */
async function startApi(config: Config, name: string): Promise<ApiProcess> {
  const port = await freePort();
  const env = childEnv(config, { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: logFile ? 'warn' : 'silent' });
  const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  keepLog(name, child.stdout);
  keepLog(name, child.stderr);
  const proc = manage('api', child);
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttpOk(`${baseUrl}/healthz`, 60_000, () => proc.child.exitCode === null);
  return { baseUrl, proc };
}

/** A worker process; on a loaded machine its start can outlast the 60 s a start is given, so it is tried again. */
async function startWorker(config: Config, name: string): Promise<ManagedProcess> {
  let worker: ManagedProcess | undefined;
  for (let attempt = 1; !worker; attempt++) {
    try {
      worker = await startWorkerProcess(config);
    } catch (err) {
      if (attempt >= 3) throw err;
      out(`  ${name} did not start (${String(err).split('\n')[0]}); again`);
    }
  }
  keepLog(name, worker.child.stdout);
  keepLog(name, worker.child.stderr);
  return worker;
}

const out = (text: string) => process.stdout.write(`${text}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
function latencyLine(label: string, samples: number[]): string {
  if (samples.length === 0) return `${label.padEnd(40)} n=0`;
  const s = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(40)} n=${s.length}  p50 ${percentile(s, 50)} ms  p95 ${percentile(s, 95)} ms  p99 ${percentile(s, 99)} ms  max ${s[s.length - 1]} ms`;
}

// ── The agents ───────────────────────────────────────────────────────────────────────────────
const verifyAgent = `AGENT: Verify
GOAL: "Verify the guest"
FLOW:
  ask:
    REASONING: false
    GATHER:
      - name: required
        prompt: "Your name, {{topic}} caller?"
`;
const deskAgent = (toolBase: string) => `AGENT: Desk
GOAL: "Route guests"
TOOLS:
  lookup() -> {answer: string}
    type: http
    endpoint: "${toolBase}/tool/{{message_metadata.conv}}/{{message_metadata.turn}}"
    method: GET
HANDOFF:
  - TO: Verify
    WHEN: topic IS SET AND name IS NOT SET
    PASS: [topic]
    RETURN: true
    ON_RETURN: wrap_up
FLOW:
  menu:
    REASONING: false
    GATHER:
      - topic: required
        prompt: "What is it about?"
    THEN: idle
  idle:
    REASONING: false
    CALL: lookup()
    AS: found
    ON_SUCCESS:
      RESPOND: "Turn {{found.answer}}."
    ON_FAIL:
      RESPOND: "Lookup failed."
    ON_INPUT:
      - ELSE:
        THEN: idle
  wrap_up:
    REASONING: false
    RESPOND: "Thanks {{name}}, your {{topic}} question is next."
    ON_INPUT:
      - ELSE:
        THEN: idle
`;

/** What a conversation's turn sends and what its reply must say. */
function script(conv: string): { message: string; reply: string }[] {
  const turns = [
    { message: 'billing', reply: 'Your name, billing caller?' },
    { message: `Ada-${conv}`, reply: `Thanks Ada-${conv}, your billing question is next.` },
  ];
  for (let turn = 3; turn <= TURNS; turn++) turns.push({ message: `more ${turn}`, reply: `Turn ${conv}/${turn}.` });
  return turns;
}

// ── HTTP with resends ────────────────────────────────────────────────────────────────────────
interface Answer {
  status: number;
  body: Record<string, unknown> | null;
  retryAfter: string | undefined;
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
function send(baseUrl: string, method: string, urlPath: string, headers: Record<string, string>, payload?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = payload === undefined ? undefined : Buffer.from(JSON.stringify(payload));
    const req = http.request(`${baseUrl}${urlPath}`, { method, agent, headers: { ...headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: Record<string, unknown> | null = null;
        try {
          parsed = text ? (JSON.parse(text) as Record<string, unknown>) : null;
        } catch {
          parsed = { unparsed: text.slice(0, 200) };
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, retryAfter: res.headers['retry-after'] as string | undefined });
      });
      res.on('error', reject);
    });
    req.setTimeout(CLIENT_TIMEOUT_MS, () => req.destroy(new Error('client timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

const counts = {
  turns: 0,
  resends: 0,
  resent503: 0,
  resent429: 0,
  resentDropped: 0,
  resentTimeout: 0,
  /** Answered with neither the turn's reply nor a status that says to resend. */
  notAnswered: 0,
  wrongReply: 0,
  missing503RetryAfter: 0,
};
const notAnsweredSamples: string[] = [];
/** Per turn: ms from first send to the answer, and whether a fault overlapped it. */
const latencies: { ms: number; fault: boolean }[] = [];

// ── Faults in progress (for latency classification) ──────────────────────────────────────────
let faultsRunning = false;
let lastFaultAt = 0;
const markFault = () => (lastFaultAt = Date.now());

/** Sends one turn until it is answered; resends with the same key, alternating APIs. */
async function turn(apis: ApiProcess[], lane: number, key: string, json: Record<string, unknown>): Promise<Answer | null> {
  const start = Date.now();
  const faultAtStart = lastFaultAt;
  for (let attempt = 0; ; attempt++) {
    const api = apis[(lane + attempt) % apis.length]!;
    let answer: Answer;
    try {
      answer = await send(api.baseUrl, 'POST', '/api/v1/chat/agent', { authorization: `Bearer ${key}`, 'idempotency-key': json.idempotencyKey as string }, json.body);
    } catch (err) {
      counts.resends++;
      if ((err as Error).message === 'client timeout') counts.resentTimeout++;
      else counts.resentDropped++;
      await sleep(500);
      continue;
    }
    if (answer.status === 200) {
      latencies.push({ ms: Date.now() - start, fault: faultsRunning || lastFaultAt !== faultAtStart });
      return answer;
    }
    if (answer.status === 503 || answer.status === 429) {
      counts.resends++;
      if (answer.status === 503) {
        counts.resent503++;
        if (!answer.retryAfter) counts.missing503RetryAfter++;
      } else counts.resent429++;
      await sleep(Math.min(5, Number(answer.retryAfter ?? 1)) * 1000);
      continue;
    }
    counts.notAnswered++;
    if (notAnsweredSamples.length < 10) notAnsweredSamples.push(`${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
    return null;
  }
}

interface Conversation {
  conv: string;
  sessionId: string | null;
  sent: number;
  answered: number;
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-chaos-'));
  const stops: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));
  try {
    // The side-effect counter: one count per tool request, by conversation and turn.
    const toolCalls = new Map<string, number>();
    const tool = http.createServer((req, res) => {
      const match = /^\/tool\/([^/]+)\/(\d+)/.exec(req.url ?? '');
      const id = match ? `${match[1]}/${match[2]}` : 'unknown';
      toolCalls.set(id, (toolCalls.get(id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: id }));
    });
    await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
    stops.push(() => new Promise((r) => tool.close(r)));
    const toolBase = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`;

    const bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, failureConverterPath: FAILURE_CONVERTER_PATH, payloadConverterPath: PAYLOAD_CONVERTER_PATH, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });
    const bundlePath = path.join(dir, 'workflow-bundle.js');
    writeFileSync(bundlePath, bundle.code);

    const temporalPort = await freePort();
    const temporalDb = path.join(dir, 'temporal.sqlite');
    const startTemporal = () => startTemporalDevServer({ port: temporalPort, uiPort: null, dbFile: temporalDb });
    let temporal = await startTemporal();
    stops.push(() => temporal.process.stop());
    const ferretPort = await freePort();
    const postgresPort = await freePort();
    const startStore = () => startFerretDb({ dataDir: path.join(dir, 'store'), port: ferretPort, postgresPort, durability: 'durable' });
    let store = await startStore();
    stops.push(() => store.process.stop());
    out(`stack up in ${since(t0)}: Temporal ${temporal.address} (SQLite ${temporalDb}), store ${store.uri}`);

    const settings: Record<string, string> = {
      MONGODB_URI: `mongodb://127.0.0.1:${ferretPort}/chaos`,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: 'chaos',
      JWT_SECRET: 'c'.repeat(40),
      ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
      RATE_LIMIT_REQUESTS: '10000000',
      SESSION_MESSAGES_PER_MINUTE: '1000000',
      MAX_CONCURRENT_SESSIONS: '1000000',
      LLM_TIER_FAST: 'local',
      LLM_TIER_BALANCED: 'local',
      LLM_TIER_POWERFUL: 'local',
      TOOL_ALLOWED_PRIVATE_DESTINATIONS: `127.0.0.1:${(tool.address() as AddressInfo).port}`,
      WORKFLOW_BUNDLE_PATH: bundlePath,
      ...FAST_FAILOVER_ENV,
    };
    for (const [name, value] of Object.entries(settings)) process.env[name] = value;
    const config = loadConfig(settings);

    const connection = await connectMongo(config.MONGODB_URI);
    const models = createModels(connection);
    const tenant = await createTenant(models, { name: 'Chaos bench', slug: 'chaos-bench' });
    const project = await createProject(models, tenant._id, { name: 'Chaos' });
    const { key } = await createApiKey(models, tenant._id, { name: 'bench', permissions: ['admin'] });
    await connection.close();

    const apis: ApiProcess[] = [];
    for (let i = 0; i < APIS; i++) apis.push(await startApi(config, `api${i}`));
    stops.push(() => Promise.all(apis.map((a) => a.proc.stop())));
    const workers: (ManagedProcess | null)[] = await Promise.all(Array.from({ length: WORKERS }, (_, i) => startWorker(config, `worker${i}`)));
    stops.push(() => Promise.all(workers.map((w) => w?.stop())));
    out(`${APIS} API processes and ${WORKERS} workers up in ${since(t0)}`);

    const publish = async (name: string, dslContent: string) => {
      const auth = { authorization: `Bearer ${key}` };
      const created = await send(apis[0]!.baseUrl, 'POST', `/api/projects/${project._id}/agents`, auth, { name, dslContent });
      if (created.status !== 201) throw new Error(`creating ${name}: ${created.status} ${JSON.stringify(created.body)}`);
      const version = await send(apis[0]!.baseUrl, 'POST', `/api/projects/${project._id}/agents/${name}/versions`, auth, {});
      if (version.status !== 201) throw new Error(`versioning ${name}: ${version.status} ${JSON.stringify(version.body)}`);
    };
    await publish('Verify', verifyAgent);
    await publish('Desk', deskAgent(toolBase));

    // ── Conversations ──────────────────────────────────────────────────────────────────────
    const conversations: Conversation[] = [];
    let keepGoing = true;
    const runConversation = async (lane: number): Promise<void> => {
      const conv = `c${conversations.length + 1}`;
      const c: Conversation = { conv, sessionId: null, sent: 0, answered: 0 };
      conversations.push(c);
      for (const [i, step] of script(conv).entries()) {
        const turnNo = i + 1;
        c.sent++;
        counts.turns++;
        const answer = await turn(apis, lane, key, {
          idempotencyKey: `${conv}-${turnNo}-${randomUUID().slice(0, 8)}`,
          body: { projectId: project._id, agentId: 'Desk', message: step.message, metadata: { conv, turn: String(turnNo) }, ...(c.sessionId ? { sessionId: c.sessionId } : {}) },
        });
        if (!answer) return;
        c.answered++;
        c.sessionId ??= answer.body?.sessionId as string;
        if (!String(answer.body?.response ?? '').includes(step.reply)) {
          counts.wrongReply++;
          if (notAnsweredSamples.length < 10) notAnsweredSamples.push(`${conv} turn ${turnNo}: wanted "${step.reply}", got "${String(answer.body?.response).slice(0, 200)}"`);
        }
      }
    };
    const lanes = Array.from({ length: LANES }, async (_, lane) => {
      while (keepGoing) await runConversation(lane);
    });

    // ── Faults ─────────────────────────────────────────────────────────────────────────────
    const faultStart = Date.now();
    faultsRunning = true;
    const restartTemporalAt = Math.max(1, Math.floor(KILLS / 3));
    const restartStoreAt = Math.max(1, Math.floor((2 * KILLS) / 3));
    const restarting = new Set<number>();
    const restarts: Promise<void>[] = [];
    let kills = 0;
    const faultLog: string[] = [];
    let temporalRestarted = false;
    let storeRestarted = false;
    // A kill needs a running worker: while all are starting again, the round waits for the next.
    for (let i = 1; kills < KILLS || !storeRestarted; i++) {
      await sleep(KILL_EVERY_MS);
      if (kills < KILLS) {
        const candidates = workers.map((w, idx) => (w && !restarting.has(idx) ? idx : -1)).filter((idx) => idx >= 0);
        if (candidates.length > 0) {
          const idx = candidates[Math.floor(Math.random() * candidates.length)]!;
          const victim = workers[idx]!;
          victim.child.kill('SIGKILL');
          markFault();
          kills++;
          workers[idx] = null;
          restarting.add(idx);
          restarts.push(
            (async () => {
              await victim.exited;
              for (;;) {
                try {
                  workers[idx] = await startWorker(config, `worker${idx}`);
                  break;
                } catch (err) {
                  faultLog.push(`worker ${idx} restart failed, again: ${String(err).slice(0, 120)}`);
                  await sleep(1000);
                }
              }
              restarting.delete(idx);
            })(),
          );
        }
      }
      if (!temporalRestarted && kills >= restartTemporalAt) {
        temporalRestarted = true;
        const t = Date.now();
        markFault();
        await temporal.process.stop();
        temporal = await startTemporal();
        markFault();
        faultLog.push(`Temporal dev server restarted (same SQLite file) in ${Date.now() - t} ms at ${since(faultStart)}`);
      }
      if (!storeRestarted && kills >= restartStoreAt) {
        storeRestarted = true;
        const t = Date.now();
        markFault();
        await store.process.stop();
        store = await startStore();
        markFault();
        faultLog.push(`store (FerretDB and PostgreSQL) restarted in ${Date.now() - t} ms at ${since(faultStart)}`);
      }
      if (i % 10 === 0) out(`  ${since(faultStart)}: ${kills} kills, ${counts.turns} turns sent, ${latencies.length} answered, ${counts.resends} resends, ${counts.notAnswered} not answered`);
    }
    await Promise.all(restarts);
    faultsRunning = false;
    const faultMs = Date.now() - faultStart;
    keepGoing = false;
    out(`faults over after ${(faultMs / 1000).toFixed(1)} s; letting the conversations in flight finish`);
    await Promise.all(lanes);
    for (const line of faultLog) out(`  ${line}`);

    // ── Check every conversation ───────────────────────────────────────────────────────────
    let lostTurns = 0;
    let doubledTurns = 0;
    let lostReplies = 0;
    let doubledReplies = 0;
    let toolRepeats = 0;
    let toolMissing = 0;
    let unchecked = 0;
    let unexpectedRows = 0;
    /** ms a transcript took to show every answered turn, when it was not there at once. */
    const lateTranscripts: number[] = [];
    const problems: string[] = [];
    for (const c of conversations) {
      if (!c.sessionId) {
        unchecked++;
        continue;
      }
      let messages: { role: string; content: string }[] = [];
      let lastStatus = 0;
      const askedAt = Date.now();
      for (let attempt = 0; Date.now() - askedAt < TRANSCRIPT_WAIT_MS; attempt++) {
        const res = await send(apis[0]!.baseUrl, 'GET', `/api/v1/sessions/${c.sessionId}/transcripts`, { authorization: `Bearer ${key}` });
        lastStatus = res.status;
        if (res.status === 200) {
          messages = (res.body?.messages ?? []) as typeof messages;
          // Rows are written shortly after a reply: wait until the last answered turn is there.
          const expected = script(c.conv).slice(0, c.answered);
          if (expected.every((s) => messages.some((m) => m.role === 'user' && m.content === s.message))) break;
        }
        await sleep(500);
      }
      if (Date.now() - askedAt > 1000) lateTranscripts.push(Date.now() - askedAt);
      const sent = script(c.conv).slice(0, c.sent);
      const users = messages.filter((m) => m.role === 'user').map((m) => m.content);
      const assistants = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
      for (const [i, step] of sent.entries()) {
        const answered = i < c.answered;
        const u = users.filter((m) => m === step.message).length;
        const a = assistants.filter((m) => m.includes(step.reply)).length;
        if (answered && u === 0) lostTurns++;
        if (u > 1) doubledTurns++;
        if (answered && a === 0) lostReplies++;
        if (a > 1) doubledReplies++;
        if (((answered && (u === 0 || a === 0)) || u > 1 || a > 1) && problems.length < 10) problems.push(`${c.conv} (${c.sessionId}) turn ${i + 1}: ${u} user rows, ${a} replies (transcript read: ${lastStatus})`);
        if (i >= 2 && answered) {
          const calls = toolCalls.get(`${c.conv}/${i + 1}`) ?? 0;
          if (calls === 0) toolMissing++;
          if (calls > 1) toolRepeats += calls - 1;
        }
      }
      unexpectedRows += users.filter((m) => !sent.some((step) => step.message === m)).length;
    }

    const during = latencies.filter((l) => l.fault).map((l) => l.ms);
    const calm = latencies.filter((l) => !l.fault).map((l) => l.ms);
    out('');
    out(`conversations: ${conversations.length} (${LANES} at once, ${TURNS} turns each), turns sent ${counts.turns}, answered ${latencies.length}`);
    out(`faults: ${kills} worker SIGKILLs every ${KILL_EVERY_MS} ms over ${(faultMs / 1000).toFixed(1)} s, 1 Temporal restart, 1 store restart`);
    out(`resends (same Idempotency-Key): ${counts.resends} (503: ${counts.resent503}, 429: ${counts.resent429}, dropped: ${counts.resentDropped}, client timeout: ${counts.resentTimeout}); 503 without Retry-After: ${counts.missing503RetryAfter}`);
    out(`not answered (neither a reply nor told to retry): ${counts.notAnswered}; wrong reply: ${counts.wrongReply}; conversations without a session: ${unchecked}`);
    out(`transcripts: lost turns ${lostTurns}, doubled turns ${doubledTurns}, lost replies ${lostReplies}, doubled replies ${doubledReplies}, user rows not sent ${unexpectedRows}`);
    out(`tool side effects: missing ${toolMissing}, repeated calls ${toolRepeats} (at-least-once activities: a call in flight when its worker is killed is made again)`);
    out(latencyLine('transcripts complete only after waiting', lateTranscripts));
    out(latencyLine('turn latency during faults', during));
    out(latencyLine('turn latency otherwise', calm));
    for (const p of [...problems, ...notAnsweredSamples]) out(`  ${p}`);
  } finally {
    await stopAll();
    agent.destroy();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
