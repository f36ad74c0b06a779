// An SDK session token lets one anonymous end user of one page chat in one project: it continues
// only the sessions it started (another end user's, an API-made one, another tenant's: 404, and
// nothing is added to them), only from the origin it was issued to (403), never after it expired,
// was forged or its public key was revoked (401), and on no route but the agent chat (401).
import { SignJWT } from 'jose';
import { client } from '../support/http';
import { echoAgent, publishAgent } from '../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { issueSdkToken, sdkTokenKey, SDK_TOKEN_AUDIENCE, SDK_TOKEN_ISSUER } from '../../core/sdk/session-token';

jest.setTimeout(180_000);

const SHOP = 'https://shop.example.com';
let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let pk: { id: string; key: string };

async function publicKey(owner: SeededTenant, environment = 'dev') {
  const res = await api.post(`/api/projects/${owner.projectId}/public-keys`, { key: owner.adminKey, json: { name: 'Shop', allowedOrigins: [SHOP], environment } });
  expect(res.status).toBe(201);
  return res.body.publicKey as { id: string; key: string };
}

async function init(owner: SeededTenant, key: string) {
  const res = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': key, origin: SHOP }, json: { projectId: owner.projectId } });
  expect(res.status).toBe(200);
  return res.body as { token: string; endUserId: string };
}

const chat = (token: string, json: Record<string, unknown>, headers: Record<string, string> = { origin: SHOP }) =>
  api.post('/api/v1/chat/agent', { headers: { 'x-sdk-token': token, ...headers }, json });

const messageCount = (sessionId: string) => stack.ctx.models.TranscriptMessage.countDocuments({ sessionId });

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Echo', echoAgent());
  await publishAgent(api, other, 'Echo', echoAgent());
  pk = await publicKey(t);
});
afterAll(async () => {
  await stack.close();
});

it('lets an end user start and continue its own session, with CORS headers for its origin', async () => {
  const a = await init(t, pk.key);
  const first = await chat(a.token, { projectId: t.projectId, message: 'hello' });
  expect(first.status).toBe(200);
  expect(first.headers.get('access-control-allow-origin')).toBe(SHOP);
  expect(first.body.response).toContain('Noted');
  const record = await stack.ctx.models.Session.findById(first.body.sessionId).lean();
  expect(record).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId, environment: 'dev', channelUId: `sdk:${a.endUserId}` });
  const again = await chat(a.token, { projectId: t.projectId, sessionId: first.body.sessionId, message: 'again' });
  expect(again.status).toBe(200);
  expect(again.body.sessionId).toBe(first.body.sessionId);
});

it("never lets an end user continue another end user's session, an API-made one or another tenant's", async () => {
  const a = await init(t, pk.key);
  const b = await init(t, pk.key);
  const mine = await chat(a.token, { projectId: t.projectId, message: 'mine' });
  expect(mine.status).toBe(200);
  const viaApi = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: 'staff' } });
  expect(viaApi.status).toBe(200);
  const theirs = await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: other.projectId, message: 'other tenant' } });
  expect(theirs.status).toBe(200);

  for (const sessionId of [mine.body.sessionId, viaApi.body.sessionId, theirs.body.sessionId] as string[]) {
    const before = await messageCount(sessionId);
    const res = await chat(b.token, { projectId: t.projectId, sessionId, message: 'let me in' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } } });
    expect(await messageCount(sessionId)).toBe(before);
  }
  // Another tenant's project is not the token's: 404, nothing started there.
  const sessionsBefore = await stack.ctx.models.Session.countDocuments({ tenantId: other.tenantId });
  const foreign = await chat(b.token, { projectId: other.projectId, message: 'hi' });
  expect(foreign.status).toBe(404);
  expect(await stack.ctx.models.Session.countDocuments({ tenantId: other.tenantId })).toBe(sessionsBefore);
  // Nor another project of the same tenant.
  expect((await chat(b.token, { projectId: t.otherProjectId, message: 'hi' })).status).toBe(404);
});

it("keeps a retried first message in the end user's own session even when another sends the same Idempotency-Key", async () => {
  const a = await init(t, pk.key);
  const b = await init(t, pk.key);
  const key = `idem-${Date.now()}`;
  const first = await chat(a.token, { projectId: t.projectId, message: 'a' }, { origin: SHOP, 'idempotency-key': key });
  const second = await chat(b.token, { projectId: t.projectId, message: 'b' }, { origin: SHOP, 'idempotency-key': key });
  expect(first.status).toBe(200);
  expect(second.status).toBe(200);
  expect(second.body.sessionId).not.toBe(first.body.sessionId);
  expect((await stack.ctx.models.Session.findById(second.body.sessionId).lean())!.channelUId).toBe(`sdk:${b.endUserId}`);
});

