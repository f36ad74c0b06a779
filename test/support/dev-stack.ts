// `npm start`'s stack in a test: infra/dev-stack.ts as a child process, with its data in a
// directory of the test's and every port free, resolved once it prints that it is running.
import { spawn } from 'node:child_process';
import { devStackEnv, freeDevStackPorts, type DevStackPorts } from '../../infra/dev-stack-env';
import { manage, ROOT, type ManagedProcess } from '../../infra/processes';

export { freeDevStackPorts, type DevStackPorts };

export type DevStack = ManagedProcess & { output: () => string };

/** Polls `probe` every 250 ms until it gives a value; throws after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts the dev stack (`external` adds to or overrides its environment, e.g. TEMPORAL_ADDRESS). */
export async function startDevStack(dataDir: string, ports: DevStackPorts, external: Record<string, string> = {}): Promise<DevStack> {
  const env = devStackEnv(dataDir, ports);
  // Its worker loads the workflow bundle the global setup built rather than bundling again.
  if (process.env.SB_TEST_WORKFLOW_BUNDLE) env.WORKFLOW_BUNDLE_PATH = process.env.SB_TEST_WORKFLOW_BUNDLE;
  Object.assign(env, external);
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/dev-stack.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const proc = manage('dev-stack', child);
  await waitFor(async () => (output.includes('Switchboard is running') ? true : child.exitCode !== null ? Promise.reject(new Error(output)) : undefined), 150_000).catch(
    async (err: unknown) => {
      await proc.stop();
      throw new Error(`dev stack did not start: ${String(err)}\n${output}`);
    },
  );
  return { ...proc, output: () => output };
}
