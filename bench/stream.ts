// Time to first token through POST /api/v1/chat/stream versus straight to the upstream (and
// through a Node process that only forwards: one extra hop's floor; and through a bare Express
// relay over the provider layer: the floor of the endpoint's design), split into the way to the
// upstream and the way back, and the added latency per streamed event. Prints figures; asserts
// nothing.
//   node --import tsx bench/stream.ts [--iterations 200] [--events 200] [--limiter mongo|memory] [--api process|inline] [--upstream-delay 20]
// Starts its own pieces: FerretDB in a temp dir, the API (Temporal is connected lazily and not
// needed here) and the fake OpenAI-compatible server from test/support as the upstream. The API
// runs as its own process, as in production, so its event loop is not shared with the load
// generator and the fake upstream; `--api inline` serves it from the bench process instead.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createParser } from 'eventsource-parser';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { freePort, manage, ROOT, startFerretDb, waitForHttpOk, type ManagedProcess } from '../infra/processes';
import { createLlmProvider } from '../providers/llm';
import { startFakeOpenAI, type FakeReply } from '../test/support/fake-openai';
import { CpuMeter, type CpuSnapshot } from './support/cpu';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '200' }, events: { type: 'string', default: '200' }, limiter: { type: 'string', default: 'mongo' }, api: { type: 'string', default: 'process' }, 'upstream-delay': { type: 'string', default: '20' } } });
const ITERATIONS = Number(values.iterations);
const EVENTS = Number(values.events);
const WARMUP = 20;
const UPSTREAM_DELAY_MS = Number(values['upstream-delay']);

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
  return { n: sorted.length, p50: at(50), p95: at(95), p99: at(99) };
}
const fmt = (label: string, s: ReturnType<typeof stats>, unit = 'ms', digits = 2) =>
  `${label.padEnd(44)} n=${s.n}  p50 ${s.p50.toFixed(digits)} ${unit}  p95 ${s.p95.toFixed(digits)} ${unit}  p99 ${s.p99.toFixed(digits)} ${unit}`;

interface Timing {
  /** performance.now() when the request was sent and when its first text delta arrived. */
  startedAt: number;
  firstAt: number;
  /** ms from sending the request to the first text delta. */
  ttft: number;
  /** ms from the first to the last text delta. */
  tail: number;
  deltas: number;
}

