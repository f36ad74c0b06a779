// What a session's turns add to its Temporal workflow history, by payload, for the README's sample
// conversation (billing: an unknown invoice, a known one, a refund) against the sample back-end.
//   node --import tsx bench/history-size.ts [--max-history-events 8000] [--flush-ms 1000]
// Starts its own stack (Temporal dev server in memory, FerretDB in a temp dir, the API and an
// in-process worker), runs the conversation through the HTTP API, then reads the session's
// workflow histories (every run, after continue-as-new too) and prints, per turn, the bytes the
// turn added, and over the whole conversation the bytes of each kind of payload.
// `--max-history-events 40` makes the session continue-as-new mid-conversation, to size its input.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { switchboardDataConverter } from '../lib/payload-codec';
import { temporal as proto } from '@temporalio/proto';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createLogger } from '../lib/logger';
import { loadConfig } from '../lib/config';
import { freePort, startFerretDb, startTemporalDevServer } from '../infra/processes';
import { sampleBackendToolEnv, startSampleBackend } from '../infra/sample-backend';
import { createSwitchboardWorker } from '../workers/create-worker';
import { createActivityDeps } from '../workers/activity-deps';
import { seedDevProject } from '../infra/seed-project';
import { ensureDevTenant } from '../infra/seed';
import { jsonClient } from './support/json-client';

const { values } = parseArgs({
  options: {
    'max-history-events': { type: 'string', default: '8000' },
    'flush-ms': { type: 'string', default: '1000' },
  },
});

const CONVERSATION = ['I have a question about my invoice', 'INV-999999', 'INV-123456', 'yes', '50', 'charged twice'];

type Event = proto.api.history.v1.IHistoryEvent;
type Payloads = proto.api.common.v1.IPayloads | null | undefined;

const payloadBytes = (p: Payloads): number => (p?.payloads ?? []).reduce((n, x) => n + (x.data?.length ?? 0), 0);
const eventBytes = (e: Event): number => proto.api.history.v1.HistoryEvent.encode(e).finish().length;

