// An SDK session token lets one end user of one page chat in one project: it continues, reads,
// uploads into and rates only the sessions it started (another end user's, an API-made one,
// another tenant's: 404, and nothing is changed), only from the origin it was issued to and the
// key still lists (403), never after it expired, was forged or its public key was revoked (401),
// and on no route the OpenAPI document does not mark for it (401). Renewing keeps an anonymous
// end user only for a genuine token of the same key, project and origin.
import { SignJWT } from 'jose';
import { client, request } from '../support/http';
import { echoAgent, publishAgent } from '../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { flushProjection } from '../support/projection';
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
    // The session writes its transcript shortly after each turn: write it now, so a late write
    // of the earlier turn is not taken for the refused message.
    await flushProjection(stack.ctx, sessionId);
    const before = await messageCount(sessionId);
    expect(before).toBeGreaterThan(0);
    const res = await chat(b.token, { projectId: t.projectId, sessionId, message: 'let me in' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } } });
    await flushProjection(stack.ctx, sessionId);
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

it('is refused on every route not marked for it, and cannot use test context or leave its environment', async () => {
  const a = await init(t, pk.key);
  const started = await chat(a.token, { projectId: t.projectId, message: 'hi' });
  const h = { 'x-sdk-token': a.token, origin: SHOP };
  for (const res of [
    await api.get(`/api/projects/${t.projectId}/sessions`, { headers: h }),
    await api.get(`/api/projects/${t.projectId}/sessions/${started.body.sessionId}`, { headers: h }),
    await api.post(`/api/projects/${t.projectId}/sessions`, { headers: h, json: { agentId: 'Echo' } }),
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

it("starts with the entry agent or one its public key offers, never another agent or a chosen deployment (403, no session)", async () => {
  // Echo is the project's entry agent; Back_Office is published beside it and not offered.
  await publishAgent(api, t, 'Back_Office', 'AGENT: Back_Office\nGOAL: "Handle refunds."\nON_START:\n  RESPOND: "Back office here."\n');
  const key = await publicKey(t);
  const a = await init(t, key.key);
  const sessionsBefore = await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId, channelUId: `sdk:${a.endUserId}` });
  const refused = await chat(a.token, { projectId: t.projectId, agentId: 'Back_Office', message: 'let me in' });
  expect(refused.status).toBe(403);
  expect(refused.body.error).toEqual({ code: 'FORBIDDEN', message: expect.stringContaining('agentId "Back_Office" is not the entry agent') });
  const stream = await api.post('/api/v1/chat/agent/stream', { headers: { 'x-sdk-token': a.token, origin: SHOP }, json: { projectId: t.projectId, agentId: 'Back_Office', message: 'let me in' } });
  expect(stream.status).toBe(403);
  const deployment = await chat(a.token, { projectId: t.projectId, deploymentId: 'dep-anything', message: 'hi' });
  expect({ status: deployment.status, code: deployment.body.error?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
  expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId, channelUId: `sdk:${a.endUserId}` })).toBe(sessionsBefore);
  // The entry agent named outright is what the page gets anyway.
  const entry = await chat(a.token, { projectId: t.projectId, agentId: 'Echo', message: 'hi' });
  expect(entry.status).toBe(200);
  expect((await stack.ctx.models.Session.findById(entry.body.sessionId).lean())?.agentName).toBe('Echo');

  // Offered by the key: the same token starts it at its next request.
  const offered = await api.patch(`/api/projects/${t.projectId}/public-keys/${key.id}`, { key: t.adminKey, json: { allowedAgents: ['Back_Office'] } });
  expect(offered.status).toBe(200);
  expect(offered.body.publicKey.allowedAgents).toEqual(['Back_Office']);
  const started = await chat(a.token, { projectId: t.projectId, agentId: 'Back_Office', message: 'hello back office' });
  expect(started.status).toBe(200);
  expect((await stack.ctx.models.Session.findById(started.body.sessionId).lean())?.agentName).toBe('Back_Office');
  // An API key names any agent, as before.
  const byKey = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Back_Office', message: 'hi' } });
  expect(byKey.status).toBe(200);
  // Taken off again: refused again.
  expect((await api.patch(`/api/projects/${t.projectId}/public-keys/${key.id}`, { key: t.adminKey, json: { allowedAgents: [] } })).body.publicKey.allowedAgents).toEqual([]);
  expect((await chat(a.token, { projectId: t.projectId, agentId: 'Back_Office', message: 'again' })).status).toBe(403);
});

it('gets 401 on every operation the OpenAPI document does not mark for SDK tokens', async () => {
  const a = await init(t, pk.key);
  const doc = (await api.get('/openapi.json')).body as { paths: Record<string, Record<string, { operationId: string; security?: Record<string, string[]>[] }>> };
  const marked: string[] = [];
  const answers: { op: string; status: number; code: unknown }[] = [];
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(operations)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const security = op.security;
      if (security?.some((s) => 'sdkToken' in s)) {
        marked.push(op.operationId);
        continue;
      }
      // Public operations (no credential) and the operator's token are not the tenant routes a token could reach.
      if (security && (security.length === 0 || security.some((s) => 'platformAdmin' in s))) continue;
      const concrete = path.replace(/\{projectId\}/g, t.projectId).replace(/\{[^}]+\}/g, 'x1');
      const res = await request(stack.baseUrl, method.toUpperCase(), concrete, { headers: { 'x-sdk-token': a.token, origin: SHOP }, ...(method === 'get' || method === 'delete' ? {} : { json: {} }) });
      answers.push({ op: op.operationId, status: res.status, code: (res.body as { error?: { code?: string } } | null)?.error?.code });
    }
  }
  expect(answers.length).toBeGreaterThan(100);
  expect(answers.filter((r) => r.status !== 401 || r.code !== 'UNAUTHORIZED')).toEqual([]);
  // The token reaches the widget's chat, its sessions' transcripts, attachments and feedback.
  expect(marked).toEqual(expect.arrayContaining(['chatWithAgent', 'sendChatMessage', 'getSessionTranscript', 'uploadSessionAttachment', 'submitFeedback']));
});

