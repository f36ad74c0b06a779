// Outbound calls: initiate latency with 100 calls at once through the Twilio fake, next to a bare
// Temporal workflow start at the same concurrency (its floor: initiate never waits for the
// provider), and status callback → SSE `phase` event latency next to a bare signal round trip (a
// signal to the probe workflow seen by an update already waiting for it, as a stream's long-poll
// waits for the callback's signal); a bare update round trip is printed for reference.
//   node --import tsx bench/outbound.ts [--calls 100] [--rounds 2]
// Starts its own stack (Temporal dev server in memory, FerretDB in a temp dir, the Twilio fake,
// the API in this process, the worker as its own process). Calls go to the fake's number that
// rings until cancelled, so each stays `ringing` until the bench posts its own signed
// `in-progress` callback while an SSE stream follows the call; the figure runs from sending that
// callback to reading its `phase` event. Prints figures; asserts nothing.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { createScope } from '../core/platform-keys/scopes';
import { freePort, startFerretDb, startTemporalDevServer } from '../infra/processes';
import { startTwilioFake } from '../infra/twilio-fake';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { secretMasterKeyRing } from '../lib/secret-envelope';
import { newChannelConnectionId, sealConnectionToken } from '../db/channel-connection';
import { twilioSignature } from '../providers/telephony/twilio-client';
import { nudgeProbeSignal, pingUpdate, stopProbeUpdate, waitProbeUpdate } from '../workflows/definitions';
import { startWorkerProcess } from '../test/support/worker-process';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '100' }, rounds: { type: 'string', default: '2' } } });
const CALLS = Number(values.calls);
const ROUNDS = Number(values.rounds);

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const stats = (samples: number[]) => {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
};
const line = (label: string, samples: number[]) => {
  const { p50, p99 } = stats(samples);
  return `${label.padEnd(52)} n=${String(samples.length).padStart(4)}  p50 ${p50.toFixed(1).padStart(7)} ms  p99 ${p99.toFixed(1).padStart(7)} ms`;
};
const out = (s: string) => process.stdout.write(s + '\n');

