// Per-tenant request-rate limiting with counters in MongoDB, shared by API replicas.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';

let replicaA: TestStack;
let replicaB: TestStack;
let t: SeededTenant;
let other: SeededTenant;

beforeAll(async () => {
  replicaA = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '4', RATE_LIMIT_WINDOW_SECONDS: '60' } });
  // A second replica on the same database shares the counters.
  replicaB = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '4', MONGODB_URI: replicaA.config.MONGODB_URI } });
  t = await seedTenant(replicaA.ctx);
  other = await seedTenant(replicaA.ctx);
});
afterAll(async () => {
  await replicaA.close();
  await replicaB.close();
});

it('counts requests per tenant across replicas, then answers 429 with retryAfterMs', async () => {
  const a = client(replicaA.baseUrl);
  const b = client(replicaB.baseUrl);
  const first = await a.get('/api/auth/me', { key: t.adminKey });
  expect(first.status).toBe(200);
  expect(first.headers.get('x-ratelimit-remaining')).toBe('3');
  const reset = Number(first.headers.get('x-ratelimit-reset'));
  expect(reset).toBeGreaterThan(Date.now() / 1000);
  expect(reset).toBeLessThanOrEqual(Date.now() / 1000 + 61);

  expect((await b.get('/api/auth/me', { key: t.adminKey })).headers.get('x-ratelimit-remaining')).toBe('2');
  expect((await a.get('/api/auth/me', { key: t.adminKey })).headers.get('x-ratelimit-remaining')).toBe('1');
  expect((await b.get('/api/auth/me', { key: t.adminKey })).headers.get('x-ratelimit-remaining')).toBe('0');

  const limited = await a.get('/api/auth/me', { key: t.adminKey });
  expect(limited.status).toBe(429);
  expect(limited.body).toEqual({
    success: false,
    error: { code: 'RATE_LIMIT_EXCEEDED', message: expect.any(String) },
    retryAfterMs: expect.any(Number),
  });
  expect(limited.body.retryAfterMs).toBeGreaterThan(0);
  expect(limited.body.retryAfterMs).toBeLessThanOrEqual(60_000);
  expect(Number(limited.headers.get('retry-after'))).toBe(Math.ceil(limited.body.retryAfterMs / 1000));
  expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');

  // Another tenant has its own budget.
  expect((await a.get('/api/auth/me', { key: other.adminKey })).status).toBe(200);
});
