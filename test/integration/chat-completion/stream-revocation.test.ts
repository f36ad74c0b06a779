// Revoking an API key ends its streams that are already running (public API: "revocation is
// permanent and immediate, and ongoing requests with the key fail"): the key is read again every
// SSE_HEARTBEAT_MS during a stream; once it is revoked the upstream call is aborted and the
// stream ends with an `error` event, recorded as an aborted call.
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type TestStack } from '../../support/stack';
import { createApiKey } from '../../../core/tenancy/accounts';
import { eventNames, openStream } from './sse-client';
import { eventually } from '../../support/eventually';

const OPENAI_KEY = 'sk-openai-revocation-test-0004';

let stack: TestStack;
let openai: FakeLlmServer;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: OPENAI_KEY });
  stack = await startTestStack({ env: { SSE_HEARTBEAT_MS: '100' }, allowPrivate: { llm: [openai.baseURL] } });
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close()]);
});

async function caller() {
  const tenant = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  const put = await api.put(`/api/projects/${tenant.projectId}/llm-credentials/openai`, {
    key: tenant.adminKey,
    json: { apiKey: OPENAI_KEY, baseURL: openai.baseURL },
  });
  expect(put.status).toBe(201);
  const { key, apiKey } = await createApiKey(stack.ctx.models, tenant.tenantId, { name: 'streamer', permissions: ['session:execute'] });
  return { tenant, api, key, keyId: apiKey._id };
}

const slowReply = () => openai.script({ text: Array.from({ length: 40 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 50 });

it('ends a running stream with an error event once its key is revoked, and aborts the upstream call', async () => {
  const { tenant, api, key, keyId } = await caller();
  openai.reset();
  slowReply();
  let revoked = false;
  const res = await openStream(stack.baseUrl, {
    key,
    body: { projectId: tenant.projectId, messages: [{ role: 'user', content: 'Tell me a long story' }], modelId: 'gpt-4o-mini', sessionId: 'revoked-mid-stream' },
    onEvent: (event) => {
      if (event.event === 'text_delta' && !revoked) {
        revoked = true;
        void api.delete(`/api/api-keys/${keyId}`, { key: tenant.adminKey });
      }
    },
  });
  expect(res.status).toBe(200);
  const names = eventNames(res);
  expect(names.at(-1)).toBe('error');
  expect(names).not.toContain('complete');
  expect(res.events.at(-1)!.data).toEqual({ error: 'API key has been revoked', code: 'UNAUTHORIZED', retryable: false });
  // Stopped well before the 40 words (2 s of upstream time) were through.
  expect(res.events.filter((e) => e.event === 'text_delta').length).toBeLessThan(30);
  const upstream = openai.requests[0]!;
  await upstream.settled;
  expect(upstream.aborted).toBe(true);
  const rows = await eventually(
    () => stack.ctx.models.LlmUsage.find({ tenantId: tenant.tenantId, sessionId: 'revoked-mid-stream' }).lean(),
    (found) => found.length > 0,
  );
  expect(rows.map((r) => r.status)).toEqual(['aborted']);
  // And the key is refused from then on.
  const after = await openStream(stack.baseUrl, { key, body: { projectId: tenant.projectId, messages: [{ role: 'user', content: 'again' }], modelId: 'gpt-4o-mini' } });
  expect(after.status).toBe(401);
});

it('lets a stream run to the end while its key stays valid', async () => {
  const { tenant, key } = await caller();
  openai.reset();
  slowReply();
  const res = await openStream(stack.baseUrl, {
    key,
    body: { projectId: tenant.projectId, messages: [{ role: 'user', content: 'Tell me a long story' }], modelId: 'gpt-4o-mini' },
  });
  expect(eventNames(res).at(-1)).toBe('complete');
  expect(res.events.filter((e) => e.event === 'text_delta').length).toBeGreaterThan(30);
});