/** Reads an SSE response and times the text deltas; `isDelta` recognises one in a parsed message. */
async function timeSse(res: Response, started: number, isDelta: (event: string | undefined, data: string) => boolean): Promise<Timing> {
  let first = -1;
  let last = -1;
  let deltas = 0;
  const parser = createParser({
    onEvent(message) {
      if (!isDelta(message.event, message.data)) return;
      const now = performance.now();
      if (first < 0) first = now;
      last = now;
      deltas += 1;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  return { startedAt: started, firstAt: first, ttft: first - started, tail: last - first, deltas };
}

type RunningApi = { baseUrl: string; pid?: number; stop: () => Promise<void> };

/** The API in the bench process, sharing its event loop with the client and the fake upstream. */
async function serveInline(ctx: Awaited<ReturnType<typeof buildAppContext>>): Promise<RunningApi> {
  const server = createServer(createApp(ctx));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The API as its own process (`api/server.ts`), as it runs in production. */
async function spawnApi(env: Record<string, string>): Promise<RunningApi> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const proc: ManagedProcess = manage('api', child);
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttpOk(`${baseUrl}/healthz`, 60_000);
  return { baseUrl, pid: child.pid, stop: () => proc.stop() };
}

/** A bench/support server (the pass-through proxy, the bare relay) as its own process, in front of `upstreamUrl`. */
async function spawnInFrontOf(upstreamUrl: string, script: string): Promise<RunningApi> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, UPSTREAM_URL: upstreamUrl, NODE_ENV: 'production' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`${script} exited with ${String(code)}`)));
  });
  const proc: ManagedProcess = manage(path.basename(script, '.ts'), child);
  return { baseUrl: `http://127.0.0.1:${port}`, pid: child.pid, stop: () => proc.stop() };
}

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-stream-'));
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const fake = await startFakeOpenAI();
  const env = {
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/bench`,
    JWT_SECRET: 'b'.repeat(40),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '1000000',
    // `--limiter memory` shows how much of the added time is the shared (Mongo) rate-limit counter.
    RATE_LIMIT_STORE: values.limiter,
    SESSION_MESSAGES_PER_MINUTE: '1000000',
    ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    LLM_TIER_BALANCED: 'local',
    // The project's base URL is the fake on loopback.
    LLM_ALLOWED_PRIVATE_DESTINATIONS: new URL(fake.baseURL).host,
  };
  const ctx = await buildAppContext(loadConfig(env), createLogger({ level: 'silent' }));
  const api = values.api === 'inline' ? await serveInline(ctx) : await spawnApi(env);
  const { baseUrl, stop: stopApi } = api;
  const proxy = await spawnInFrontOf(fake.baseURL, 'bench/support/pass-through-proxy.ts');
  const relay = await spawnInFrontOf(fake.baseURL, 'bench/support/bare-relay.ts');
  const cpu = new CpuMeter({ api: api.pid, mongo: ferret.process.child.pid, proxy: proxy.pid, relay: relay.pid });

  const tenant = await createTenant(ctx.models, { name: 'bench' });
  const project = await createProject(ctx.models, tenant._id, { name: 'Bench' });
  const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['session:execute', 'credential:write'] });
  await fetch(`${baseUrl}/api/projects/${project._id}/llm-credentials/openai`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apiKey: 'sk-bench', baseURL: fake.baseURL }),
  });

  const messages = [{ role: 'user' as const, content: 'Say something.' }];
  const shortReply = { text: 'Hello there, friend.' };
  const longReply = { text: Array.from({ length: EVENTS }, (_, i) => `w${i}`).join(' ') };

  // 1. Raw HTTP straight to the fake: the floor.
  const rawTo = (baseURL: string) => async (): Promise<Timing> => {
    const started = performance.now();
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-bench', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages, stream: true, stream_options: { include_usage: true } }),
    });
    return timeSse(res, started, (_event, data) => data !== '[DONE]' && Boolean((JSON.parse(data) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content));
  };
  const rawDirect = rawTo(fake.baseURL);
  // 1b. The same through a Node process that forwards and checks nothing: one extra hop's floor.
  const rawViaProxy = rawTo(proxy.baseUrl);
  // 2. The provider layer (real openai SDK) straight to the fake: what the API itself runs.
  const provider = createLlmProvider({ provider: 'openai', apiKey: 'sk-bench', baseURL: fake.baseURL });
  const sdkDirect = async (): Promise<Timing> => {
    const started = performance.now();
    let first = -1;
    let last = -1;
    let deltas = 0;
    for await (const event of provider.stream({ model: 'gpt-4o-mini', messages })) {
      if (event.type !== 'text_delta') continue;
      const now = performance.now();
      if (first < 0) first = now;
      last = now;
      deltas += 1;
    }
    return { startedAt: started, firstAt: first, ttft: first - started, tail: last - first, deltas };
  };
  // 2b. A bare Express relay over the provider layer, checking nothing: the design's floor.
  const viaBareRelay = async (): Promise<Timing> => {
    const started = performance.now();
    const res = await fetch(`${relay.baseUrl}/relay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages, modelId: 'gpt-4o-mini' }),
    });
    return timeSse(res, started, (event) => event === 'text_delta');
  };
  // 3. Through the API: auth, rate limit, project + settings + credential lookups, SSE relay.
  const viaApi = async (): Promise<Timing> => {
    const started = performance.now();
    const res = await fetch(`${baseUrl}/api/v1/chat/stream`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ projectId: project._id, messages, modelId: 'gpt-4o-mini' }),
    });
    return timeSse(res, started, (event) => event === 'text_delta');
  };

  /**
   * The way to the upstream (sending the request until the fake has read it) and the way back
   * (the fake starting its answer until the first delta is parsed), from the fake's own clock,
   * which is this process's: what the API adds before the provider is called and after it answers.
   */
  const legsOfLastCall = (timing: Timing) => {
    const call = fake.requests.at(-1)!;
    return { to: call.receivedAt - timing.startedAt, back: timing.firstAt - (call.respondedAt ?? Number.NaN) };
  };

  const run = async (label: string, fn: () => Promise<Timing>, reply: FakeReply, iterations: number) => {
    fake.reset();
    for (let i = 0; i < WARMUP + iterations; i += 1) fake.script(reply);
    const samples: Timing[] = [];
    for (let i = 0; i < WARMUP + iterations; i += 1) {
      const timing = await fn();
      if (i >= WARMUP) samples.push(timing);
    }
    return { label, samples };
  };

  /**
   * Runs the paths in turn, one call each per iteration (the order rotating), so that load from
   * elsewhere on the machine falls on all of them alike; CPU is metered around each call.
   */
  const interleaved = async (paths: ReadonlyArray<readonly [string, () => Promise<Timing>]>, reply: FakeReply, iterations: number) => {
    fake.reset();
    const results = paths.map(([label]) => ({ label, samples: [] as Timing[], legs: [] as { to: number; back: number }[], cpu: {} as CpuSnapshot }));
    for (let i = 0; i < WARMUP + iterations; i += 1) {
      for (let k = 0; k < paths.length; k += 1) {
        const index = (i + k) % paths.length;
        fake.script(reply);
        const before = cpu.snapshot();
        const timing = await paths[index]![1]();
        if (i < WARMUP) continue;
        CpuMeter.accumulate(results[index]!.cpu, before, cpu.snapshot());
        results[index]!.samples.push(timing);
        results[index]!.legs.push(legsOfLastCall(timing));
      }
    }
    return results;
  };

  console.log(`Node ${process.version}, ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}; ${ITERATIONS} iterations after ${WARMUP} warm-up, sequential, the paths interleaved`);
  console.log('\nTime to first text_delta (short reply):');
  const ttft = await interleaved(
    [
      ['raw HTTP -> fake upstream', rawDirect],
      ['raw HTTP -> pass-through proxy -> fake', rawViaProxy],
      ['provider layer (openai SDK) -> fake upstream', sdkDirect],
      ['bare Express relay -> provider layer -> fake', viaBareRelay],
      ['POST /api/v1/chat/stream -> fake upstream', viaApi],
    ],
    shortReply,
    ITERATIONS,
  );
  const legsLine = (legs: { to: number; back: number }[]) =>
    `${''.padEnd(44)} p50 of the way there ${stats(legs.map((l) => l.to)).p50.toFixed(2)} ms, of the way back ${stats(legs.map((l) => l.back)).p50.toFixed(2)} ms`;
  for (const result of ttft) {
    console.log(fmt(result.label, stats(result.samples.map((s) => s.ttft))));
    console.log(legsLine(result.legs));
    console.log(`${''.padEnd(44)} CPU per call (ms): ${CpuMeter.perOp({}, result.cpu, ITERATIONS)}`);
  }
  const [rawP50, proxyP50, sdkP50, relayP50, apiP50] = ttft.map((result) => stats(result.samples.map((s) => s.ttft)).p50) as [number, number, number, number, number];
  console.log(`API adds ${(apiP50 - sdkP50).toFixed(2)} ms at p50 over the provider layer alone (${(apiP50 - rawP50).toFixed(2)} ms over raw HTTP)`);
  console.log(`A process that only forwards adds ${(proxyP50 - rawP50).toFixed(2)} ms at p50 over raw HTTP: one extra hop's floor on this machine`);
  console.log(
    `A bare Express relay over the provider layer adds ${(relayP50 - sdkP50).toFixed(2)} ms at p50 over the provider layer alone: the design's floor; the API's own checks add ${(apiP50 - relayP50).toFixed(2)} ms over it`,
  );

  // A real provider takes 100s of ms to its first token; the API's own checks (the key read
  // above all) run while it thinks. With a small first-token delay the comparison shows what
  // the API adds when its round trips overlap the provider's, as they do in production.
  const thinking = { ...shortReply, delayMs: UPSTREAM_DELAY_MS };
  console.log(`\nTime to first text_delta, upstream taking ${UPSTREAM_DELAY_MS} ms to its first token:`);
  const [slowSdk, slowApi] = await interleaved(
    [
      ['provider layer (openai SDK) -> fake upstream', sdkDirect],
      ['POST /api/v1/chat/stream -> fake upstream', viaApi],
    ],
    thinking,
    ITERATIONS,
  );
  const slowSdkStats = stats(slowSdk!.samples.map((s) => s.ttft));
  const slowApiStats = stats(slowApi!.samples.map((s) => s.ttft));
  console.log(fmt(slowSdk!.label, slowSdkStats));
  console.log(legsLine(slowSdk!.legs));
  console.log(fmt(slowApi!.label, slowApiStats));
  console.log(legsLine(slowApi!.legs));
  console.log(`API adds ${(slowApiStats.p50 - slowSdkStats.p50).toFixed(2)} ms at p50 over the provider layer alone`);

  console.log(`\nPer-event relay cost (${EVENTS} text deltas, no upstream delay):`);
  const longIterations = Math.max(20, Math.floor(ITERATIONS / 4));
  const sdkLong = await run('provider layer', sdkDirect, longReply, longIterations);
  const apiLong = await run('API', viaApi, longReply, longIterations);
  // Time from the request to the last delta, per event: with no upstream pacing this is the
  // relay's throughput cost (parse upstream chunk, re-encode, write) amortised over the stream.
  const toLast = (t: Timing) => t.ttft + t.tail;
  const sdkLast = stats(sdkLong.samples.map(toLast));
  const apiLast = stats(apiLong.samples.map(toLast));
  const apiFirst = stats(apiLong.samples.map((t) => t.ttft));
  const sdkFirst = stats(sdkLong.samples.map((t) => t.ttft));
  console.log(fmt('provider layer: request -> last delta', sdkLast));
  console.log(fmt('through the API: request -> last delta', apiLast));
  const perEventUs = (((apiLast.p50 - apiFirst.p50) - (sdkLast.p50 - sdkFirst.p50)) / Math.max(1, EVENTS - 1)) * 1000;
  console.log(`API adds ${perEventUs.toFixed(1)} µs per event at p50 (first-to-last delta span, API minus provider layer, / ${EVENTS - 1})`);

  await stopApi();
  await proxy.stop();
  await relay.stop();
  await closeAppContext(ctx);
  await fake.close();
  await ferret.process.stop();
  rmSync(tmp, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
