// Per-tenant request-rate limiting with counters in MongoDB, shared by API replicas.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { inFreshWindow } from '../support/rate-window';

let replicaA: TestStack;
let replicaB: TestStack;
let t: SeededTenant;
let other: SeededTenant;

let roomy: TestStack;

// Each test counts up to a limit inside one 60 s window.
beforeEach(() => inFreshWindow());

beforeAll(async () => {
  roomy = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '30', RATE_LIMIT_WINDOW_SECONDS: '60' } });
  replicaA = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '4', RATE_LIMIT_WINDOW_SECONDS: '60' } });
  // A second replica on the same database shares the counters.
  replicaB = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '4', MONGODB_URI: replicaA.config.MONGODB_URI } });
  t = await seedTenant(replicaA.ctx);
  other = await seedTenant(replicaA.ctx);
});
afterAll(async () => {
  await roomy.close();
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

it('admits requests with ample room before the shared count answers, counts them all, and stops exactly at the limit', async () => {
  const api = client(roomy.baseUrl);
  const tenant = await seedTenant(roomy.ctx);
  const remaining: number[] = [];
  for (let i = 0; i < 30; i++) {
    const res = await api.get('/api/auth/me', { key: tenant.adminKey });
    expect(res.status).toBe(200);
    remaining.push(Number(res.headers.get('x-ratelimit-remaining')));
  }
  // One process alone sees its own count: the headers go 29, 28, ... 0.
  expect(remaining).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
  const limited = await api.get('/api/auth/me', { key: tenant.adminKey });
  expect(limited.status).toBe(429);
  // Every charge reached the shared counter, including those not waited for.
  const counters = await roomy.ctx.models.Tenant.db
    .collection<{ _id: string; points: number }>('rate_limit_windows')
    .find({ _id: { $regex: `^[^:]*:?tenant:${tenant.tenantId}@` } })
    .toArray();
  expect(counters.reduce((sum, c) => sum + c.points, 0)).toBe(31);
});

it('never admits past the limit within one process, even for a burst that arrives at once', async () => {
  const api = client(roomy.baseUrl);
  const tenant = await seedTenant(roomy.ctx);
  // Learn the room first, then send the rest of the budget and more all at once.
  expect((await api.get('/api/auth/me', { key: tenant.adminKey })).status).toBe(200);
  const burst = await Promise.all(Array.from({ length: 40 }, () => api.get('/api/auth/me', { key: tenant.adminKey })));
  expect(burst.filter((r) => r.status === 200)).toHaveLength(29);
  expect(burst.filter((r) => r.status === 429)).toHaveLength(11);
});

it('writes charges admitted without waiting to the shared count within a moment', async () => {
  const api = client(roomy.baseUrl);
  const tenant = await seedTenant(roomy.ctx);
  for (let i = 0; i < 15; i++) expect((await api.get('/api/auth/me', { key: tenant.adminKey })).status).toBe(200);
  const counted = async () =>
    (
      await roomy.ctx.models.Tenant.db
        .collection<{ _id: string; points: number }>('rate_limit_windows')
        .find({ _id: { $regex: `tenant:${tenant.tenantId}@` } })
        .toArray()
    ).reduce((sum, c) => sum + c.points, 0);
  const deadline = Date.now() + 3000;
  while ((await counted()) < 15 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  expect(await counted()).toBe(15);
});

it('writes the charges still waiting in a batch when the API stops gracefully', async () => {
  // A second replica on roomy's database, stopped right after its requests were admitted.
  const stopping = await startTestStack({ env: { RATE_LIMIT_REQUESTS: '30', RATE_LIMIT_WINDOW_SECONDS: '60', MONGODB_URI: roomy.config.MONGODB_URI } });
  const tenant = await seedTenant(stopping.ctx);
  const api = client(stopping.baseUrl);
  for (let i = 0; i < 12; i++) expect((await api.get('/api/auth/me', { key: tenant.adminKey })).status).toBe(200);
  await stopping.close();
  const counters = await roomy.ctx.models.Tenant.db
    .collection<{ _id: string; points: number }>('rate_limit_windows')
    .find({ _id: { $regex: `tenant:${tenant.tenantId}@` } })
    .toArray();
  expect(counters.reduce((sum, c) => sum + c.points, 0)).toBe(12);
});