it('refuses a token from an origin it was not issued to, or with no Origin (403)', async () => {
  const a = await init(t, pk.key);
  const refused: Record<string, string>[] = [{}, { origin: 'https://evil.example.net' }, { origin: 'http://shop.example.com' }];
  for (const headers of refused) {
    const res = await chat(a.token, { projectId: t.projectId, message: 'hi' }, headers);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  }
});

it('refuses an expired, forged, tampered or unsigned token (401)', async () => {
  const a = await init(t, pk.key);
  const claims = { tenantId: t.tenantId, projectId: t.projectId, publicKeyId: pk.id, origin: SHOP, environment: 'dev', endUserId: a.endUserId };
  const now = Math.floor(Date.now() / 1000);
  const expired = await new SignJWT({ tid: t.tenantId, pid: t.projectId, pkid: pk.id, org: SHOP, env: 'dev' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(SDK_TOKEN_ISSUER)
    .setAudience(SDK_TOKEN_AUDIENCE)
    .setSubject(a.endUserId)
    .setIssuedAt(now - 1000)
    .setExpirationTime(now - 10)
    .sign(sdkTokenKey(stack.ctx));
  const forged = await new SignJWT({ tid: t.tenantId, pid: t.projectId, pkid: pk.id, org: SHOP, env: 'dev' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(SDK_TOKEN_ISSUER)
    .setAudience(SDK_TOKEN_AUDIENCE)
    .setSubject(a.endUserId)
    .setExpirationTime(now + 600)
    .sign(new TextEncoder().encode('x'.repeat(32)));
  const [header, , signature] = a.token.split('.');
  const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, tid: other.tenantId, pid: other.projectId })).toString('base64url')}.${signature}`;
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${a.token.split('.')[1]}.`;
  // The user-JWT and sandbox audiences are not the SDK's.
  const wrongAudience = await new SignJWT({ tid: t.tenantId, pid: t.projectId, pkid: pk.id, org: SHOP, env: 'dev' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(SDK_TOKEN_ISSUER)
    .setAudience('switchboard-memory')
    .setSubject(a.endUserId)
    .setExpirationTime(now + 600)
    .sign(sdkTokenKey(stack.ctx));
  const cases: [string, string][] = [
    [expired, 'SDK token has expired'],
    [forged, 'Invalid SDK token'],
    [tampered, 'Invalid SDK token'],
    [unsigned, 'Invalid SDK token'],
    [wrongAudience, 'Invalid SDK token'],
  ];
  for (const [token, message] of cases) {
    const res = await chat(token, { projectId: t.projectId, message: 'hi' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { success: false, error: { code: 'UNAUTHORIZED', message } } });
  }
  // A token issued correctly is accepted: the refusals above are the token's, not the request's.
  const fresh = await issueSdkToken(stack.ctx, claims, 60);
  expect((await chat(fresh.token, { projectId: t.projectId, message: 'hi' })).status).toBe(200);
});

it('ends every token of a public key when the key is revoked (401)', async () => {
  const key = await publicKey(t);
  const a = await init(t, key.key);
  const started = await chat(a.token, { projectId: t.projectId, message: 'hi' });
  expect(started.status).toBe(200);
  expect((await api.delete(`/api/projects/${t.projectId}/public-keys/${key.id}`, { key: t.adminKey })).status).toBe(200);
  const res = await chat(a.token, { projectId: t.projectId, sessionId: started.body.sessionId, message: 'still there?' });
  expect({ status: res.status, message: res.body.error?.message }).toEqual({ status: 401, message: 'SDK token has been revoked' });
});

it('is refused on every route but the agent chat, and cannot use test context or leave its environment', async () => {
  const a = await init(t, pk.key);
  const started = await chat(a.token, { projectId: t.projectId, message: 'hi' });
  const h = { 'x-sdk-token': a.token, origin: SHOP };
  for (const res of [
    await api.get(`/api/projects/${t.projectId}/sessions`, { headers: h }),
    await api.get(`/api/projects/${t.projectId}/sessions/${started.body.sessionId}`, { headers: h }),
    await api.post(`/api/projects/${t.projectId}/sessions`, { headers: h, json: { agentId: 'Echo' } }),
    await api.post('/api/v1/chat/send', { headers: h, json: { sessionId: started.body.sessionId, message: 'x' } }),
    await api.get(`/api/projects/${t.projectId}/public-keys`, { headers: h }),
  ]) {
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 401, code: 'UNAUTHORIZED' });
  }
  const withTest = await chat(a.token, { projectId: t.projectId, message: 'hi', testContext: { skipOnStart: true } });
  expect(withTest.status).toBe(403);
  const otherEnv = await chat(a.token, { projectId: t.projectId, message: 'hi', environment: 'production' });
  expect(otherEnv.status).toBe(403);
  // An SDK token beside an API key is two credentials: refused, whichever is valid.
  const both = await api.post('/api/v1/chat/agent', { key: t.adminKey, headers: h, json: { projectId: t.projectId, message: 'hi' } });
  expect(both.status).toBe(401);
});

