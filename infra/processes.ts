// Starts and stops the real parts of the stack as child processes: the Temporal dev server, the
// store (the FerretDB shim on an embedded PostgreSQL cluster) and the LiveKit server of real-time
// voice. Shared by `npm start`
// (dev-stack.ts), the test harness, the fuzzer and the benches.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { ensureJsonbIndexes } from './postgres-indexes';
import { manage, type ManagedProcess } from './managed-process';
import { startPostgres, type EmbeddedPostgres } from './postgres';
import { SEARCH_ATTRIBUTE_KEYS, SEARCH_ATTRIBUTE_TYPE_NAMES } from '../workflows/search-attributes';

export const ROOT = path.resolve(__dirname, '..');
export const TOOLS_BIN = path.join(ROOT, '.tools', 'bin');

export function toolPath(name: 'temporal' | 'ferretdb' | 'livekit-server'): string {
  const bin = path.join(TOOLS_BIN, name);
  if (!existsSync(bin)) throw new Error(`${bin} is missing; run \`node infra/bootstrap.js\` (npm start does it)`);
  return bin;
}

export { manage, type ManagedProcess };

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/**
 * `count` distinct free ports: every one is held open until all are chosen, since the kernel may
 * hand a port it just released to the next bind, and two services given the same port collide.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((server) => {
      const address = server.address();
      return typeof address === 'object' && address ? address.port : 0;
    });
  } finally {
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
}

export async function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
    socket.connect(port, '127.0.0.1');
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface FerretDbOptions {
  /** The store's directory: its PostgreSQL cluster (with `sqlite`, the SQLite files of the store before it). */
  dataDir: string;
  /** 0 picks a free port. */
  port: number;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** PostgreSQL's port; 0 or omitted picks a free port. */
  postgresPort?: number;
  /** See PostgresOptions (infra/postgres.ts). @default 'throwaway' */
  durability?: 'durable' | 'throwaway';
  /** Serve the SQLite files in dataDir instead: only to read a store from before PostgreSQL once (infra/dev-store.ts). */
  sqlite?: boolean;
  /** GIN indexes on the JSONB of every collection's table (infra/postgres-indexes.ts; off only to measure without them). @default true */
  jsonbIndexes?: boolean;
  log?: (msg: string) => void;
}

export interface FerretDb {
  uri: string;
  port: number;
  /** FerretDB, and PostgreSQL under it: stop() stops both, FerretDB first. */
  process: ManagedProcess;
  /** The cluster under FerretDB (null with `sqlite`). */
  postgres: { url: string; port: number; pid: number | undefined } | null;
}

/**
 * Starts the store: the embedded PostgreSQL cluster in dataDir, and the FerretDB shim on it,
 * serving the MongoDB wire protocol. Resolves once FerretDB listens, with its MongoDB URI.
 */
export async function startFerretDb(options: FerretDbOptions): Promise<FerretDb> {
  let postgres: EmbeddedPostgres | null = null;
  if (!options.sqlite) {
    try {
      postgres = await startPostgres({
        dataDir: options.dataDir,
        port: options.postgresPort || (await freePort()),
        durability: options.durability ?? 'throwaway',
        log: options.log,
      });
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(`${why}\nThe store needs the embedded PostgreSQL server; to use a MongoDB of your own instead, set MONGODB_URI (docs/configuration.md)`);
    }
  } else {
    mkdirSync(options.dataDir, { recursive: true });
  }
  try {
    // Before FerretDB connects: its statements are planned knowing the indexes.
    if (postgres && options.jsonbIndexes !== false) await ensureJsonbIndexes(postgres.url);
    const ferret = await startFerretDbShim(options, postgres?.url);
    const pg = postgres;
    const both: ManagedProcess = {
      ...ferret.process,
      async stop(timeoutMs) {
        await ferret.process.stop(timeoutMs);
        await pg?.process.stop(timeoutMs);
      },
    };
    return { ...ferret, process: both, postgres: pg && { url: pg.url, port: pg.port, pid: pg.process.child.pid } };
  } catch (err) {
    await postgres?.process.stop();
    throw err;
  }
}

async function startFerretDbShim(options: FerretDbOptions, postgresqlUrl: string | undefined): Promise<{ uri: string; port: number; process: ManagedProcess }> {
  const child = spawn(
    toolPath('ferretdb'),
    [
      '-listen',
      `127.0.0.1:${options.port}`,
      ...(postgresqlUrl ? ['-postgresql-url', postgresqlUrl] : ['-data-dir', options.dataDir]),
      '-log-level',
      options.logLevel ?? 'error',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const proc = manage('ferretdb', child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const uri = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d.toString();
      const match = /listening (mongodb:\/\/\S+)/.exec(out);
      if (match?.[1]) {
        child.stdout!.off('data', onData);
        resolve(match[1]);
      }
    };
    child.stdout!.on('data', onData);
    void proc.exited.then((code) => reject(new Error(`FerretDB exited (${code}) before listening: ${stderr.trim()}`)));
  });
  const port = Number(new URL(uri).port);
  return { uri, port, process: proc };
}

export interface TemporalDevServerOptions {
  port: number;
  /** UI port, or null for headless. */
  uiPort: number | null;
  /** SQLite file; omitted means in memory. */
  dbFile?: string;
  namespace?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** The Web UI's codec endpoint (the API's `/codec`), so it shows decoded payloads to an operator. */
  uiCodecEndpoint?: string;
}

