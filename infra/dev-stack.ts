// `npm start`: runs the whole stack locally. Starts the Temporal dev server (SQLite under
// .data/, Web UI on 8233) and the store, FerretDB on an embedded PostgreSQL (infra/dev-store.ts,
// data under .data/postgres/), unless TEMPORAL_ADDRESS or MONGODB_URI point elsewhere, serves
// the sample back-end the seeded agents' tools call (on loopback, the one private destination
// the dev tools may reach) and the Twilio fake (infra/twilio-fake/: the platform's Twilio calls
// go to it; TWILIO_FAKE=0 turns it off) and the LiveKit server of real-time voice on loopback
// (unless LIVEKIT_URL points elsewhere), seeds the dev tenant, then runs the API and the worker.
// Ctrl-C or SIGTERM stops everything in reverse order.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { loadConfig } from '../lib/config';
import { connectMongo } from '../db/connection';
import { createModels, syncIndexes } from '../db/models';
import { loadOrCreateDevSecrets } from './dev-secrets';
import { twilioFakeWanted } from './dev-stack-env';
import { startDevStore, STORE_DIR } from './dev-store';
import {
  ensureSearchAttributes,
  isPortFree,
  manage,
  ROOT,
  startLiveKitServer,
  startTemporalDevServer,
  waitForHttpOk,
  type ManagedProcess,
} from './processes';
import { SAMPLE_RECEIVER_PATH, sampleBackendHttpAsyncEnv, sampleBackendToolEnv, startSampleBackend, type SampleBackend } from './sample-backend';
import { ensureDevSubscription } from './seed-subscription';
import { secretMasterKeyRing } from '../lib/secret-envelope';
import { ensureDevTenant } from './seed';
import { startTwilioFake, type TwilioFake } from './twilio-fake';
import { seedDevProject, toolFilesOffSampleBackend } from './seed-project';
import { devStackOrigins, ensureDevPublicKey } from './seed-widget';

// SWITCHBOARD_DATA_DIR moves the data (the stack tests run a second stack beside yours).
const DATA_DIR = path.resolve(process.env.SWITCHBOARD_DATA_DIR ?? path.join(ROOT, '.data'));

/** Where a data file is, as the log shows it: relative to the repository inside it, else absolute. */
function shownPath(p: string): string {
  const rel = path.relative(ROOT, p);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : p;
}
const log = (msg: string) => process.stdout.write(`[switchboard] ${msg}\n`);

function envNumber(name: string, fallback: number): number {
  const value = process.env[name];
  const n = value ? Number(value) : fallback;
  if (!Number.isInteger(n) || n <= 0 || n > 65535) throw new Error(`${name} must be a port number, got "${value}"`);
  return n;
}

async function requireFreePort(port: number, what: string, variable: string): Promise<void> {
  if (!(await isPortFree(port))) {
    throw new Error(`port ${port} (${what}) is in use: stop whatever holds it, or set ${variable}`);
  }
}

