// Runs the admin CLI for a test: in this process through the same entry the binary calls (fast;
// most cases), or as the real `node --import tsx infra/admin-cli.ts` process (its exit code and
// output streams as a shell sees them).
import { execFile } from 'node:child_process';
import { ROOT } from '../../infra/processes';
import { runAdmin } from '../../infra/admin/commands';

export interface AdminResult {
  status: number | null;
  out: string;
  err: string;
}

/** The commands in this process, with `env` over this process's environment. */
export async function adminInProcess(env: Record<string, string>, ...args: string[]): Promise<AdminResult> {
  let out = '';
  let err = '';
  const status = await runAdmin(args, { env: { ...process.env, ...env }, out: (text) => (out += text), err: (text) => (err += text) });
  return { status, out, err };
}

/**
 * The CLI as its own process. Without blocking this one: the API under test runs here, and a
 * blocked event loop lets its keep-alive timer close a connection just as the client reuses it.
 */
export function adminProcess(env: Record<string, string>, ...args: string[]): Promise<AdminResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', 'infra/admin-cli.ts', ...args], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, out: stdout, err: stderr }),
    );
  });
}
