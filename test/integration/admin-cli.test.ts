// The admin CLI manages tenants straight against MongoDB with the same rules as the routes.
import { adminInProcess, adminProcess } from '../support/admin-cli';
import { randomBytes } from 'node:crypto';
import { startTestStack, seedTenant, type TestStack } from '../support/stack';
import { client, request } from '../support/http';
import { hookJwt } from '../support/agent-assist';
import { resolveToolSecrets } from '../../db/tool-secret';
import { parseKeyRing } from '../../lib/key-ring';

// The master key the stack starts with; a rotation later puts NEW_MASTER in front of it.
const OLD_MASTER = `k1:${randomBytes(32).toString('base64')}`;
const NEW_MASTER = `k2:${randomBytes(32).toString('base64')}`;

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ env: { SECRET_MASTER_KEYS: OLD_MASTER } });
});
afterAll(() => stack.close());

const admin = (...args: string[]) => adminInProcess({ MONGODB_URI: stack.config.MONGODB_URI }, ...args);
const adminWith = (env: Record<string, string>, ...args: string[]) => adminInProcess({ MONGODB_URI: stack.config.MONGODB_URI, ...env }, ...args);

it('creates a tenant whose admin key works against the API, then a narrower key, then revokes it', async () => {
  // The real binary once: its exit code and stdout as a shell sees them.
  const created = await adminProcess({ MONGODB_URI: stack.config.MONGODB_URI }, 'create-tenant', '--name', 'Cli Corp', '--project', 'Support');
  expect(created.status).toBe(0);
  const tenant = JSON.parse(created.out);
  expect(tenant.key).toMatch(/^abl_[0-9a-f]{48}$/);
  const api = client(stack.baseUrl);
  const projects = await api.get('/api/projects', { key: tenant.key });
  expect(projects.body.projects.map((p: { name: string }) => p.name)).toEqual(['Support']);

  const key = JSON.parse((await admin('create-key', '--tenant', tenant.tenant.id, '--name', 'ci', '--permissions', 'agent:read', '--project', tenant.project.id)).out);
  expect((await api.get('/api/auth/me', { key: key.key })).body.principal).toMatchObject({ projectId: tenant.project.id, permissions: ['agent:read'] });
  expect((await admin('revoke-key', '--tenant', tenant.tenant.id, '--key-id', key.apiKey.id)).status).toBe(0);
  expect((await api.get('/api/auth/me', { key: key.key })).status).toBe(401);
});

it('creates a scope and an environment-bound key in it, which holds what the scope grants', async () => {
  const t = await seedTenant(stack.ctx);
  const made = await admin('create-scope', '--tenant', t.tenantId, '--project', t.projectId, '--name', 'readers', '--grants', 'SESSIONS_LIST,outbound_calls.read');
  expect(made.status).toBe(0);
  const scope = JSON.parse(made.out);
  expect(scope).toMatchObject({ scope_id: expect.stringMatching(/^as-/), scope_name: 'readers', permissions: { SESSIONS_LIST: 'YES', 'outbound_calls.read': 'YES', APP_VIEW: 'NO' } });
  const created = await admin('create-key', '--tenant', t.tenantId, '--name', 'ci', '--scope', scope.scope_id, '--environments', 'staging', '--expires', '90_days');
  expect(created.status).toBe(0);
  const key = JSON.parse(created.out);
  expect(key.apiKey).toMatchObject({ id: expect.stringMatching(/^ak-/), projectId: t.projectId, scopeId: scope.scope_id, environments: ['staging'] });
  const api = client(stack.baseUrl);
  expect((await api.get(`/api/projects/${t.projectId}/sessions`, { key: key.key })).status).toBe(200);
  expect((await api.get(`/api/projects/${t.projectId}/agents`, { key: key.key })).status).toBe(403);
  const bad = await admin('create-scope', '--tenant', t.tenantId, '--project', t.projectId, '--name', 'x', '--grants', 'MAKE_COFFEE');
  expect(bad.status).toBe(1);
  expect(bad.err).toContain('unknown grant(s): MAKE_COFFEE');
  const listed = JSON.parse((await admin('list-scopes', '--tenant', t.tenantId, '--project', t.projectId)).out);
  expect(listed.map((s: { scope_id: string }) => s.scope_id)).toEqual([scope.scope_id]);
});

it('explains bad input and exits non-zero', async () => {
  const bad = await admin('create-key', '--tenant', 'x', '--name', 'k', '--permissions', 'agent:fly');
  expect(bad.status).toBe(1);
  expect(bad.err).toContain('unknown permission(s): agent:fly');
  const unknown = await adminProcess({ MONGODB_URI: stack.config.MONGODB_URI }, 'frobnicate');
  expect(unknown.status).toBe(1);
  expect(unknown.err).toContain('unknown command "frobnicate"');
  const dup = await admin('create-tenant', '--name', 'Cli Corp');
  expect(dup.status).toBe(1);
  expect(dup.err).toContain('CONFLICT');
});

