// Chat against deployments on the real stack: a new session runs the versions its deployment (or
// its environment's active deployment) pins and carries Environment and DeploymentId search
// attributes; it keeps them after a newer deployment becomes active; without a deployment it runs
// the latest versions; a retired deployment is 410.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { DeploymentIdKey, EnvironmentKey } from '../../../workflows/search-attributes';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;

/** An agent that says which version answers, on every message, without ending. */
const speaker = (name: string, tag: string) => `AGENT: ${name}
GOAL: "Say which version answers."
FLOW:
  entry_point: hello
  steps: [hello]
  hello:
    REASONING: false
    RESPOND: "${name} ${tag}"
    ON_INPUT:
      - ELSE:
        THEN: hello
`;

/** What the agent said, once: a first turn answers both the start and the message. */
const said = (response: string) => [...new Set(response.split('\n\n'))].join(' | ');
const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
const deploy = async (json: Record<string, unknown>) => {
  const res = await api.post(`/api/projects/${t.projectId}/deployments`, { key: t.adminKey, json });
  expect(res.status).toBe(201);
  return res.body.deployment as { id: string; environment: string };
};
const newVersion = async (name: string, tag: string) => {
  expect((await api.put(`/api/projects/${t.projectId}/agents/${name}/dsl`, { key: t.adminKey, json: { dslContent: speaker(name, tag) } })).status).toBe(200);
  expect((await api.post(`/api/projects/${t.projectId}/agents/${name}/versions`, { key: t.adminKey, json: {} })).status).toBe(201);
};
const describeSession = async (id: string) => (await stack.ctx.temporal.client()).workflow.getHandle(`session/${id}`).describe();

let v1Deployment: { id: string };

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx, 'deploy-chat');
  await publishAgent(api, t, 'Desk', speaker('Desk', 'v1'));
  await publishAgent(api, t, 'Helper', speaker('Helper', 'v1'));
  v1Deployment = await deploy({ environment: 'production', agentVersionManifest: { Desk: 'auto', Helper: 'auto' }, entryAgentName: 'Desk' });
  await newVersion('Desk', 'v2');
});
afterAll(() => stack.close());

describe('which versions a new session runs', () => {
  it("runs the environment's active deployment, pinned, with Environment and DeploymentId on the session", async () => {
    const res = await chat({ environment: 'production', message: 'hello' });
    expect(res.status).toBe(200);
    expect(said(res.body.response)).toBe('Desk v1');
    const sessionId = res.body.sessionId as string;
    expect(await stack.ctx.models.Session.findById(sessionId).lean()).toMatchObject({ environment: 'production', deploymentId: v1Deployment.id, agentName: 'Desk' });
    const attrs = (await describeSession(sessionId)).typedSearchAttributes;
    expect(attrs.get(EnvironmentKey)).toBe('production');
    expect(attrs.get(DeploymentIdKey)).toBe(v1Deployment.id);
  });

  it('runs the latest versions without a deployment or environment, as before', async () => {
    const res = await chat({ message: 'hello' });
    expect(res.status).toBe(200);
    expect(said(res.body.response)).toBe('Desk v2');
    const attrs = (await describeSession(res.body.sessionId)).typedSearchAttributes;
    expect(attrs.get(EnvironmentKey)).toBe('dev');
    expect(attrs.get(DeploymentIdKey)).toBeUndefined();
  });

  it('runs the named deployment, and agentId picks another of its agents', async () => {
    const res = await chat({ deploymentId: v1Deployment.id, agentId: 'Helper', message: 'hello' });
    expect(res.status).toBe(200);
    expect(said(res.body.response)).toBe('Helper v1');
  });

  it('applies the deployment to sessions created through the sessions endpoint', async () => {
    const res = await api.post(`/api/projects/${t.projectId}/sessions`, { key: t.adminKey, json: { agentId: 'Desk', environment: 'production' } });
    expect(res.status).toBe(201);
    expect(await stack.ctx.models.Session.findById(res.body.session.id).lean()).toMatchObject({ deploymentId: v1Deployment.id, environment: 'production' });
  });

  it.each([
    ['an unknown deployment', { deploymentId: 'nope' }, 404, 'NOT_FOUND', 'Deployment not found'],
    ['an environment without an active deployment', { environment: 'staging' }, 404, 'NOT_FOUND', 'No active deployment in staging'],
    ['a deployment in another environment than the one named', { environment: 'staging', deploymentId: () => v1Deployment.id }, 409, 'CONFLICT', /is in production, not staging/],
    ['an agent the deployment does not pin', { deploymentId: () => v1Deployment.id, agentId: 'Nobody' }, 404, 'NOT_FOUND', /not part of deployment/],
  ] as const)('refuses %s', async (_label, target, status, code, message) => {
    const json = Object.fromEntries(Object.entries(target).map(([k, v]) => [k, typeof v === 'function' ? v() : v]));
    const before = await stack.ctx.models.Session.countDocuments({ projectId: t.projectId });
    const res = await chat({ ...json, message: 'hello' });
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toMatch(message);
    expect(await stack.ctx.models.Session.countDocuments({ projectId: t.projectId })).toBe(before);
  });
});

describe('pinning across deployments', () => {
  it('keeps a session on its versions after a newer deployment becomes active; new sessions take the newer one', async () => {
    const first = await chat({ environment: 'production', message: 'hello' });
    expect(said(first.body.response)).toBe('Desk v1');
    const newer = await deploy({ environment: 'production', agentVersionManifest: { Desk: 'auto', Helper: 'auto' }, entryAgentName: 'Desk' });

    const again = await chat({ sessionId: first.body.sessionId, message: 'still there?' });
    expect(again.status).toBe(200);
    expect(said(again.body.response)).toBe('Desk v1');
    const fresh = await chat({ environment: 'production', message: 'hello' });
    expect(said(fresh.body.response)).toBe('Desk v2');
    expect(await stack.ctx.models.Session.findById(fresh.body.sessionId).lean()).toMatchObject({ deploymentId: newer.id });
  });

  it('answers a retried first message from its session even after its deployment was retired', async () => {
    const current = (await api.get(`/api/projects/${t.projectId}/deployments?environment=production&status=active`, { key: t.adminKey })).body.deployments[0];
    const send = () =>
      api.post('/api/v1/chat/agent', { key: t.adminKey, headers: { 'idempotency-key': `retry-${current.id}` }, json: { projectId: t.projectId, deploymentId: current.id, message: 'hello' } });
    const first = await send();
    expect(first.status).toBe(200);
    await deploy({ environment: 'production', agentVersionManifest: { Desk: 'auto' }, entryAgentName: 'Desk' });
    const retried = await send();
    expect(retried.status).toBe(200);
    expect(retried.body.sessionId).toBe(first.body.sessionId);
    expect(retried.body.response).toBe(first.body.response);
  });

  it('answers 410 GONE to a new chat naming a retired deployment', async () => {
    // Superseded by the newer deployment above: retired.
    const res = await chat({ deploymentId: v1Deployment.id, message: 'hello' });
    expect(res.status).toBe(410);
    expect(res.body).toEqual({ success: false, error: { code: 'GONE', message: 'Deployment is retired' } });
  });
});
