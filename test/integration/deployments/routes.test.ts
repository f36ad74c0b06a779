// Deployment routes against the real stack: creating pins resolved versions and makes the new
// deployment its environment's only active one (agents' activeVersions follow); retire, rollback
// and promote move deployments between states as docs/deployments.md says; every error, the
// permission and tenant isolation.
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { DeploymentIdKey, EnvironmentKey, ProjectIdKey, TenantIdKey } from '../../../workflows/search-attributes';

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let other: SeededTenant;

const source = (name: string, goal: string) => `AGENT: ${name}\nGOAL: "${goal}"\n`;
const base = (projectId = t.projectId) => `/api/projects/${projectId}/deployments`;
const deploy = (json: Record<string, unknown>, key = t.adminKey, projectId = t.projectId) => api.post(base(projectId), { key, json });
const newVersion = async (name: string, goal: string) => {
  expect((await api.put(`/api/projects/${t.projectId}/agents/${name}/dsl`, { key: t.adminKey, json: { dslContent: source(name, goal) } })).status).toBe(200);
  expect((await api.post(`/api/projects/${t.projectId}/agents/${name}/versions`, { key: t.adminKey, json: {} })).status).toBe(201);
};
const activeVersions = async () => {
  const res = await api.get(`/api/projects/${t.projectId}/agents`, { key: t.adminKey });
  return Object.fromEntries((res.body.agents as { name: string; activeVersions: Record<string, string> }[]).map((a) => [a.name, a.activeVersions]));
};

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx, 'deploy-routes');
  other = await seedTenant(stack.ctx, 'deploy-other');
  await publishAgent(api, t, 'Alpha', source('Alpha', 'First.'));
  await publishAgent(api, t, 'Beta', source('Beta', 'Second.'));
  await newVersion('Alpha', 'First, again.');
  await api.post(`/api/projects/${t.projectId}/agents`, { key: t.adminKey, json: { name: 'Unversioned', dslContent: source('Unversioned', 'Never saved.') } });
});
afterAll(() => stack.close());

