// Project export and import of the generated 100-agent project (bench/support/generated-project.ts)
// through the HTTP API: import into an empty project, export as zip, export as JSON; several runs,
// each into a new project. Starts its own stack (Temporal dev server in memory, FerretDB in a temp
// dir, the API in this process). Prints figures, asserts nothing.
//   node --import tsx bench/project-io.ts [--runs 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createApp } from '../api/app';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApiKey, createProject, createTenant } from '../api/tenancy/service';
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

  const tenant = await createTenant(ctx.models, { name: 'bench-project-io' });
  const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
  const auth = { authorization: `Bearer ${key}` };
  const files = importFiles();
  const bytes = Object.values(files).reduce((n, c) => n + Buffer.byteLength(c), 0);
  process.stdout.write(`project-io bench: ${Object.keys(files).length} files, ${(bytes / 1024).toFixed(0)} KiB, ${RUNS} runs\n`);

  const timings = { import: [] as number[], zip: [] as number[], folder: [] as number[] };
  let zipBytes = 0;
  for (let run = 0; run < RUNS; run++) {
    const project = await createProject(ctx.models, tenant._id, { name: `Bench ${run}` });
    const base = `/api/projects/${project._id}/project-io`;
    let t0 = performance.now();
    const imported = await http.post(`${base}/import`, { files }, auth);
    timings.import.push(performance.now() - t0);
    if (imported.status !== 200) throw new Error(`import answered ${imported.status}: ${JSON.stringify(imported.body)}`);
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
