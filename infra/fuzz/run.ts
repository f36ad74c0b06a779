// `npm run fuzz`: schemathesis against a real ephemeral stack (Temporal dev server in memory,
// FerretDB on a PostgreSQL cluster in a temp dir, a LiveKit server on loopback, the real API and
// worker as child processes),
// authenticated with a seeded admin key. Prints one summary line and exits non-zero on any failure (docs/testing.md).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { connectMongo } from '../../db/connection';
import { createModels, syncIndexes } from '../../db/models';
import { newSecretToken } from '../../lib/ids';
import { createApiKey, createProject, createTenant } from '../../core/tenancy/accounts';
import { createScope } from '../../core/platform-keys/scopes';
import { issueSandboxToken } from '../../core/memory-stores/sandbox-token';
import { type Config } from '../../lib/config';
import { freePort, freePorts, manage, ROOT, startFerretDb, startLiveKitServer, startTemporalDevServer, waitForHttpOk, type ManagedProcess } from '../processes';
import { seedDevProject } from '../seed-project';
import { parseFuzzOptions, relabelRuleLine, schemathesisArgs, summarize, type FuzzOptions } from './options';

const SCHEMATHESIS = path.join(ROOT, '.tools', 'venv', 'bin', 'schemathesis');
const CONFIG_FILE = path.join(ROOT, 'infra', 'fuzz', 'schemathesis.toml');
const log = (msg: string) => process.stderr.write(`[fuzz] ${msg}\n`);

/**
 * The stack's environment. Rate limits and capacity caps are raised here, for this stack only:
 * the fuzzer sends thousands of requests a minute with one key, and a 429 on every call after
 * the first hundred would hide the logic behind it.
 */
function stackEnv(extra: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? os.homedir(),
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.FUZZ_LOG_LEVEL ?? 'warn',
    HOST: '127.0.0.1',
    JWT_SECRET: newSecretToken(48),
    PLATFORM_ADMIN_TOKEN: newSecretToken(32),
    ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    SANDBOX_JWT_SECRET: newSecretToken(32),
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
    RATE_LIMIT_REQUESTS: '1000000',
    SESSION_MESSAGES_PER_MINUTE: '100000',
    MAX_CONCURRENT_SESSIONS: '100000',
    MAX_TURNS_IN_FLIGHT: '10000',
    // No voice agent runs here: a room nobody attends closes after this long (no_voice_agent).
    VOICE_MAX_ROOMS: '1000',
    VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: '30',
    SHUTDOWN_GRACE_MS: '2000',
    ...extra,
  };
}

interface Seeded {
  tenantId: string;
  projectId: string;
  apiKey: string;
  agentNames: string[];
  /** A key the fuzzer may revoke (it authenticates with `apiKey`, which is never offered). */
  spareKeyId: string;
  /** A project the fuzzer may delete: `deleteProject` is pointed at it, never at `projectId`. */
  spareProjectId: string;
  /** A scope of the project (docs/public-api.md), so the scope routes reach their logic. */
  scopeId: string;
}

interface SeededSession {
  sessionId: string;
  spanIds: string[];
}

/**
 * The committed settings plus what only this run knows: the seeded project and agents, offered
 * to the generator as likely values of `projectId` and agent names so that the examples, coverage
 * and fuzzing phases reach the logic behind the 404s (the stateful phase gets there by links).
 */
