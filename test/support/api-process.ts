// Runs the real API process (`api/server.ts`) as a child on a free port, so a test can kill it
// abruptly, as a crash or a redeploy would.
import { spawn } from 'node:child_process';
import { type Config } from '../../lib/config';
import { freePort, manage, ROOT, waitForHttpOk, type ManagedProcess } from '../../infra/processes';
import { childEnv } from './worker-process';

export interface ApiProcess {
  baseUrl: string;
  proc: ManagedProcess;
}

/** `extraEnv` sets what `config` does not pass on (e.g. SHUTDOWN_GRACE_MS). */
export async function startApiProcess(config: Config, extraEnv: Record<string, string> = {}): Promise<ApiProcess> {
  const port = await freePort();
  const env = childEnv(config, { PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'silent', ...extraEnv });
  const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const proc = manage('api', child);
  const baseUrl = `http://127.0.0.1:${port}`;
  await waitForHttpOk(`${baseUrl}/healthz`, 60_000, () => proc.child.exitCode === null);
  return { baseUrl, proc };
}
