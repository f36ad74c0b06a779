// Deployment routes on a 100-agent project (the generated project of bench/support/generated-project.ts): the
// time to create a deployment pinning every agent (`auto`) and to promote it to production (which
// compiles the pinned versions together), through the HTTP API, several runs.
//   node --import tsx bench/deployment-create.ts [--runs 5]
// Starts FerretDB in a temp dir and the API in process; saving the 100 versions first is not timed.
// Prints figures, asserts nothing.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import { type AddressInfo } from 'node:net';
import { buildAppContext, closeAppContext } from '../api/bootstrap';
import { createApp } from '../api/app';
import { createAgent, createVersion, putToolFile } from '../api/agents/service';
import { createApiKey, createProject, createTenant } from '../api/tenancy/service';
import { createLogger } from '../lib/logger';
import { loadConfig } from '../lib/config';
import { startFerretDb } from '../infra/processes';
import { generatedProject as project } from './support/generated-project';
import { jsonClient } from './support/json-client';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
const RUNS = Number(values.runs);

async function main() {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-bench-'));
  const ferret = await startFerretDb({ dataDir: path.join(tmp, 'ferret'), port: 0 });
  const config = loadConfig({
    MONGODB_URI: `${ferret.uri.replace(/\/$/, '')}/bench`,
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    JWT_SECRET: 'b'.repeat(40),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS: '1000000',
  });
  const ctx = await buildAppContext(config, createLogger({ level: 'silent' }));
  const server = createServer(createApp(ctx));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const http = jsonClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);

  const tenant = await createTenant(ctx.models, { name: 'bench' });
  const proj = await createProject(ctx.models, tenant._id, { name: 'Bench' });
  const { key } = await createApiKey(ctx.models, tenant._id, { name: 'bench', permissions: ['admin'] });
  const scope = { tenantId: tenant._id, projectId: proj._id };
  const files = project();
  const agents = files.filter((f) => f.path.startsWith('agents/'));
  for (const tool of files.filter((f) => f.path.startsWith('tools/'))) await putToolFile(ctx.models, scope, path.basename(tool.path, '.tools.abl'), tool.content, null);
  const names = agents.map((f) => path.basename(f.path, '.agent.abl'));
  for (const [i, f] of agents.entries()) await createAgent(ctx.models, scope, { name: names[i]!, domain: 'bench', dslContent: f.content });
  const t0 = performance.now();
  for (const name of names) await createVersion(ctx.models, scope, name, {});
  process.stdout.write(`${names.length} agents with a version each (setup, ${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);

  const headers = { authorization: `Bearer ${key}` };
  const manifest = Object.fromEntries(names.map((n) => [n, 'auto']));
  const create: number[] = [];
  const promote: number[] = [];
  for (let r = 0; r < RUNS + 1; r++) {
    let t = performance.now();
    const created = await http.post(`/api/projects/${proj._id}/deployments`, { environment: 'dev', agentVersionManifest: manifest, entryAgentName: 'Agent_0' }, headers);
    const createMs = performance.now() - t;
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
    const id = (created.body as { deployment: { id: string } }).deployment.id;
    t = performance.now();
    const promoted = await http.post(`/api/projects/${proj._id}/deployments/${id}/promote`, { targetEnvironment: 'production' }, headers);
    const promoteMs = performance.now() - t;
    if (promoted.status !== 201) throw new Error(`promote: ${promoted.status} ${JSON.stringify(promoted.body).slice(0, 500)}`);
    // The first run warms the JIT and the connection pool.
    if (r > 0) {
      create.push(createMs);
      promote.push(promoteMs);
    }
  }
  const line = (label: string, xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `${label.padEnd(46)} min ${s[0]!.toFixed(0)} ms  median ${s[Math.floor(s.length / 2)]!.toFixed(0)} ms  max ${s[s.length - 1]!.toFixed(0)} ms`;
  };
  process.stdout.write(`${line('create (100 agents, auto)', create)}\n${line('promote to production (compiles 100 versions)', promote)}\n`);

  server.close();
  await closeAppContext(ctx);
  await ferret.process.stop();
  rmSync(tmp, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
