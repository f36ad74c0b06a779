// Starts the shared ephemeral stack once per `npm test`: a Temporal dev server in memory (the
// installed CLI via @temporalio/testing's existing-path; never a download) and FerretDB on a
// Starts the shared ephemeral stack once per `npm test`: a Temporal dev server in memory (the
// installed CLI via @temporalio/testing's existing-path; never a download), FerretDB on a
// PostgreSQL cluster in a temp dir and a LiveKit server on loopback (stopped by
// global-teardown.ts), all on free ports. Builds the workflow bundle once, with
// `npm run build:workflows`' own script, for every worker of the run.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { freePorts, ROOT, startFerretDb, startLiveKitServer, toolPath, type ManagedProcess } from '../../infra/processes';
import { SEARCH_ATTRIBUTE_KEYS } from '../../workflows/search-attributes';

export interface SharedStackHandles {
  env: TestWorkflowEnvironment;
  ferret: ManagedProcess;
  liveKit: ManagedProcess;
  tmpDir: string;
}

export default async function globalSetup(): Promise<void> {
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), 'switchboard-test-'));
  // The SDK gives the dev server a fixed 5 s to come up: start it before anything else
  // competes for the CPU (bundling is heavy on a 2-core box).
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path: toolPath('temporal') },
      searchAttributes: SEARCH_ATTRIBUTE_KEYS,
      ui: false,
      extraArgs: ['--dynamic-config-value', 'system.enableActivityEagerExecution=true'],
    },
  });
  // The bundle written by `npm run build:workflows`' script itself (with its manifest), so every
  // worker of the run, in-process or a process, loads that script's output, worker processes
  // through the same check as a production worker (test/integration/deploy/workflow-bundle.test.ts
  // holds what the file proves).
  const bundlePath = path.join(tmpDir, 'workflow-bundle.js');
  const liveKitSecret = randomBytes(24).toString('hex');
  const [liveKitPort, rtcTcpPort, rtcUdpPort] = await freePorts(3);
  const [ferret, liveKit] = await Promise.all([
    startFerretDb({ dataDir: path.join(tmpDir, 'store'), port: 0 }),
    startLiveKitServer({ dir: path.join(tmpDir, 'livekit'), port: liveKitPort!, rtcTcpPort: rtcTcpPort!, rtcUdpPort: rtcUdpPort!, apiKey: 'testkey', apiSecret: liveKitSecret }),
    buildWorkflows(bundlePath),
  ]);
  process.env.SB_TEST_TEMPORAL_ADDRESS = env.address;
  process.env.SB_TEST_MONGODB_URI = ferret.uri;
  process.env.SB_TEST_POSTGRES_URL = ferret.postgres!.url;
  process.env.SB_TEST_WORKFLOW_BUNDLE = bundlePath;
  process.env.SB_TEST_LIVEKIT_URL = liveKit.url;
  process.env.SB_TEST_LIVEKIT_API_KEY = 'testkey';
  process.env.SB_TEST_LIVEKIT_API_SECRET = liveKitSecret;
  process.env.SB_TEST_TMP = tmpDir;
  (globalThis as { __sbStack?: SharedStackHandles }).__sbStack = { env, ferret: ferret.process, liveKit: liveKit.process, tmpDir };
}

/** Runs `infra/build-workflows.ts` (what `npm run build:workflows` runs); fails the setup when it fails. */
function buildWorkflows(bundlePath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--import', 'tsx', 'infra/build-workflows.ts', bundlePath], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 20 }, (error, _stdout, stderr) =>
      error ? reject(new Error(`npm run build:workflows failed (${String(error.code)}):\n${stderr}`)) : resolve(),
    );
  });
}
