// A project's LLM base URL gets the tools' destination rules: a non-public literal (or localhost)
// is refused when written, with a 400; a stored one whose host turns out private is refused when
// called, with a clear 400 (a stream error event when streaming), and the server there sees nothing.
import { upsertLlmCredential } from '../../../db/llm-credential';
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { llmRuntime } from '../../../core/llm/runtime';
import { openStream } from './sse-client';

let stack: TestStack;
let api: ReturnType<typeof client>;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;
let allowedOpenai: FakeLlmServer;

const credentialPath = (t: SeededTenant, provider: string) => `/api/projects/${t.projectId}/llm-credentials/${provider}`;
const messages = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  [openai, anthropic, allowedOpenai] = await Promise.all([startFakeOpenAI(), startFakeAnthropic(), startFakeOpenAI()]);
  // Only the third fake is allowed; the other two stand for internal services.
  stack = await startTestStack({ allowPrivate: { llm: [allowedOpenai.baseURL] } });
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await stack.close();
  await Promise.all([openai.close(), anthropic.close(), allowedOpenai.close()]);
});

it('refuses a base URL on a non-public literal or localhost when it is written', async () => {
  const t = await seedTenant(stack.ctx);
  const port = new URL(openai.baseURL).port;
  for (const baseURL of [
    openai.baseURL,
    `http://[::ffff:127.0.0.1]:${port}/v1`,
    'http://[::ffff:169.254.169.254]/latest',
    `http://localhost:${port}/v1`,
    'http://10.0.0.7:8000/v1',
  ]) {
    const res = await api.put(credentialPath(t, 'openai'), { key: t.adminKey, json: { apiKey: 'k', baseURL } });
    expect(res.status).toBe(400);
    expect(res.body.error).toEqual({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/^body\.baseURL: .*non-public addresses are refused/) });
  }
  expect(await stack.ctx.models.LlmCredential.countDocuments({ tenantId: t.tenantId })).toBe(0);
  // A public name is judged when it is called, and the allowed host:port is accepted.
  expect((await api.put(credentialPath(t, 'openai'), { key: t.adminKey, json: { apiKey: 'k', baseURL: 'https://llm.example.com/v1' } })).status).toBe(201);
  expect((await api.put(credentialPath(t, 'anthropic'), { key: t.adminKey, json: { apiKey: 'k', baseURL: allowedOpenai.baseURL } })).status).toBe(201);
});

it('refuses a stored base URL whose address is private when it is called; the server sees nothing', async () => {
  const t = await seedTenant(stack.ctx);
  const encryptor = llmRuntime(stack.ctx).encryptor!;
  const scope = { tenantId: t.tenantId, projectId: t.projectId };
  // Stored before the rule existed (or while the operator allowed it): only the call can refuse it.
  await upsertLlmCredential(stack.ctx.models.LlmCredential, encryptor, scope, { provider: 'openai', apiKey: 'k', baseURL: openai.baseURL });
  await upsertLlmCredential(stack.ctx.models.LlmCredential, encryptor, scope, {
    provider: 'anthropic',
    apiKey: 'k',
    baseURL: anthropic.baseURL.replace('127.0.0.1', 'localhost'),
  });

  for (const modelId of ['openai:gpt-4o-mini', 'anthropic:claude-haiku-4-5']) {
    const res = await api.post('/api/v1/chat/complete', { key: t.adminKey, json: { projectId: t.projectId, messages, modelId } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.message).toContain('non-public addresses are refused');
  }
  const streamed = await openStream(stack.baseUrl, { key: t.adminKey, body: { projectId: t.projectId, messages, modelId: 'openai:gpt-4o-mini' } });
  expect(streamed.events.at(-1)).toMatchObject({ event: 'error', data: { code: 'LLM_BAD_REQUEST', retryable: false } });
  expect(openai.requests).toHaveLength(0);
  expect(anthropic.requests).toHaveLength(0);
});

it('calls the allowed host:port', async () => {
  const t = await seedTenant(stack.ctx);
  expect((await api.put(credentialPath(t, 'openai'), { key: t.adminKey, json: { apiKey: 'k', baseURL: allowedOpenai.baseURL } })).status).toBe(201);
  allowedOpenai.script({ text: 'hello' });
  const res = await api.post('/api/v1/chat/complete', { key: t.adminKey, json: { projectId: t.projectId, messages, modelId: 'openai:gpt-4o-mini' } });
  expect(res.status).toBe(200);
  expect(allowedOpenai.requests).toHaveLength(1);
});
