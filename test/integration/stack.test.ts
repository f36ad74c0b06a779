// The stack itself: `npm start`'s stack stops cleanly and keeps its data across restarts, the
// bootstrap is idempotent, readiness follows MongoDB, and the dev server keeps workflows on disk.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import {
  ensureSearchAttributes,
  freePort,
  isPortFree,
  ROOT,
  startFerretDb,
  startTemporalDevServer,
} from '../../infra/processes';
import { ensureDevTenant } from '../../infra/seed';
import { probeWorkflow } from '../../workflows/probe';
import { freeDevStackPorts, startDevStack, waitFor } from '../support/dev-stack';
import { startTestStack } from '../support/stack';
import { client } from '../support/http';

// Whole stacks start and stop here: minutes, not jest's default seconds.
jest.setTimeout(240_000);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'sb-stack-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('npm start stack', () => {

  it('uses a given TEMPORAL_ADDRESS and MONGODB_URI instead of starting its own', async () => {
    const ports = await freeDevStackPorts();
    const mongo = `${process.env.SB_TEST_MONGODB_URI!.replace(/\/$/, '')}/external_${Date.now()}`;
    const stack = await startDevStack(path.join(tmp, 'external-data'), ports, {
      TEMPORAL_ADDRESS: process.env.SB_TEST_TEMPORAL_ADDRESS!,
      MONGODB_URI: mongo,
      TWILIO_API_BASE_URL: 'http://127.0.0.1:9/twilio',
    });
    try {
      expect(stack.output()).not.toContain('starting Temporal dev server');
      expect(stack.output()).not.toContain('starting FerretDB');
      expect(stack.output()).toContain(`MongoDB        ${mongo}`);
      // A TWILIO_API_BASE_URL of your own is kept, and no Twilio fake runs.
      expect(stack.output()).toContain('Twilio         http://127.0.0.1:9/twilio');
      expect(stack.output()).not.toContain('serving the Twilio fake');
      // Nothing listens on the ports it would have used for its own Temporal, store and Twilio fake.
      expect(await isPortFree(ports.temporal)).toBe(true);
      expect(await isPortFree(ports.mongo)).toBe(true);
      expect(await isPortFree(ports.postgres)).toBe(true);
      expect(await isPortFree(ports.twilioFake)).toBe(true);
      expect((await client(`http://127.0.0.1:${ports.api}`).get('/readyz')).status).toBe(200);
    } finally {
      stack.child.kill('SIGTERM');
      await stack.exited;
    }
  });

  it('serves the seeded tenant, stops every process on SIGTERM, and finds its data again', async () => {
    const dataDir = path.join(tmp, 'dev-data');
    const ports = await freeDevStackPorts();
    const first = await startDevStack(dataDir, ports);
    const creds = JSON.parse(readFileSync(path.join(dataDir, 'dev-credentials.json'), 'utf8'));
    expect(creds).toEqual({ tenantId: expect.any(String), projectId: expect.any(String), apiKey: expect.stringMatching(/^abl_[0-9a-f]{48}$/), baseUrl: `http://localhost:${ports.api}`, publicKey: expect.stringMatching(/^pk_[0-9a-f]{48}$/) });
    const api = client(`http://127.0.0.1:${ports.api}`);
    const created = await api.post('/api/projects', { key: creds.apiKey, json: { name: 'Survives restarts' } });
    expect(created.status).toBe(201);
    expect(existsSync(path.join(dataDir, 'temporal.sqlite'))).toBe(true);
    expect(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION'))).toBe(true);
    // The log names where the data really is (SWITCHBOARD_DATA_DIR), not the default .data/.
    expect(first.output()).toContain(`(data in ${path.join(dataDir, 'temporal.sqlite')})`);
    expect(first.output()).toContain(`(data in ${path.join(dataDir, 'postgres')}/)`);
    // The Twilio fake runs beside it, on loopback, and says so.
    expect(first.output()).toContain(`Twilio fake    http://127.0.0.1:${ports.twilioFake}`);
    const fakeCalls = await fetch(`http://127.0.0.1:${ports.twilioFake}/__fake/calls`);
    expect(fakeCalls.status).toBe(200);
    expect(await fakeCalls.json()).toEqual({ calls: [] });

    // The Web UI decodes payloads through the API's codec endpoint, which answers the UI's origin.
    const settings = (await (await fetch(`http://127.0.0.1:${ports.ui}/api/v1/settings`)).json()) as { Codec: { Endpoint: string } };
    expect(settings.Codec.Endpoint).toBe(`http://localhost:${ports.api}/codec`);
    const uiOrigin = `http://localhost:${ports.ui}`;
    const admin = JSON.parse(readFileSync(path.join(dataDir, 'dev-secrets.json'), 'utf8')).PLATFORM_ADMIN_TOKEN as string;
    const decoded = await api.post('/codec/decode', { json: { payloads: [] }, headers: { origin: uiOrigin, 'x-platform-admin-token': admin } });
    expect(decoded.status).toBe(200);
    expect(decoded.headers.get('access-control-allow-origin')).toBe(uiOrigin);
    // One developer on loopback: the UI's own calls need no sign-in there (CODEC_TRUST_LOCAL_UI), others still do.
    expect((await api.post('/codec/decode', { json: { payloads: [] }, headers: { origin: uiOrigin } })).status).toBe(200);
    expect((await api.post('/codec/decode', { json: { payloads: [] }, headers: { origin: 'http://evil.example' } })).status).toBe(401);

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    for (const port of Object.values(ports)) expect(await isPortFree(port)).toBe(true);

    const second = await startDevStack(dataDir, ports);
    try {
      const again = JSON.parse(readFileSync(path.join(dataDir, 'dev-credentials.json'), 'utf8'));
      expect(again).toEqual(creds);
      const project = await api.get(`/api/projects/${created.body.project.id}`, { key: creds.apiKey });
      expect(project.status).toBe(200);
      expect(project.body.project.name).toBe('Survives restarts');
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});

describe('bootstrap', () => {
  it('does nothing the second time: every tool and dependency is already in place', () => {
    const stamps = ['temporal', 'ferretdb'].map((t) => readFileSync(path.join(ROOT, '.tools', 'bin', `${t}.version`), 'utf8'));
    const run = spawnSync(process.execPath, ['infra/bootstrap.js', '--test'], { cwd: ROOT, encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe('');
    expect(['temporal', 'ferretdb'].map((t) => readFileSync(path.join(ROOT, '.tools', 'bin', `${t}.version`), 'utf8'))).toEqual(stamps);
  });

  it('seeds the dev tenant once and reuses it', async () => {
    const stack = await startTestStack();
    try {
      const file = path.join(tmp, 'creds.json');
      const first = await ensureDevTenant(stack.ctx.models, file, 'http://localhost:1');
      const second = await ensureDevTenant(stack.ctx.models, file, 'http://localhost:1');
      expect(first.created).toBe(true);
      expect(second).toEqual({ credentials: first.credentials, created: false });
      expect(await stack.ctx.models.Tenant.countDocuments({})).toBe(1);
      expect(await stack.ctx.models.ApiKey.countDocuments({})).toBe(1);
      // Data reset under the file: the seed repairs itself instead of handing out a dead key.
      await stack.ctx.models.ApiKey.deleteMany({});
      const repaired = await ensureDevTenant(stack.ctx.models, file, 'http://localhost:1');
      expect(repaired.created).toBe(true);
      expect(repaired.credentials.tenantId).toBe(first.credentials.tenantId);
      const me = await client(stack.baseUrl).get('/api/auth/me', { key: repaired.credentials.apiKey });
      expect(me.status).toBe(200);
    } finally {
      await stack.close();
    }
  });
});

describe('readiness follows MongoDB', () => {


  it('answers 503 while MongoDB is down, naming it to the operator only, and 200 again when it returns with its data', async () => {
    const dataDir = path.join(tmp, 'ferret-ready');
    const port = await freePort();
    let ferret = await startFerretDb({ dataDir, port });
    const stack = await startTestStack({ mongoUri: ferret.uri });
    const api = client(stack.baseUrl);
    try {
      expect((await api.get('/readyz')).status).toBe(200);
      await stack.ctx.models.Tenant.create({ name: 'Persisted', slug: 'persisted' });
      await ferret.process.stop();
      // The public probe reuses a check for a second: the 200 just above may be answered once more.
      const down = await waitFor(async () => {
        const res = await api.get('/readyz');
        return res.status === 503 ? res : undefined;
      }, 10_000);
      expect(down.status).toBe(503);
      expect(down.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Not ready' } });
      const report = await api.get('/api/admin/readiness', { headers: { 'x-platform-admin-token': stack.config.PLATFORM_ADMIN_TOKEN! } });
      expect(report.body.status).toBe('not_ready');
      expect(report.body.checks.mongodb).toEqual({ ok: false, error: expect.any(String) });
      expect(report.body.checks.temporal).toEqual({ ok: true });
      expect(down.text).not.toContain(report.body.checks.mongodb.error);
      expect((await api.get('/healthz')).status).toBe(200);

      ferret = await startFerretDb({ dataDir, port });
      const back = await waitFor(async () => {
        const res = await api.get('/readyz');
        return res.status === 200 ? res : undefined;
      }, 30_000);
      expect(back.body.status).toBe('ready');
      // FerretDB (and the PostgreSQL under it) kept the data across the restart.
      expect(await stack.ctx.models.Tenant.findOne({ slug: 'persisted' }).lean()).toMatchObject({ name: 'Persisted' });
    } finally {
      await stack.close().catch(() => undefined);
      await ferret.process.stop();
    }
  });
});

describe('Temporal dev server on its SQLite file', () => {


  it('still has a running workflow and its search attributes after a restart', async () => {
    const dbFile = path.join(tmp, 'temporal.sqlite');
    const port = await freePort();
    let server = await startTemporalDevServer({ port, uiPort: null, dbFile });
    const workflowId = 'probe/restart-test';
    try {
      let connection = await Connection.connect({ address: server.address });
      await new Client({ connection }).workflow.start(probeWorkflow, { workflowId, taskQueue: 'no-worker' });
      await connection.close();
      await server.process.stop();

      server = await startTemporalDevServer({ port, uiPort: null, dbFile });
      expect(await ensureSearchAttributes(server.address, 'default')).toEqual([]);
      connection = await Connection.connect({ address: server.address });
      const description = await new Client({ connection }).workflow.getHandle(workflowId).describe();
      expect(description.status.name).toBe('RUNNING');
      await connection.close();
    } finally {
      await server.process.stop();
    }
  });
});
