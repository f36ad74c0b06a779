// Faults, measured: 2 API processes and 3 worker processes against one Temporal dev server (its
// state in a SQLite file) and one store (FerretDB on PostgreSQL), with concurrent conversations
// running while a random worker is killed with SIGKILL every few seconds and restarted, and the
// Temporal dev server and the store are each restarted once. Then every conversation is checked
// against its expected transcript.
//   node --import tsx bench/chaos.ts [--conversations 50] [--turns 5] [--kills 100] [--kill-every 3000] [--min-uptime 0] [--log FILE]
// Each conversation: a handoff to a second agent and back (turns 1–2), then turns that call an
// HTTP tool whose calls a local endpoint counts per conversation and turn, then an async tool call
// (the session suspends; the local endpoint acknowledges and posts the signed callback a moment
// later, resending it on 503, 409 or a dropped connection as docs/callbacks.md says), then an
// escalation to a human task that the bench resolves through the API with an Idempotency-Key
// (resent with the same key on 503, 429, 5xx or a dropped connection: a resend after an attempt
// that went through is answered 200 with the task). After each of the
// two the lane waits for the resumed reply in the transcript before it goes on. Clients send every
// turn with an Idempotency-Key and resend it (to either API) on 503, 429, a dropped connection or
// no answer in time, as docs/chat-api.md says; anything else is counted as "not answered".
import { createHmac, randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import http from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { connectMongo } from '../db/connection';
import { createModels } from '../db/models';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { freePort, manage, ROOT, startFerretDb, startTemporalDevServer, waitForHttpOk, type ManagedProcess } from '../infra/processes';
import { loadConfig, type Config } from '../lib/config';
import { writeWorkflowBundle } from '../workers/workflow-bundle';
import { Client, Connection } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { payloadCodecFromConfig, switchboardDataConverter } from '../lib/payload-codec';
import { type ApiProcess } from '../test/support/api-process';
import { childEnv, FAST_FAILOVER_ENV, startWorkerProcess } from '../test/support/worker-process';

const { values } = parseArgs({
  options: {
    conversations: { type: 'string', default: '50' },
    turns: { type: 'string', default: '5' },
    kills: { type: 'string', default: '100' },
    'kill-every': { type: 'string', default: '3000' },
    /** A worker is killed only once it has been up this long (0: as soon as it runs). On a machine where a worker takes a minute to start, a kill every few seconds otherwise takes each worker as it comes up and no workflow task runs at all. */
    'min-uptime': { type: 'string', default: '0' },
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
const MIN_UPTIME_MS = Number(values['min-uptime']);
const WORKERS = Number(values.workers);
const APIS = Number(values.apis);
const CLIENT_TIMEOUT_MS = Number(values['client-timeout']);
/** How long the check waits for a conversation's transcript to show every answered turn (rows are written after the reply, retried while the store is away). */
const TRANSCRIPT_WAIT_MS = 90_000;
/** How long a lane waits for the reply a callback or a resolved human task resumes the session with. */
const RESUME_WAIT_MS = 180_000;
/** How long the async tool's endpoint waits after acknowledging before it posts the callback. */
const CALLBACK_DELAY_MS = 1000;

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
  pay(amount: number) -> {status: string, reference: string}
    type: async_webhook
    endpoint: "${toolBase}/pay/{{message_metadata.conv}}"
    method: POST
    callback_url_field: "notify.url"
    timeout_seconds: 3600
ESCALATE:
  triggers:
    - WHEN: amount > 500 AND human IS NOT SET
      REASON: "Refund of {{amount}} needs a person"
  on_human_complete:
    - IF human.resolved == true: CONTINUE
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
      - IF: input == "pay"
        THEN: paying
      - ELSE:
        THEN: idle
  paying:
    REASONING: false
    RESPOND: "Paying."
    CALL: pay
      WITH:
        amount: 42
      AS: payment
    ON_SUCCESS:
      THEN: paid
    ON_FAIL:
      THEN: unpaid
  paid:
    REASONING: false
    GATHER:
      - amount: required
        type: number
        prompt: "Payment {{payment.reference}} done. How much to refund?"
    THEN: refunded
  refunded:
    REASONING: false
    RESPOND: "Refund approved: {{human.notes}}."
  unpaid:
    REASONING: false
    RESPOND: "Payment failed."
  wrap_up:
    REASONING: false
    RESPOND: "Thanks {{name}}, your {{topic}} question is next."
    ON_INPUT:
      - ELSE:
        THEN: idle
`;

/** What a conversation's turn sends, what its reply must say, and for a turn that waits (async call, human task) the reply the session resumes with. */
interface Step {
  message: string;
  reply: string;
  kind?: 'callback' | 'human';
  resumed?: string;
}
function script(conv: string): Step[] {
  const turns: Step[] = [
    { message: 'billing', reply: 'Your name, billing caller?' },
    { message: `Ada-${conv}`, reply: `Thanks Ada-${conv}, your billing question is next.` },
  ];
  for (let turn = 3; turn <= TURNS; turn++) turns.push({ message: `more ${turn}`, reply: `Turn ${conv}/${turn}.` });
  turns.push({ message: 'pay', reply: 'Paying.', kind: 'callback', resumed: `Payment R-${conv} done. How much to refund?` });
  turns.push({ message: '600', reply: 'passed this to', kind: 'human', resumed: `Refund approved: N-${conv}.` });
  return turns;
}

// ── HTTP with resends ────────────────────────────────────────────────────────────────────────
interface Answer {
  status: number;
  body: Record<string, unknown> | null;
  retryAfter: string | undefined;
}
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
function send(baseUrl: string, method: string, urlPath: string, headers: Record<string, string>, payload?: unknown, raw?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = raw !== undefined ? Buffer.from(raw) : payload === undefined ? undefined : Buffer.from(JSON.stringify(payload));
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
    if (answer.status === 200 || answer.status === 202) {
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
  /** The suspension the async call's 202 named. */
  suspensionId?: string;
  /** The human task the escalation's answer named, and whether the bench's resolve went through (200, or 409 with its own resolution). */
  taskId?: string;
  taskResolved?: boolean;
  /** 200s to the bench's resolves of the task (more than one: resolved twice). */
  taskResolveOks: number;
  /** The lane gave up waiting for the resumed reply. */
  stuck?: 'callback' | 'human';
}

/** One async call the endpoint received, and what became of its callback. */
interface AsyncCall {
  callbackId: string;
  /** Deliveries answered 200 `{ ok: true }` (more than one: applied twice). */
  accepted: number;
  alreadyProcessed: number;
  resends: number;
  /** Every answer the deliveries got, in order (status and a short body, or why none came). */
  answers: string[];
  /** The same bytes went out on every delivery (the body and signature are made once). */
  firstSentAt?: number;
  /** A final refusal (410, 404, 401, …) or the delivery's give-up. */
  refused?: string;
  done: boolean;
}
const asyncCalls = new Map<string, AsyncCall[]>();
const waits = { callback: [] as number[], human: [] as number[] };
const resolveCounts = { resends: 0, resentOk: 0, conflictsOwn: 0, refused: 0, statuses: new Map<number, number>() };
const refusedSamples: string[] = [];

/** Posts a signed callback the way a real caller does: the same bytes until it is answered 200, resent on 503, 409, 429, other 5xx or a dropped connection. */
async function deliverCallback(apis: ApiProcess[], call: AsyncCall, url: string, secret: string, result: unknown): Promise<void> {
  const body = JSON.stringify(result);
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  const urlPath = new URL(url).pathname;
  const started = Date.now();
  for (let attempt = 0; Date.now() - started < 10 * 60_000; attempt++) {
    const api = apis[attempt % apis.length]!;
    let answer: Answer;
    call.firstSentAt ??= Date.now();
    try {
      answer = await send(api.baseUrl, 'POST', urlPath, { 'x-callback-signature': signature, 'content-type': 'application/json' }, undefined, body);
      call.answers.push(`${new Date().toISOString().slice(11, 23)} api${attempt % apis.length} ${answer.status} ${JSON.stringify(answer.body).slice(0, 160)}`);
    } catch (err) {
      call.answers.push(`${new Date().toISOString().slice(11, 23)} api${attempt % apis.length} no answer: ${(err as Error).message}`);
      call.resends++;
      await sleep(1000);
      continue;
    }
    if (answer.status === 200) {
      if (answer.body?.status === 'already_processed') call.alreadyProcessed++;
      else call.accepted++;
      call.done = true;
      return;
    }
    if (answer.status === 503 || answer.status === 409 || answer.status === 429 || answer.status >= 500) {
      call.resends++;
      await sleep(Math.min(5, Number(answer.retryAfter ?? 1)) * 1000);
      continue;
    }
    call.refused = `${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`;
    call.done = true;
    return;
  }
  call.refused = 'gave up after 10 minutes';
  call.done = true;
}

/** Resolves a human task through the API with an Idempotency-Key: resent with it on 503, 429, 5xx or a dropped connection; a 409 whose winning resolution is the bench's own (which the key should make impossible) is counted apart. */
async function resolveTask(apis: ApiProcess[], lane: number, key: string, keyId: string, projectId: string, c: Conversation): Promise<void> {
  const started = Date.now();
  // One key for this resolution, sent again with every resend: a resend after a dropped answer gets the original 200.
  const idempotencyKey = `${c.conv}-resolve-${randomUUID().slice(0, 8)}`;
  for (let attempt = 0; Date.now() - started < 10 * 60_000; attempt++) {
    const api = apis[(lane + attempt) % apis.length]!;
    let answer: Answer;
    try {
      answer = await send(api.baseUrl, 'POST', `/api/projects/${projectId}/human-tasks/${c.taskId}/resolve`, { authorization: `Bearer ${key}`, 'idempotency-key': idempotencyKey }, { notes: `N-${c.conv}` });
      resolveCounts.statuses.set(answer.status, (resolveCounts.statuses.get(answer.status) ?? 0) + 1);
    } catch {
      resolveCounts.statuses.set(0, (resolveCounts.statuses.get(0) ?? 0) + 1);
      resolveCounts.resends++;
      await sleep(1000);
      continue;
    }
    if (answer.status === 200) {
      c.taskResolveOks++;
      if (attempt > 0) resolveCounts.resentOk++;
      c.taskResolved = true;
      return;
    }
    if (answer.status === 503 || answer.status === 429 || answer.status >= 500) {
      resolveCounts.resends++;
      await sleep(Math.min(5, Number(answer.retryAfter ?? 1)) * 1000);
      continue;
    }
    const details = ((answer.body?.error as Record<string, unknown> | undefined)?.details ?? {}) as { status?: string; resolution?: { respondedBy?: string } };
    if (answer.status === 409 && details.status === 'completed' && details.resolution?.respondedBy === keyId) {
      resolveCounts.conflictsOwn++;
      c.taskResolved = true;
      return;
    }
    resolveCounts.refused++;
    if (refusedSamples.length < 10) refusedSamples.push(`${c.conv} resolve ${c.taskId}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
    return;
  }
  resolveCounts.refused++;
}

/** Reads a session's transcript (assistant and user rows). */
async function readTranscript(apis: ApiProcess[], key: string, sessionId: string): Promise<{ status: number; messages: { role: string; content: string }[] }> {
  try {
    const res = await send(apis[0]!.baseUrl, 'GET', `/api/v1/sessions/${sessionId}/transcripts?limit=200`, { authorization: `Bearer ${key}` });
    return { status: res.status, messages: res.status === 200 ? ((res.body?.messages ?? []) as { role: string; content: string }[]) : [] };
  } catch {
    return { status: 0, messages: [] };
  }
}

/** Waits until the session's transcript shows the reply it resumed with; false after the wait. */
async function waitForResumed(apis: ApiProcess[], key: string, sessionId: string, resumed: string, waitMs = RESUME_WAIT_MS): Promise<boolean> {
  const started = Date.now();
  while (Date.now() - started < waitMs) {
    const { messages } = await readTranscript(apis, key, sessionId);
    if (messages.some((m) => m.role === 'assistant' && m.content.includes(resumed))) return true;
    await sleep(1000);
  }
  return false;
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
  process.on('SIGTERM', () => void stopAll().then(() => process.exit(143)));
  try {
    // The side-effect counter: one count per tool request, by conversation and turn.
    const toolCalls = new Map<string, number>();
    let apisForCallbacks: ApiProcess[] = [];
    const tool = http.createServer((req, res) => {
      const pay = /^\/pay\/([^/?]+)/.exec(req.url ?? '');
      if (pay) {
        // The async tool: acknowledge, then call back a moment later with the conversation's reference.
        const conv = pay[1]!;
        let text = '';
        req.on('data', (d: Buffer) => (text += d.toString('utf8')));
        req.on('end', () => {
          const body = JSON.parse(text || '{}') as { notify?: { url?: string; callbackSecret?: string } };
          res.writeHead(202);
          res.end();
          const url = body.notify?.url;
          const secret = body.notify?.callbackSecret;
          if (!url || !secret) return;
          const call: AsyncCall = { callbackId: url.split('/').pop() ?? '', accepted: 0, alreadyProcessed: 0, resends: 0, answers: [], done: false };
          asyncCalls.set(conv, [...(asyncCalls.get(conv) ?? []), call]);
          setTimeout(() => void deliverCallback(apisForCallbacks, call, url, secret, { status: 'completed', reference: `R-${conv}` }), CALLBACK_DELAY_MS);
        });
        return;
      }
      const match = /^\/tool\/([^/]+)\/(\d+)/.exec(req.url ?? '');
      const id = match ? `${match[1]}/${match[2]}` : 'unknown';
      toolCalls.set(id, (toolCalls.get(id) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: id }));
    });
    await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
    stops.push(() => new Promise((r) => tool.close(r)));
    const toolBase = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`;

    // The workers load one prebuilt bundle (with the manifest they check it against) instead of each bundling at start.
    const bundlePath = path.join(dir, 'workflow-bundle.js');
    await writeWorkflowBundle(bundlePath);

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
    const { key, apiKey } = await createApiKey(models, tenant._id, { name: 'bench', permissions: ['admin'] });
    const keyId = String(apiKey._id);
    await connection.close();

    const apis: ApiProcess[] = [];
    for (let i = 0; i < APIS; i++) apis.push(await startApi(config, `api${i}`));
    stops.push(() => Promise.all(apis.map((a) => a.proc.stop())));
    apisForCallbacks = apis;
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
      const c: Conversation = { conv, sessionId: null, sent: 0, answered: 0, taskResolveOks: 0 };
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
        if (step.kind && step.resumed && c.sessionId) {
          const waitStart = Date.now();
          if (step.kind === 'callback') {
            c.suspensionId = answer.body?.suspensionId as string | undefined;
            if (answer.status !== 202) return;
          } else {
            const action = answer.body?.action as { type?: string; humanTask?: { id?: string } } | undefined;
            c.taskId = action?.humanTask?.id;
            if (!c.taskId) return;
            await resolveTask(apis, lane, key, keyId, project._id, c);
            if (!c.taskResolved) return;
          }
          if (!(await waitForResumed(apis, key, c.sessionId, step.resumed))) {
            c.stuck = step.kind;
            return;
          }
          waits[step.kind].push(Date.now() - waitStart);
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
    /** When each worker came up. */
    const upSince: number[] = workers.map(() => Date.now());
    const restarts: Promise<void>[] = [];
    let kills = 0;
    const faultLog: string[] = [];
    let temporalRestarted = false;
    let storeRestarted = false;
    // A kill needs a running worker: while all are starting again, the round waits for the next.
    for (let i = 1; kills < KILLS || !storeRestarted; i++) {
      await sleep(KILL_EVERY_MS);
      if (kills < KILLS) {
        const candidates = workers.map((w, idx) => (w && !restarting.has(idx) && Date.now() - (upSince[idx] ?? 0) >= MIN_UPTIME_MS ? idx : -1)).filter((idx) => idx >= 0);
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
                  upSince[idx] = Date.now();
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
    const cb = { suspended: 0, accepted: 0, lost: 0, twice: 0, acceptedTwice: 0, refused: 0, callsMissing: 0, callsRepeated: 0, alreadyProcessed: 0, resends: 0, stuck: 0 };
    const ht = { created: 0, resolved: 0, lost: 0, twice: 0, resolvedTwice: 0, stuck: 0 };
    /** ms a transcript took to show every answered turn, when it was not there at once. */
    const lateTranscripts: number[] = [];
    const problems: string[] = [];
    /** Conversations whose accepted callback or resolved task shows no resumed reply: looked into below. */
    const unresumed: { c: Conversation; kind: 'callback' | 'human' }[] = [];
    /** Sessions whose callback or task resumed them more than once: their runs are printed and kept. */
    const doubled: { c: Conversation; kind: 'callback' | 'human' }[] = [];
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
        if (step.kind === 'callback' && answered && c.suspensionId) {
          const calls = asyncCalls.get(c.conv) ?? [];
          const accepted = calls.reduce((n, x) => n + x.accepted, 0);
          const resumed = assistants.filter((m) => m.includes(step.resumed!)).length;
          cb.suspended++;
          if (accepted > 0) cb.accepted++;
          if (calls.length === 0) cb.callsMissing++;
          cb.callsRepeated += Math.max(0, calls.length - 1);
          cb.alreadyProcessed += calls.reduce((n, x) => n + x.alreadyProcessed, 0);
          cb.resends += calls.reduce((n, x) => n + x.resends, 0);
          if (c.stuck === 'callback') cb.stuck++;
          if (accepted > 0 && resumed === 0) {
            cb.lost++;
            unresumed.push({ c, kind: 'callback' });
          }
          if (resumed > 1) {
            cb.twice++;
            doubled.push({ c, kind: 'callback' });
          }
          if (accepted > 1) cb.acceptedTwice++;
          for (const x of calls.filter((y) => y.refused)) {
            cb.refused++;
            if (problems.length < 10) problems.push(`${c.conv} (${c.sessionId}) callback ${x.callbackId} (session waited on ${c.suspensionId}) refused: ${x.refused}`);
          }
          if (((accepted > 0 && resumed === 0) || resumed > 1 || accepted > 1) && problems.length < 10) problems.push(`${c.conv} (${c.sessionId}) callback: ${calls.length} calls (${calls.map((x) => x.callbackId).join(', ')}; waited on ${c.suspensionId}), ${accepted} accepted, ${resumed} resumed replies`);
        }
        if (step.kind === 'human' && c.taskId) {
          const resumed = assistants.filter((m) => m.includes(step.resumed!)).length;
          ht.created++;
          if (c.taskResolved) ht.resolved++;
          if (c.stuck === 'human') ht.stuck++;
          if (c.taskResolved && resumed === 0) {
            ht.lost++;
            unresumed.push({ c, kind: 'human' });
          }
          if (resumed > 1) {
            ht.twice++;
            doubled.push({ c, kind: 'human' });
          }
          if (c.taskResolveOks > 1) ht.resolvedTwice++;
          if (((c.taskResolved && resumed === 0) || resumed > 1 || c.taskResolveOks > 1) && problems.length < 10) problems.push(`${c.conv} (${c.sessionId}) task ${c.taskId}: resolved ${String(c.taskResolved)} (${c.taskResolveOks} × 200), ${resumed} resumed replies`);
        }
        if (i >= 2 && i < TURNS && answered) {
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
    out(`conversations: ${conversations.length} (${LANES} at once, ${TURNS} turns each, then an async call and a human task), turns sent ${counts.turns}, answered ${latencies.length}`);
    out(`faults: ${kills} worker SIGKILLs every ${KILL_EVERY_MS} ms${MIN_UPTIME_MS > 0 ? ` (each after at least ${MIN_UPTIME_MS} ms up)` : ''} over ${(faultMs / 1000).toFixed(1)} s, 1 Temporal restart, 1 store restart`);
    out(`resends (same Idempotency-Key): ${counts.resends} (503: ${counts.resent503}, 429: ${counts.resent429}, dropped: ${counts.resentDropped}, client timeout: ${counts.resentTimeout}); 503 without Retry-After: ${counts.missing503RetryAfter}`);
    out(`not answered (neither a reply nor told to retry): ${counts.notAnswered}; wrong reply: ${counts.wrongReply}; conversations without a session: ${unchecked}`);
    out(`transcripts: lost turns ${lostTurns}, doubled turns ${doubledTurns}, lost replies ${lostReplies}, doubled replies ${doubledReplies}, user rows not sent ${unexpectedRows}`);
    out(`tool side effects: missing ${toolMissing}, repeated calls ${toolRepeats} (at-least-once activities: a call in flight when its worker is killed is made again)`);
    out(`async tool callbacks: sessions suspended ${cb.suspended}, callback accepted ${cb.accepted}, lost (accepted, never resumed) ${cb.lost}, applied twice ${cb.twice}, accepted twice ${cb.acceptedTwice}, refused ${cb.refused}; async calls missing ${cb.callsMissing}, repeated ${cb.callsRepeated}; deliveries resent ${cb.resends}, already_processed ${cb.alreadyProcessed}; lanes that gave up waiting ${cb.stuck}`);
    out(`human tasks: created ${ht.created}, resolved ${ht.resolved} (resolve resent ${resolveCounts.resends} with the same Idempotency-Key, ${resolveCounts.resentOk} of them answered 200 after a resend; answers by status ${[...resolveCounts.statuses.entries()].sort((a, b) => a[0] - b[0]).map(([st, n]) => `${st || 'none'}: ${n}`).join(', ')}; 409 with the bench's own resolution ${resolveCounts.conflictsOwn}, refused ${resolveCounts.refused}), lost (resolved, never resumed) ${ht.lost}, resumed twice ${ht.twice}, resolved twice ${ht.resolvedTwice}; lanes that gave up waiting ${ht.stuck}`);
    out(latencyLine('callback → resumed reply in transcript', waits.callback));
    out(latencyLine('escalation → resolved → resumed reply', waits.human));
    out(latencyLine('transcripts complete only after waiting', lateTranscripts));
    out(latencyLine('turn latency during faults', during));
    out(latencyLine('turn latency otherwise', calm));
    for (const p of [...problems, ...notAnsweredSamples, ...refusedSamples]) out(`  ${p}`);

    // Workflow tasks that failed (not timed out) in the sessions' histories, by cause, and why a
    // session that never resumed did not (its last failed workflow task, if any).
    const temporalClient = new Client({ connection: await Connection.connect({ address: temporal.address }), dataConverter: switchboardDataConverter(payloadCodecFromConfig(config)) });
    const causes = new Map<string, number>();
    let failedSessions = 0;
    for (const c of conversations.filter((x) => x.sessionId)) {
      try {
        const history = await temporalClient.workflow.getHandle(`session/${c.sessionId}`).fetchHistory();
        const events = history.events ?? [];
        const failures = events.filter((e) => e.workflowTaskFailedEventAttributes).map((e) => e.workflowTaskFailedEventAttributes!);
        if (failures.length > 0) failedSessions++;
        for (const f of failures) {
          const cause = `${String(f.cause ?? '')}: ${(f.failure?.message ?? '').slice(0, 160)}`;
          causes.set(cause, (causes.get(cause) ?? 0) + 1);
        }
        const last = failures.at(-1)?.failure;
        const signals = events.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === (c.stuck === 'human' ? 'humanTask' : 'callback')).length;
        // Still suspended, or resumed with its reply held in the workflow (not yet in the transcript)?
        const state = c.stuck ? await temporalClient.workflow.getHandle(`session/${c.sessionId}`).query<{ status?: string }>('state').then((v) => v.status ?? '?', (err: unknown) => `not queried: ${String(err).slice(0, 80)}`) : '';
        if (c.stuck) out(`  ${c.conv} session/${c.sessionId} (${c.stuck}): status ${state}, ${events.length} events, ${signals} ${c.stuck === 'human' ? 'humanTask' : 'callback'} signals, last workflow task failure: ${last ? `${last.message ?? ''} | ${(last.stackTrace ?? '').split('\n').slice(0, 6).join(' / ')}` : 'none'}`);
      } catch (err) {
        if (c.stuck) out(`  ${c.conv} session/${c.sessionId}: history not read (${String(err).slice(0, 200)})`);
      }
    }
    // Each session that never showed its resumed reply: is it late or lost? Its transcript again
    // after a further wait, its suspension record, the API's answers to each delivery, and every
    // run of its workflow (continue-as-new) with the resume signals it holds.
    // Every run of a session's workflow (continue-as-new) with the resume signals, updates,
    // activities and markers it holds; with --log, each run's whole history is kept beside the log.
    const describeRuns = async (c: Conversation): Promise<void> => {
      try {
        const runs: string[] = [];
        for await (const wfx of temporalClient.workflow.list({ query: `WorkflowId = "session/${c.sessionId}"` })) runs.push(wfx.runId);
        const state = await temporalClient.workflow.getHandle(`session/${c.sessionId}`).query<Record<string, unknown>>('state').then((v) => JSON.stringify({ status: v.status, step: v.step, pending: v.pending, turnCount: v.turnCount }), (err: unknown) => `not queried: ${String(err).slice(0, 80)}`);
        out(`    workflow: ${runs.length} runs; state ${state}`);
        for (const runId of runs.reverse()) {
          const history = await temporalClient.workflow.getHandle(`session/${c.sessionId}`, runId).fetchHistory();
          if (values.log) writeFileSync(`${values.log}.${c.sessionId}.${runId}.json`, historyToJSON(history));
          const lines: string[] = [];
          for (const e of history.events ?? []) {
            const at = e.eventTime?.seconds ? new Date(Number(e.eventTime.seconds) * 1000 + Math.floor((e.eventTime.nanos ?? 0) / 1e6)).toISOString().slice(11, 23) : '?';
            const sig = e.workflowExecutionSignaledEventAttributes;
            if (sig && (sig.signalName === 'callback' || sig.signalName === 'humanTask')) {
              const [arg] = await decodeArrayFromPayloads(temporalClient.options.loadedDataConverter, sig.input?.payloads);
              const a = arg as { callbackId?: string; taskId?: string; via?: string; outcome?: string };
              lines.push(`#${String(e.eventId)} ${at} signal ${sig.signalName} ${a.callbackId ?? a.taskId ?? ''} ${a.via ?? a.outcome ?? ''}`);
            }
            if (e.workflowExecutionContinuedAsNewEventAttributes) lines.push(`#${String(e.eventId)} ${at} continued as new`);
            if (e.workflowTaskFailedEventAttributes) lines.push(`#${String(e.eventId)} ${at} task failed ${String(e.workflowTaskFailedEventAttributes.cause)}`);
            if (e.workflowTaskTimedOutEventAttributes) lines.push(`#${String(e.eventId)} ${at} task timed out`);
            const upd = e.workflowExecutionUpdateAcceptedEventAttributes;
            if (upd) lines.push(`#${String(e.eventId)} ${at} update ${upd.acceptedRequest?.input?.name ?? ''} ${upd.acceptedRequest?.meta?.updateId ?? ''} accepted`);
            const act = e.activityTaskScheduledEventAttributes;
            if (act) lines.push(`#${String(e.eventId)} ${at} activity ${act.activityType?.name ?? ''}`);
            const marker = e.markerRecordedEventAttributes;
            if (marker) lines.push(`#${String(e.eventId)} ${at} marker ${marker.markerName ?? ''}`);
          }
          out(`    run ${runId}: ${history.events?.length ?? 0} events: ${lines.join('; ')}`);
        }
      } catch (err) {
        out(`    history not read: ${String(err).slice(0, 200)}`);
      }
    };
    for (const { c, kind } of doubled) {
      out(`  ${c.conv} session/${c.sessionId} ${kind}: resumed more than once`);
      await describeRuns(c);
    }
    if (unresumed.length > 0) {
      const diagConnection = await connectMongo(config.MONGODB_URI);
      const diagModels = createModels(diagConnection);
      for (const { c, kind } of unresumed) {
        const resumedText = script(c.conv).find((s) => s.kind === kind)!.resumed!;
        const lateAt = Date.now();
        const late = await waitForResumed(apis, key, c.sessionId!, resumedText, 120_000);
        out(`  ${c.conv} session/${c.sessionId} ${kind}: ${late ? `resumed reply in the transcript ${since(lateAt)} after the check (late, not lost)` : 'still no resumed reply 120 s after the check'}`);
        if (kind === 'callback') {
          for (const call of asyncCalls.get(c.conv) ?? []) {
            const doc = await diagModels.Suspension.findOne({ _id: call.callbackId }).lean();
            out(`    suspension ${call.callbackId}: ${doc ? JSON.stringify({ status: doc.status, createdAt: doc.createdAt, claimedAt: doc.claimedAt, deliveredAt: doc.deliveredAt, resumedVia: doc.resumedVia, expiresAt: doc.expiresAt }) : 'no record'}`);
            out(`    deliveries (same bytes each time, first at ${call.firstSentAt ? new Date(call.firstSentAt).toISOString().slice(11, 23) : '-'}): ${call.answers.join(' | ')}`);
          }
        }
        await describeRuns(c);
      }
      await diagConnection.close();
    }
    await temporalClient.connection.close();
    out(`failed workflow tasks in session histories (current runs): ${[...causes.values()].reduce((a, b) => a + b, 0)} in ${failedSessions} sessions`);
    for (const [cause, n] of [...causes.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8)) out(`  ${n} × ${cause}`);
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
