// The production worker loads a prebuilt workflow bundle: a worker process started from the file
// `npm run build:workflows` wrote runs a session's turn, and one given a missing file, or a file
// built from other code, refuses to start (exit code 4) with a message naming the fix. The file is
// the run's own bundle: the global setup writes it with that script (test/support/global-setup.ts),
// and fails the run when the script fails, so the suite bundles the workflows once.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../../../infra/processes';
import { manifestPathOf, workflowSourcesFingerprint, type WorkflowBundleManifest } from '../../../workers/workflow-bundle';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { childEnv, startWorkerProcess } from '../../support/worker-process';

jest.setTimeout(120_000);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-bundle-'));
const bundlePath = process.env.SB_TEST_WORKFLOW_BUNDLE!;
let stack: TestStack;
let t: SeededTenant;

/** Runs a script to its end: its exit code and output. */
function runScript(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

beforeAll(async () => {
  stack = await startTestStack();
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), t, 'Greeter', `AGENT: Greeter
GOAL: "Greet."
FLOW:
  steps: [greet]
  greet:
    REASONING: false
    RESPOND: "Hello from the prebuilt bundle."
`);
});
afterAll(async () => {
  await stack?.close();
  rmSync(tmp, { recursive: true, force: true });
});

it('runs a session turn on a worker that loads the built bundle', async () => {
  // The script's manifest: built from this code, and describing this very file.
  const manifest = JSON.parse(readFileSync(manifestPathOf(bundlePath), 'utf8')) as WorkflowBundleManifest;
  expect(manifest.sourcesSha256).toMatch(/^[0-9a-f]{64}$/);
  expect(manifest.sourcesSha256).toBe(workflowSourcesFingerprint());
  expect(manifest.bundleSha256).toBe(createHash('sha256').update(readFileSync(bundlePath)).digest('hex'));
  const worker = await startWorkerProcess({ ...stack.config, WORKFLOW_BUNDLE_PATH: bundlePath });
  try {
    const res = await client(stack.baseUrl).post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Greeter', message: 'hi' } });
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('Hello from the prebuilt bundle.');
  } finally {
    await worker.stop();
  }
});

it('refuses a missing bundle and one built from other code, before connecting', async () => {
  // The same file, its manifest naming other sources (as a bundle of another release would).
  const stale = path.join(tmp, 'stale.js');
  copyFileSync(bundlePath, stale);
  const manifest = JSON.parse(readFileSync(manifestPathOf(bundlePath), 'utf8')) as WorkflowBundleManifest;
  writeFileSync(manifestPathOf(stale), JSON.stringify({ ...manifest, sourcesSha256: '0'.repeat(64) }));
  // Both workers at once: each one is refused on its own.
  const [missing, other] = await Promise.all([
    runScript(['workers/main.ts'], childEnv({ ...stack.config, WORKFLOW_BUNDLE_PATH: path.join(tmp, 'nowhere.js') })),
    runScript(['workers/main.ts'], childEnv({ ...stack.config, WORKFLOW_BUNDLE_PATH: stale })),
  ]);
  expect(missing.code).toBe(4);
  expect(missing.err).toContain('nowhere.js does not exist');
  expect(missing.err).toContain('npm run build:workflows');

  expect(other.code).toBe(4);
  expect(other.err).toContain('was built from other code');
});
