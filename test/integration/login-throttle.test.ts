// Login throttling over HTTP: failures count per client address and email and per client
// address, so an attacker's failures never lock the victim out from another address; the
// client address comes from X-Forwarded-For only when TRUST_PROXY trusts the peer.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { inFreshWindow } from '../support/rate-window';

const WINDOW_SECONDS = 3600;
const PER_PAIR = 3;
const PER_ADDRESS = 6;

let behindProxy: TestStack;
let direct: TestStack;
let acme: SeededTenant;

beforeAll(async () => {
  const budgets = {
    LOGIN_FAILURES_PER_IP_EMAIL: String(PER_PAIR),
    LOGIN_FAILURES_PER_IP: String(PER_ADDRESS),
    LOGIN_WINDOW_SECONDS: String(WINDOW_SECONDS),
  };
  // The test client connects over loopback: as a proxy there, its X-Forwarded-For is believed.
  behindProxy = await startTestStack({ env: { ...budgets, TRUST_PROXY: 'loopback' } });
  direct = await startTestStack({ env: { ...budgets, TRUST_PROXY: 'false' } });
  acme = await seedTenant(behindProxy.ctx);
});
afterAll(async () => {
  await behindProxy.close();
  await direct.close();
});

// Each test counts up to a limit inside one window.
beforeEach(() => inFreshWindow(WINDOW_SECONDS * 1000, 30_000));

function login(stack: TestStack, from: string, email: string, password: string) {
  return client(stack.baseUrl).post('/api/auth/login', { json: { email, password }, headers: { 'x-forwarded-for': from } });
}

it("does not let an attacker's failures from one address lock the victim out from another", async () => {
  const victim = await acme.user(['agent:read']);
  const attacker = '203.0.113.10';
  for (let i = 0; i < PER_PAIR; i++) expect((await login(behindProxy, attacker, victim.email, 'wrong guess wrong')).status).toBe(401);
  const refused = await login(behindProxy, attacker, victim.email, victim.password);
  expect(refused.status).toBe(429);
  expect(refused.body).toEqual({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String) }, retryAfterMs: expect.any(Number) });
  expect(Number(refused.headers.get('retry-after'))).toBe(Math.ceil(refused.body.retryAfterMs / 1000));

  // The victim, elsewhere: a typo is a plain 401, and the right password gets in.
  expect((await login(behindProxy, '198.51.100.20', victim.email, 'a typo in it')).status).toBe(401);
  const ok = await login(behindProxy, '198.51.100.20', victim.email, victim.password);
  expect(ok.status).toBe(200);
  expect(ok.body.token).toEqual(expect.any(String));
});

it('forgives the failures of an address with an email once it logs in', async () => {
  const user = await acme.user(['agent:read']);
  const from = '198.51.100.30';
  for (let i = 0; i < PER_PAIR - 1; i++) expect((await login(behindProxy, from, user.email, 'wrong guess wrong')).status).toBe(401);
  expect((await login(behindProxy, from, user.email, user.password)).status).toBe(200);
  // A full budget again: without the reset the second of these would be refused.
  for (let i = 0; i < PER_PAIR; i++) expect((await login(behindProxy, from, user.email, 'wrong guess wrong')).status).toBe(401);
  expect((await login(behindProxy, from, user.email, user.password)).status).toBe(429);
});

it('refuses an address past its own budget whatever the email, with Retry-After, and only that address', async () => {
  const from = '203.0.113.40';
  const user = await acme.user(['agent:read']);
  for (let i = 0; i < PER_ADDRESS; i++) {
    expect((await login(behindProxy, from, `nobody-${i}@nowhere.test`, 'wrong guess wrong')).status).toBe(401);
  }
  const refused = await login(behindProxy, from, user.email, user.password);
  expect(refused.status).toBe(429);
  expect(refused.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  expect((await login(behindProxy, '203.0.113.41', user.email, user.password)).status).toBe(200);
});

it('ignores X-Forwarded-For from a peer TRUST_PROXY does not trust', async () => {
  const forged = (i: number) => `192.0.2.${i + 1}`;
  for (let i = 0; i < PER_ADDRESS; i++) {
    expect((await login(direct, forged(i), `nobody-${i}@nowhere.test`, 'wrong guess wrong')).status).toBe(401);
  }
  // Every attempt came from the one real peer: a fresh forged address does not buy a new budget.
  const refused = await login(direct, forged(100), 'someone@nowhere.test', 'wrong guess wrong');
  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).toEqual(expect.any(String));
});
