// Who reaches memory stores: only a sandbox token the runtime signed, unexpired, for this audience
// and naming a session; never an API key, a user's token or a forged token; a token reaches the
// stores of its own session only (another tenant's session is 404); a token's tenant is charged
// the tenant rate limit; and an anonymous caller is refused before any of its body is read.
import { createServer } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { createApp } from '../../api/app';
import { createRateLimiter } from '../../api/middleware/rate-limit';
import { issueSandboxToken, SANDBOX_TOKEN_AUDIENCE, SANDBOX_TOKEN_ISSUER, sandboxTokenKey } from '../../core/memory-stores/sandbox-token';
import { client } from '../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { seedSession } from '../integration/sessions/fixtures';

let stack: TestStack;
let api: ReturnType<typeof client>;
let a: SeededTenant;
let b: SeededTenant;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  a = await seedTenant(stack.ctx);
  b = await seedTenant(stack.ctx);
}, 120_000);
afterAll(async () => {
  await stack?.close();
});

type Owner = { tenantId: string; projectId: string; sessionId: string };

async function session(tenant: SeededTenant): Promise<Owner> {
  const doc = await seedSession(stack.ctx, { tenantId: tenant.tenantId, projectId: tenant.projectId });
  return { tenantId: doc.tenantId, projectId: doc.projectId, sessionId: doc._id };
}

const tokenFor = (owner: Owner) => issueSandboxToken(stack.ctx, { ...owner, toolCallId: 'cmd-1', tool: 'notes' }, 60_000);
const post = (authorization: string | undefined, json: unknown) => api.post('/api/v1/memory', { json, headers: authorization ? { authorization } : {} });
const setBody = (content: unknown) => ({ action: 'set', memoryStoreName: 'notes', payload: { content } });
const getBody = { action: 'get', memoryStoreName: 'notes' };

/** A token with these claims and options, signed with `key` (the platform's unless given). */
async function forge(claims: Record<string, unknown>, options: { key?: Uint8Array; audience?: string; issuer?: string; expiresAt?: number } = {}) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(options.issuer ?? SANDBOX_TOKEN_ISSUER)
    .setAudience(options.audience ?? SANDBOX_TOKEN_AUDIENCE)
    .setIssuedAt(now - 120)
    .setExpirationTime(options.expiresAt ?? now + 60)
    .sign(options.key ?? sandboxTokenKey(stack.ctx));
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('the memory endpoint takes a valid sandbox token and nothing else', () => {
  it('answers 401 to no token, an API key, a user token and forged tokens, and stores nothing', async () => {
    const owner = await session(a);
    // The owner's own token works: the refusals below are about the credential.
    expect((await post(`Bearer ${await tokenFor(owner)}`, setBody({ v: 'mine' }))).status).toBe(200);

    const claims = { tid: owner.tenantId, pid: owner.projectId, sid: owner.sessionId, tcid: 'cmd-1', tool: 'notes' };
    const now = Math.floor(Date.now() / 1000);
    const login = await api.post('/api/auth/login', { json: await a.user(['admin']) });
    expect(login.status).toBe(200);
    const refused: [string, string | undefined][] = [
      ['no credential', undefined],
      ['a Basic credential', `Basic ${Buffer.from('a:b').toString('base64')}`],
      ['an admin API key', `Bearer ${a.adminKey}`],
      ['a signature under another key', `Bearer ${await forge(claims, { key: randomBytes(32) })}`],
      ['another audience', `Bearer ${await forge(claims, { audience: 'switchboard-api' })}`],
      ['another issuer', `Bearer ${await forge(claims, { issuer: 'someone-else' })}`],
      ['an expired token', `Bearer ${await forge(claims, { expiresAt: now - 60 })}`],
      ['alg none', `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ ...claims, iss: SANDBOX_TOKEN_ISSUER, aud: SANDBOX_TOKEN_AUDIENCE, exp: now + 60 })}.`],
      ['a token without a tenant', `Bearer ${await forge({ ...claims, tid: undefined })}`],
      ['garbage', 'Bearer not.a.token'],
      ['a user token', `Bearer ${(login.body as { token: string }).token}`],
    ];
    for (const [name, authorization] of refused) {
      const res = await post(authorization, setBody({ v: name }));
      expect({ name, status: res.status, code: res.body?.error?.code }).toEqual({ name, status: 401, code: 'UNAUTHORIZED' });
    }
    expect((await post(`Bearer ${await tokenFor(owner)}`, getBody)).body).toEqual({ success: true, data: { v: 'mine' } });
  });

  it('answers 400 "Token missing sessionId" to a valid token that names no session', async () => {
    const owner = await session(a);
    const res = await post(`Bearer ${await forge({ tid: owner.tenantId, pid: owner.projectId, tcid: 'cmd-1', tool: 'notes' })}`, getBody);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: { code: 'VALIDATION_ERROR', message: 'Token missing sessionId' } });
  });
});