describe('POST /deployments', () => {
  it('creates an active deployment with every field, `auto` resolved to the latest version', async () => {
    const res = await deploy({
      environment: 'dev',
      agentVersionManifest: { Alpha: 'auto', Beta: '1.0.0' },
      entryAgentName: 'Alpha',
      label: 'First cut',
      description: 'Both agents',
      modelOverrides: { Beta: { model: 'fast', temperature: 0.2 } },
      settingsVersionId: 'settings-7',
      workflowVersionManifest: { onboarding: '3' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      success: true,
      deployment: {
        id: expect.any(String),
        projectId: t.projectId,
        environment: 'dev',
        status: 'active',
        label: 'First cut',
        description: 'Both agents',
        endpointSlug: expect.stringMatching(new RegExp(`^${t.projectId}-dev-[0-9a-z]{4}-[0-9a-z]{6}$`)),
        entryAgentName: 'Alpha',
        agentVersionManifest: { Alpha: '1.0.1', Beta: '1.0.0' },
        modelOverrides: { Beta: { model: 'fast', temperature: 0.2 } },
        settingsVersionId: 'settings-7',
        workflowVersionManifest: { onboarding: '3' },
        promotedFromId: null,
        createdBy: expect.any(String),
        createdAt: expect.any(String),
        retiredAt: null,
      },
    });
    expect(await activeVersions()).toMatchObject({ Alpha: { dev: '1.0.1' }, Beta: { dev: '1.0.0' }, Unversioned: {} });
    const detail = await api.get(`${base()}/${res.body.deployment.id}`, { key: t.adminKey });
    expect(detail.status).toBe(200);
    expect(detail.body.deployment).toEqual({ ...res.body.deployment, channelCount: 0, activeSessionCount: 0 });
  });

  it('supersedes the active deployment of the environment; agents left out lose that environment', async () => {
    const first = await deploy({ environment: 'staging', agentVersionManifest: { Alpha: '1.0.0', Beta: 'auto' }, entryAgentName: 'Alpha' });
    const second = await deploy({ environment: 'staging', agentVersionManifest: { Alpha: '1.0.1' }, entryAgentName: 'Alpha' });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(first.body.deployment.label).toMatch(/^staging \d{4}-\d\d-\d\d \d\d:\d\d$/);
    const old = await api.get(`${base()}/${first.body.deployment.id}`, { key: t.adminKey });
    expect(old.body.deployment).toMatchObject({ status: 'retired', retiredAt: expect.any(String) });
    const active = await api.get(`${base()}?environment=staging&status=active`, { key: t.adminKey });
    expect(active.body.deployments.map((d: { id: string }) => d.id)).toEqual([second.body.deployment.id]);
    expect(await activeVersions()).toMatchObject({ Alpha: { dev: '1.0.1', staging: '1.0.1' }, Beta: { dev: '1.0.0' } });
    expect((await activeVersions()).Beta).not.toHaveProperty('staging');
  });

  it.each([
    ['an empty manifest', { environment: 'dev', agentVersionManifest: {}, entryAgentName: 'Alpha' }, /at least one agent/],
    ['an unknown environment', { environment: 'qa', agentVersionManifest: { Alpha: 'auto' }, entryAgentName: 'Alpha' }, /environment/],
  ])('refuses %s with 400 and creates nothing', async (_label, json, message) => {
    const before = await stack.ctx.models.Deployment.countDocuments({ projectId: t.projectId });
    const res = await deploy(json);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: { code: expect.stringMatching(/^(VALIDATION_ERROR|BAD_REQUEST)$/), message: expect.stringMatching(message) } });
    expect(await stack.ctx.models.Deployment.countDocuments({ projectId: t.projectId })).toBe(before);
  });

  it.each([
    ['an entry agent outside the manifest', { environment: 'dev', agentVersionManifest: { Alpha: 'auto' }, entryAgentName: 'Beta' }, /entryAgentName/],
    ['a model override for an agent not deployed', { environment: 'dev', agentVersionManifest: { Alpha: 'auto' }, entryAgentName: 'Alpha', modelOverrides: { Beta: { model: 'fast' } } }, /modelOverrides/],
    ['an unknown agent', { environment: 'dev', agentVersionManifest: { Ghost: 'auto' }, entryAgentName: 'Ghost' }, /Agent not found: Ghost/],
    ['an unknown version', { environment: 'dev', agentVersionManifest: { Alpha: '9.9.9' }, entryAgentName: 'Alpha' }, /Version not found: Alpha@9\.9\.9/],
    ['`auto` for an agent without versions', { environment: 'dev', agentVersionManifest: { Unversioned: 'auto' }, entryAgentName: 'Unversioned' }, /no version yet/],
  ])('refuses %s with 422 (well-formed, but inconsistent or naming what the project lacks) and creates nothing', async (_label, json, message) => {
    const before = await stack.ctx.models.Deployment.countDocuments({ projectId: t.projectId });
    const res = await deploy(json);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: { code: 'UNPROCESSABLE_ENTITY', message: expect.stringMatching(message) } });
    expect(await stack.ctx.models.Deployment.countDocuments({ projectId: t.projectId })).toBe(before);
  });
});

describe('concurrent deployments', () => {
  it('leaves exactly one active deployment when several are created in one environment at once', async () => {
    const created = await Promise.all(
      Array.from({ length: 5 }, (_, i) => deploy({ environment: 'staging', agentVersionManifest: { Alpha: 'auto' }, entryAgentName: 'Alpha', label: `race ${i}` })),
    );
    expect(created.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    const active = await api.get(`${base()}?environment=staging&status=active`, { key: t.adminKey });
    expect(active.body.deployments).toHaveLength(1);
    expect(created.map((r) => r.body.deployment.id)).toContain(active.body.deployments[0].id);
  });
});

describe('listing', () => {
  it('lists newest first with the list fields, filters by environment and status, pages', async () => {
    const all = await api.get(base(), { key: t.adminKey });
    expect(all.status).toBe(200);
    expect(all.body.total).toBeGreaterThanOrEqual(3);
    const item = all.body.deployments[0];
    expect(Object.keys(item).sort()).toEqual(['createdAt', 'endpointSlug', 'environment', 'id', 'label', 'projectId', 'status'].sort());
    const times = (all.body.deployments as { createdAt: string }[]).map((d) => d.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const retired = await api.get(`${base()}?status=retired`, { key: t.adminKey });
    expect(retired.body.deployments.every((d: { status: string }) => d.status === 'retired')).toBe(true);
    const page = await api.get(`${base()}?limit=1&offset=1`, { key: t.adminKey });
    expect(page.body).toMatchObject({ total: all.body.total, limit: 1, offset: 1 });
    expect(page.body.deployments).toEqual([all.body.deployments[1]]);
    expect((await api.get(`${base()}?status=draining`, { key: t.adminKey })).status).toBe(400);
  });
});

describe('retire', () => {
  it('retires the active deployment, clears the environment from the agents and starts its drain workflow', async () => {
    const created = await deploy({ environment: 'production', agentVersionManifest: { Alpha: '1.0.0' }, entryAgentName: 'Alpha' });
    const id = created.body.deployment.id as string;
    expect((await activeVersions()).Alpha).toHaveProperty('production', '1.0.0');
    const res = await api.post(`${base()}/${id}/retire`, { key: t.adminKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, deployment: { id, status: 'retired', retiredAt: expect.any(String) } });
    expect((await activeVersions()).Alpha).not.toHaveProperty('production');
    const description = await (await stack.ctx.temporal.client()).workflow.getHandle(`deployment-drain/${id}`).describe();
    expect(description.type).toBe('deploymentDrain');
    expect(description.typedSearchAttributes.get(TenantIdKey)).toBe(t.tenantId);
    expect(description.typedSearchAttributes.get(ProjectIdKey)).toBe(t.projectId);
    expect(description.typedSearchAttributes.get(EnvironmentKey)).toBe('production');
    expect(description.typedSearchAttributes.get(DeploymentIdKey)).toBe(id);

    const again = await api.post(`${base()}/${id}/retire`, { key: t.adminKey });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'CONFLICT', message: 'Deployment is already retired' });
  });
});

