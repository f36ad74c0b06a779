// A project's LLM base URL goes through the destination rules: the resolver hands the checking
// fetch to clients for project base URLs only, and a refused destination is a final bad_request
// ProviderError from both official SDKs, with nothing sent.
import { createDestinationGuard, DESTINATION_BLOCKED } from '../../../lib/net/destination';
import { createLlmProvider, createProjectLlmResolver, type PlatformLlmConfig } from '../../../providers/llm';
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { startFakeAnthropic } from '../../support/fake-anthropic';

const guard = createDestinationGuard({ allowPrivateNetworks: false, allowedPrivateDestinations: [] });
const request = { model: 'm', messages: [{ role: 'user' as const, content: 'hi' }] };

let openai: FakeLlmServer;
let anthropic: FakeLlmServer;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
});
afterAll(async () => {
  await Promise.all([openai.close(), anthropic.close()]);
});

it.each([
  ['openai', () => openai] as const,
  ['anthropic', () => anthropic] as const,
])('%s: a refused base URL is a final bad_request and reaches no server', async (provider, fake) => {
  const llm = createLlmProvider({ provider, apiKey: 'k', baseURL: fake().baseURL, fetch: guard.fetch });
  await expect(llm.complete(request)).rejects.toMatchObject({
    name: 'ProviderError',
    kind: 'bad_request',
    retryable: false,
    code: DESTINATION_BLOCKED,
    message: expect.stringContaining('non-public addresses are refused (127.0.0.1)'),
  });
  const stream = llm.stream(request);
  await expect((async () => {
    for await (const event of stream) void event;
  })()).rejects.toMatchObject({ kind: 'bad_request', code: DESTINATION_BLOCKED });
  expect(fake().requests).toHaveLength(0);
});

it('gives the checking fetch to project base URLs only', async () => {
  const platform: PlatformLlmConfig = { tierMap: {}, credentials: { anthropic: { apiKey: 'platform', baseURL: 'http://127.0.0.1:1/v1' } } };
  const resolve = (credentials: { provider: string; apiKey: string; baseURL?: string | null }[]) =>
    createProjectLlmResolver({ loadSettings: async () => null, loadCredentials: async () => credentials, platform, projectBaseUrlFetch: guard.fetch });
  const query = { tenantId: 't', projectId: 'p' };
  const project = await resolve([{ provider: 'openai', apiKey: 'k', baseURL: 'http://llm.internal:8000/v1' }])({ ...query, modelId: 'openai:gpt-4o-mini' });
  expect(project.ok && project.target.provider.fetch).toBe(guard.fetch);
  const publicEndpoint = await resolve([{ provider: 'openai', apiKey: 'k', baseURL: null }])({ ...query, modelId: 'openai:gpt-4o-mini' });
  expect(publicEndpoint.ok && publicEndpoint.target.provider.fetch).toBeUndefined();
  const operators = await resolve([])({ ...query, modelId: 'anthropic:claude-haiku-4-5' });
  expect(operators.ok && operators.target.credentialSource).toBe('platform');
  expect(operators.ok && operators.target.provider.fetch).toBeUndefined();
});
