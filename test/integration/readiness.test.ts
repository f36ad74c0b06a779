// Readiness: the public probe says only ready or not (and, when real-time voice is configured,
// whether LiveKit answers, which never makes the API unready); the reason goes to the logs and to
// the operator's report (GET /api/admin/readiness), never to anonymous callers.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createApp } from '../../api/app';
import { buildAppContext, closeAppContext } from '../../api/bootstrap';
import { type AppContext } from '../../api/context';
import { freePort } from '../../infra/processes';
import { type Config } from '../../lib/config';
import { startTestStack, seedTenant, testConfig, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { PUBLIC_READINESS_REUSE_MS } from '../../api/health/readiness';
import { eventually } from '../support/eventually';

let up: TestStack;

beforeAll(async () => {
  up = await startTestStack();
});
afterAll(() => up.close());

const operator = (stack: { config: { PLATFORM_ADMIN_TOKEN?: string } }) => ({ 'x-platform-admin-token': stack.config.PLATFORM_ADMIN_TOKEN! });

describe('with every dependency up', () => {
  it('answers ready publicly with nothing else but whether LiveKit answers', async () => {
    const res = await client(up.baseUrl).get('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready', livekit: 'ok' });
  });

  it('shows the checks to the operator', async () => {
    const res = await client(up.baseUrl).get('/api/admin/readiness', { headers: operator(up) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, status: 'ready', checks: { mongodb: { ok: true }, temporal: { ok: true }, livekit: { ok: true } } });
  });

  it('refuses the report without the operator token, also to a tenant admin', async () => {
    const api = client(up.baseUrl);
    const anonymous = await api.get('/api/admin/readiness');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error.code).toBe('UNAUTHORIZED');
    const tenant = await seedTenant(up.ctx);
    expect((await api.get('/api/admin/readiness', { key: tenant.adminKey })).status).toBe(401);
    expect((await api.get('/api/admin/readiness', { headers: { 'x-platform-admin-token': 'x'.repeat(48) } })).status).toBe(401);
  });

  it('documents both routes', async () => {
    const doc = await client(up.baseUrl).get('/openapi.json');
    expect(Object.keys(doc.body.paths['/readyz'].get.responses)).toEqual(expect.arrayContaining(['200', '503']));
    const report = doc.body.paths['/api/admin/readiness'].get;
    expect(Object.keys(report.responses)).toEqual(expect.arrayContaining(['200', '401', '503']));
    expect(report.responses['200'].content['application/json'].schema.properties.checks).toBeDefined();
  });
});

describe('with Temporal unreachable', () => {
  let ctx: AppContext;
  let server: Server;
  let baseUrl: string;
  let temporalAddress: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    // Nothing listens there: the Temporal check fails with the connection error.
    temporalAddress = `127.0.0.1:${await freePort()}`;
    const config = testConfig({ TEMPORAL_ADDRESS: temporalAddress });
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    ctx = await buildAppContext(config, pino({ level: 'info' }, sink));
    server = createServer(createApp(ctx));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await closeAppContext(ctx);
  });

  it('answers 503 publicly with no detail, and gives the reason to the logs and the operator', async () => {
    const api = client(baseUrl);
    const down = await api.get('/readyz');
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Not ready' } });

    // The store's check is not what this case is about: on a loaded machine one ping may pass its
    // 2 s bound, so the report is read again until the store answers.
    const report = await eventually(
      () => api.get('/api/admin/readiness', { headers: operator(ctx) }),
      (res) => res.body?.checks?.mongodb?.ok === true,
      30_000,
      250,
    );
    expect(report.status).toBe(200);
    expect(report.body).toEqual({
      success: true,
      status: 'not_ready',
      checks: { mongodb: { ok: true }, temporal: { ok: false, error: expect.any(String) }, livekit: { ok: true } },
    });
    const reason: string = report.body.checks.temporal.error;
    expect(reason.length).toBeGreaterThan(0);
    // The public answer carries neither the reason nor which dependency failed.
    expect(down.text).not.toContain(reason);
    expect(down.text).not.toMatch(/temporal|mongo/i);

    const logged = logLines.map((line) => JSON.parse(line) as { msg: string; checks?: { temporal: { error?: string } } });
    expect(logged).toContainEqual(expect.objectContaining({ msg: expect.stringContaining('not ready'), checks: expect.objectContaining({ temporal: { ok: false, error: expect.any(String) } }) }));
  });
});