describe('rollback', () => {
  it('on a retired deployment reactivates it and retires the active one', async () => {
    const a = (await deploy({ environment: 'production', agentVersionManifest: { Alpha: '1.0.0' }, entryAgentName: 'Alpha' })).body.deployment;
    const b = (await deploy({ environment: 'production', agentVersionManifest: { Alpha: '1.0.1' }, entryAgentName: 'Alpha' })).body.deployment;
    const res = await api.post(`${base()}/${a.id}/rollback`, { key: t.adminKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      deployment: { ...a, status: 'active', retiredAt: null },
      retiredDeployment: { id: b.id, status: 'retired', retiredAt: expect.any(String) },
    });
    expect((await activeVersions()).Alpha).toHaveProperty('production', '1.0.0');

    // On the active one it undoes that: the deployment it replaced is active again.
    const undo = await api.post(`${base()}/${a.id}/rollback`, { key: t.adminKey });
    expect(undo.status).toBe(200);
    expect(undo.body.deployment).toMatchObject({ id: b.id, status: 'active' });
    expect(undo.body.retiredDeployment).toMatchObject({ id: a.id, status: 'retired' });
    expect((await activeVersions()).Alpha).toHaveProperty('production', '1.0.1');
    const active = await api.get(`${base()}?environment=production&status=active`, { key: t.adminKey });
    expect(active.body.deployments.map((d: { id: string }) => d.id)).toEqual([b.id]);
  });

  it('answers 409 on an active deployment that replaced none', async () => {
    await api.post(`/api/projects/${t.otherProjectId}/agents`, { key: t.adminKey, json: { name: 'Solo', dslContent: source('Solo', 'Alone.') } });
    await api.post(`/api/projects/${t.otherProjectId}/agents/Solo/versions`, { key: t.adminKey, json: {} });
    const only = await deploy({ environment: 'dev', agentVersionManifest: { Solo: 'auto' }, entryAgentName: 'Solo' }, t.adminKey, t.otherProjectId);
    expect(only.status).toBe(201);
    const res = await api.post(`${base(t.otherProjectId)}/${only.body.deployment.id}/rollback`, { key: t.adminKey });
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/nothing to roll back to/);
  });
});