it('makes an agent-assist bot and prints its secret once, which signs hook JWTs the API takes', async () => {
  const t = await seedTenant(stack.ctx);
  // A project without the named agent gets no bot.
  const missing = await adminWith({ SECRET_MASTER_KEYS: OLD_MASTER }, 'create-agent-assist-bot', '--tenant', t.tenantId, '--project', t.projectId, '--agent', 'Support');
  expect(missing.status).toBe(1);
  expect(missing.err).toContain('Agent not found: project ' + t.projectId + ' has no agent named "Support" (its agents: none)');
  expect(await stack.ctx.models.AgentAssistBot.countDocuments({ tenantId: t.tenantId })).toBe(0);
  await stack.ctx.models.Agent.create({ tenantId: t.tenantId, projectId: t.projectId, name: 'Support', domain: 'support' });
  const made = await adminWith({ SECRET_MASTER_KEYS: OLD_MASTER }, 'create-agent-assist-bot', '--tenant', t.tenantId, '--project', t.projectId, '--agent', 'Support');
  expect(made.status).toBe(0);
  const { bot, secret } = JSON.parse(made.out);
  expect(bot).toMatchObject({ botId: expect.stringMatching(/^aab-[0-9a-f]{24}$/), tenantId: t.tenantId, projectId: t.projectId, agentName: 'Support' });
  expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
  // Stored sealed: the secret is nowhere in the bot's record.
  expect(JSON.stringify(await stack.ctx.models.AgentAssistBot.findById(bot.botId).lean())).not.toContain(secret);
  const post = async (key: Buffer) =>
    request(stack.baseUrl, 'POST', `/agentassist/api/v1/hooks/${bot.botId}`, { json: { conversationId: 'c1', botId: bot.botId, query: 'hi' }, headers: { auth: await hookJwt(key.toString('base64url')) } });
  // Past the JWT check (an incomplete message event is the body's 400); another secret is 401.
  expect((await post(Buffer.from(secret, 'base64url'))).status).toBe(400);
  expect((await post(randomBytes(32))).status).toBe(401);
  // Another tenant's project is refused.
  const other = await seedTenant(stack.ctx);
  const refused = await adminWith({ SECRET_MASTER_KEYS: OLD_MASTER }, 'create-agent-assist-bot', '--tenant', t.tenantId, '--project', other.projectId, '--agent', 'Support');
  expect(refused.status).toBe(1);
  expect(refused.err).toContain('Project not found');
});

it("sets an agent-assist bot's webhook and prints its signing secret once; set-agent-assist-webhook removes it", async () => {
  const t = await seedTenant(stack.ctx);
  const env = { SECRET_MASTER_KEYS: OLD_MASTER };
  await stack.ctx.models.Agent.create({ tenantId: t.tenantId, projectId: t.projectId, name: 'Support', domain: 'support' });
  const made = await adminWith(env, 'create-agent-assist-bot', '--tenant', t.tenantId, '--project', t.projectId, '--agent', 'Support', '--webhook-url', 'https://93.184.216.34/assist');
  expect(made.status).toBe(0);
  const { bot, webhookSecret } = JSON.parse(made.out);
  expect(bot.webhookUrl).toBe('https://93.184.216.34/assist');
  expect(webhookSecret).toMatch(/^whsec_/);
  expect(JSON.stringify(await stack.ctx.models.AgentAssistBot.findById(bot.botId).lean())).not.toContain(webhookSecret);
  const cleared = await adminWith(env, 'set-agent-assist-webhook', '--tenant', t.tenantId, '--bot', bot.botId, '--webhook-url', 'none');
  expect(JSON.parse(cleared.out)).toEqual({ bot: expect.objectContaining({ botId: bot.botId, webhookUrl: null }) });
});

it('re-wraps tool-secret data keys under a new master key, after which the old one can be dropped', async () => {
  const owner = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  const created = await api.post('/api/tool-secrets', { key: owner.adminKey, json: { projectId: owner.projectId, toolName: 'crm', secretKey: 'CRM_TOKEN', value: 'crm-token-5e8a01', allowedHosts: ['crm.example.com'] } });
  expect(created.status).toBe(201);
  const query = { tenantId: owner.tenantId, projectId: owner.projectId, toolName: 'crm', environment: 'dev', names: ['CRM_TOKEN'] };
  const newOnly = parseKeyRing(NEW_MASTER);
  // Before the re-wrap, the data key opens only with the old master key.
  await expect(resolveToolSecrets(stack.ctx.models, newOnly, query)).rejects.toMatchObject({ problem: 'unreadable' });

  const rotated = await adminWith({ SECRET_MASTER_KEYS: `${NEW_MASTER},${OLD_MASTER}` }, 'rewrap-data-keys');
  expect(rotated.status).toBe(0);
  const summary = JSON.parse(rotated.out);
  expect(summary).toMatchObject({ masterKeyId: 'k2', alreadyCurrent: 0 });
  expect(summary.rewrapped).toBeGreaterThanOrEqual(1);
  expect(await stack.ctx.models.TenantDataKey.countDocuments({ masterKeyId: { $ne: 'k2' } })).toBe(0);

  // The old key dropped: the secret still decrypts, and the same data key is used.
  expect(await resolveToolSecrets(stack.ctx.models, newOnly, query)).toEqual({ CRM_TOKEN: 'crm-token-5e8a01' });
  const again = await adminWith({ SECRET_MASTER_KEYS: NEW_MASTER }, 'rewrap-data-keys');
  expect(JSON.parse(again.out)).toEqual({ masterKeyId: 'k2', rewrapped: 0, alreadyCurrent: summary.rewrapped });

  // A ring that no longer holds the wrapping key cannot re-wrap, and says which key is missing.
  const lost = await adminWith({ SECRET_MASTER_KEYS: `k3:${randomBytes(32).toString('base64')}` }, 'rewrap-data-keys');
  expect(lost.status).toBe(1);
  expect(lost.err).toContain('master key "k2"');
  const bad = await adminWith({ SECRET_MASTER_KEYS: 'k1:short' }, 'rewrap-data-keys');
  expect(bad.status).toBe(1);
  expect(bad.err).toContain('SECRET_MASTER_KEYS: key "k1" must be 32 bytes');
});