describe('the sessions an end user started: transcripts, attachments, messages with attachments, feedback', () => {
  const h = (token: string, origin = SHOP) => ({ 'x-sdk-token': token, origin });
  const upload = (token: string, sessionId: string, options: { origin?: string; projectId?: string } = {}) => {
    const body = new FormData();
    body.append('file', new Blob(['Order 5521: two chairs\n'], { type: 'text/plain' }), 'order.txt');
    return fetch(`${stack.baseUrl}/api/projects/${options.projectId ?? t.projectId}/sessions/${sessionId}/attachments`, { method: 'POST', headers: h(token, options.origin), body });
  };
  const transcript = (token: string, sessionId: string, origin = SHOP) => api.get(`/api/v1/sessions/${sessionId}/transcripts`, { headers: h(token, origin) });
  const send = (token: string, json: Record<string, unknown>, origin = SHOP) => api.post('/api/v1/chat/send', { headers: h(token, origin), json });
  const feedback = (token: string, json: Record<string, unknown>, origin = SHOP) => api.post('/api/v1/feedback', { headers: h(token, origin), json });
  const counts = async (sessionId: string) => ({
    messages: await messageCount(sessionId),
    attachments: await stack.ctx.models.Attachment.countDocuments({ 'metadata.sessionId': sessionId }),
    feedback: await stack.ctx.models.AnalyticsEvent.countDocuments({ sessionId, category: 'feedback' }),
  });

  it('lets the end user read, upload, send with attachments and rate in its own session, with CORS headers', async () => {
    const a = await init(t, pk.key);
    const started = await chat(a.token, { projectId: t.projectId, message: 'hello' });
    const sessionId = started.body.sessionId as string;
    const uploaded = await upload(a.token, sessionId);
    expect(uploaded.status).toBe(201);
    expect(uploaded.headers.get('access-control-allow-origin')).toBe(SHOP);
    const attachmentId = ((await uploaded.json()) as { attachmentId: string }).attachmentId;
    const sent = await send(a.token, { sessionId, message: 'see attached', attachmentIds: [attachmentId] });
    expect(sent.status).toBe(200);
    expect(sent.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(sent.body.attachments).toEqual([expect.objectContaining({ attachmentId, filename: 'order.txt' })]);
    const read = await transcript(a.token, sessionId);
    expect(read.status).toBe(200);
    expect(read.headers.get('access-control-allow-origin')).toBe(SHOP);
    const replies = (read.body.messages as { id: string; role: string }[]).filter((m) => m.role === 'assistant');
    expect(replies.length).toBe(2);
    const rated = await feedback(a.token, { sessionId, messageId: replies[0]!.id, rating: 'up' });
    expect(rated.status).toBe(201);
    expect(rated.headers.get('access-control-allow-origin')).toBe(SHOP);
    // A preflight of these routes is answered for the listed origin.
    const preflight = await request(stack.baseUrl, 'OPTIONS', `/api/projects/${t.projectId}/sessions/${sessionId}/attachments`, {
      headers: { origin: SHOP, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-sdk-token' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(SHOP);
  });

  it("answers 404 for another end user's, an API-made or another tenant's session, and changes nothing", async () => {
    const a = await init(t, pk.key);
    const b = await init(t, pk.key);
    const mine = (await chat(a.token, { projectId: t.projectId, message: 'mine' })).body.sessionId as string;
    const viaApi = (await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, message: 'staff' } })).body.sessionId as string;
    const foreign = (await api.post('/api/v1/chat/agent', { key: other.adminKey, json: { projectId: other.projectId, message: 'other tenant' } })).body.sessionId as string;
    const reply = async (sessionId: string, key: string) =>
      ((await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key })).body.messages as { id: string; role: string }[]).find((m) => m.role === 'assistant')!.id;
    const notFound = { status: 404, code: 'NOT_FOUND' };
    for (const [sessionId, owner] of [
      [mine, t],
      [viaApi, t],
      [foreign, other],
    ] as const) {
      // Read first: the read writes the turns the session still holds.
      const messageId = await reply(sessionId, owner.adminKey);
      const before = await counts(sessionId);
      const read = await transcript(b.token, sessionId);
      expect({ status: read.status, body: read.body }).toEqual({ status: 404, body: { success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } } });
      const up = await upload(b.token, sessionId);
      expect({ status: up.status, code: ((await up.json()) as { error?: { code: string } }).error?.code }).toEqual(notFound);
      const sent = await send(b.token, { sessionId, message: 'let me in' });
      expect({ status: sent.status, code: sent.body.error?.code }).toEqual(notFound);
      const rated = await feedback(b.token, { sessionId, messageId, rating: 'down' });
      expect({ status: rated.status, code: rated.body.error?.code }).toEqual(notFound);
      expect(await counts(sessionId)).toEqual(before);
    }
    // The upload path naming another project is that project's 404, whoever's session it names.
    const elsewhere = await upload(a.token, mine, { projectId: t.otherProjectId });
    expect(elsewhere.status).toBe(404);
    expect(await counts(mine)).toMatchObject({ attachments: 0 });
  });

  it('refuses an origin the token was not issued to, or one taken off the key since, with 403', async () => {
    const key = (await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Two pages', allowedOrigins: [SHOP, 'https://blog.example.com'], environment: 'dev' } })).body
      .publicKey as { id: string; key: string };
    const a = await init(t, key.key);
    const sessionId = (await chat(a.token, { projectId: t.projectId, message: 'hi' })).body.sessionId as string;
    const forbidden = { status: 403, code: 'FORBIDDEN' };
    for (const origin of ['https://blog.example.com', 'https://evil.example.net']) {
      const read = await transcript(a.token, sessionId, origin);
      expect({ status: read.status, code: read.body.error?.code }).toEqual(forbidden);
      expect(read.headers.get('access-control-allow-origin')).toBeNull();
      expect((await upload(a.token, sessionId, { origin })).status).toBe(403);
      expect((await send(a.token, { sessionId, message: 'x' }, origin)).status).toBe(403);
      expect((await feedback(a.token, { sessionId, messageId: `${sessionId}:m2`, rating: 'up' }, origin)).status).toBe(403);
    }
    expect((await transcript(a.token, sessionId)).status).toBe(200);
    // The key's managers take the page off its list: the token issued to it stops at once.
    expect((await api.patch(`/api/projects/${t.projectId}/public-keys/${key.id}`, { key: t.adminKey, json: { allowedOrigins: ['https://blog.example.com'] } })).status).toBe(200);
    const after = await transcript(a.token, sessionId);
    expect({ status: after.status, message: after.body.error?.message }).toEqual({ status: 403, message: 'This origin is no longer allowed for the public key' });
  });
});

