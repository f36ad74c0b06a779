// HTTP-async webhook subscriptions against the real stack, with a real receiving server on
// loopback (allowed for this stack only): create with the secret shown once and sealed at rest,
// validation, SSRF refusals, pause/resume, rotation, signed test messages verified with the
// documented code, recent deliveries, permissions and tenancy.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { verifyAblSignature } from '../../../examples/http-async/verify-signature';

jest.setTimeout(60_000);

interface Received {
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
}

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let receiver: Server;
let receiverUrl: string;
let downUrl: string;
let refusedPort: number;
const received: Received[] = [];
let answerStatus = 200;

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, rawBody: Buffer.concat(chunks) });
      res.writeHead(answerStatus, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  receiverUrl = `http://127.0.0.1:${await listen(receiver)}/hooks/abl`;
  // A port nothing listens on, allowed all the same: the receiver is down.
  const gone = createServer();
  const gonePort = await listen(gone);
  await new Promise((r) => gone.close(r));
  downUrl = `http://127.0.0.1:${gonePort}/down`;
  // Loopback too, but not on the allow-list: refused.
  const refused = createServer((_req, res) => res.end());
  refusedPort = await listen(refused);
  await new Promise((r) => refused.close(r));
  stack = await startTestStack({ allowPrivate: { httpAsync: [receiverUrl, downUrl] } });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});

const base = (projectId = t.projectId) => `/api/projects/${projectId}/channels/http-async/subscriptions`;

interface Subscription {
  id: string;
  sourceId: string;
  sourceType: string;
  name: string;
  callbackUrl: string;
  events: string[];
  environment: string;
  status: string;
  secretVersion: number;
  secretRotatedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

async function create(fields: Record<string, unknown> = {}, key = t.adminKey, projectId = t.projectId) {
  return api.post<{ success: boolean; subscription: Subscription; signingSecret: string; error: { code: string; message: string } }>(base(projectId), {
    key,
    json: { name: 'Support front end', callbackUrl: receiverUrl, ...fields },
  });
}

async function sendTest(id: string, key = t.adminKey) {
  return api.post<{ success: boolean; result: { messageId: string; delivered: boolean; statusCode: number | null; latencyMs: number; error: string | null } }>(
    `${base()}/${id}/test`,
    { key },
  );
}

describe('create and read', () => {
  it('answers 201 with the Source ID, status active, default events and the secret, which only create shows and the store keeps sealed', async () => {
    const res = await create({ events: ['agent.status', 'agent.response', 'agent.status'], environment: 'staging' });
    expect(res.status).toBe(201);
    const sub = res.body.subscription;
    expect(sub).toEqual({
      id: expect.stringMatching(/^whs-[a-z0-9]+$/),
      sourceId: sub.id,
      sourceType: 'webhook_subscription',
      name: 'Support front end',
      callbackUrl: receiverUrl,
      events: ['agent.response', 'agent.status'],
      environment: 'staging',
      status: 'active',
      secretVersion: 1,
      secretRotatedAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(res.body.signingSecret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const got = await api.get(`${base()}/${sub.id}`, { key: t.adminKey });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ success: true, subscription: sub });
    expect(got.text).not.toContain(res.body.signingSecret);
    const list = await api.get(base(), { key: t.adminKey });
    expect(list.text).not.toContain(res.body.signingSecret);

    const raw = await stack.ctx.models.HttpAsyncSubscription.collection.findOne({ _id: sub.id } as never);
    expect(JSON.stringify(raw)).not.toContain(res.body.signingSecret.slice(6));
    expect(raw).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId, secret: { iv: expect.any(String), tag: expect.any(String), data: expect.any(String) } });
  });

  it('defaults to agent.response in dev, and allows the same URL and environment twice (each with its own id and secret)', async () => {
    const a = await create({ name: 'Twin' });
    const b = await create({ name: 'Twin' });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.subscription).toMatchObject({ events: ['agent.response'], environment: 'dev' });
    expect(a.body.subscription.id).not.toBe(b.body.subscription.id);
    expect(a.body.signingSecret).not.toBe(b.body.signingSecret);
  });

