// Per-project LLM settings and credentials routes, and how they steer resolution: project
// default model, tier overrides, project credential over the platform's, 503 without a key.
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { openStream } from './sse-client';

const PLATFORM_OPENAI_KEY = 'sk-platform-openai-key';
const PROJECT_OPENAI_KEY = 'sk-project-openai-key';

let stack: TestStack;
let noEncryption: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let globex: SeededTenant;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;
let executor: string;

const messages = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  [stack, noEncryption] = await Promise.all([
    startTestStack({ env: { OPENAI_API_KEY: PLATFORM_OPENAI_KEY, OPENAI_BASE_URL: openai.baseURL }, allowPrivate: { llm: [openai.baseURL, anthropic.baseURL] } }),
    startTestStack({ env: { ENCRYPTION_KEY: '' } }),
  ]);
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-settings');
  globex = await seedTenant(stack.ctx, 'globex-settings');
  executor = await acme.keyWith(['session:execute']);
});
afterAll(async () => {
  await Promise.all([stack.close(), noEncryption.close(), openai.close(), anthropic.close()]);
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

const settingsPath = (projectId: string) => `/api/projects/${projectId}/llm-settings`;
const credentialPath = (projectId: string, provider: string) => `/api/projects/${projectId}/llm-credentials/${provider}`;
const metadataOf = async (projectId: string, body: Record<string, unknown> = {}) => {
  const res = await openStream(stack.baseUrl, { key: executor, body: { projectId, messages, ...body } });
  return res.status === 200 ? res.events[0]!.data : res.json;
};

describe('settings', () => {
  it('starts empty, with the platform tier map in effect', async () => {
    const res = await api.get(settingsPath(acme.projectId), { key: await acme.keyWith(['agent:read']) });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      settings: {
        defaultModel: null,
        tierOverrides: { fast: null, balanced: null, powerful: null },
        effectiveTiers: { fast: 'local', balanced: 'local', powerful: 'local' },
        updatedAt: null,
      },
    });
  });

  it('uses the project default model when the call names none (source project)', async () => {
    const put = await api.put(settingsPath(acme.projectId), { key: acme.adminKey, json: { defaultModel: 'openai:gpt-4.1-mini' } });
    expect(put.status).toBe(200);
    expect(put.body.settings).toMatchObject({ defaultModel: 'openai:gpt-4.1-mini', updatedAt: expect.any(String) });
    expect(await metadataOf(acme.projectId)).toEqual({ modelId: 'gpt-4.1-mini', provider: 'openai', source: 'project' });
    // The platform key served it: the project has no credential of its own yet.
    expect(openai.requests[0]!.headers.authorization).toBe(`Bearer ${PLATFORM_OPENAI_KEY}`);
    // The request's own choice still wins.
    expect(await metadataOf(acme.projectId, { modelId: 'local' })).toEqual({ modelId: 'local', provider: 'local', source: 'request' });
  });

  it('applies tier overrides, and a default model may be a tier name', async () => {
    const put = await api.put(settingsPath(acme.projectId), {
      key: acme.adminKey,
      json: { defaultModel: 'powerful', tierOverrides: { fast: 'claude-haiku-4-5', powerful: 'gpt-4.1' } },
    });
    expect(put.body.settings.effectiveTiers).toEqual({ fast: 'claude-haiku-4-5', balanced: 'local', powerful: 'gpt-4.1' });
    expect(await metadataOf(acme.projectId)).toEqual({ modelId: 'gpt-4.1', provider: 'openai', source: 'project' });
    expect(await metadataOf(acme.projectId, { tier: 'balanced' })).toEqual({ modelId: 'local', provider: 'local', source: 'tier' });
    // fast → Anthropic, for which neither the project nor the platform has a key.
    const missing = await metadataOf(acme.projectId, { tier: 'fast' });
    expect(missing.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('Runtime not configured: no credentials for provider "anthropic"') });
    // Other projects keep the platform map.
    expect(await metadataOf(acme.otherProjectId, { tier: 'fast' })).toEqual({ modelId: 'local', provider: 'local', source: 'tier' });
  });

  it.each([
    [{ defaultModel: 'mystery-model' }, 'body.defaultModel'],
    [{ tierOverrides: { fast: 'fast' } }, 'body.tierOverrides.fast'],
    [{ tierOverrides: { turbo: 'gpt-4.1' } }, 'body.tierOverrides'],
  ])('rejects %j with 400 naming the field', async (json, field) => {
    const res = await api.put(settingsPath(acme.projectId), { key: acme.adminKey, json });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringContaining(field) });
  });

  it('needs agent:write to change and hides other tenants\' projects', async () => {
    expect((await api.put(settingsPath(acme.projectId), { key: await acme.keyWith(['agent:read']), json: {} })).status).toBe(403);
    expect((await api.get(settingsPath(globex.projectId), { key: acme.adminKey })).status).toBe(404);
  });
});