describe('renewing a token', () => {
  const renew = (key: string, previousToken: string, origin = SHOP, projectId = t.projectId) =>
    api.post('/api/v1/sdk/init', { headers: { 'x-public-key': key, origin }, json: { projectId, previousToken } });
  const mint = (claims: Record<string, unknown>, sub: string, iat: number, exp: number, signingKey: Uint8Array = sdkTokenKey(stack.ctx)) =>
    new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer(SDK_TOKEN_ISSUER).setAudience(SDK_TOKEN_AUDIENCE).setSubject(sub).setIssuedAt(iat).setExpirationTime(exp).sign(signingKey);

  it('keeps the anonymous end user, so the page continues its session, even from a token expired days ago', async () => {
    const a = await init(t, pk.key);
    const started = await chat(a.token, { projectId: t.projectId, message: 'hello' });
    const renewed = await renew(pk.key, a.token);
    expect(renewed.status).toBe(200);
    expect(renewed.body).toMatchObject({ endUserId: a.endUserId, renewed: true, identified: false });
    const next = await chat(renewed.body.token, { projectId: t.projectId, sessionId: started.body.sessionId, message: 'still me' });
    expect(next.status).toBe(200);
    expect((await api.get(`/api/v1/sessions/${started.body.sessionId}/transcripts`, { headers: { 'x-sdk-token': renewed.body.token, origin: SHOP } })).body.total).toBe(4);

    const day = 86_400;
    const now = Math.floor(Date.now() / 1000);
    const claims = { tid: t.tenantId, pid: t.projectId, pkid: pk.id, org: SHOP, env: 'dev' };
    const lastWeek = await mint(claims, a.endUserId, now - 7 * day - 900, now - 7 * day);
    expect((await renew(pk.key, lastWeek)).body).toMatchObject({ endUserId: a.endUserId, renewed: true });
    const tooOld = await mint(claims, a.endUserId, now - 31 * day - 900, now - 31 * day);
    const refused = await renew(pk.key, tooOld);
    expect(refused.status).toBe(200);
    expect(refused.body.renewed).toBe(false);
    expect(refused.body.endUserId).not.toBe(a.endUserId);
  });

  it("gives a new end user for a forged token or another key's, project's, origin's or an identified user's", async () => {
    const a = await init(t, pk.key);
    const sessionId = (await chat(a.token, { projectId: t.projectId, message: 'mine' })).body.sessionId as string;
    const now = Math.floor(Date.now() / 1000);
    const claims = { tid: t.tenantId, pid: t.projectId, pkid: pk.id, org: SHOP, env: 'dev' };
    const forged = await mint(claims, a.endUserId, now, now + 600, new TextEncoder().encode('x'.repeat(32)));
    const identifiedToken = await mint({ ...claims, usr: { userId: 'u1', email: null, phone: null, displayName: null } }, 'id-' + '0'.repeat(32), now, now + 600);
    const otherKey = (await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Other key', allowedOrigins: [SHOP, 'https://blog.example.com'], environment: 'dev' } })).body
      .publicKey as { id: string; key: string };
    const otherTenantKey = await publicKey(other);
    const cases: [string, string, string, string][] = [
      ['forged', pk.key, forged, t.projectId],
      ['not a token', pk.key, 'not-a-token', t.projectId],
      ["an identified user's", pk.key, identifiedToken, t.projectId],
      ["another key's", otherKey.key, a.token, t.projectId],
      ["another tenant's key", otherTenantKey.key, a.token, other.projectId],
    ];
    for (const [label, key, previousToken, projectId] of cases) {
      const res = await renew(key, previousToken, SHOP, projectId);
      expect({ label, status: res.status, renewed: res.body.renewed }).toEqual({ label, status: 200, renewed: false });
      expect(res.body.endUserId).toMatch(/^eu-/);
      expect(res.body.endUserId).not.toBe(a.endUserId);
      const tried = await chat(res.body.token, { projectId, sessionId, message: 'mine now' });
      expect(tried.status).toBe(404);
    }
    // Another origin the same key lists: the token was issued to SHOP, not to the blog.
    const fromShop = await init(t, otherKey.key);
    const fromBlog = await renew(otherKey.key, fromShop.token, 'https://blog.example.com');
    expect(fromBlog.body).toMatchObject({ renewed: false });
    expect(fromBlog.body.endUserId).not.toBe(fromShop.endUserId);
    // A previous token is text of bounded size.
    expect((await renew(pk.key, 'x'.repeat(8193))).status).toBe(400);
  });
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

  it("keeps an identified user's sessions in the environment they were started in (404 from a key of another)", async () => {
    const deployed = await api.post(`/api/projects/${t.projectId}/deployments`, { key: t.adminKey, json: { environment: 'staging', agentVersionManifest: { Echo: 'auto' }, entryAgentName: 'Echo' } });
    expect(deployed.status).toBe(201);
    const staging = (await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Staging', allowedOrigins: [SHOP], environment: 'staging' } })).body
      .publicKey as { id: string; key: string; identitySecret: string };
    const asStaging = await api.post('/api/v1/sdk/init', {
      headers: { 'x-public-key': staging.key, origin: SHOP },
      json: { projectId: t.projectId, userAssertion: await assertion({ sub: 'user-env' }, { secret: staging.identitySecret, aud: staging.id }) },
    });
    const asDev = await initAs(await assertion({ sub: 'user-env' }));
    // One user, one end user, whichever key vouches for it.
    expect(asDev.body.endUserId).toBe(asStaging.body.endUserId);
    const started = await chat(asStaging.body.token, { projectId: t.projectId, message: 'hi' });
    // The page names no environment: the chat runs in the key's.
    expect({ status: started.status, error: started.body.error }).toEqual({ status: 200 });
    expect((await stack.ctx.models.Session.findById(started.body.sessionId).lean())!.environment).toBe('staging');
    const sessionId = started.body.sessionId as string;
    const h = { 'x-sdk-token': asDev.body.token, origin: SHOP };
    const body = new FormData();
    body.append('file', new Blob(['note\n'], { type: 'text/plain' }), 'note.txt');
    const refused = [
      await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { headers: h }),
      await api.post('/api/v1/chat/send', { headers: h, json: { sessionId, message: 'x' } }),
      await api.post('/api/v1/feedback', { headers: h, json: { sessionId, messageId: `${sessionId}:m2`, rating: 'up' } }),
      await chat(asDev.body.token, { projectId: t.projectId, sessionId, message: 'x' }),
    ];
    for (const res of refused) expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'NOT_FOUND' });
    const up = await fetch(`${stack.baseUrl}/api/projects/${t.projectId}/sessions/${sessionId}/attachments`, { method: 'POST', headers: h, body });
    expect(up.status).toBe(404);
    expect((await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { headers: { 'x-sdk-token': asStaging.body.token, origin: SHOP } })).status).toBe(200);
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