  it('lists newest first with limit, offset and total', async () => {
    const fresh = await seedTenant(stack.ctx);
    for (const name of ['one', 'two', 'three']) expect((await create({ name }, fresh.adminKey, fresh.projectId)).status).toBe(201);
    const page = await api.get(`${base(fresh.projectId)}?limit=2&offset=1`, { key: fresh.adminKey });
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ success: true, total: 3, offset: 1, limit: 2 });
    expect(page.body.subscriptions.map((s: Subscription) => s.name)).toEqual(['two', 'one']);
  });

  it('refuses bad input with 400 in the envelope', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '' }, 'body.name'],
      [{ name: '   ' }, 'body.name'],
      [{ callbackUrl: 'ftp://example.com/x' }, 'body.callbackUrl'],
      [{ callbackUrl: 'not a url' }, 'body.callbackUrl'],
      [{ callbackUrl: 'https://user:pw@example.com/hook' }, 'body.callbackUrl'],
      [{ callbackUrl: 'https://example.com/a b' }, 'body.callbackUrl'],
      [{ events: [] }, 'body.events'],
      [{ events: ['agent.typing'] }, 'body.events'],
      [{ environment: 'qa' }, 'body.environment'],
      [{ status: 'paused' }, 'body'],
    ];
    for (const [fields, field] of cases) {
      const res = await create(fields);
      expect([JSON.stringify(fields), res.status, res.body.success, res.body.error.code]).toEqual([JSON.stringify(fields), 400, false, 'VALIDATION_ERROR']);
      expect(res.body.error.message).toContain(field);
    }
    const noBody = await api.post(base(), { key: t.adminKey });
    expect(noBody.status).toBe(400);
  });
});

describe('destination rules', () => {
  it.each([
    ['loopback not on the allow-list', () => `http://127.0.0.1:${refusedPort}/x`],
    ['localhost', () => 'http://localhost:8080/x'],
    ['a name under .localhost', () => 'https://api.localhost/x'],
    ['IPv6 loopback', () => 'http://[::1]:8080/x'],
    ['an IPv6 spelling of loopback', () => 'http://[::ffff:127.0.0.1]:8080/x'],
    ['cloud metadata (link-local)', () => 'http://169.254.169.254/latest/meta-data'],
    ['a private network', () => 'https://10.1.2.3/hook'],
    ['a private network (192.168)', () => 'https://192.168.1.10/hook'],
    ['unspecified', () => 'http://0.0.0.0:9/x'],
  ])('refuses %s with 422 and stores nothing', async (_label, url) => {
    const fresh = await seedTenant(stack.ctx);
    const res = await create({ callbackUrl: url() }, fresh.adminKey, fresh.projectId);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('UNPROCESSABLE_ENTITY');
    expect(res.body.error.message).toMatch(/^body\.callbackUrl: private, loopback/);
    expect(await stack.ctx.models.HttpAsyncSubscription.countDocuments({ projectId: fresh.projectId })).toBe(0);
  });

  it('refuses a host that does not resolve, or a URL the parser refuses though the pattern takes it, with 422', async () => {
    const res = await create({ callbackUrl: 'https://no-such-host.invalid/hook' });
    expect(res.status).toBe(422);
    expect(res.body.error.message).toContain('does not resolve');
    const unparsable = await create({ callbackUrl: 'http://[/x' });
    expect([unparsable.status, unparsable.body.error.message]).toEqual([422, 'body.callbackUrl: is not a URL the platform can call']);
  });

  it('checks a new URL on update the same way, and keeps the old one when refused', async () => {
    const { subscription } = (await create()).body;
    const res = await patch(subscription.id, { callbackUrl: 'http://169.254.169.254/' });
    expect(res.status).toBe(422);
    expect((await api.get(`${base()}/${subscription.id}`, { key: t.adminKey })).body.subscription.callbackUrl).toBe(receiverUrl);
  });
});

async function patch(id: string, json: Record<string, unknown>, key = t.adminKey) {
  const res = await fetch(`${stack.baseUrl}${base()}/${id}`, { method: 'PATCH', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(json) });
  return { status: res.status, body: (await res.json()) as { success: boolean; subscription: Subscription; error: { code: string; message: string } } };
}

