// The moderation providers: OpenAI's over the real SDK against a fake that speaks its HTTP
// protocol, which provider a guardrail gets (project credential, platform key, offline rules),
// and the activity's caller-safe failures.

import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createModerate } from '../../../activities/moderation/moderate';
import { ProviderError } from '../../../providers/llm/errors';
import {
  createModerationResolver, OpenAIModerationProvider, resolveModerationTarget, type ModerationEnv,
} from '../../../providers/moderation';
import { startFakeModeration, type FakeModerationServer } from '../../support/fake-openai-moderation';

let fake: FakeModerationServer;
beforeAll(async () => {
  fake = await startFakeModeration({ apiKey: 'sk-mod' });
});
afterAll(() => fake.close());
beforeEach(() => {
  fake.requests.length = 0;
  fake.scores = () => ({});
});

describe('OpenAIModerationProvider', () => {
  it('posts the texts to /v1/moderations with the model and reads scores and flags per text', async () => {
    fake.scores = (text): Record<string, number> => (text.includes('hurt') ? { violence: 0.93, 'violence/graphic': 0.2 } : { hate: 0.01 });
    const provider = new OpenAIModerationProvider({ apiKey: 'sk-mod', baseURL: fake.baseURL });
    const [bad, clean] = await provider.moderate(['I will hurt you', 'hello']);
    expect(fake.requests).toEqual([expect.objectContaining({ path: '/v1/moderations', body: { model: 'omni-moderation-latest', input: ['I will hurt you', 'hello'] } })]);
    expect(fake.requests[0]!.headers.authorization).toBe('Bearer sk-mod');
    expect(bad).toMatchObject({ flagged: true, flaggedCategories: ['violence'], model: 'omni-moderation-latest' });
    expect(bad!.scores).toMatchObject({ violence: 0.93, 'violence/graphic': 0.2, hate: 0 });
    expect(clean).toMatchObject({ flagged: false, flaggedCategories: [] });
  });

  it('uses the configured model', async () => {
    await new OpenAIModerationProvider({ apiKey: 'sk-mod', baseURL: fake.baseURL, model: 'text-moderation-latest' }).moderate(['x']);
    expect(fake.requests[0]!.body.model).toBe('text-moderation-latest');
  });

  it('turns HTTP failures into ProviderErrors that say whether a retry helps', async () => {
    fake.failNext(503);
    const err = await new OpenAIModerationProvider({ apiKey: 'sk-mod', baseURL: fake.baseURL }).moderate(['x']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect(err).toMatchObject({ retryable: true, provider: 'openai' });
    const auth = await new OpenAIModerationProvider({ apiKey: 'wrong', baseURL: fake.baseURL }).moderate(['x']).catch((e: unknown) => e);
    expect(auth).toMatchObject({ kind: 'auth', retryable: false });
  });
});

describe('which provider a guardrail gets', () => {
  const env = (over: Partial<ModerationEnv> = {}): ModerationEnv => ({ MODERATION_PROVIDER: 'openai', MODERATION_MODEL: 'omni-moderation-latest', MODERATION_TIMEOUT_MS: 10000, ...over });
  const project = [{ provider: 'openai', apiKey: 'sk-project', baseURL: 'https://llm.example.com/v1' }];

  it('prefers the project’s OpenAI credential, then the platform key', () => {
    expect(resolveModerationTarget('openai', env({ OPENAI_API_KEY: 'sk-platform' }), project)).toEqual({ ok: true, provider: 'openai', apiKey: 'sk-project', baseURL: 'https://llm.example.com/v1', source: 'project' });
    expect(resolveModerationTarget('openai', env({ OPENAI_API_KEY: 'sk-platform' }), [{ provider: 'anthropic', apiKey: 'x' }])).toEqual({ ok: true, provider: 'openai', apiKey: 'sk-platform', source: 'platform' });
  });

  it('without a key: auto falls back to the offline rules, openai says it is not configured', () => {
    expect(resolveModerationTarget('openai', env({ MODERATION_PROVIDER: 'auto' }), [])).toEqual({ ok: true, provider: 'local' });
    expect(resolveModerationTarget('openai', env(), [])).toEqual({ ok: false, reason: expect.stringContaining('no OpenAI credential for moderation') });
  });

  it('provider: local and MODERATION_PROVIDER=local always get the offline rules', () => {
    expect(resolveModerationTarget('local', env({ OPENAI_API_KEY: 'k' }), project)).toEqual({ ok: true, provider: 'local' });
    expect(resolveModerationTarget('openai', env({ MODERATION_PROVIDER: 'local' }), project)).toEqual({ ok: true, provider: 'local' });
  });

  it('sends a project base URL through the guarded fetch and reuses clients', async () => {
    const created: unknown[] = [];
    const guardedFetch = (() => Promise.reject(new Error('unused'))) as unknown as typeof fetch;
    const resolve = createModerationResolver({
      env: env(),
      loadCredentials: () => Promise.resolve(project),
      projectBaseUrlFetch: guardedFetch,
      create: (options) => (created.push(options), new OpenAIModerationProvider(options)),
    });
    const a = await resolve({ tenantId: 't', projectId: 'p', provider: 'openai' });
    const b = await resolve({ tenantId: 't', projectId: 'p', provider: 'openai' });
    expect(a.ok && b.ok && a.moderator === b.moderator).toBe(true);
    expect(created).toEqual([{ apiKey: 'sk-project', baseURL: 'https://llm.example.com/v1', model: 'omni-moderation-latest', timeoutMs: 10000, fetch: guardedFetch }]);
  });
});

describe('the moderate activity', () => {
  const input = { tenantId: 't', projectId: 'p', sessionId: 's', agent: 'A', guardrail: 'g', provider: 'openai' as const, text: 'I will hurt you' };
  const run = (resolveModeration: Parameters<typeof createModerate>[0]['resolveModeration'], logged: unknown[] = []) =>
    new MockActivityEnvironment().run(createModerate({ resolveModeration, logger: { warn: (f) => logged.push(f) } }), input);

  it('answers the verdict and the provider that gave it', async () => {
    fake.scores = () => ({ violence: 0.8 });
    const moderator = new OpenAIModerationProvider({ apiKey: 'sk-mod', baseURL: fake.baseURL });
    await expect(run(() => Promise.resolve({ ok: true, moderator }))).resolves.toMatchObject({ provider: 'openai', model: 'omni-moderation-latest', flagged: true, flaggedCategories: ['violence'] });
  });

  it('fails with a caller-safe, typed failure, and never logs the text', async () => {
    fake.failNext(401);
    const logged: unknown[] = [];
    const moderator = new OpenAIModerationProvider({ apiKey: 'sk-mod', baseURL: fake.baseURL });
    const err = await run(() => Promise.resolve({ ok: true, moderator }), logged).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'MODERATION_AUTH', nonRetryable: true, message: 'The moderation provider openai refused the credentials (HTTP 401)' });
    expect(JSON.stringify(logged)).not.toContain('hurt');
    const unconfigured = await run(() => Promise.resolve({ ok: false, reason: 'no key' })).catch((e: unknown) => e);
    expect(unconfigured).toMatchObject({ type: 'MODERATION_UNAVAILABLE', nonRetryable: true, message: 'Moderation not configured: no key' });
  });
});
