// What the API answers while Temporal or MongoDB does not answer, and that it recovers on its own.
// The API reaches each dependency through a TCP proxy this file cuts and restores; the shared
// Temporal and store keep running for every other test file. The worker reaches Temporal
// directly: what is under test is the API.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../support/stack';
import { client } from '../support/http';
import { echoAgent, publishAgent } from '../support/agents';
import { eventually } from '../support/eventually';
import { hostPort, startTcpProxy, type TcpProxy } from '../support/tcp-proxy';

let temporalProxy: TcpProxy;
let storeProxy: TcpProxy;
let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

beforeAll(async () => {
  [temporalProxy, storeProxy] = await Promise.all([
    startTcpProxy(hostPort(process.env.SB_TEST_TEMPORAL_ADDRESS!)),
    startTcpProxy(hostPort(process.env.SB_TEST_MONGODB_URI!)),
  ]);
  stack = await startTestStack({
    worker: true,
    mongoUri: `mongodb://${storeProxy.address}`,
    env: { TEMPORAL_ADDRESS: temporalProxy.address, MONGODB_SERVER_SELECTION_TIMEOUT_MS: '1000' },
    workerTemporalAddress: process.env.SB_TEST_TEMPORAL_ADDRESS!,
  });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Echo', echoAgent());
});
afterAll(async () => {
  temporalProxy.restore();
  storeProxy.restore();
  await stack.close();
  await Promise.all([temporalProxy.close(), storeProxy.close()]);
});

const chat = (json: Record<string, unknown>, idempotencyKey?: string) =>
  api.post('/api/v1/chat/agent', {
    key: t.adminKey,
    json: { projectId: t.projectId, agentId: 'Echo', ...json },
    ...(idempotencyKey ? { headers: { 'Idempotency-Key': idempotencyKey } } : {}),
  });
const readSession = (id: string) => api.get(`/api/projects/${t.projectId}/sessions/${id}`, { key: t.adminKey });
const createSession = () => api.post(`/api/projects/${t.projectId}/sessions`, { key: t.adminKey, json: { agentId: 'Echo' } });

type Answer = Awaited<ReturnType<typeof readSession>>;
function expectRetryLater(res: Answer): void {
  expect(res.status).toBe(503);
  expect(res.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: expect.any(String) } });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

/** The public probe reuses a check for a second, so the answer from before a cut may come once more. */
async function notReady(): Promise<void> {
  expect((await eventually(() => api.get('/readyz'), (res) => res.status === 503, 10_000, 100)).status).toBe(503);
}

async function readyAgain(): Promise<void> {
  expect((await eventually(() => api.get('/readyz'), (res) => res.status === 200, 30_000, 100)).status).toBe(200);
}

/** A session with one answered turn, before the outage. */
async function liveSession(): Promise<string> {
  const first = await chat({ message: 'before', metadata: { n: 0 } });
  expect(first.status).toBe(200);
  return first.body.sessionId as string;
}

it('answers 503 with Retry-After while Temporal is down, and serves again when it is back', async () => {
  const sessionId = await liveSession();
  temporalProxy.cut();
  try {
    await notReady();
    expectRetryLater(await chat({ sessionId, message: 'during', metadata: { n: 1 } }, 'outage-turn-1'));
    expectRetryLater(await chat({ message: 'a new one' }));
    expectRetryLater(await createSession());
    // The record is in the store: a read still answers, saying the live state is unreachable.
    const read = await readSession(sessionId);
    expect(read.status).toBe(200);
    expect(read.body.session.id).toBe(sessionId);
  } finally {
    temporalProxy.restore();
  }
  await readyAgain();
  // The client's retry with the same key is answered once.
  const retried = await chat({ sessionId, message: 'during', metadata: { n: 1 } }, 'outage-turn-1');
  expect(retried.status).toBe(200);
  expect(retried.body.response).toBe('Noted 1.');
  expect((await createSession()).status).toBe(201);
});

it('answers 503 with Retry-After while MongoDB is down, and serves again when it is back', async () => {
  const sessionId = await liveSession();
  storeProxy.cut();
  try {
    await notReady();
    expectRetryLater(await chat({ message: 'a new one', metadata: { n: 7 } }, 'outage-new-session'));
    expectRetryLater(await readSession(sessionId));
    expectRetryLater(await createSession());
  } finally {
    storeProxy.restore();
  }
  await readyAgain();
  const retried = await chat({ message: 'a new one', metadata: { n: 7 } }, 'outage-new-session');
  expect(retried.status).toBe(200);
  expect(retried.body.response).toMatch(/Noted 7\.$/);
  expect((await readSession(sessionId)).status).toBe(200);
  expect((await createSession()).status).toBe(201);
});