describe('update, pause, resume, delete', () => {
  it('changes name, URL and events only', async () => {
    const { subscription } = (await create()).body;
    const res = await patch(subscription.id, { name: 'Renamed', callbackUrl: downUrl, events: ['agent.media'] });
    expect(res.status).toBe(200);
    expect(res.body.subscription).toMatchObject({ id: subscription.id, name: 'Renamed', callbackUrl: downUrl, events: ['agent.media'], environment: 'dev', status: 'active', secretVersion: 1 });
    expect((await patch(subscription.id, { environment: 'production' })).status).toBe(400);
  });

  it('pauses and resumes, idempotently', async () => {
    const { subscription } = (await create()).body;
    const paused = await api.post(`${base()}/${subscription.id}/pause`, { key: t.adminKey });
    expect([paused.status, paused.body.subscription.status]).toEqual([200, 'paused']);
    expect((await api.post(`${base()}/${subscription.id}/pause`, { key: t.adminKey })).body.subscription.status).toBe('paused');
    expect((await api.get(`${base()}/${subscription.id}`, { key: t.adminKey })).body.subscription.status).toBe('paused');
    const resumed = await api.post(`${base()}/${subscription.id}/resume`, { key: t.adminKey });
    expect([resumed.status, resumed.body.subscription.status]).toEqual([200, 'active']);
  });

  it('deletes the subscription and its deliveries', async () => {
    const { subscription } = (await create()).body;
    await sendTest(subscription.id);
    expect(await stack.ctx.models.HttpAsyncDelivery.countDocuments({ subscriptionId: subscription.id })).toBe(1);
    expect((await api.delete(`${base()}/${subscription.id}`, { key: t.adminKey })).status).toBe(200);
    expect((await api.get(`${base()}/${subscription.id}`, { key: t.adminKey })).status).toBe(404);
    expect((await api.delete(`${base()}/${subscription.id}`, { key: t.adminKey })).status).toBe(404);
    expect(await stack.ctx.models.HttpAsyncDelivery.countDocuments({ subscriptionId: subscription.id })).toBe(0);
  });
});