function writeRunConfig(file: string, seeded: Seeded, session: SeededSession): void {
  const list = (values: string[]) => `[${values.map((v) => JSON.stringify(v)).join(', ')}]`;
  const generated = [
    '',
    '# Generated for this run by infra/fuzz/run.ts.',
    '[dictionaries.projects]',
    `values = ${list([seeded.projectId])}`,
    '[dictionaries.agents]',
    `values = ${list(seeded.agentNames)}`,
    '[dictionaries.keys]',
    `values = ${list([seeded.spareKeyId])}`,
    '[dictionaries.sessions]',
    `values = ${list([session.sessionId])}`,
    '[dictionaries.scopes]',
    `values = ${list([seeded.scopeId])}`,
    '[dictionaries.spans]',
    `values = ${list(session.spanIds)}`,
    '[parameters]',
    '"path.projectId" = { dictionary = "projects", probability = 0.8 }',
    '"query.projectId" = { dictionary = "projects", probability = 0.8 }',
    '"body.projectId" = { dictionary = "projects", probability = 0.8 }',
    '"path.agentName" = { dictionary = "agents", probability = 0.5 }',
    '"body.agentId" = { dictionary = "agents", probability = 0.8 }',
    '"path.keyId" = { dictionary = "keys", probability = 0.5 }',
    '"path.id" = { dictionary = "sessions", probability = 0.7 }',
    '"path.spanId" = { dictionary = "spans", probability = 0.7 }',
    // The public API names a project `appId` (docs/public-api.md), and keys name their scope.
    '"path.appId" = { dictionary = "projects", probability = 0.8 }',
    '"body.app_id" = { dictionary = "projects", probability = 0.8 }',
    '"path.scopeId" = { dictionary = "scopes", probability = 0.5 }',
    // Deleting the project every other operation reaches would turn the rest of the run into 404s.
    '[[operations]]',
    'include-operation-id = ["deleteProject"]',
    `parameters = { "path.projectId" = ${JSON.stringify(seeded.spareProjectId)} }`,
    '',
  ];
  writeFileSync(file, readFileSync(CONFIG_FILE, 'utf8') + generated.join('\n'));
}

async function seed(mongoUri: string): Promise<Seeded> {
  const models = createModels(await connectMongo(mongoUri));
  try {
    await syncIndexes(models);
    const tenant = await createTenant(models, { name: 'Fuzz', slug: 'fuzz' });
    const project = await createProject(models, tenant._id, { name: 'Fuzz', slug: 'fuzz' });
    const { key } = await createApiKey(models, tenant._id, { name: 'fuzz admin', permissions: ['admin'] });
    const spare = await createApiKey(models, tenant._id, { name: 'fuzz spare', permissions: ['agent:read'] });
    const spareProject = await createProject(models, tenant._id, { name: 'Fuzz spare', slug: 'fuzz-spare' });
    // The sample agents give sessions, chat turns and versions real agents to run.
    const agentNames = await seedDevProject(models, { tenantId: tenant._id, projectId: project._id });
    // Named as the documented example of key creation, so that example reaches a real scope.
    const scope = await createScope(models, project, { name: 'support-bots', permissions: { SESSIONS_LIST: 'YES' } });
    return { tenantId: tenant._id, projectId: project._id, apiKey: key, agentNames, spareKeyId: spare.apiKey._id, spareProjectId: spareProject._id, scopeId: scope._id };
  } finally {
    await models.connection.close();
  }
}

/** One conversation through the real API and worker, so session routes have a session and spans to read. */
async function seedSession(baseUrl: string, seeded: Seeded): Promise<SeededSession> {
  const headers = { authorization: `Bearer ${seeded.apiKey}`, 'content-type': 'application/json' };
  const turn = await fetch(`${baseUrl}/api/v1/chat/agent`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ projectId: seeded.projectId, message: 'I have a question about my invoice' }),
  });
  const answer = (await turn.json()) as { sessionId?: string };
  if (!turn.ok || !answer.sessionId) throw new Error(`seeding a session failed: ${turn.status} ${JSON.stringify(answer)}`);
  const traces = await fetch(`${baseUrl}/api/projects/${seeded.projectId}/sessions/${answer.sessionId}/traces?limit=200`, { headers });
  const events = ((await traces.json()) as { traceEvents?: { spanId: string; parentSpanId: string | null }[] }).traceEvents ?? [];
  const parents = [...new Set(events.map((e) => e.parentSpanId).filter((id): id is string => id !== null))];
  return { sessionId: answer.sessionId, spanIds: parents.length > 0 ? parents : events.map((e) => e.spanId).slice(0, 5) };
}

/** A sandbox token for the seeded session, so the memory endpoint reaches its logic; valid for longer than any run. */
function sandboxToken(env: Record<string, string>, seeded: Seeded, session: SeededSession): Promise<string> {
  const config = { NODE_ENV: env.NODE_ENV, SANDBOX_JWT_SECRET: env.SANDBOX_JWT_SECRET } as Config;
  return issueSandboxToken({ config }, { tenantId: seeded.tenantId, projectId: seeded.projectId, sessionId: session.sessionId, toolCallId: 'fuzz', tool: 'fuzz' }, 6 * 3600_000);
}