/** Sorts each event's payload bytes into a named kind (activity inputs and results by activity). */
function classify(events: Event[], firstRun: boolean, into: Map<string, { bytes: number; count: number }>): void {
  const add = (kind: string, bytes: number) => {
    const k = into.get(kind) ?? { bytes: 0, count: 0 };
    k.bytes += bytes;
    k.count++;
    into.set(kind, k);
  };
  const activityOf = new Map<string, string>();
  for (const e of events) {
    const id = String(e.eventId);
    if (e.workflowExecutionStartedEventAttributes) add(firstRun ? 'session start input' : 'continue-as-new input (next run)', payloadBytes(e.workflowExecutionStartedEventAttributes.input));
    else if (e.workflowExecutionContinuedAsNewEventAttributes) {
      const input = e.workflowExecutionContinuedAsNewEventAttributes.input;
      add('continue-as-new input', payloadBytes(input));
      // What the next run is handed, part by part.
      const data = input?.payloads?.[0]?.data;
      const carried = data ? (JSON.parse(Buffer.from(data).toString('utf8')) as { carried?: Record<string, unknown> }).carried : undefined;
      for (const [key, value] of Object.entries(carried ?? {})) add(`  continue-as-new: carried.${key}`, Buffer.byteLength(JSON.stringify(value) ?? ''));
    }
    else if (e.workflowExecutionUpdateAcceptedEventAttributes) add('turn request (update input)', payloadBytes(e.workflowExecutionUpdateAcceptedEventAttributes.acceptedRequest?.input?.args));
    else if (e.workflowExecutionUpdateCompletedEventAttributes) add('turn result (update outcome)', payloadBytes(e.workflowExecutionUpdateCompletedEventAttributes.outcome?.success));
    else if (e.activityTaskScheduledEventAttributes) {
      const type = e.activityTaskScheduledEventAttributes.activityType?.name ?? '?';
      activityOf.set(id, type);
      add(`${type} input`, payloadBytes(e.activityTaskScheduledEventAttributes.input));
    } else if (e.activityTaskCompletedEventAttributes) {
      const type = activityOf.get(String(e.activityTaskCompletedEventAttributes.scheduledEventId)) ?? '?';
      add(`${type} result`, payloadBytes(e.activityTaskCompletedEventAttributes.result));
    } else if (e.markerRecordedEventAttributes) {
      const details = e.markerRecordedEventAttributes.details ?? {};
      let type = e.markerRecordedEventAttributes.markerName ?? 'marker';
      const data = details.data?.payloads?.[0]?.data;
      if (data) {
        try {
          // Core's LocalActivityMarkerData, as JSON.
          const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string; activityType?: string };
          const activity = parsed.activity_type ?? parsed.activityType;
          if (activity) type = `${activity} (local)`;
        } catch {
          // Not JSON: keep the marker's name.
        }
      }
      // A local activity's marker holds its result; its input is not recorded.
      add(`${type} result`, payloadBytes(details.result));
    } else if (e.startChildWorkflowExecutionInitiatedEventAttributes) add('child workflow input', payloadBytes(e.startChildWorkflowExecutionInitiatedEventAttributes.input));
    else if (e.childWorkflowExecutionCompletedEventAttributes) add('child workflow result', payloadBytes(e.childWorkflowExecutionCompletedEventAttributes.result));
    else if (e.workflowExecutionSignaledEventAttributes) add('signal input', payloadBytes(e.workflowExecutionSignaledEventAttributes.input));
  }
}

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-history-'));
  const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null });
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const backend = await startSampleBackend(await freePort());
  const config = loadConfig({
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/history`,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'history',
    JWT_SECRET: 'h'.repeat(40),
    LOG_LEVEL: 'silent',
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
    SESSION_MAX_HISTORY_EVENTS: values['max-history-events'],
    SESSION_PROJECTION_FLUSH_MS: values['flush-ms'],
    ...sampleBackendToolEnv(backend),
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const worker = await createSwitchboardWorker({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue: 'history',
    deps: createActivityDeps({ config, models: ctx.models, logger: ctx.logger }),
    // Sizes are measured in clear: the config sets no codec key (encryption adds ~60 bytes a payload).
    payloadCodec: ctx.payloadCodec,
  });
  const running = worker.run();
  try {
    const { credentials } = await ensureDevTenant(ctx.models, path.join(tmp, 'creds.json'), baseUrl);
    await seedDevProject(ctx.models, credentials, { sampleBackendUrl: backend.url });
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }), dataConverter: switchboardDataConverter(ctx.payloadCodec) });
    const http = jsonClient(baseUrl);
    const auth = { authorization: `Bearer ${credentials.apiKey}` };

    const runsOf = async (workflowId: string) => {
      const runs: { runId: string; events: Event[] }[] = [];
      for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push({ runId: w.runId, events: [] });
      for (const r of runs) r.events = (await client.workflow.getHandle(workflowId, r.runId).fetchHistory()).events ?? [];
      return runs;
    };
    const totalBytes = async (workflowId: string) => (await runsOf(workflowId)).reduce((n, r) => n + r.events.reduce((m, e) => m + eventBytes(e), 0), 0);

    let sessionId: string | undefined;
    let before = 0;
    process.stdout.write(`turn  bytes added  events  reply\n`);
    for (const [i, message] of CONVERSATION.entries()) {
      const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, message, ...(sessionId ? { sessionId } : {}) }, auth);
      const body = res.body as { sessionId?: string; response?: string };
      if (res.status !== 200 || !body.sessionId) throw new Error(`turn ${i + 1} failed: ${res.status} ${JSON.stringify(res.body)}`);
      sessionId = body.sessionId;
      // The turn's held projection write lands after the reply: wait for it before measuring.
      await new Promise((r) => setTimeout(r, Number(values['flush-ms']) + 500));
      const now = await totalBytes(`session/${sessionId}`);
      const events = (await runsOf(`session/${sessionId}`)).reduce((n, r) => n + r.events.length, 0);
      process.stdout.write(`${String(i + 1).padStart(4)}  ${String(now - before).padStart(11)}  ${String(events).padStart(6)}  ${JSON.stringify((body.response ?? '').slice(0, 60))}\n`);
      before = now;
    }
    const kinds = new Map<string, { bytes: number; count: number }>();
    const runs = await runsOf(`session/${sessionId}`);
    // Oldest run first: list() gives the newest first.
    runs.reverse().forEach((r, i) => classify(r.events, i === 0, kinds));
    const all = runs.reduce((n, r) => n + r.events.reduce((m, e) => m + eventBytes(e), 0), 0);
    process.stdout.write(`\nsession/${sessionId}: ${runs.length} run(s), ${runs.reduce((n, r) => n + r.events.length, 0)} events, ${all} bytes of history\n`);
    process.stdout.write(`payload kind                                 count       bytes   bytes/turn\n`);
    for (const [kind, k] of [...kinds.entries()].sort((a, b) => b[1].bytes - a[1].bytes)) {
      process.stdout.write(`${kind.padEnd(42)} ${String(k.count).padStart(7)} ${String(k.bytes).padStart(11)} ${String(Math.round(k.bytes / CONVERSATION.length)).padStart(12)}\n`);
    }
  } finally {
    worker.shutdown();
    await running;
    await nativeConnection.close();
    await new Promise((r) => server.close(r));
    await closeAppContext(ctx);
    await backend.close();
    await temporal.process.stop();
    await ferret.process.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
