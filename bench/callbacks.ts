// Async tool callbacks: how fast a signed callback turns into the session's resumed answer, next
// to a bare Temporal update round trip (the floor), and what suspended sessions cost the worker.
//   node --import tsx bench/callbacks.ts [--concurrent 100] [--rounds 3] [--suspended 1000,10000]
// Starts its own stack (Temporal dev server in memory, FerretDB in a temp dir, the API in this
// process, the worker as its own process so its memory is its own) and an async tool server that
// acknowledges with 202. Latency: `--concurrent` sessions are suspended, then all their callbacks
// are fired at once; a session's figure runs from sending its callback to the timestamp of the
// resumed reply in its transcript (the workflow's clock as it recorded the reply), so no polling
// blurs it. Memory: the worker's RSS once `--suspended` sessions (cumulative) wait at once.
import { createHmac } from 'node:crypto';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createApiKey, createProject, createTenant } from '../api/tenancy/service';
import { freePort, startFerretDb, startTemporalDevServer } from '../infra/processes';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { startWorkerProcess } from '../test/support/worker-process';
import { pingUpdate } from '../workflows/definitions';
import { switchboardDataConverter } from '../lib/payload-codec';
import { jsonClient } from './support/json-client';

const { values } = parseArgs({
  options: {
    concurrent: { type: 'string', default: '100' },
    rounds: { type: 'string', default: '3' },
    suspended: { type: 'string', default: '1000,10000' },
  },
});
const CONCURRENT = Number(values.concurrent);
const ROUNDS = Number(values.rounds);
const MEMORY_POINTS = values.suspended
  .split(',')
  .map((n) => Number(n.trim()))
  .filter((n) => n > 0);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const line = (label: string, samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return `${label.padEnd(34)} n=${sorted.length}  p50 ${percentile(sorted, 50).toFixed(1)} ms  p99 ${percentile(sorted, 99).toFixed(1)} ms  max ${sorted[sorted.length - 1]!.toFixed(1)} ms`;
};
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-callbacks-'));
  // The outside system: records each request's callback URL and secret, acknowledges with 202.
  const requests = new Map<string, { url: string; secret: string }>();
  const tool = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const parsed = JSON.parse(body) as { callbackUrl: string; callbackSecret: string };
      requests.set(parsed.callbackUrl.split('/').pop()!, { url: parsed.callbackUrl, secret: parsed.callbackSecret });
      res.writeHead(202);
      res.end();
    });
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  const toolHost = `127.0.0.1:${(tool.address() as AddressInfo).port}`;

  const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null });
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const apiPort = await freePort();
  const config = loadConfig({
    PORT: String(apiPort),
    PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/callbacks`,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'callbacks',
    JWT_SECRET: 'c'.repeat(40),
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '10000000',
    SESSION_MESSAGES_PER_MINUTE: '1000000',
    MAX_CONCURRENT_SESSIONS: '1000000',
    SESSION_PROJECTION_FLUSH_MS: '0',
    TOOL_ALLOWED_PRIVATE_DESTINATIONS: toolHost,
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(apiPort, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${apiPort}`;
  const worker = await startWorkerProcess(config);
  const client = new Client({ connection: await Connection.connect({ address: temporal.address }), dataConverter: switchboardDataConverter(ctx.payloadCodec) });
  try {
    const tenant = await createTenant(ctx.models, { name: 'Callbacks bench', slug: 'callbacks-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'Callbacks' });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
    const http = jsonClient(baseUrl, 128);
    const auth = { authorization: `Bearer ${key}` };
    const agent = `AGENT: Payments
GOAL: "Take a payment."
TOOLS:
  process_payment(amount: number) -> {status: string, transactionId: string}
    type: async_webhook
    endpoint: "http://${toolHost}/pay"
    method: POST
FLOW:
  steps: [pay, done]
  pay:
    REASONING: false
    CALL: process_payment
      WITH:
        amount: 42
      AS: payment
    ON_SUCCESS:
      THEN: done
  done:
    REASONING: false
    RESPOND: "Payment {{payment.transactionId}} went through."
`;
    const created = await http.post(`/api/projects/${project._id}/agents`, { name: 'Payments', dslContent: agent }, auth);
    if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
    await http.post(`/api/projects/${project._id}/agents/Payments/versions`, {}, auth);

    /** Suspends `n` new sessions, `lanes` at a time; returns their session and callback ids. */
    const suspend = async (n: number, lanes = 16) => {
      const out: { sessionId: string; callbackId: string }[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: lanes }, async () => {
          while (next < n) {
            next++;
            const res = await http.post('/api/v1/chat/agent', { projectId: project._id, message: 'pay' }, auth);
            const body = res.body as { sessionId: string; suspensionId?: string };
            if (res.status !== 202 || !body.suspensionId) throw new Error(`suspend: ${res.status} ${JSON.stringify(res.body)}`);
            out.push({ sessionId: body.sessionId, callbackId: body.suspensionId });
          }
        }),
      );
      return out;
    };

    // Floor: bare update round trips at the same concurrency, on probe workflows.
    const probes = await Promise.all(
      Array.from({ length: CONCURRENT }, async (_, i) => {
        const op = new WithStartWorkflowOperation('probeWorkflow', { workflowId: `probe-${i}`, taskQueue: 'callbacks', workflowIdConflictPolicy: 'USE_EXISTING' });
        await client.workflow.executeUpdateWithStart(pingUpdate, { args: [{ n: 0 }], startWorkflowOperation: op });
        return client.workflow.getHandle(`probe-${i}`);
      }),
    );
    const floor: number[] = [];
    const resumed: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(
        probes.map(async (h, i) => {
          const started = performance.now();
          await h.executeUpdate(pingUpdate, { args: [{ n: round * CONCURRENT + i }] });
          floor.push(performance.now() - started);
        }),
      );
      const batch = await suspend(CONCURRENT);
      const sentAt = new Map<string, number>();
      await Promise.all(
        batch.map(async ({ sessionId, callbackId }) => {
          const { secret } = requests.get(callbackId)!;
          const payload = { status: 'completed', transactionId: `tx_${callbackId.slice(-6)}` };
          const signature = `sha256=${createHmac('sha256', secret).update(JSON.stringify(payload)).digest('hex')}`;
          sentAt.set(sessionId, Date.now());
          const res = await http.post(`/api/v1/callbacks/${callbackId}`, payload, { 'x-callback-signature': signature });
          if (res.status !== 200) throw new Error(`callback: ${res.status} ${JSON.stringify(res.body)}`);
        }),
      );
      // Wait for every resumed reply, then read when each was recorded.
      const ids = batch.map((b) => b.sessionId);
      const deadline = Date.now() + 120_000;
      let rows: { sessionId: string; timestamp: Date }[] = [];
      while (Date.now() < deadline) {
        // The resumed reply (the first turn also left a holding reply).
        rows = await ctx.models.TranscriptMessage.find({ sessionId: { $in: ids }, role: 'assistant', content: /went through/ }, { sessionId: 1, timestamp: 1 }).lean();
        if (rows.length >= ids.length) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      if (rows.length < ids.length) throw new Error(`only ${rows.length} of ${ids.length} sessions resumed`);
      for (const row of rows) resumed.push(row.timestamp.getTime() - sentAt.get(row.sessionId)!);
    }
    process.stdout.write(`${ROUNDS} rounds of ${CONCURRENT} concurrent callbacks\n`);
    process.stdout.write(`${line('bare update round trip (floor)', floor)}\n`);
    process.stdout.write(`${line('callback -> resumed answer', resumed)}\n`);

    // Memory: the worker's RSS with this many sessions waiting at once.
    let waiting = 0;
    for (const point of MEMORY_POINTS) {
      const began = Date.now();
      await suspend(point - waiting);
      waiting = point;
      await new Promise((r) => setTimeout(r, 5_000));
      process.stdout.write(`worker RSS with ${String(point).padStart(6)} suspended sessions: ${rssMb(worker.child.pid!).toFixed(0)} MB (suspending took ${Math.round((Date.now() - began) / 1000)} s)\n`);
    }
  } finally {
    await worker.stop();
    await client.connection.close();
    await new Promise((r) => server.close(r));
    await closeAppContext(ctx);
    tool.closeAllConnections();
    await new Promise((r) => tool.close(r));
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
