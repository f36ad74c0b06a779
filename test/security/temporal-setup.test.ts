// A fresh Temporal cluster has none of the search attributes the workflows set, and a workflow
// that sets one fails. Against a fresh dev server started without them, the API and the worker
// refuse to start, naming each missing attribute and the command that adds them; after
// `npm run admin -- temporal-setup` (which also creates a missing namespace) both start, and
// running the command again changes nothing. The API and the worker run as real processes (their
// refusal is an exit code); the command runs in this process through the entry the admin binary
// calls (test/support/admin-cli.ts), its exit status and output as the binary gives them.
import { spawn } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { freePort, manage, ROOT, toolPath, type ManagedProcess } from '../../infra/processes';
import { type Config } from '../../lib/config';
import { SEARCH_ATTRIBUTE_KEYS } from '../../workflows/search-attributes';
import { startApiProcess } from '../support/api-process';
import { adminInProcess } from '../support/admin-cli';
import { testConfig } from '../support/stack';
import { childEnv, startWorkerProcess } from '../support/worker-process';

jest.setTimeout(240_000);

const NAMES = SEARCH_ATTRIBUTE_KEYS.map((k) => k.name);
let temporal: ManagedProcess;
let address: string;

beforeAll(async () => {
  const port = await freePort();
  address = `127.0.0.1:${port}`;
  // In memory, with no --search-attribute: as a new cluster is.
  temporal = manage('temporal', spawn(toolPath('temporal'), ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'], { stdio: 'ignore' }));
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
});
afterAll(async () => {
  await temporal?.stop();
});

/** Runs a script to its end; its exit code and output. */
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

const configFor = (namespace: string): Config => testConfig({ TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace });
const setup = async (config: Config) => {
  const { status, out, err } = await adminInProcess(childEnv(config) as Record<string, string>, 'temporal-setup');
  return { code: status, out, err };
};

it('refuses to start the API and the worker on a namespace without the search attributes, names each, and starts them after temporal-setup', async () => {
  const config = configFor('default');
  // Both at once: each refuses on its own.
  const [api, worker] = await Promise.all([
    runScript(['api/server.ts'], childEnv(config, { PORT: String(await freePort()), HOST: '127.0.0.1' })),
    runScript(['workers/main.ts'], childEnv(config)),
  ]);
  expect(api.code).toBe(3);
  for (const name of NAMES) expect(api.err).toContain(`  ${name} (`);
  expect(api.err).toContain('npm run admin -- temporal-setup');
  expect(worker.code).toBe(3);
  for (const name of NAMES) expect(worker.err).toContain(`  ${name} (`);
  expect(worker.err).toContain('npm run admin -- temporal-setup');

  const first = await setup(config);
  expect(first.code).toBe(0);
  expect(JSON.parse(first.out)).toEqual({ namespace: 'default', namespaceCreated: false, added: NAMES, alreadyPresent: [] });
  const again = await setup(config);
  expect(again.code).toBe(0);
  expect(JSON.parse(again.out)).toEqual({ namespace: 'default', namespaceCreated: false, added: [], alreadyPresent: NAMES });

  // Every attribute is there with its type.
  const connection = await Connection.connect({ address });
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(listed.customAttributes ?? {}).sort()).toEqual([...NAMES].sort());
  } finally {
    await connection.close();
  }

  const apiProcess = await startApiProcess(config);
  const workerProcess = await startWorkerProcess(config);
  await workerProcess.stop();
  await apiProcess.proc.stop();
});

it('creates a missing namespace with its search attributes; the API refuses it until then', async () => {
  const config = configFor(`fresh-${Date.now()}`);
  const api = await runScript(['api/server.ts'], childEnv(config, { PORT: String(await freePort()), HOST: '127.0.0.1' }));
  expect(api.code).toBe(3);
  expect(api.err).toContain(`namespace "${config.TEMPORAL_NAMESPACE}" does not exist`);
  expect(api.err).toContain('npm run admin -- temporal-setup');

  const first = await setup(config);
  expect(first.code).toBe(0);
  expect(JSON.parse(first.out)).toEqual({ namespace: config.TEMPORAL_NAMESPACE, namespaceCreated: true, added: NAMES, alreadyPresent: [] });
  const again = await setup(config);
  expect(JSON.parse(again.out)).toEqual({ namespace: config.TEMPORAL_NAMESPACE, namespaceCreated: false, added: [], alreadyPresent: NAMES });

  const workerProcess = await startWorkerProcess(config);
  await workerProcess.stop();
});