/** Reads an SSE response until `until` holds for an event; resolves with the time it was read. */
async function readUntil(res: Response, until: (event: string, data: { phase: string }) => boolean): Promise<number> {
  const reader = res.body!.getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('stream ended');
    buffer += Buffer.from(value).toString('utf8');
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data && until(event, JSON.parse(data) as { phase: string })) {
        const at = performance.now();
        void reader.cancel();
        return at;
      }
    }
  }
}

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-outbound-'));
  const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null });
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const fake = await startTwilioFake();
  const apiPort = await freePort();
  const publicUrl = `http://127.0.0.1:${apiPort}`;
  const config = loadConfig({
    PORT: String(apiPort),
    PUBLIC_BASE_URL: publicUrl,
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/outbound`,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'outbound',
    JWT_SECRET: 'o'.repeat(40),
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '10000000',
    TWILIO_API_BASE_URL: fake.url,
    LLM_TIER_FAST: 'local',
    LLM_TIER_BALANCED: 'local',
    LLM_TIER_POWERFUL: 'local',
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(apiPort, '127.0.0.1', r));
  // The worker places the calls at the fake (its environment is passed on to the child).
  process.env.TWILIO_API_BASE_URL = fake.url;
  const worker = await startWorkerProcess(config);
  out(`load average at start: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}; ${CALLS} calls at once, ${ROUNDS} rounds`);
  try {
    const tenant = await createTenant(ctx.models, { name: 'Outbound bench', slug: 'outbound-bench' });
    const project = await createProject(ctx.models, tenant._id, { name: 'Outbound' });
    const scope = await createScope(ctx.models, project, { name: 'calls', permissions: { 'outbound_calls.initiate': 'YES', 'outbound_calls.read': 'YES' } });
    const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', scopeId: scope._id });
    const connectionId = newChannelConnectionId();
    const authToken = randomBytes(16).toString('hex');
    const accountSid = 'AC' + randomBytes(16).toString('hex');
    const place = { _id: connectionId, tenantId: tenant._id, projectId: project._id };
    await ctx.models.ChannelConnection.create({
      ...place,
      provider: 'twilio',
      name: 'bench line',
      accountSid,
      authToken: await sealConnectionToken(ctx.models.TenantDataKey, secretMasterKeyRing(config)!, place, authToken),
      callerNumber: '+15017122661',
      environment: 'production',
      amdMode: 'off',
      status: 'active',
    });
    const base = `${publicUrl}/api/v1/project/${project.slug}/production/outbound-calls`;
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const client = await ctx.temporal.client();

    const initiate = async (n: number) => {
      const started = performance.now();
      const res = await fetch(base, {
        method: 'POST',
        headers,
        body: JSON.stringify({ channelConnectionId: connectionId, to: { type: 'phone', number: '+15005550015' }, idempotencyKey: `bench-${n}-${randomBytes(4).toString('hex')}` }),
      });
      const body = (await res.json()) as { data: { outboundCallId: string } };
      if (res.status !== 201) throw new Error(`initiate: ${res.status} ${JSON.stringify(body)}`);
      return { ms: performance.now() - started, id: body.data.outboundCallId };
    };
    const bareStart = async (n: number) => {
      const started = performance.now();
      await client.workflow.start('probeWorkflow', { workflowId: `probe-start-${n}-${randomBytes(4).toString('hex')}`, taskQueue: config.TEMPORAL_TASK_QUEUE });
      return performance.now() - started;
    };

    // Warm-up, untimed.
    const warm = await Promise.all(Array.from({ length: 5 }, (_, i) => initiate(-1 - i)));
    await Promise.all(Array.from({ length: 5 }, (_, i) => bareStart(-1 - i)));

    const initiateMs: number[] = [];
    const startMs: number[] = [];
    const callbackMs: number[] = [];
    const roundTripMs: number[] = [];
    const signalTripMs: number[] = [];
    const probes: string[] = [];
    const ids: string[] = warm.map((w) => w.id);
    for (let round = 0; round < ROUNDS; round++) {
      // Floor: bare workflow starts, all at once.
      const starts = await Promise.all(Array.from({ length: CALLS }, (_, i) => bareStart(round * CALLS + i)));
      startMs.push(...starts);
      // Initiate, all at once.
      const calls = await Promise.all(Array.from({ length: CALLS }, (_, i) => initiate(round * CALLS + i)));
      initiateMs.push(...calls.map((c) => c.ms));
      ids.push(...calls.map((c) => c.id));

      // Each call ringing, with a stream open on it; then every call's `in-progress` callback at once.
      // The callbacks go to the status URL each call was placed with, as the provider's do.
      const placed = await Promise.all(
        calls.map(async ({ id }) => {
          for (;;) {
            const doc = await ctx.models.OutboundCall.findById(id).lean();
            if (doc?.providerCallSid && doc.phase === 'ringing') {
              const view = (await (await fetch(`${fake.url}/__fake/calls/${doc.providerCallSid}`)).json()) as { statusCallbacks: { url: string }[] };
              return { sid: doc.providerCallSid, statusUrl: view.statusCallbacks[0]!.url };
            }
            await new Promise((r) => setTimeout(r, 50));
          }
        }),
      );
      const streams = await Promise.all(calls.map(({ id }) => fetch(`${base}/${id}/events`, { headers: { 'x-api-key': key } })));
      const seen = streams.map((res) => readUntil(res, (event, data) => event === 'phase' && data.phase === 'in_progress'));
      // Let each stream send its snapshot and its first long-poll reach its workflow.
      await new Promise((r) => setTimeout(r, 3000));
      const sentAt = await Promise.all(
        calls.map(async (_call, i) => {
          const { sid, statusUrl } = placed[i]!;
          const form = { CallSid: sid, AccountSid: accountSid, CallStatus: 'in-progress', SequenceNumber: '1000', Timestamp: new Date().toUTCString() };
          const started = performance.now();
          const res = await fetch(statusUrl, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(authToken, statusUrl, form) },
            body: new URLSearchParams(form).toString(),
          });
          if (res.status !== 204) throw new Error(`status callback: ${res.status}`);
          return started;
        }),
      );
      const readAt = await Promise.all(seen);
      callbackMs.push(...readAt.map((at, i) => at - sentAt[i]!));

      // Floor: a bare round trip to a running workflow, as many at once.
      const probeIds = Array.from({ length: CALLS }, (_, i) => `probe-rt-${round}-${i}`);
      await Promise.all(probeIds.map((workflowId) => client.workflow.start('probeWorkflow', { workflowId, taskQueue: config.TEMPORAL_TASK_QUEUE })));
      await Promise.all(probeIds.map((workflowId) => client.workflow.getHandle(workflowId).executeUpdate(pingUpdate, { args: [{ n: 0 }] })));
      const trips = await Promise.all(
        probeIds.map(async (workflowId) => {
          const started = performance.now();
          await client.workflow.getHandle(workflowId).executeUpdate(pingUpdate, { args: [{ n: 1 }] });
          return performance.now() - started;
        }),
      );
      roundTripMs.push(...trips);
      probes.push(...probeIds);

      // Floor of the callback path: the same shape bare. Each probe has an update waiting for a
      // signal (as each stream's long-poll waits on its call); the signals go out at once, and
      // the figure runs from sending one to its waiting update's answer.
      const waits = probeIds.map((workflowId) => client.workflow.getHandle(workflowId).executeUpdate(waitProbeUpdate, { args: [{ after: 0 }] }));
      await new Promise((r) => setTimeout(r, 3000));
      const signalled = await Promise.all(
        probeIds.map(async (workflowId) => {
          const started = performance.now();
          await client.workflow.getHandle(workflowId).signal(nudgeProbeSignal);
          return started;
        }),
      );
      const answered = await Promise.all(waits.map((w) => w.then(() => performance.now())));
      signalTripMs.push(...answered.map((at, i) => at - signalled[i]!));
    }

    out('');
    out(line('initiate (POST, 201)', initiateMs));
    out(line('floor: bare workflow start', startMs));
    out(line('status callback → SSE phase event', callbackMs));
    out(line('floor: bare signal round trip (signal → waiting update)', signalTripMs));
    out(line('for reference: bare update round trip', roundTripMs));
    const i = stats(initiateMs);
    const s = stats(startMs);
    const c = stats(callbackMs);
    const r = stats(signalTripMs);
    out(`initiate p99 / floor p99 = ${(i.p99 / s.p99).toFixed(2)} (target ≤ 2); callback→event p99 / floor p99 = ${(c.p99 / r.p99).toFixed(2)} (target ≤ 2)`);
    out(`load average at end: ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);

    // Clean up: end the calls (the fake's phones ring until cancelled) and the probes.
    await Promise.all(ids.map((id) => fetch(`${base}/${id}/terminate`, { method: 'POST', headers: { 'x-api-key': key } }).catch(() => undefined)));
    await Promise.all(probes.map((id) => client.workflow.getHandle(id).executeUpdate(stopProbeUpdate).catch(() => undefined)));
  } finally {
    await worker.stop();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await closeAppContext(ctx);
    await fake.close();
    await ferret.process.stop();
    await temporal.process.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
