// A bench's own stack: Temporal dev server in memory, the store (FerretDB on PostgreSQL) in a
// temp dir, the API in the bench process (over real HTTP) and the worker as its own process, as in
// production, with a Temporal client and a CPU meter over the processes. Settings go to the API
// and the worker alike.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { buildAppContext, closeAppContext } from '../../api/bootstrap';
import { type AppContext } from '../../api/context';
import { createApp } from '../../api/app';
import { freePort, startFerretDb, startTemporalDevServer } from '../../infra/processes';
import { loadConfig, type Config } from '../../lib/config';
import { createLogger } from '../../lib/logger';
import { switchboardDataConverter } from '../../lib/payload-codec';
import { startWorkerProcess } from '../../test/support/worker-process';
import { CpuMeter } from './cpu';

export interface BenchStack {
  /** A temp dir of the bench's own, removed at close. */
  dir: string;
  config: Config;
  ctx: AppContext;
  baseUrl: string;
  /** A Temporal client of the bench's own (for floors and histories), with the stack's payload codec. */
  client: Client;
  /** Temporal's SQLite file with `temporalDbFile`. */
  temporalDbFile: string | undefined;
  /** The Temporal dev server's and the store's (FerretDB's, PostgreSQL's tree) process ids. */
  pids: { temporal: number | undefined; ferret: number | undefined; postgres: number | undefined };
  /** The store's data directory (PostgreSQL's), for its size on disk. */
  storeDir: string;
  /** Undefined with `worker: 'none'`. */
  workerPid: number | undefined;
  /** CPU of the bench process (client and API), the worker, Temporal, FerretDB and PostgreSQL. */
  cpu: CpuMeter;
  close(): Promise<void>;
}

export interface BenchStackOptions {
  /** Names the database, the task queue and the temp dir. */
  name: string;
  /** Settings on top of the bench defaults (offline `local` model, rate limits out of the way). */
  env?: Record<string, string | undefined>;
  /** Node arguments for the worker process (e.g. `--cpu-prof`). */
  workerNodeArgs?: string[];
  /** The API's MongoDB client emits command events (`commandStarted`), for a bench to count them. */
  monitorApiCommands?: boolean;
  /** `none`: no worker process (the bench runs one of its own). @default 'process' */
  worker?: 'process' | 'none';
  /** Temporal's SQLite file (in the bench's temp dir) instead of an in-memory database, so its size can be read. */
  temporalDbFile?: boolean;
  /** A stack's temp dir left by an earlier run (with `temporalDbFile`): started again on its data and kept at close. */
  reopen?: string;
  /** Keep the temp dir at close (to reopen it). */
  keep?: boolean;
}

export async function startBenchStack(options: BenchStackOptions): Promise<BenchStack> {
  const tmp = options.reopen ?? mkdtempSync(path.join(os.tmpdir(), `sb-${options.name}-`));
  // What has started so far, stopped in reverse if a later step fails (or at close).
  const undo: (() => Promise<unknown> | void)[] = options.reopen || options.keep ? [] : [() => rmSync(tmp, { recursive: true, force: true })];
  const stop = async () => {
    for (const step of undo.reverse()) await step();
  };
  try {
    const temporalDbFile = options.temporalDbFile ? path.join(tmp, 'temporal', 'temporal.db') : undefined;
    const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null, dbFile: temporalDbFile });
    undo.push(() => temporal.process.stop());
    const ferret = await startFerretDb({ dataDir: path.join(tmp, 'store'), port: 0 });
    undo.push(() => ferret.process.stop());
    const apiPort = await freePort();
    const settings: Record<string, string | undefined> = {
      PORT: String(apiPort),
      PUBLIC_BASE_URL: `http://127.0.0.1:${apiPort}`,
      MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/${options.name}`,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: options.name,
      JWT_SECRET: 'b'.repeat(40),
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
      LOG_LEVEL: 'silent',
      RATE_LIMIT_REQUESTS: '10000000',
      SESSION_MESSAGES_PER_MINUTE: '1000000',
      MAX_CONCURRENT_SESSIONS: '1000000',
      LLM_TIER_FAST: 'local',
      LLM_TIER_BALANCED: 'local',
      LLM_TIER_POWERFUL: 'local',
      // The worker's tuning comes from the bench's environment (its process inherits it).
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('WORKER_MAX_'))),
      ...options.env,
    };
    // The worker process inherits this environment: settings the API passes on by name
    // (test/support/worker-process.ts) and the rest (destination allowances, tuning) alike.
    for (const [name, value] of Object.entries(settings)) if (value !== undefined && name !== 'LOG_LEVEL') process.env[name] = value;
    const config = loadConfig(settings);
    // BENCH_LOG_LEVEL=error prints what the API logs (the cause of a 500) as JSON lines among the figures.
    const apiConfig = options.monitorApiCommands ? { ...config, MONGODB_URI: `${config.MONGODB_URI}?monitorCommands=true` } : config;
    const ctx = await buildAppContext(apiConfig, createLogger({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' }));
    undo.push(() => closeAppContext(ctx));
    const server = createServer(createApp(ctx));
    // Idle kept-alive sockets stay open through a bench's pauses.
    server.keepAliveTimeout = 10 * 60_000;
    await new Promise<void>((r) => server.listen(apiPort, '127.0.0.1', r));
    undo.push(() => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    });
    let workerPid: number | undefined;
    if (options.worker !== 'none') {
      const worker = await startWorkerProcess(config, options.workerNodeArgs);
      workerPid = worker.child.pid;
      let stopping = false;
      undo.push(() => {
        stopping = true;
        return worker.stop();
      });
      // A worker that dies mid-run says why: its last output is printed with its exit.
      let workerTail = '';
      const keepTail = (d: Buffer) => (workerTail = (workerTail + d.toString()).slice(-4000));
      worker.child.stdout!.on('data', keepTail);
      worker.child.stderr!.on('data', keepTail);
      worker.child.once('exit', (code, signal) => {
        if (!stopping) process.stderr.write(`worker exited (${code ?? signal}):\n${workerTail}\n`);
      });
    }
    const client = new Client({ connection: await Connection.connect({ address: temporal.address }), dataConverter: switchboardDataConverter(ctx.payloadCodec) });
    undo.push(() => client.connection.close());
    return {
      dir: tmp,
      config,
      ctx,
      baseUrl: `http://127.0.0.1:${apiPort}`,
      client,
      temporalDbFile,
      pids: { temporal: temporal.process.child.pid, ferret: ferret.process.child.pid, postgres: ferret.postgres?.pid },
      storeDir: path.join(tmp, 'store'),
      workerPid,
      cpu: new CpuMeter({
        worker: workerPid,
        temporal: temporal.process.child.pid,
        mongo: ferret.process.child.pid,
        postgres: ferret.postgres?.pid === undefined ? undefined : { tree: ferret.postgres.pid },
      }),
      close: stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
