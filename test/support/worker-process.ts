// Runs the real worker process (`workers/main.ts`) as a child, so a test can kill it abruptly.
import { spawn } from 'node:child_process';
import { type Config } from '../../lib/config';
import { manage, ROOT, type ManagedProcess } from '../../infra/processes';

const PASSED_ON = [
  'MONGODB_URI',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'JWT_SECRET',
  'ENCRYPTION_KEY',
  'ENCRYPTION_KEYS',
  'SECRET_MASTER_KEYS',
  'PAYLOAD_CODEC_KEYS',
  'LLM_TIER_FAST',
  'LLM_TIER_BALANCED',
  'LLM_TIER_POWERFUL',
  'TOOL_ALLOW_PRIVATE_NETWORKS',
  'TOOL_ALLOWED_PRIVATE_DESTINATIONS',
  'LLM_ALLOWED_PRIVATE_DESTINATIONS',
  'HTTP_ASYNC_ALLOWED_PRIVATE_DESTINATIONS',
  'SHUTDOWN_GRACE_MS',
  'WORKER_STICKY_QUEUE_TIMEOUT_MS',
  'WORKFLOW_BUNDLE_PATH',
  'PUBLIC_BASE_URL',
  'TWILIO_API_BASE_URL',
] as const;

/**
 * For a file that kills or stops workers: a session whose worker is gone moves to the next worker
 * after 1 s instead of Temporal's 10 s (WORKER_STICKY_QUEUE_TIMEOUT_MS). Give it to the stack
 * whose config the worker processes get.
 */
export const FAST_FAILOVER_ENV = { WORKER_STICKY_QUEUE_TIMEOUT_MS: '1000' } as const;

/** The environment a child process needs to join the stack `config` describes. */
export function childEnv(config: Config, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', NODE_ENV: 'test', ...extra };
  for (const name of PASSED_ON) {
    const value = config[name];
    if (value !== undefined) env[name] = String(value);
  }
  return env;
}

/**
 * `nodeArgs` go to node before the script (a bench's `--cpu-prof`, which NODE_OPTIONS refuses);
 * `extraEnv` sets what `config` does not pass on (e.g. WORKER_METRICS_PORT).
 */
export async function startWorkerProcess(config: Config, nodeArgs: string[] = [], extraEnv: Record<string, string> = {}): Promise<ManagedProcess> {
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'workers/main.ts'], { cwd: ROOT, env: childEnv(config, extraEnv), stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = manage('worker', child);
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running behind the caller's back: it would join the task queue later.
      child.kill('SIGKILL');
      reject(new Error(`worker did not start in 60 s:\n${output}`));
    }, 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      output = (output + d.toString()).slice(-4000);
      if (output.includes('worker started')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void proc.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code}) before starting:\n${output}`));
    });
  });
  return proc;
}
