// The voice agent process serves /metrics on WORKER_METRICS_PORT, as the worker does: the listener
// the deployment probes (deploy/helm: TCP on it) and the Temporal SDK's metrics of the voice task
// queue behind METRICS_TOKEN. The product's entry (`npm run voice-worker`) with the offline pair,
// against the test stack's Temporal and store; a SIGTERM stops it and closes the listener.
import { spawn } from 'node:child_process';
import { freePort, manage, ROOT, type ManagedProcess } from '../../../infra/processes';
import { startTestStack, type TestStack } from '../../support/stack';
import { childEnv } from '../../support/worker-process';

jest.setTimeout(120_000);

const TOKEN = 'voice-agent-metrics-token-0123456789';
let stack: TestStack;
let agent: ManagedProcess;
let metricsUrl: string;

const scrape = (token: string | null) => fetch(metricsUrl, token ? { headers: { Authorization: `Bearer ${token}` } } : {});

beforeAll(async () => {
  stack = await startTestStack();
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  const child = spawn(process.execPath, ['--import', 'tsx', 'workers/voice-agent.ts'], {
    cwd: ROOT,
    env: childEnv(stack.config, { WORKER_METRICS_PORT: String(port), METRICS_TOKEN: TOKEN }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  agent = manage('voice-agent', child);
  let output = '';
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`voice agent did not start in 90 s:\n${output}`));
    }, 90_000);
    child.stdout!.on('data', (d: Buffer) => {
      output = (output + d.toString()).slice(-4000);
      if (output.includes('voice agent started')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void agent.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`voice agent exited (${code}) before starting:\n${output}`));
    });
  });
});
afterAll(async () => {
  await agent?.stop();
  await stack?.close();
});

it('serves the Temporal SDK metrics of the voice task queue, to its token only', async () => {
  expect((await scrape(null)).status).toBe(401);
  expect((await scrape(TOKEN.replace(/.$/, '0'))).status).toBe(401);
  const res = await scrape(TOKEN);
  expect(res.status).toBe(200);
  const text = await res.text();
  const voiceQueue = stack.config.voiceTaskQueue;
  expect(voiceQueue).toBe(`${stack.config.TEMPORAL_TASK_QUEUE}-voice`);
  // The SDK's worker series carry the queue this process polls: the voice one, not the main one.
  const sdkLines = text.split('\n').filter((line) => line.startsWith('temporal_') && line.includes('task_queue="'));
  expect(sdkLines.length).toBeGreaterThan(0);
  expect(sdkLines.some((line) => line.includes(`task_queue="${voiceQueue}"`))).toBe(true);
  expect(sdkLines.some((line) => line.includes(`task_queue="${stack.config.TEMPORAL_TASK_QUEUE}"`))).toBe(false);
});

it('stops on SIGTERM and its listener closes with it', async () => {
  agent.child.kill('SIGTERM');
  expect(await agent.exited).toBe(0);
  await expect(scrape(TOKEN)).rejects.toThrow();
});
