// Workflow history size of sample conversations: after each turn, the bytes and events of every
// run of the session workflow (continue-as-new included) and of its delegation children.
//   node --import tsx bench/session-history.ts [--max-events 8000]
// Starts its own stack (Temporal dev server in memory, FerretDB in a temp dir, API, inline worker)
// seeded with the sample support desk. Prints figures, asserts nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createLogger } from '../lib/logger';
import { loadConfig } from '../lib/config';
import { freePort, startFerretDb, startTemporalDevServer } from '../infra/processes';
import { createSwitchboardWorker } from '../workers/create-worker';
import { createActivityDeps } from '../workers/activity-deps';
import { seedDevProject } from '../infra/seed-project';
import { ensureDevTenant } from '../infra/seed';
import { jsonClient } from './support/json-client';

const { values } = parseArgs({ options: { 'max-events': { type: 'string', default: '8000' } } });

const CONVERSATIONS: Record<string, string[]> = {
  billing: ['I have a question about my invoice', 'INV-999999', 'INV-123456', 'yes', '50', 'charged twice'],
  trip: ['I want to plan a trip', 'Lisbon', '2026-05-01', '2026-05-08'],
};

async function main() {
  Runtime.install({ logger: new DefaultLogger('ERROR'), shutdownSignals: [] });
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null });
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const config = loadConfig({
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/bench`,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'bench',
    JWT_SECRET: 'b'.repeat(40),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '1000000',
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
    SESSION_MAX_HISTORY_EVENTS: values['max-events'],
    SESSION_PROJECTION_FLUSH_MS: '0',
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const worker = await createSwitchboardWorker({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue: 'bench',
    deps: createActivityDeps({ config, models: ctx.models, logger: ctx.logger }),
    payloadCodec: ctx.payloadCodec,
  });
  const running = worker.run();
  const { credentials } = await ensureDevTenant(ctx.models, path.join(tmp, 'creds.json'), baseUrl);
  await seedDevProject(ctx.models, credentials);
  const http = jsonClient(baseUrl);
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }) });

  /** Bytes and events of every run of the session's workflow and of its children. */
  async function historySize(sessionId: string) {
    let bytes = 0;
    let events = 0;
    let runs = 0;
    let children = 0;
    for await (const wf of client.workflow.list({ query: `WorkflowId STARTS_WITH "session/${sessionId}"` })) {
      const history = await client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
      bytes += proto.api.history.v1.History.encode(history).finish().length;
      events += history.events?.length ?? 0;
      if (wf.workflowId === `session/${sessionId}`) runs++;
      else children++;
    }
    return { bytes, events, runs, children };
  }

  process.stdout.write(`SESSION_MAX_HISTORY_EVENTS=${config.SESSION_MAX_HISTORY_EVENTS}\n`);
  for (const [name, messages] of Object.entries(CONVERSATIONS)) {
    let sessionId: string | undefined;
    for (const [i, message] of messages.entries()) {
      const res = await http.post('/api/v1/chat/agent', { projectId: credentials.projectId, message, ...(sessionId ? { sessionId } : {}) }, { authorization: `Bearer ${credentials.apiKey}` });
      if (res.status !== 200) throw new Error(`turn ${i + 1}: ${res.status} ${JSON.stringify(res.body)}`);
      sessionId = (res.body as { sessionId: string }).sessionId;
      // Visibility lags a little behind a continue-as-new or a child start.
      await new Promise((r) => setTimeout(r, 1500));
      const size = await historySize(sessionId);
      process.stdout.write(
        `${name} turn ${i + 1}: ${(size.bytes / 1024).toFixed(1)} KiB, ${size.events} events (${size.runs} run(s), ${size.children} child workflow(s))\n`,
      );
    }
  }

  await client.connection.close();
  worker.shutdown();
  await running;
  await nativeConnection.close();
  server.close();
  await closeAppContext(ctx);
  await ferret.process.stop();
  await temporal.process.stop();
  rmSync(tmp, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