describe('credentials', () => {
  it('prefers the project credential over the platform one, and falls back when it is deleted', async () => {
    const writer = await acme.keyWith(['credential:write']);
    const created = await api.put(credentialPath(acme.projectId, 'openai'), { key: writer, json: { apiKey: PROJECT_OPENAI_KEY, baseURL: openai.baseURL } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      success: true,
      credential: { provider: 'openai', baseURL: openai.baseURL, createdAt: expect.any(String), updatedAt: expect.any(String) },
    });
    const replaced = await api.put(credentialPath(acme.projectId, 'openai'), { key: writer, json: { apiKey: PROJECT_OPENAI_KEY, baseURL: openai.baseURL } });
    expect(replaced.status).toBe(200);

    await api.post('/api/v1/chat/complete', { key: executor, json: { projectId: acme.projectId, messages, modelId: 'gpt-4o-mini' } });
    expect(openai.requests.at(-1)!.headers.authorization).toBe(`Bearer ${PROJECT_OPENAI_KEY}`);

    expect((await api.delete(credentialPath(acme.projectId, 'openai'), { key: writer })).status).toBe(200);
    expect((await api.delete(credentialPath(acme.projectId, 'openai'), { key: writer })).status).toBe(404);
    await api.post('/api/v1/chat/complete', { key: executor, json: { projectId: acme.projectId, messages, modelId: 'gpt-4o-mini' } });
    expect(openai.requests.at(-1)!.headers.authorization).toBe(`Bearer ${PLATFORM_OPENAI_KEY}`);
  });

  it('serves Anthropic once the project has a key for it', async () => {
    await api.put(credentialPath(acme.projectId, 'anthropic'), { key: acme.adminKey, json: { apiKey: 'sk-ant-project', baseURL: anthropic.baseURL } });
    const res = await api.post('/api/v1/chat/complete', { key: executor, json: { projectId: acme.projectId, messages, tier: 'fast' } });
    expect(res.status).toBe(200);
    expect(res.body.model).toBe('claude-haiku-4-5');
    expect(anthropic.requests).toHaveLength(1);
  });

  it('lists metadata only, with credential:read', async () => {
    const res = await api.get(`/api/projects/${acme.projectId}/llm-credentials`, { key: await acme.keyWith(['credential:read']) });
    expect(res.status).toBe(200);
    expect(res.body.credentials).toEqual([{ provider: 'anthropic', baseURL: anthropic.baseURL, createdAt: expect.any(String), updatedAt: expect.any(String) }]);
    expect(res.text).not.toContain('sk-ant-project');
  });

  it('validates the provider and the body, and checks permissions', async () => {
    const local = await api.put(credentialPath(acme.projectId, 'local'), { key: acme.adminKey, json: { apiKey: 'x' } });
    expect(local.status).toBe(400);
    expect(local.body.error.message).toContain('params.provider');
    const empty = await api.put(credentialPath(acme.projectId, 'openai'), { key: acme.adminKey, json: { apiKey: '' } });
    expect(empty.body.error.message).toContain('body.apiKey');
    const badUrl = await api.put(credentialPath(acme.projectId, 'openai'), { key: acme.adminKey, json: { apiKey: 'k', baseURL: 'ftp://x' } });
    expect(badUrl.body.error.message).toContain('body.baseURL');
    expect((await api.put(credentialPath(acme.projectId, 'openai'), { key: await acme.keyWith(['credential:read']), json: { apiKey: 'k' } })).status).toBe(403);
    expect((await api.put(credentialPath(globex.projectId, 'openai'), { key: acme.adminKey, json: { apiKey: 'k' } })).status).toBe(404);
  });

  it('answers 503 "encryption not configured" without ENCRYPTION_KEY', async () => {
    const tenant = await seedTenant(noEncryption.ctx, 'no-encryption');
    const res = await client(noEncryption.baseUrl).put(credentialPath(tenant.projectId, 'openai'), { key: tenant.adminKey, json: { apiKey: 'k' } });
    expect(res.status).toBe(503);
    expect(res.body.error).toEqual({ code: 'SERVICE_UNAVAILABLE', message: 'encryption not configured' });
    expect(await noEncryption.ctx.models.LlmCredential.countDocuments({})).toBe(0);
  });
});