/** An API on its own context with `config`, its log lines kept. */
async function apiWith(config: Config): Promise<{ baseUrl: string; ctx: AppContext; logLines: string[]; close(): Promise<void> }> {
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  const ctx = await buildAppContext(config, pino({ level: 'info' }, sink));
  const server = createServer(createApp(ctx));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    ctx,
    logLines,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeAppContext(ctx);
    },
  };
}

describe('real-time voice is optional', () => {
  it('with LiveKit unreachable, the API stays ready and says so; the operator sees why', async () => {
    // Nothing listens there: LiveKit's server API does not answer.
    const port = await freePort();
    const app = await apiWith(testConfig({ LIVEKIT_URL: `ws://127.0.0.1:${port}` }));
    try {
      const api = client(app.baseUrl);
      const ready = await api.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ready', livekit: 'unreachable' });
      const report = await api.get('/api/admin/readiness', { headers: operator(app.ctx) });
      expect(report.body).toEqual({
        success: true,
        status: 'ready',
        checks: { mongodb: { ok: true }, temporal: { ok: true }, livekit: { ok: false, error: expect.any(String) } },
      });
      // The reason names the server, for the operator only.
      expect(report.body.checks.livekit.error).toContain(`127.0.0.1:${port}`);
      expect(ready.text).not.toContain(String(port));
      const logged = app.logLines.map((line) => JSON.parse(line) as { msg: string; checks?: { livekit?: { ok: boolean } } });
      expect(logged).toContainEqual(expect.objectContaining({ msg: expect.stringContaining('LiveKit does not answer'), checks: expect.objectContaining({ livekit: expect.objectContaining({ ok: false }) }) }));
    } finally {
      await app.close();
    }
  });

  it('with a wrong LiveKit key pair, the check fails as for an unreachable server', async () => {
    const app = await apiWith(testConfig({ LIVEKIT_API_SECRET: 'not-the-secret-'.padEnd(40, 'x') }));
    try {
      expect((await client(app.baseUrl).get('/readyz')).body).toEqual({ status: 'ready', livekit: 'unreachable' });
    } finally {
      await app.close();
    }
  });

  it('public probes arriving together share one check, reused for a second; the operator checks anew', async () => {
    // A LiveKit stand-in that counts its server API calls (the check is one call).
    let calls = 0;
    const liveKit = createServer((_req, res) => {
      calls++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"rooms":[]}');
    });
    await new Promise<void>((resolve) => liveKit.listen(0, '127.0.0.1', resolve));
    const app = await apiWith(testConfig({ LIVEKIT_URL: `ws://127.0.0.1:${(liveKit.address() as AddressInfo).port}` }));
    try {
      const api = client(app.baseUrl);
      const answers = await Promise.all(Array.from({ length: 50 }, () => api.get('/readyz')));
      for (const res of answers) expect(res.body).toEqual({ status: 'ready', livekit: 'ok' });
      // One check, or two on a machine so loaded that the fifty spread over more than a second.
      expect(calls).toBeGreaterThanOrEqual(1);
      expect(calls).toBeLessThanOrEqual(2);
      const before = calls;
      expect((await api.get('/api/admin/readiness', { headers: operator(app.ctx) })).body.checks.livekit).toEqual({ ok: true });
      expect(calls).toBe(before + 1);
      await new Promise((resolve) => setTimeout(resolve, PUBLIC_READINESS_REUSE_MS + 100));
      expect((await api.get('/readyz')).body).toEqual({ status: 'ready', livekit: 'ok' });
      expect(calls).toBe(before + 2);
    } finally {
      await app.close();
      liveKit.closeAllConnections();
      await new Promise<void>((resolve) => liveKit.close(() => resolve()));
    }
  });

  it('without real-time voice configured, readiness does not mention LiveKit', async () => {
    const app = await apiWith({ ...testConfig(), LIVEKIT_URL: undefined, LIVEKIT_API_KEY: undefined, LIVEKIT_API_SECRET: undefined });
    try {
      const api = client(app.baseUrl);
      expect((await api.get('/readyz')).body).toEqual({ status: 'ready' });
      expect((await api.get('/api/admin/readiness', { headers: operator(app.ctx) })).body.checks).toEqual({ mongodb: { ok: true }, temporal: { ok: true } });
    } finally {
      await app.close();
    }
  });
});