/** The widget script's size as served, and gzipped (the API builds it on this first request). */
async function scriptSize(url: string): Promise<string | null> {
  try {
    const res = await fetch(url);
    if (!res.ok) return null;
    const code = Buffer.from(await res.arrayBuffer());
    return `${(code.length / 1024).toFixed(1)} KB, ${(gzipSync(code).length / 1024).toFixed(1)} KB gzipped`;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  const started: ManagedProcess[] = [];
  let backend: SampleBackend | null = null;
  let twilioFake: TwilioFake | null = null;
  let shuttingDown = false;
  const shutdown = async (code: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log('stopping…');
    for (const proc of [...started].reverse()) await proc.stop();
    await backend?.close();
    await twilioFake?.close();
    log('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  process.on('SIGHUP', () => void shutdown(0));
  // `npm start` runs us under `sh -c`; when npm is killed, sh dies without passing the signal
  // on. Notice being orphaned and stop the stack instead of leaving it running.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void shutdown(0);
  }, 500).unref();

  try {
    // Dev defaults: generated secrets, and every tier on the offline `local` model so agents
    // answer with no API key (and moderation likewise). Anything set in the environment wins.
    const env: Record<string, string | undefined> = {
      LLM_TIER_FAST: 'local',
      LLM_TIER_BALANCED: 'local',
      LLM_TIER_POWERFUL: 'local',
      // Provider guardrails: OpenAI moderation when a key is configured, else the offline rules.
      MODERATION_PROVIDER: 'auto',
      ...loadOrCreateDevSecrets(DATA_DIR),
      ...process.env,
    };
    const apiPort = envNumber('PORT', 3000);
    env.PORT = String(apiPort);

    if (!process.env.TEMPORAL_ADDRESS) {
      const port = envNumber('TEMPORAL_PORT', 7233);
      const uiPort = envNumber('TEMPORAL_UI_PORT', 8233);
      await requireFreePort(port, 'Temporal', 'TEMPORAL_PORT');
      await requireFreePort(uiPort, 'Temporal Web UI', 'TEMPORAL_UI_PORT');
      log(`starting Temporal dev server on 127.0.0.1:${port} (data in ${shownPath(path.join(DATA_DIR, 'temporal.sqlite'))})…`);
      // The Web UI decodes payloads through the API's codec endpoint (docs/operations.md), which
      // in turn accepts calls from the UI's origin only, here with no sign-in (CODEC_TRUST_LOCAL_UI).
      const temporal = await startTemporalDevServer({
        port,
        uiPort,
        dbFile: path.join(DATA_DIR, 'temporal.sqlite'),
        logLevel: 'error',
        uiCodecEndpoint: `http://localhost:${apiPort}/codec`,
      });
      started.push(temporal.process);
      env.TEMPORAL_ADDRESS = temporal.address;
      env.TEMPORAL_UI_URL = `http://localhost:${uiPort}`;
      if (!env.TEMPORAL_UI_ORIGIN) {
        env.TEMPORAL_UI_ORIGIN = env.TEMPORAL_UI_URL;
        // One developer on loopback: the UI decodes with no sign-in (docs/operations.md). Never in production.
        if (!env.CODEC_TRUST_LOCAL_UI && env.NODE_ENV !== 'production') env.CODEC_TRUST_LOCAL_UI = 'true';
      }
    }
    if (!process.env.MONGODB_URI) {
      const port = envNumber('FERRETDB_PORT', 27017);
      const postgresPort = envNumber('POSTGRES_PORT', 7432);
      await requireFreePort(port, 'FerretDB', 'FERRETDB_PORT');
      await requireFreePort(postgresPort, 'PostgreSQL', 'POSTGRES_PORT');
      log(`starting FerretDB on 127.0.0.1:${port}, on PostgreSQL on 127.0.0.1:${postgresPort} (data in ${shownPath(path.join(DATA_DIR, STORE_DIR))}/)…`);
      const ferret = await startDevStore({ dataDir: DATA_DIR, port, postgresPort, log });
      started.push(ferret.process);
      env.MONGODB_URI = `${ferret.uri.replace(/\/$/, '')}/switchboard`;
    }
    await requireFreePort(apiPort, 'API', 'PORT');
    // The seeded tools are written with this address, so it stays put across starts.
    const backendPort = envNumber('SAMPLE_BACKEND_PORT', 3010);
    await requireFreePort(backendPort, 'sample back-end', 'SAMPLE_BACKEND_PORT');
    backend = await startSampleBackend(backendPort);
    log(`serving the sample back-end on ${backend.url}`);
    // The sample back-end is let through the tools' private-address refusal, added to whatever
    // the environment already lists; private networks as a whole stay refused.
    Object.assign(env, sampleBackendToolEnv(backend, env), sampleBackendHttpAsyncEnv(backend, env));
    log(`tools may reach the private destinations ${env.TOOL_ALLOWED_PRIVATE_DESTINATIONS} (TOOL_ALLOWED_PRIVATE_DESTINATIONS)`);
    if (twilioFakeWanted(process.env)) {
      const port = envNumber('TWILIO_FAKE_PORT', 3011);
      await requireFreePort(port, 'Twilio fake', 'TWILIO_FAKE_PORT');
      twilioFake = await startTwilioFake({ port });
      env.TWILIO_API_BASE_URL = twilioFake.url;
      log(`serving the Twilio fake on ${twilioFake.url}: calls through any channel connection go to it (TWILIO_FAKE=0 for real Twilio)`);
    } else {
      log(`no Twilio fake: Twilio calls go to ${env.TWILIO_API_BASE_URL ?? 'https://api.twilio.com'}`);
    }
    if (!process.env.LIVEKIT_URL) {
      const port = envNumber('LIVEKIT_PORT', 7880);
      const rtcTcpPort = envNumber('LIVEKIT_RTC_TCP_PORT', 7881);
      const rtcUdpPort = envNumber('LIVEKIT_RTC_UDP_PORT', 7882);
      await requireFreePort(port, 'LiveKit server', 'LIVEKIT_PORT');
      await requireFreePort(rtcTcpPort, 'LiveKit WebRTC over TCP', 'LIVEKIT_RTC_TCP_PORT');
      // The dev key's secret is generated with the other dev secrets; an environment that names a key brings its secret.
      const apiKey = env.LIVEKIT_API_KEY ?? 'devkey';
      const apiSecret = env.LIVEKIT_API_SECRET!;
      log(`starting the LiveKit server on 127.0.0.1:${port} (WebRTC on TCP ${rtcTcpPort} and UDP ${rtcUdpPort})…`);
      const liveKit = await startLiveKitServer({ dir: DATA_DIR, port, rtcTcpPort, rtcUdpPort, apiKey, apiSecret });
      started.push(liveKit.process);
      Object.assign(env, { LIVEKIT_URL: liveKit.url, LIVEKIT_API_KEY: apiKey, LIVEKIT_API_SECRET: apiSecret });
    } else {
      log(`no LiveKit server: voice rooms are made on ${process.env.LIVEKIT_URL}`);
    }
    // The phone bridge in the voice agent: a `realtime` channel connection's calls (through the
    // Twilio fake, or Twilio reaching this machine) stream their audio to it.
    const bridgePort = envNumber('VOICE_BRIDGE_PORT', 3012);
    await requireFreePort(bridgePort, 'phone bridge', 'VOICE_BRIDGE_PORT');
    Object.assign(env, {
      VOICE_BRIDGE_PORT: String(bridgePort),
      VOICE_BRIDGE_HOST: env.VOICE_BRIDGE_HOST ?? '127.0.0.1',
      VOICE_BRIDGE_PUBLIC_URL: env.VOICE_BRIDGE_PUBLIC_URL ?? `ws://127.0.0.1:${bridgePort}/media-stream`,
    });
    const config = loadConfig(env);

    const added = await ensureSearchAttributes(config.TEMPORAL_ADDRESS, config.TEMPORAL_NAMESPACE);
    if (added.length > 0) log(`registered search attributes: ${added.join(', ')}`);

    const models = createModels(await connectMongo(config.MONGODB_URI));
    await syncIndexes(models);
    const baseUrl = `http://localhost:${apiPort}`;
    const credentialsFile = path.join(DATA_DIR, 'dev-credentials.json');
    const { credentials, created } = await ensureDevTenant(models, credentialsFile, baseUrl);
    const seeded = await seedDevProject(models, credentials, { sampleBackendUrl: backend.url });
    const receiverUrl = `${backend.url}${SAMPLE_RECEIVER_PATH}`;
    const subscriptionId = await ensureDevSubscription(models, secretMasterKeyRing(config), credentials, receiverUrl);
    const stale = await toolFilesOffSampleBackend(models, credentials, backend.url);
    if (stale.length > 0) {
      log(
        `the dev project's tool files ${stale.join(', ')} do not call the sample back-end at ${backend.url} (seeded before it, ` +
          'or for another SAMPLE_BACKEND_PORT): their calls fail. Delete the data directory to seed again (docs/agents.md)',
      );
    }
    // The widget demo page (GET /demo) embeds the dev project's public key; a production API serves no demo.
    const demo = env.NODE_ENV === 'production' ? null : await ensureDevPublicKey(models, credentials, devStackOrigins(apiPort), credentialsFile);
    if (demo) Object.assign(env, { WIDGET_DEMO_PUBLIC_KEY: demo.key, WIDGET_DEMO_PROJECT_ID: credentials.projectId });
    await models.connection.close();

    for (const [name, entry] of [
      ['worker', 'workers/main.ts'],
      ['voice-agent', 'workers/voice-agent.ts'],
      ['api', 'api/server.ts'],
    ] as const) {
      const proc = manage(name, spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env, stdio: 'inherit' }));
      started.push(proc);
      void proc.exited.then((code) => {
        if (!shuttingDown) {
          log(`${name} exited unexpectedly (${code}); stopping the stack`);
          void shutdown(1);
        }
      });
    }
    log('waiting for the API to be ready…');
    await waitForHttpOk(`${baseUrl}/readyz`, 90_000);
    const widgetSize = demo ? await scriptSize(`${baseUrl}/sdk/widget.js`) : null;

    const lines = [
      '',
      'Switchboard is running.',
      `  API            ${baseUrl}`,
      `  API reference  ${baseUrl}/docs   (OpenAPI: ${baseUrl}/openapi.json)`,
      env.TEMPORAL_UI_URL ? `  Temporal UI    ${env.TEMPORAL_UI_URL}` : `  Temporal       ${config.TEMPORAL_ADDRESS}`,
      ...(env.TEMPORAL_UI_URL
        ? [
            config.CODEC_TRUST_LOCAL_UI
              ? `  The UI shows payloads decoded through ${baseUrl}/codec (it trusts the UI on this machine: CODEC_TRUST_LOCAL_UI)`
              : `  Decoded payloads in the UI: sign in at ${baseUrl}/codec/login with PLATFORM_ADMIN_TOKEN (docs/operations.md)`,
          ]
        : []),
      ...(demo
        ? [`  Widget demo    ${baseUrl}/demo   (the support desk in the chat widget; ${baseUrl}/sdk/widget.js${widgetSize ? `, ${widgetSize}` : ''}: docs/widget.md)`]
        : []),
      `  MongoDB        ${config.MONGODB_URI}`,
      `  LiveKit        ${config.LIVEKIT_URL ?? 'off'}   (real-time voice rooms: docs/voice.md)`,
      `  Phone bridge   ${config.VOICE_BRIDGE_PUBLIC_URL}   (Media Streams of realtime channel connections' calls: docs/voice.md, "Phone callers")`,
      `  Sample tools   ${backend.url}   (invoices, flights, hotels, KYC, accounts for the seeded agents)`,
      `  Sample webhook ${receiverUrl}   (the dev project's HTTP-async subscription delivers here; GET shows what came)`,
      twilioFake
        ? `  Twilio fake    ${twilioFake.url}   (simulated calls; ${twilioFake.url}/__fake/calls lists them: docs/telephony.md)`
        : `  Twilio         ${env.TWILIO_API_BASE_URL ?? 'https://api.twilio.com'}   (the Twilio fake is off: TWILIO_FAKE, docs/configuration.md)`,
      '',
      `Dev credentials (${created ? 'created' : 'reused'}): .data/dev-credentials.json`,
      `  tenantId   ${credentials.tenantId}`,
      `  projectId  ${credentials.projectId}`,
      `  apiKey     ${credentials.apiKey}`,
      ...(demo ? [`  publicKey  ${demo.key}   (widget key for ${devStackOrigins(apiPort).join(' and ')})`] : []),
      ...(seeded.length > 0 ? [`  agents     ${seeded.join(', ')}`] : []),
      '',
      'Try:',
      `  curl -H "Authorization: Bearer ${credentials.apiKey}" ${baseUrl}/api/projects/${credentials.projectId}`,
      ...(subscriptionId
        ? [
            '  An HTTP-async conversation (docs/http-async.md); the replies arrive at the sample receiver:',
            `  curl -H "X-API-Key: ${credentials.apiKey}" -H "Content-Type: application/json" \\`,
            `    -d '{"project_id":"${credentials.projectId}","subscription_id":"${subscriptionId}","message":"Hi, I need help with an invoice","session_key":"me"}' \\`,
            `    ${baseUrl}/api/v1/channels/http-async/message`,
            `  curl ${receiverUrl}`,
          ]
        : []),
      '',
      'Press Ctrl-C to stop.',
      '',
    ];
    process.stdout.write(lines.join('\n'));
  } catch (err) {
    process.stderr.write(`[switchboard] failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    await shutdown(1);
  }
}

void main();
