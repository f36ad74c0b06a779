// The callback URL of an async agentic-app run is a destination the platform itself calls, so it
// gets the rules of HTTP-async receivers, not the looser ones of HTTP tools: a private, loopback or
// link-local address is refused when the run is accepted (a host name by what it resolves to),
// whatever TOOL_ALLOW_PRIVATE_NETWORKS says; only APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS
// exempts a receiver; a redirect is neither followed nor retried; in production the URL must be https.
import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { hostname } from 'node:os';
import { isPublicAddress } from '../../lib/net/destination';
import { eventually } from '../support/eventually';
import { client } from '../support/http';
import { publishAgent } from '../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';

const TOKEN = 'callback-token-0123456789';

let receiver: Server;
let receiverPort: number;
let receiverOrigin: string;
/** A second server the receiver redirects to. */
let elsewhere: Server;
let elsewhereOrigin: string;
const delivered: string[] = [];
const elsewhereGot: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered.push(req.url ?? '');
      if (req.url === '/moved') {
        res.writeHead(307, { location: `${elsewhereOrigin}/hook` });
        res.end();
        return;
      }
      res.writeHead(200);
      res.end();
    });
  });
  elsewhere = createServer((req, res) => {
    elsewhereGot.push(req.url ?? '');
    req.resume();
    res.writeHead(200);
    res.end();
  });
  await new Promise<void>((r) => receiver.listen(0, '0.0.0.0', r));
  await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
  receiverPort = (receiver.address() as AddressInfo).port;
  receiverOrigin = `http://127.0.0.1:${receiverPort}`;
  elsewhereOrigin = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of [receiver, elsewhere]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

async function appStack(env: Record<string, string>, worker: boolean): Promise<{ stack: TestStack; t: SeededTenant; api: ReturnType<typeof client> }> {
  const stack = await startTestStack({ worker, env });
  const t = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  await publishAgent(api, t, 'Helper', 'AGENT: Helper\nGOAL: "Help the caller."\n');
  return { stack, t, api };
}

const execute = (s: { api: ReturnType<typeof client>; t: SeededTenant }, callbackUrl: string) =>
  s.api.post(`/api/v2/apps/${s.t.projectId}/environments/dev/runs/execute`, {
    headers: { 'x-api-key': s.t.adminKey },
    json: { sessionIdentity: [{ type: 'sessionReference', value: `ref-${Math.random()}` }], input: [{ type: 'text', content: 'hi' }], isAsync: true, callbackUrl, callbackToken: TOKEN },
  });

describe('on a development box where tools may reach private networks', () => {
  let s: Awaited<ReturnType<typeof appStack>>;
  beforeAll(async () => {
    // TOOL_ALLOW_PRIVATE_NETWORKS and a tool allowance are for tools, not for app-run callbacks.
    s = await appStack({ TOOL_ALLOW_PRIVATE_NETWORKS: 'true', TOOL_ALLOWED_PRIVATE_DESTINATIONS: `127.0.0.1:${receiverPort}` }, true);
  });
  afterAll(() => s.stack.close());

  it('refuses a loopback callback URL with 422, and starts no run', async () => {
    const before = delivered.length;
    const res = await execute(s, `${receiverOrigin}/hook`);
    expect([res.status, res.body.error?.code]).toEqual([422, 'UNPROCESSABLE_ENTITY']);
    expect(res.body.error.message).toMatch(/^body\.callbackUrl: private, loopback/);
    expect(await s.stack.ctx.models.AppRun.countDocuments({ tenantId: s.t.tenantId })).toBe(0);
    expect(delivered.length).toBe(before);
  });

  it('refuses a host name that resolves to a non-public address', async () => {
    const name = hostname();
    // This machine's own name resolves to one of its own (non-public) addresses.
    const addresses = await lookup(name, { all: true });
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every((a) => !isPublicAddress(a.address))).toBe(true);
    const res = await execute(s, `http://${name}:${receiverPort}/hook`);
    expect([res.status, res.body.error?.code]).toEqual([422, 'UNPROCESSABLE_ENTITY']);
    expect(res.body.error.message).toContain('body.callbackUrl');
    expect(await s.stack.ctx.models.AppRun.countDocuments({ tenantId: s.t.tenantId })).toBe(0);
  });
});

describe('with the receiver allowed for app-run callbacks', () => {
  let s: Awaited<ReturnType<typeof appStack>>;
  beforeAll(async () => {
    s = await appStack({ APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS: `127.0.0.1:${receiverPort}` }, true);
  });
  afterAll(() => s.stack.close());

  it('delivers to it, and does not follow a redirect elsewhere', async () => {
    const ok = await execute(s, `${receiverOrigin}/hook`);
    expect(ok.status).toBe(202);
    await eventually(
      async () => delivered,
      (d) => d.includes('/hook'),
      30_000,
      100,
    );
    const moved = await execute(s, `${receiverOrigin}/moved`);
    expect(moved.status).toBe(202);
    // The redirect ends the delivery: one attempt, not followed, not retried.
    const result = await (await s.stack.ctx.temporal.client()).workflow.getHandle(`app-run/${moved.body.runId}`).result();
    expect(result).toEqual({ status: 'success', delivered: false });
    expect(delivered.filter((u) => u === '/moved')).toHaveLength(1);
    expect(elsewhereGot).toEqual([]);
    const run = await s.stack.ctx.models.AppRun.findById(moved.body.runId).lean();
    expect(run!.deliveredAt).toBeNull();
  });
});

describe('in production', () => {
  let s: Awaited<ReturnType<typeof appStack>>;
  beforeAll(async () => {
    const allowed = `127.0.0.1:${receiverPort}`;
    s = await appStack({ NODE_ENV: 'production', APP_RUN_CALLBACK_ALLOWED_PRIVATE_DESTINATIONS: allowed, TOOL_ALLOWED_PRIVATE_DESTINATIONS: allowed }, false);
  });
  afterAll(() => s.stack.close());

  it('refuses an http:// callback URL, even to an allowed receiver', async () => {
    const res = await execute(s, `${receiverOrigin}/hook`);
    expect([res.status, res.body.error?.code, res.body.error?.message]).toEqual([422, 'UNPROCESSABLE_ENTITY', 'body.callbackUrl: must use https://']);
    expect(await s.stack.ctx.models.AppRun.countDocuments({ tenantId: s.t.tenantId })).toBe(0);
  });
});