describe('identified end users', () => {
  let secret: string;
  let key: { id: string; key: string };
  beforeAll(async () => {
    const res = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Identified', allowedOrigins: [SHOP], environment: 'dev' } });
    key = res.body.publicKey;
    secret = res.body.publicKey.identitySecret;
    expect(secret).toMatch(/^pkis_[0-9a-f]{64}$/);
  });

  const assertion = (claims: Record<string, unknown>, options: { secret?: string; aud?: string; lifetime?: number; iatAgo?: number } = {}) => {
    const now = Math.floor(Date.now() / 1000) - (options.iatAgo ?? 0);
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256' })
      .setAudience(options.aud ?? key.id)
      .setIssuedAt(now)
      .setExpirationTime(now + (options.lifetime ?? 300))
      .sign(new TextEncoder().encode(options.secret ?? secret));
  };
  const initAs = (userAssertion: string) => api.post('/api/v1/sdk/init', { headers: { 'x-public-key': key.key, origin: SHOP }, json: { projectId: t.projectId, userAssertion } });

  it('gives an identified user the same end user on every init, its own sessions back, and links them to its contact', async () => {
    const email = `ada-${Date.now()}@example.com`;
    const one = await initAs(await assertion({ sub: 'user-1', email, name: 'Ada' }));
    const two = await initAs(await assertion({ sub: 'user-1', email, name: 'Ada' }));
    expect(one.status).toBe(200);
    expect(one.body.identified).toBe(true);
    expect(one.body.endUserId).toMatch(/^id-[0-9a-f]{32}$/);
    expect(two.body.endUserId).toBe(one.body.endUserId);
    const started = await chat(one.body.token, { projectId: t.projectId, message: 'hi' });
    expect(started.status).toBe(200);
    // A later token of the same user continues the session; another user's does not.
    expect((await chat(two.body.token, { projectId: t.projectId, sessionId: started.body.sessionId, message: 'back' })).status).toBe(200);
    const mallory = await initAs(await assertion({ sub: 'user-2' }));
    expect((await chat(mallory.body.token, { projectId: t.projectId, sessionId: started.body.sessionId, message: 'mine now' })).status).toBe(404);
    const anonymous = await init(t, key.key);
    expect((await chat(anonymous.token, { projectId: t.projectId, sessionId: started.body.sessionId, message: 'mine now' })).status).toBe(404);

    const found = await api.get(`/api/contacts/lookup?identity=${encodeURIComponent(email)}&identityType=email`, { key: t.adminKey });
    expect(found.status).toBe(200);
    const contact = await api.get(`/api/contacts/${found.body.data.id}`, { key: t.adminKey });
    expect(JSON.stringify(contact.body)).toContain(started.body.sessionId);
  });

  it('refuses a forged, expired, overlong, misaddressed or subject-less assertion with 401 and issues no token', async () => {
    const other = await publicKey(t);
    const otherSecret = (await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'x', allowedOrigins: [SHOP] } })).body.publicKey.identitySecret as string;
    const cases: [string, string][] = [
      [await assertion({ sub: 'u' }, { secret: 'pkis_' + '0'.repeat(64) }), 'Invalid user assertion'],
      [await assertion({ sub: 'u' }, { secret: otherSecret }), 'Invalid user assertion'],
      [await assertion({ sub: 'u' }, { aud: other.id }), 'Invalid user assertion'],
      [await assertion({ sub: 'u' }, { iatAgo: 400, lifetime: 300 }), 'User assertion has expired'],
      [await assertion({ sub: 'u' }, { lifetime: 7200 }), 'Invalid user assertion'],
      [await assertion({ email: 'x@example.com' }), 'Invalid user assertion'],
      ['not-a-jwt', 'Invalid user assertion'],
    ];
    for (const [userAssertion, message] of cases) {
      const res = await initAs(userAssertion);
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { success: false, error: { code: 'UNAUTHORIZED', message } } });
    }
  });
});