describe('a token reaches the stores of its own session only', () => {
  it("answers 404 to a token of tenant A naming tenant B's session, and leaves B's store as it was", async () => {
    const mine = await session(a);
    const theirs = await session(b);
    expect((await post(`Bearer ${await tokenFor(theirs)}`, setBody({ secret: 'b' }))).status).toBe(200);
    // A signed token whose tenant is A and whose session is B's (a tool of A that names B's session id).
    const crossed = await tokenFor({ ...mine, sessionId: theirs.sessionId });
    for (const body of [getBody, setBody({ secret: 'overwritten' }), { action: 'delete', memoryStoreName: 'notes' }]) {
      const res = await post(`Bearer ${crossed}`, body);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } });
    }
    expect((await post(`Bearer ${await tokenFor(theirs)}`, getBody)).body).toEqual({ success: true, data: { secret: 'b' } });
    expect(await stack.ctx.models.MemoryStore.countDocuments({ tenantId: a.tenantId, sessionId: theirs.sessionId })).toBe(0);
  });

  it("does not show one session's stores to another session of the same tenant", async () => {
    const first = await session(a);
    const second = await session(a);
    expect((await post(`Bearer ${await tokenFor(first)}`, setBody({ card: '4242' }))).status).toBe(200);
    expect((await post(`Bearer ${await tokenFor(second)}`, getBody)).body).toEqual({ success: true, data: null });
    expect((await post(`Bearer ${await tokenFor({ ...first, sessionId: randomUUID() })}`, getBody)).status).toBe(404);
  });
});

describe('an anonymous caller costs no body read', () => {
  /** Sends the head and the first bytes of a body it never finishes; resolves with the answer's head. */
  function partialRequest(head: string): { socket: Socket; answered: Promise<string> } {
    const url = new URL(stack.baseUrl);
    const socket = connect({ port: Number(url.port), host: url.hostname });
    socket.on('error', () => undefined);
    let received = '';
    const answered = new Promise<string>((resolve) => {
      socket.on('data', (d: Buffer) => {
        received += d.toString('latin1');
        if (received.includes('\r\n\r\n')) resolve(received);
      });
      socket.once('close', () => resolve(received));
    });
    socket.write(head);
    return { socket, answered };
  }

  it('answers 401 to a request without a valid token while its body is still arriving, within the route limit', async () => {
    const owner = await session(a);
    const forged = await forge({ tid: owner.tenantId, pid: owner.projectId, sid: owner.sessionId }, { key: randomBytes(32) });
    for (const authorization of ['', `Authorization: Bearer ${forged}\r\n`]) {
      // 100 KB announced (under the route's 128 KB), 1 KB sent: an answer now means the body was not awaited.
      const exchange = partialRequest(
        `POST /api/v1/memory HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\nContent-Length: ${100 * 1024}\r\n\r\n{"action":"set","memoryStoreName":"n","payload":{"content":{"x":"${'a'.repeat(1024)}`,
      );
      const response = await exchange.answered;
      exchange.socket.destroy();
      expect(Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1])).toBe(401);
      expect(response.toLowerCase()).toContain('connection: close');
    }
  });
});

describe('the tenant rate limit', () => {
  it("charges the token's tenant: past its limit 429 with retryAfterMs, other tenants unaffected, refused callers charge no one", async () => {
    const limited = createServer(createApp({ ...stack.ctx, rateLimiter: createRateLimiter({ store: 'memory', points: 3, durationSeconds: 60, keyPrefix: 'memory-test' }) }));
    await new Promise<void>((resolve) => limited.listen(0, '127.0.0.1', resolve));
    try {
      const limitedApi = client(`http://127.0.0.1:${(limited.address() as AddressInfo).port}`);
      const send = async (owner: Owner | null) =>
        limitedApi.post('/api/v1/memory', { json: getBody, ...(owner ? { token: await tokenFor(owner) } : {}) });
      const mine = await session(a);
      const theirs = await session(b);
      // Anonymous and forged calls are refused before any charge.
      for (let i = 0; i < 5; i++) expect((await send(null)).status).toBe(401);
      for (let i = 0; i < 3; i++) expect((await send(mine)).status).toBe(200);
      const over = await send(mine);
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' }, retryAfterMs: expect.any(Number) });
      expect((await send(theirs)).status).toBe(200);
    } finally {
      limited.closeAllConnections();
      await new Promise((resolve) => limited.close(resolve));
    }
  });
});
