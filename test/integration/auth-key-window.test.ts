// How long an API process answers for an API key from what it read (API_KEY_CACHE_MS,
// api/middleware/auth.ts), and why a revocation is still in force everywhere once it returns:
// the revocation waits out the window, so each replica's knowledge of the key is then younger
// than the revocation. Two replicas share one database, each with its own knowledge.
import { createApiKey } from '../../core/tenancy/accounts';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { eventually } from '../support/eventually';

const WINDOW_MS = 1500;

let replicaA: TestStack;
let replicaB: TestStack;

beforeAll(async () => {
  replicaA = await startTestStack({ env: { API_KEY_CACHE_MS: String(WINDOW_MS) } });
  replicaB = await startTestStack({ env: { API_KEY_CACHE_MS: String(WINDOW_MS), MONGODB_URI: replicaA.config.MONGODB_URI } });
});
afterAll(async () => {
  await replicaA.close();
  await replicaB.close();
});

async function mintKey(t: SeededTenant, options: { expiresAt?: Date } = {}) {
  const { key, apiKey } = await createApiKey(replicaA.ctx.models, t.tenantId, { name: 'windowed', permissions: ['agent:read'], ...options });
  return { key, id: apiKey._id };
}

it('refuses a key on every replica once its revocation through the API has returned', async () => {
  const t = await seedTenant(replicaA.ctx);
  const { key, id } = await mintKey(t);
  const [a, b] = [client(replicaA.baseUrl), client(replicaB.baseUrl)];
  // Both replicas have just read the key: each could answer for it from memory for the window.
  expect((await a.get('/api/auth/me', { key })).status).toBe(200);
  expect((await b.get('/api/auth/me', { key })).status).toBe(200);

  const started = performance.now();
  const revoke = await a.delete(`/api/api-keys/${id}`, { key: t.adminKey });
  expect(revoke.status).toBe(200);
  // It waited out the window, so no replica still holds a read from before the revocation.
  expect(performance.now() - started).toBeGreaterThanOrEqual(WINDOW_MS);
  for (const api of [b, a]) {
    const res = await api.get('/api/auth/me', { key });
    expect(res.status).toBe(401);
    expect(res.body.error).toEqual({ code: 'UNAUTHORIZED', message: expect.stringMatching(/revoked/) });
  }
});

it('answers from what it read within the window, so a change made straight in the database applies once the window has passed', async () => {
  const t = await seedTenant(replicaA.ctx);
  const { key, id } = await mintKey(t);
  const api = client(replicaB.baseUrl);
  // The API runs in this process and ages what it read by performance.now(): hold that clock
  // still, so the answer read below is as young as can be however slow the machine, then move
  // it to the end of the window. The clock is held on a whole millisecond: the API computes the
  // age as (now + WINDOW_MS) - now, which for a fractional `now` just below a power of two
  // (e.g. 16000.123456789) rounds to a hair under WINDOW_MS, so the window would not have passed.
  // Which `now` a run got depended on how long the stack took to start: it failed under load.
  const now = Math.ceil(performance.now());
  let clock = now;
  const frozen = jest.spyOn(performance, 'now').mockImplementation(() => clock);
  try {
    expect((await api.get('/api/auth/me', { key })).status).toBe(200);
    await replicaA.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { revokedAt: new Date() } });
    // Answered from memory, with no read: the revocation is not seen yet.
    expect((await api.get('/api/auth/me', { key })).status).toBe(200);
    clock = now + WINDOW_MS;
    const res = await api.get('/api/auth/me', { key });
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/revoked/);
  } finally {
    frozen.mockRestore();
  }
});

it('refuses a key in steady use once it changed: use never extends the window', async () => {
  const t = await seedTenant(replicaA.ctx);
  const { key, id } = await mintKey(t);
  const api = client(replicaB.baseUrl);
  expect((await api.get('/api/auth/me', { key })).status).toBe(200);
  await replicaA.ctx.models.ApiKey.updateOne({ _id: id }, { $set: { revokedAt: new Date() } });
  // A request every 50 ms: each finds an answer younger than the window, and from half its age
  // on starts a re-read; the re-read's refusal is what ends the remembered answer.
  const refused = await eventually(
    () => api.get('/api/auth/me', { key }).then((res) => res.status),
    (status) => status === 401,
    WINDOW_MS * 3,
    50,
  );
  expect(refused).toBe(401);
  expect((await api.get('/api/auth/me', { key })).status).toBe(401);
});

it('refuses a remembered key the moment its expiry passes, without waiting for the window', async () => {
  const t = await seedTenant(replicaA.ctx);
  // Both clocks the API reads are held: Date.now() (the expiry) and performance.now() (the
  // window). The key is remembered before its expiry however slow the machine, and the expiry
  // then passes while the window is nowhere near over.
  let wallClock = Date.now();
  const expiresAt = wallClock + 1000;
  const { key } = await mintKey(t, { expiresAt: new Date(expiresAt) });
  const api = client(replicaB.baseUrl);
  const frozenWindow = jest.spyOn(performance, 'now').mockReturnValue(Math.ceil(performance.now()));
  const frozenWall = jest.spyOn(Date, 'now').mockImplementation(() => wallClock);
  try {
    expect((await api.get('/api/auth/me', { key })).status).toBe(200);
    wallClock = expiresAt;
    const res = await api.get('/api/auth/me', { key });
    expect(res.status).toBe(401);
    expect(res.body.error.message).toMatch(/expired/);
  } finally {
    frozenWall.mockRestore();
    frozenWindow.mockRestore();
  }
});
