// With Temporal unreachable: routes that must reach a workflow answer 503 SERVICE_UNAVAILABLE and
// change nothing; reads answer from MongoDB (the detail says live: false, unreachable).
import { createServer } from 'node:net';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession, seedTrace } from './fixtures';

// Each call waits for the Temporal connect timeout (3 s) before giving up.
jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  stack = await startTestStack({ env: { TEMPORAL_ADDRESS: `127.0.0.1:${await closedPort()}` } });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-temporal-down');
  // The agents API does not need Temporal; a session can only start an agent with a version.
  const dslContent = 'AGENT: Down_Agent\nGOAL: "Answer while Temporal is down."\n';
  expect((await api.post(`/api/projects/${acme.projectId}/agents`, { key: acme.adminKey, json: { name: 'Down_Agent', dslContent } })).status).toBe(201);
  expect((await api.post(`/api/projects/${acme.projectId}/agents/Down_Agent/versions`, { key: acme.adminKey, json: {} })).status).toBe(201);
});
afterAll(() => stack.close());

const snapshot = async () =>
  JSON.stringify({
    sessions: await stack.ctx.models.Session.find({}).sort({ _id: 1 }).lean(),
    traces: await stack.ctx.models.TraceEvent.countDocuments({}),
  });

it('POST sessions answers 503 and leaves no session record', async () => {
  const before = await snapshot();
  const res = await api.post(`/api/projects/${acme.projectId}/sessions`, { key: acme.adminKey, json: { agentId: 'Down_Agent' } });
  expect(res.status).toBe(503);
  expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
  expect(await snapshot()).toBe(before);
});

it('DELETE and reset answer 503 and delete nothing', async () => {
  const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
  await seedTrace(stack.ctx, session, [{ type: 'llm_call', spanId: 'x' }]);
  const before = await snapshot();
  const deleted = await api.delete(`/api/projects/${acme.projectId}/sessions/${session._id}`, { key: acme.adminKey });
  expect(deleted.status).toBe(503);
  expect(deleted.body.error.code).toBe('SERVICE_UNAVAILABLE');
  const reset = await api.post(`/api/projects/${acme.projectId}/sessions/${session._id}/reset`, { key: acme.adminKey });
  expect(reset.status).toBe(503);
  expect(await snapshot()).toBe(before);
});

it('the detail answers from MongoDB with live: false, unreachable; list and traces still work', async () => {
  const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId }, { messageCount: 4 });
  const detail = await api.get(`/api/projects/${acme.projectId}/sessions/${session._id}`, { key: acme.adminKey });
  expect(detail.status).toBe(200);
  expect(detail.body.session).toMatchObject({ id: session._id, messageCount: 4, live: false, liveUnavailableReason: 'unreachable' });
  expect((await api.get(`/api/projects/${acme.projectId}/sessions`, { key: acme.adminKey })).status).toBe(200);
  expect((await api.get(`/api/projects/${acme.projectId}/sessions/${session._id}/traces`, { key: acme.adminKey })).status).toBe(200);
});
