// A throwaway PostgreSQL cluster for benches at scale (`bench/callbacks.ts --store postgres`): the
// FerretDB shim stores in it instead of SQLite. Not a supported production store; see docs/performance.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface ThrowawayPostgres {
  /** Connection URL for the FerretDB shim's `-postgresql-url`. */
  url: string;
  /** The postmaster's pid: its process tree is PostgreSQL's CPU. */
  pid: number;
  stop(): void;
}

/** initdb and pg_ctl from PATH, else from the newest /usr/lib/postgresql/<version>/bin. */
function pgBin(name: 'initdb' | 'pg_ctl'): string {
  const onPath = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return onPath;
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const bin = path.join(base, v, 'bin', name);
    if (existsSync(bin)) return bin;
  }
  throw new Error(`--store postgres needs PostgreSQL's ${name} on PATH (PostgreSQL 13 or newer)`);
}

/**
 * PostgreSQL refuses to run as root. As root the cluster belongs to BENCH_POSTGRES_USER (default
 * `postgres`, the packages' system user) and its commands run through `runuser`; otherwise as
 * the current user.
 */
function clusterOwner(): { uid: number; gid: number; run: (cmd: string, args: string[]) => string[] } | null {
  if (process.getuid?.() !== 0) return null;
  const user = process.env.BENCH_POSTGRES_USER ?? 'postgres';
  const ids = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  const uid = Number(ids.stdout.trim());
  if (ids.status !== 0 || !Number.isInteger(uid) || uid === 0) {
    throw new Error(
      `--store postgres: PostgreSQL will not run as root, and there is no unprivileged user "${user}" to run it as; ` +
        'create one or set BENCH_POSTGRES_USER to an existing non-root user',
    );
  }
  const gid = Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim());
  return { uid, gid, run: (cmd, args) => ['runuser', '-u', user, '--', cmd, ...args] };
}

function run(argv: string[]): void {
  execFileSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Creates a cluster in a temp dir and starts it on `port` (127.0.0.1 only, trust authentication),
 * tuned as a throwaway store: no fsync, commits not waited for, as the SQLite shim does not fsync
 * each commit either. Its data dies with stop().
 */
export function startThrowawayPostgres(port: number): ThrowawayPostgres {
  const owner = clusterOwner();
  const wrap = (cmd: string, args: string[]) => (owner ? owner.run(cmd, args) : [cmd, ...args]);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sb-postgres-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = path.join(dir, 'data');
  try {
    run(wrap(pgBin('initdb'), ['-D', data, '-U', 'bench', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-instructions']));
    const serverOptions = [
      `-p ${port}`,
      `-k ${dir}`,
      '-c listen_addresses=127.0.0.1',
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      '-c max_connections=200',
    ].join(' ');
    run(wrap(pgBin('pg_ctl'), ['start', '-w', '-t', '60', '-D', data, '-l', path.join(dir, 'server.log'), '-o', serverOptions]));
  } catch (err) {
    const log = path.join(dir, 'server.log');
    const detail = (err as { stderr?: Buffer }).stderr?.toString().trim() ?? '';
    const serverLog = existsSync(log) ? readFileSync(log, 'utf8').slice(-2000) : '';
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`--store postgres: could not start PostgreSQL: ${detail}\n${serverLog}`);
  }
  const pid = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  let stopped = false;
  return {
    url: `postgres://bench@127.0.0.1:${port}/postgres`,
    pid,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        run(wrap(pgBin('pg_ctl'), ['stop', '-m', 'fast', '-w', '-D', data]));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
