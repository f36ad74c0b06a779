// Deployments and project export/import of the generated 100-agent project
// (bench/support/generated-project.ts) through the HTTP API, each run in a new project: import it
// into the empty project (which saves a version of every agent), create a deployment pinning all
// 100 (`auto`), promote it to production (which compiles the pinned versions together), export
// it as zip and as JSON. Starts its own stack (Temporal dev server in memory, FerretDB in a temp
// dir, the API in this process). Prints figures, asserts nothing. Target: each under 2 s.
//   node --import tsx bench/deployments.ts [--runs 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../api/app';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApiKey, createProject, createTenant } from '../core/tenancy/accounts';
import { freePort, startFerretDb, startTemporalDevServer } from '../infra/processes';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import { generatedProject } from './support/generated-project';
import { jsonClient } from './support/json-client';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Math.max(1, Number(values.runs));

/** The generated project in the export layout (`agents/<Name>.abl`). */
function importFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (const f of generatedProject()) {
    if (f.path.startsWith('tools/')) files[f.path] = f.content;
    const agent = /^agents\/(.+)\.agent\.abl$/.exec(f.path);
    if (agent) files[`agents/${agent[1]}.abl`] = f.content;
  }
  return files;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0]!.toFixed(0)} ms, median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms, max ${s[s.length - 1]!.toFixed(0)} ms`;
};

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  const temporal = await startTemporalDevServer({ port: await freePort(), uiPort: null });
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const config = loadConfig({
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/bench`,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: 'bench',
    JWT_SECRET: 'b'.repeat(40),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '1000000',
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const http = jsonClient(baseUrl);

  const tenant = await createTenant(ctx.models, { name: 'bench-deployments' });
  const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
  const auth = { authorization: `Bearer ${key}` };
  const files = importFiles();
  const bytes = Object.values(files).reduce((n, c) => n + Buffer.byteLength(c), 0);
  process.stdout.write(`deployments bench: ${Object.keys(files).length} files, ${(bytes / 1024).toFixed(0)} KiB, ${RUNS} runs\n`);

  const timings = { import: [] as number[], create: [] as number[], promote: [] as number[], zip: [] as number[], folder: [] as number[] };
  const agentNames = Object.keys(files).flatMap((p) => /^agents\/(.+)\.abl$/.exec(p)?.[1] ?? []);
  const manifest = Object.fromEntries(agentNames.map((n) => [n, 'auto']));
  let zipBytes = 0;
  for (let run = 0; run < RUNS; run++) {
    const project = await createProject(ctx.models, tenant._id, { name: `Bench ${run}` });
    const base = `/api/projects/${project._id}/project-io`;
    let t0 = performance.now();
    const imported = await http.post(`${base}/import`, { files }, auth);
    timings.import.push(performance.now() - t0);
    if (imported.status !== 200) throw new Error(`import answered ${imported.status}: ${JSON.stringify(imported.body)}`);
    t0 = performance.now();
    const created = await http.post(`/api/projects/${project._id}/deployments`, { environment: 'dev', agentVersionManifest: manifest, entryAgentName: 'Agent_0' }, auth);
    timings.create.push(performance.now() - t0);
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body).slice(0, 500)}`);
    const deploymentId = (created.body as { deployment: { id: string } }).deployment.id;
    t0 = performance.now();
    const promoted = await http.post(`/api/projects/${project._id}/deployments/${deploymentId}/promote`, { targetEnvironment: 'production' }, auth);
    timings.promote.push(performance.now() - t0);
    if (promoted.status !== 201) throw new Error(`promote answered ${promoted.status}: ${JSON.stringify(promoted.body).slice(0, 500)}`);
    t0 = performance.now();
    const zip = await fetch(`${baseUrl}${base}/export?format=zip`, { headers: auth });
    zipBytes = (await zip.arrayBuffer()).byteLength;
    timings.zip.push(performance.now() - t0);
    if (zip.status !== 200) throw new Error(`zip export answered ${zip.status}`);
    t0 = performance.now();
    const folder = await http.get(`${base}/export`, auth);
    timings.folder.push(performance.now() - t0);
    if (folder.status !== 200) throw new Error(`export answered ${folder.status}`);
  }
  process.stdout.write(`import into an empty project: ${stats(timings.import)}\n`);
  process.stdout.write(`create a deployment (100 agents, auto): ${stats(timings.create)}\n`);
  process.stdout.write(`promote it to production: ${stats(timings.promote)}\n`);
  process.stdout.write(`export as zip (${(zipBytes / 1024).toFixed(0)} KiB): ${stats(timings.zip)}\n`);
  process.stdout.write(`export as JSON: ${stats(timings.folder)}\n`);

  http.close();
  server.close();
  await closeAppContext(ctx);
  await ferret.process.stop();
  await temporal.process.stop();
  rmSync(tmp, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