describe('test message, signature and recent deliveries', () => {
  it('POSTs a callback-shaped body signed over timestamp.rawBody, verifiable with the documented code', async () => {
    const created = (await create()).body;
    answerStatus = 200;
    const before = received.length;
    const res = await sendTest(created.subscription.id);
    expect(res.status).toBe(200);
    expect(res.body.result).toEqual({ messageId: expect.stringMatching(/^ham-/), delivered: true, statusCode: 200, latencyMs: expect.any(Number), error: null });
    expect(received.length).toBe(before + 1);
    const got = received[received.length - 1]!;
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['x-abl-event']).toBe('agent.response');
    const timestamp = got.headers['x-abl-timestamp'] as string;
    const signature = got.headers['x-abl-signature'] as string;
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(verifyAblSignature(created.signingSecret, got.rawBody, timestamp, signature)).toBe(true);
    // Any change to the body, the timestamp or the secret fails the check.
    expect(verifyAblSignature(created.signingSecret, Buffer.concat([got.rawBody, Buffer.from(' ')]), timestamp, signature)).toBe(false);
    expect(verifyAblSignature(created.signingSecret, got.rawBody, String(Number(timestamp) + 1), signature)).toBe(false);
    expect(verifyAblSignature(created.signingSecret.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')), got.rawBody, timestamp, signature)).toBe(false);
    expect(verifyAblSignature(created.signingSecret, got.rawBody, timestamp, signature, Number(timestamp) + 301)).toBe(false);

    const body = JSON.parse(got.rawBody.toString('utf8'));
    expect(body).toEqual({
      message_id: res.body.result.messageId,
      session_key: `http_async:${t.projectId}:${created.subscription.id}:test`,
      response: expect.any(String),
      channel_output: { kind: 'text', text: body.response },
      outcome: { status: 'ok', usedFallback: false },
      trace_context: { session_id: '', delivery: 'correlation_only' },
      session_id: '',
      is_new_session: false,
      response_metadata: { isLlmGenerated: false, responseProvenance: { schemaVersion: 1, kind: 'static', disclaimerRequired: false, usedLlmInternally: false } },
      metadata: { test: true },
    });

    const deliveries = await api.get(`${base()}/${created.subscription.id}/deliveries`, { key: t.adminKey });
    expect(deliveries.status).toBe(200);
    expect(deliveries.body).toMatchObject({ success: true, total: 1, offset: 0, limit: 50 });
    expect(deliveries.body.deliveries).toEqual([
      {
        id: expect.stringMatching(/^whd-/),
        messageId: res.body.result.messageId,
        event: 'agent.response',
        test: true,
        status: 'delivered',
        attempts: 1,
        statusCode: 200,
        latencyMs: res.body.result.latencyMs,
        lastError: null,
        lastAttemptAt: expect.any(String),
        createdAt: expect.any(String),
      },
    ]);
  });

  it("reports the receiver's error status and a receiver that is down, and records both as failed", async () => {
    const { subscription } = (await create()).body;
    answerStatus = 503;
    const failing = await sendTest(subscription.id);
    answerStatus = 200;
    expect(failing.body.result).toMatchObject({ delivered: false, statusCode: 503, error: 'receiver answered 503' });

    expect((await patch(subscription.id, { callbackUrl: downUrl })).status).toBe(200);
    const down = await sendTest(subscription.id);
    expect(down.body.result).toMatchObject({ delivered: false, statusCode: null, error: expect.stringContaining('could not reach the receiver') });

    const list = await api.get(`${base()}/${subscription.id}/deliveries?limit=1`, { key: t.adminKey });
    expect(list.body.total).toBe(2);
    expect(list.body.deliveries).toEqual([expect.objectContaining({ messageId: down.body.result.messageId, status: 'failed', statusCode: null, attempts: 1 })]);
    const older = await api.get(`${base()}/${subscription.id}/deliveries?limit=1&offset=1`, { key: t.adminKey });
    expect(older.body.deliveries).toEqual([expect.objectContaining({ messageId: failing.body.result.messageId, status: 'failed', statusCode: 503, lastError: 'receiver answered 503' })]);
  });

  it('sends a test to a paused subscription too', async () => {
    const { subscription } = (await create()).body;
    await api.post(`${base()}/${subscription.id}/pause`, { key: t.adminKey });
    expect((await sendTest(subscription.id)).body.result.delivered).toBe(true);
  });

  it('rotates the secret: shown once, version + 1, and callbacks verify with the new secret only', async () => {
    const created = (await create()).body;
    const rotated = await api.post(`${base()}/${created.subscription.id}/rotate-secret`, { key: t.adminKey });
    expect(rotated.status).toBe(200);
    expect(rotated.body.signingSecret).toMatch(/^whsec_/);
    expect(rotated.body.signingSecret).not.toBe(created.signingSecret);
    expect(rotated.body.subscription).toMatchObject({ id: created.subscription.id, secretVersion: 2, secretRotatedAt: expect.any(String) });
    expect((await api.get(`${base()}/${created.subscription.id}`, { key: t.adminKey })).text).not.toContain(rotated.body.signingSecret);

    await sendTest(created.subscription.id);
    const got = received[received.length - 1]!;
    const [ts, sig] = [got.headers['x-abl-timestamp'] as string, got.headers['x-abl-signature'] as string];
    expect(verifyAblSignature(rotated.body.signingSecret, got.rawBody, ts, sig)).toBe(true);
    expect(verifyAblSignature(created.signingSecret, got.rawBody, ts, sig)).toBe(false);
  });
});

describe('permissions and tenancy', () => {
  it('lets a key with only http_async:read read, and refuses every change with 403', async () => {
    const { subscription } = (await create()).body;
    const reader = await t.keyWith(['http_async:read']);
    expect((await api.get(base(), { key: reader })).status).toBe(200);
    expect((await api.get(`${base()}/${subscription.id}`, { key: reader })).status).toBe(200);
    expect((await api.get(`${base()}/${subscription.id}/deliveries`, { key: reader })).status).toBe(200);
    const before = received.length;
    const writes = [
      await create({}, reader),
      await patch(subscription.id, { name: 'x' }, reader),
      await api.post(`${base()}/${subscription.id}/pause`, { key: reader }),
      await api.post(`${base()}/${subscription.id}/resume`, { key: reader }),
      await api.post(`${base()}/${subscription.id}/rotate-secret`, { key: reader }),
      await api.post(`${base()}/${subscription.id}/test`, { key: reader }),
      await api.delete(`${base()}/${subscription.id}`, { key: reader }),
    ];
    expect(writes.map((w) => [w.status, (w.body as { error: { code: string } }).error.code])).toEqual(writes.map(() => [403, 'FORBIDDEN']));
    expect(received.length).toBe(before);
    expect((await api.get(`${base()}/${subscription.id}`, { key: t.adminKey })).body.subscription).toMatchObject({ status: 'active', secretVersion: 1, name: 'Support front end' });
  });

  it('refuses reads to a key with neither permission, and lets http_async:manage write', async () => {
    const none = await t.keyWith(['session:read']);
    expect((await api.get(base(), { key: none })).status).toBe(403);
    const manager = await t.keyWith(['http_async:manage']);
    expect((await create({}, manager)).status).toBe(201);
  });

  it('gives platform keys of the Read HTTP Async and Manage HTTP Async scopes exactly those powers', async () => {
    const scoped = async (grant: string, extra: Record<string, unknown> = {}) => {
      const scope = await api.post(`/api/public/apps/${t.projectId}/scopes`, {
        key: t.adminKey,
        json: { scope_name: `ha-${grant}-${Math.random().toString(36).slice(2, 8)}`, permissions: { [grant]: 'YES' } },
      });
      expect(scope.status).toBe(201);
      const key = await api.post('/api/public/apikeys/create', {
        key: t.adminKey,
        json: { scope_name: scope.body.scope.scope_name, api_key_name: 'k', app_id: t.projectId, ...extra },
      });
      expect(key.status).toBe(201);
      return key.body.api_key.apikey as string;
    };
    const reader = await scoped('http_async.read');
    expect((await api.get(base(), { key: reader })).status).toBe(200);
    expect((await create({}, reader)).status).toBe(403);
    const manager = await scoped('http_async.manage');
    const made = await create({}, manager);
    expect(made.status).toBe(201);
    expect((await api.post(`${base()}/${made.body.subscription.id}/pause`, { key: manager })).status).toBe(200);
    // A key bound to staging creates only there, and does not see a dev subscription.
    const staging = await scoped('http_async.manage', { environments: ['staging'] });
    expect((await create({ environment: 'dev' }, staging)).status).toBe(403);
    expect((await create({ environment: 'staging' }, staging)).status).toBe(201);
    expect((await api.get(`${base()}/${made.body.subscription.id}`, { key: staging })).status).toBe(404);
    const listed = await api.get(`${base()}?limit=200`, { key: staging });
    expect(listed.body.subscriptions.length).toBeGreaterThan(0);
    expect(listed.body.subscriptions.every((s: Subscription) => s.environment === 'staging')).toBe(true);
  });

  it("answers 404 for another project's or another tenant's subscription, and lists only the project's own", async () => {
    const { subscription } = (await create()).body;
    const mine = `${subscription.id}`;
    const elsewhere = [
      [t.adminKey, `${base(t.otherProjectId)}/${mine}`],
      [other.adminKey, `${base(other.projectId)}/${mine}`],
      [other.adminKey, `${base(t.projectId)}/${mine}`],
    ] as const;
    for (const [key, path] of elsewhere) {
      expect((await api.get(path, { key })).status).toBe(404);
      expect((await api.post(`${path}/pause`, { key })).status).toBe(404);
      expect((await api.post(`${path}/test`, { key })).status).toBe(404);
      expect((await api.delete(path, { key })).status).toBe(404);
    }
    const bound = await t.keyWith(['admin'], t.otherProjectId);
    expect((await api.get(`${base()}/${mine}`, { key: bound })).status).toBe(404);
    const otherList = await api.get(base(t.otherProjectId), { key: t.adminKey });
    expect(otherList.body.subscriptions.map((s: Subscription) => s.id)).not.toContain(mine);
    expect((await api.get(`${base()}/${mine}`, { key: t.adminKey })).body.subscription.status).toBe('active');
  });
});

describe('without encryption', () => {
  it('answers 503 on create, as tool secrets do', async () => {
    const bare = await startTestStack({ env: { ENCRYPTION_KEY: '' }, allowPrivate: { httpAsync: [receiverUrl] } });
    try {
      const tenant = await seedTenant(bare.ctx);
      const res = await client(bare.baseUrl).post(base(tenant.projectId), { key: tenant.adminKey, json: { name: 'x', callbackUrl: receiverUrl } });
      expect([res.status, res.body.error.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    } finally {
      await bare.close();
    }
  });
});