/** Starts `temporal server start-dev` and resolves once the frontend answers. */
export async function startTemporalDevServer(options: TemporalDevServerOptions): Promise<{ address: string; process: ManagedProcess }> {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(options.port), '--log-level', options.logLevel ?? 'error'];
  args.push(...(options.uiPort === null ? ['--headless'] : ['--ui-port', String(options.uiPort)]));
  if (options.uiPort !== null && options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile, '--sqlite-pragma', 'journal_mode=WAL', '--sqlite-pragma', 'synchronous=NORMAL');
  }
  if (options.namespace && options.namespace !== 'default') args.push('--namespace', options.namespace);
  for (const key of SEARCH_ATTRIBUTE_KEYS) args.push('--search-attribute', `${key.name}=${SEARCH_ATTRIBUTE_TYPE_NAMES[key.type]!.cli}`);
  args.push('--dynamic-config-value', 'system.enableActivityEagerExecution=true');
  const child = spawn(toolPath('temporal'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const proc = manage('temporal', child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const address = `127.0.0.1:${options.port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Temporal dev server exited (${child.exitCode}): ${stderr.trim()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return { address, process: proc };
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) {
        await proc.stop();
        throw new Error(`Temporal dev server did not become ready in 60 s: ${String(err)}`);
      }
      await sleep(250);
    }
  }
}

/**
 * Registers any missing custom search attributes. Needed because the dev server applies
 * `--search-attribute` only when it creates the namespace in a new SQLite file.
 */
export async function ensureSearchAttributes(address: string, namespace: string): Promise<string[]> {
  const connection = await Connection.connect({ address });
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const known = new Set(Object.keys(existing.customAttributes ?? {}));
    const missing = SEARCH_ATTRIBUTE_KEYS.filter((k) => !known.has(k.name));
    if (missing.length > 0) {
      await connection.operatorService.addSearchAttributes({
        namespace,
        searchAttributes: Object.fromEntries(missing.map((k) => [k.name, SEARCH_ATTRIBUTE_TYPE_NAMES[k.type]!.indexedValueType])),
      });
    }
    return missing.map((k) => k.name);
  } finally {
    await connection.close();
  }
}

/** Polls a URL until it answers 200, or throws after the timeout. */
export async function waitForHttpOk(url: string, timeoutMs: number, isAlive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    if (!isAlive()) throw new Error(`process serving ${url} exited`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (err) {
      last = String(err);
    }
    await sleep(300);
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms: ${last}`);
}

export interface LiveKitServerOptions {
  /** Where its config file (which holds the API secret: mode 0600) is written. */
  dir: string;
  /** HTTP and WebSocket signalling port. */
  port: number;
  /** WebRTC over TCP, and the one UDP port all WebRTC traffic is muxed on. */
  rtcTcpPort: number;
  rtcUdpPort: number;
  apiKey: string;
  /** At least 32 characters: LiveKit refuses shorter ones outside its --dev mode. */
  apiSecret: string;
  /** The address it listens on and advertises to clients. @default '127.0.0.1' */
  bindAddress?: string;
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
}

export interface LiveKitServer {
  /** `ws://<bind address>:<port>`, what LIVEKIT_URL names. */
  url: string;
  process: ManagedProcess;
}

/**
 * The LiveKit server's config: loopback only, no external IP lookup (no STUN), no TURN, loopback
 * candidates offered (docs/voice.md, "The LiveKit server").
 */
export function liveKitConfigYaml(options: LiveKitServerOptions): string {
  const ip = options.bindAddress ?? '127.0.0.1';
  return [
    `port: ${options.port}`,
    `bind_addresses: [${JSON.stringify(ip)}]`,
    'rtc:',
    `  tcp_port: ${options.rtcTcpPort}`,
    `  udp_port: ${options.rtcUdpPort}`,
    '  use_external_ip: false',
    `  node_ip: ${JSON.stringify(ip)}`,
    '  enable_loopback_candidate: true',
    'keys:',
    `  ${JSON.stringify(options.apiKey)}: ${JSON.stringify(options.apiSecret)}`,
    'room:',
    // Rooms exist only as the platform makes them: a token cannot open a room again once it is closed.
    '  auto_create: false',
    'logging:',
    `  level: ${options.logLevel ?? 'warn'}`,
    '',
  ].join('\n');
}

/** Starts `livekit-server` with a config written for it, and resolves once it answers HTTP. */
export async function startLiveKitServer(options: LiveKitServerOptions): Promise<LiveKitServer> {
  if (options.apiSecret.length < 32) throw new Error('the LiveKit API secret must be at least 32 characters');
  mkdirSync(options.dir, { recursive: true });
  const configFile = path.join(options.dir, 'livekit.yaml');
  writeFileSync(configFile, liveKitConfigYaml(options), { mode: 0o600 });
  const child = spawn(toolPath('livekit-server'), ['--config', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  const proc = manage('livekit-server', child);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const host = options.bindAddress ?? '127.0.0.1';
  try {
    await waitForHttpOk(`http://${host}:${options.port}/`, 30_000, () => child.exitCode === null && child.signalCode === null);
  } catch (err) {
    await proc.stop();
    throw new Error(`LiveKit server did not start: ${err instanceof Error ? err.message : String(err)}\n${stderr.trim()}`);
  }
  return { url: `ws://${host}:${options.port}`, process: proc };
}