function runSchemathesis(options: FuzzOptions, url: string, configFile: string, env: Record<string, string>): Promise<number | null> {
  const args = schemathesisArgs(options, { configFile, schemaUrl: `${url}/openapi.json` });
  log(`schemathesis ${args.join(' ')}`);
  const child = spawn(SCHEMATHESIS, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const relayed = new Promise<void>((resolve) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => process.stdout.write(relabelRuleLine(line) + '\n'));
    lines.once('close', resolve);
  });
  const proc = manage('schemathesis', child);
  const timer = setTimeout(() => {
    log(`schemathesis still running after ${options.timeoutSeconds} s (FUZZ_TIMEOUT_SECONDS): stopping it`);
    void proc.stop(5000);
  }, options.timeoutSeconds * 1000);
  return proc.exited.then(async (code) => {
    await relayed;
    return code;
  }).finally(() => clearTimeout(timer));
}

async function main(): Promise<number> {
  const options = parseFuzzOptions(process.argv.slice(2), process.env);
  if (!existsSync(SCHEMATHESIS)) throw new Error(`${SCHEMATHESIS} is missing; run \`node infra/bootstrap.js --fuzz\` (npm run fuzz does it)`);
  const started: ManagedProcess[] = [];
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-fuzz-'));
  const stopAll = async () => {
    for (const proc of [...started].reverse()) await proc.stop();
  };
  process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));
  process.on('SIGTERM', () => void stopAll().then(() => process.exit(143)));
  try {
    const began = Date.now();
    // Voice sessions make real rooms: the voice routes reach their logic rather than 503.
    const liveKitSecret = newSecretToken(32);
    const [temporalPort, liveKitPort, rtcTcpPort, rtcUdpPort] = await freePorts(4);
    const [temporal, ferret, liveKit] = await Promise.all([
      startTemporalDevServer({ port: temporalPort!, uiPort: null }),
      startFerretDb({ dataDir: path.join(tmpDir, 'ferretdb'), port: 0 }),
      startLiveKitServer({ dir: path.join(tmpDir, 'livekit'), port: liveKitPort!, rtcTcpPort: rtcTcpPort!, rtcUdpPort: rtcUdpPort!, apiKey: 'fuzzkey', apiSecret: liveKitSecret }),
    ]);
    started.push(temporal.process, ferret.process, liveKit.process);
    const mongoUri = `${ferret.uri.replace(/\/$/, '')}/switchboard_fuzz`;
    const seeded = await seed(mongoUri);
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const env = stackEnv({
      PORT: String(port),
      MONGODB_URI: mongoUri,
      TEMPORAL_ADDRESS: temporal.address,
      PUBLIC_BASE_URL: baseUrl,
      LIVEKIT_URL: liveKit.url,
      LIVEKIT_API_KEY: 'fuzzkey',
      LIVEKIT_API_SECRET: liveKitSecret,
    });
    rmSync(options.reportDir, { recursive: true, force: true });
    mkdirSync(options.reportDir, { recursive: true });
    const logFile = path.join(options.reportDir, 'stack.log');
    const configFile = path.join(options.reportDir, 'schemathesis.toml');

    for (const [name, entry] of [
      ['worker', 'workers/main.ts'],
      ['api', 'api/server.ts'],
    ] as const) {
      const out = openSync(logFile, 'a');
      started.push(manage(name, spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env, stdio: ['ignore', out, out] })));
    }
    const alive = () => started.every((p) => p.child.exitCode === null);
    await waitForHttpOk(`${baseUrl}/readyz`, 120_000, alive);
    const session = await seedSession(baseUrl, seeded);
    writeRunConfig(configFile, seeded, session);
    log(`stack ready in ${Math.round((Date.now() - began) / 1000)} s at ${baseUrl} (logs: ${path.relative(ROOT, logFile)})`);

    const fuzzStarted = Date.now();
    const code = await runSchemathesis(options, baseUrl, configFile, {
      FUZZ_API_KEY: seeded.apiKey,
      FUZZ_PLATFORM_ADMIN_TOKEN: env.PLATFORM_ADMIN_TOKEN!,
      FUZZ_SANDBOX_TOKEN: await sandboxToken(env, seeded, session),
    });
    const seconds = Math.round((Date.now() - fuzzStarted) / 1000);
    const junit = path.join(options.reportDir, 'junit.xml');
    const summary = summarize(existsSync(junit) ? readFileSync(junit, 'utf8') : null, code, options, seconds);
    log(summary.detail);
    process.stdout.write(summary.line + '\n');
    return summary.ok ? 0 : 1;
  } finally {
    await stopAll();
    rmSync(tmpDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[fuzz] ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
