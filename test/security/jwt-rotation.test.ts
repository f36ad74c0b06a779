// The JWT secret rotates like the other root keys: tokens name their key (`kid`), a new
// JWT_SECRET signs while JWT_PREVIOUS_SECRETS still verify what they signed, and once an old
// secret is dropped its tokens are refused. Three API configurations over one database stand for
// the steps of a rotation.
import { randomBytes } from 'node:crypto';
import { decodeProtectedHeader, SignJWT } from 'jose';
import { startTestStack, seedTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';

const secretA = randomBytes(32).toString('hex');
const secretB = randomBytes(32).toString('hex');
const stacks: TestStack[] = [];

afterAll(async () => {
  for (const stack of stacks) await stack.close();
});

async function stackWith(env: Record<string, string>, mongoUri?: string) {
  const stack = await startTestStack({ env: { ...env, ...(mongoUri ? { MONGODB_URI: mongoUri } : {}) } });
  stacks.push(stack);
  return { stack, api: client(stack.baseUrl) };
}

it('keeps tokens of the previous secret valid, signs with the new one, and refuses the old once it is dropped', async () => {
  const before = await stackWith({ JWT_SECRET: secretA });
  const tenant = await seedTenant(before.stack.ctx);
  const { email, password } = await tenant.user(['agent:read']);
  const oldLogin = await before.api.post('/api/auth/login', { json: { email, password } });
  expect(oldLogin.status).toBe(200);
  const oldToken = oldLogin.body.token as string;
  const oldKid = decodeProtectedHeader(oldToken).kid;
  expect(typeof oldKid).toBe('string');
  expect(oldToken).not.toContain(secretA);

  // Rotating: B signs, A still verifies.
  const during = await stackWith({ JWT_SECRET: secretB, JWT_PREVIOUS_SECRETS: secretA }, before.stack.config.MONGODB_URI);
  expect((await during.api.get('/api/auth/me', { token: oldToken })).status).toBe(200);
  const newLogin = await during.api.post('/api/auth/login', { json: { email, password } });
  const newToken = newLogin.body.token as string;
  expect(decodeProtectedHeader(newToken).kid).not.toBe(oldKid);
  expect((await during.api.get('/api/auth/me', { token: newToken })).status).toBe(200);
  // A token issued before tokens named their key (no kid) still verifies under the ring.
  const unnamed = await new SignJWT({ tid: tenant.tenantId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject((await during.api.get('/api/auth/me', { token: newToken })).body.principal.id)
    .setIssuer('switchboard')
    .setAudience('switchboard-api')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(secretA));
  expect((await during.api.get('/api/auth/me', { token: unnamed })).status).toBe(200);

  // Rotated: A is gone, so are its tokens; B's stay.
  const after = await stackWith({ JWT_SECRET: secretB }, before.stack.config.MONGODB_URI);
  const refused = await after.api.get('/api/auth/me', { token: oldToken });
  expect(refused.status).toBe(401);
  expect(refused.body.error.code).toBe('UNAUTHORIZED');
  expect((await after.api.get('/api/auth/me', { token: unnamed })).status).toBe(401);
  expect((await after.api.get('/api/auth/me', { token: newToken })).status).toBe(200);
});

it('refuses a token that names a key the ring does not hold, even when signed with a key it does', async () => {
  const { stack, api } = await stackWith({ JWT_SECRET: secretA });
  const tenant = await seedTenant(stack.ctx);
  const { email, password } = await tenant.user(['agent:read']);
  const login = await api.post('/api/auth/login', { json: { email, password } });
  const subject = (await api.get('/api/auth/me', { token: login.body.token })).body.principal.id as string;
  const forged = await new SignJWT({ tid: tenant.tenantId })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: 'not-a-known-key' })
    .setSubject(subject)
    .setIssuer('switchboard')
    .setAudience('switchboard-api')
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(secretA));
  expect((await api.get('/api/auth/me', { token: forged })).status).toBe(401);
});