describe('promote', () => {
  it('copies the manifest and settings into the target environment as its active deployment', async () => {
    const source_ = (await deploy({ environment: 'dev', agentVersionManifest: { Alpha: '1.0.0', Beta: '1.0.0' }, entryAgentName: 'Beta', label: 'RC', modelOverrides: { Alpha: { temperature: 0 } } })).body.deployment;
    const res = await api.post(`${base()}/${source_.id}/promote`, { key: t.adminKey, json: { targetEnvironment: 'production' } });
    expect(res.status).toBe(201);
    expect(res.body.deployment).toMatchObject({
      environment: 'production',
      status: 'active',
      label: 'RC',
      entryAgentName: 'Beta',
      agentVersionManifest: { Alpha: '1.0.0', Beta: '1.0.0' },
      modelOverrides: { Alpha: { temperature: 0 } },
      promotedFromId: source_.id,
    });
    expect(res.body.deployment.id).not.toBe(source_.id);
    expect(res.body.deployment.endpointSlug).toMatch(new RegExp(`^${t.projectId}-production-`));
    // The source stays where it was.
    expect((await api.get(`${base()}/${source_.id}`, { key: t.adminKey })).body.deployment).toMatchObject({ environment: 'dev', status: 'active' });
    expect(await activeVersions()).toMatchObject({ Alpha: { dev: '1.0.0', production: '1.0.0' }, Beta: { dev: '1.0.0', production: '1.0.0' } });
  });

  it('refuses the same environment with 409: the request is sound, the deployment is already there', async () => {
    const dev = (await api.get(`${base()}?environment=dev&status=active`, { key: t.adminKey })).body.deployments[0];
    const res = await api.post(`${base()}/${dev.id}/promote`, { key: t.adminKey, json: { targetEnvironment: 'dev' } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
  });

  it('refuses agents that do not compile together into staging or production (422 with diagnostics), not into dev', async () => {
    await api.post(`/api/projects/${t.projectId}/agents`, { key: t.adminKey, json: { name: 'Target', dslContent: source('Target', 'Be there.') } });
    await publishAgent(api, t, 'Router', 'SUPERVISOR: Router\nGOAL: "Route."\nHANDOFF:\n  - TO: Target\n    WHEN: user asks\n');
    // Router alone: its handoff target is not part of the deployment.
    const staging = (await deploy({ environment: 'staging', agentVersionManifest: { Router: 'auto' }, entryAgentName: 'Router' })).body.deployment;
    const before = await stack.ctx.models.Deployment.countDocuments({ projectId: t.projectId });
    const res = await api.post(`${base()}/${staging.id}/promote`, { key: t.adminKey, json: { targetEnvironment: 'production' } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('UNPROCESSABLE_ENTITY');
    expect(res.body.error.message).toMatch(/do not compile together: \d+ error\(s\); first: agents\/Router\.agent\.abl:4/);
    expect(res.body.error.details.diagnostics).toContainEqual(expect.objectContaining({ severity: 'error', code: 'E701', path: 'agents/Router.agent.abl', line: 4 }));
    expect(await stack.ctx.models.Deployment.countDocuments({ projectId: t.projectId })).toBe(before);
    const toDev = await api.post(`${base()}/${staging.id}/promote`, { key: t.adminKey, json: { targetEnvironment: 'dev' } });
    expect(toDev.status).toBe(201);
  });

  it('validates the body', async () => {
    const dev = (await api.get(`${base()}?environment=dev&status=active`, { key: t.adminKey })).body.deployments[0];
    for (const json of [{}, { targetEnvironment: 'qa' }]) {
      const res = await api.post(`${base()}/${dev.id}/promote`, { key: t.adminKey, json });
      expect(res.status).toBe(400);
    }
  });
});

describe('permissions and isolation', () => {
  it('needs deployment:create for changes; agent:read lists and reads', async () => {
    const reader = await t.keyWith(['agent:read']);
    const listed = await api.get(base(), { key: reader });
    expect(listed.status).toBe(200);
    const id = listed.body.deployments[0].id;
    expect((await api.get(`${base()}/${id}`, { key: reader })).status).toBe(200);
    const create = await deploy({ environment: 'dev', agentVersionManifest: { Alpha: 'auto' }, entryAgentName: 'Alpha' }, reader);
    expect(create.status).toBe(403);
    for (const action of ['retire', 'rollback']) expect((await api.post(`${base()}/${id}/${action}`, { key: reader })).status).toBe(403);
    expect((await api.post(`${base()}/${id}/promote`, { key: reader, json: { targetEnvironment: 'staging' } })).status).toBe(403);
    const deployer = await t.keyWith(['deployment:create']);
    expect((await deploy({ environment: 'dev', agentVersionManifest: { Alpha: 'auto' }, entryAgentName: 'Alpha' }, deployer)).status).toBe(201);
  });

  it("answers 404 for another tenant's deployment, and for a deployment under another project's path", async () => {
    const id = (await api.get(base(), { key: t.adminKey })).body.deployments[0].id;
    expect((await api.get(`${base()}/${id}`, { key: other.adminKey })).status).toBe(404);
    expect((await api.get(`${base(other.projectId)}/${id}`, { key: other.adminKey })).status).toBe(404);
    expect((await api.post(`${base(other.projectId)}/${id}/retire`, { key: other.adminKey })).status).toBe(404);
    expect((await api.get(`${base(t.otherProjectId)}/${id}`, { key: t.adminKey })).status).toBe(404);
    const bound = await t.keyWith(['admin'], t.otherProjectId);
    expect((await api.get(base(), { key: bound })).status).toBe(404);
    expect((await api.get(`${base()}/does-not-exist`, { key: t.adminKey })).status).toBe(404);
  });
});
