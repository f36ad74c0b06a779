// Deleting a platform key (DELETE /api/public/apikeys/:keyId) and changing its scope are in force
// on every API process when they return, and a stream already running with the key ends. Two
// API processes share one database: this test's own, and a real `api/server.ts` child, each
// with its own memory of the keys it read.
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startApiProcess, type ApiProcess } from '../../support/api-process';
import { eventNames, openStream } from '../chat-completion/sse-client';

const OPENAI_KEY = 'sk-openai-platform-key-revocation';
const WINDOW_MS = 1000;

let replicaA: TestStack;
let replicaB: ApiProcess;
let openai: FakeLlmServer;
let t: SeededTenant;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: OPENAI_KEY });
  replicaA = await startTestStack({ env: { API_KEY_CACHE_MS: String(WINDOW_MS), SSE_HEARTBEAT_MS: '100' }, allowPrivate: { llm: [openai.baseURL] } });
  replicaB = await startApiProcess(replicaA.config, { API_KEY_CACHE_MS: String(WINDOW_MS), SSE_HEARTBEAT_MS: '100', RATE_LIMIT_REQUESTS: '10000' });
  t = await seedTenant(replicaA.ctx);
  const put = await client(replicaA.baseUrl).put(`/api/projects/${t.projectId}/llm-credentials/openai`, {
    key: t.adminKey,
    json: { apiKey: OPENAI_KEY, baseURL: openai.baseURL },
  });
  expect(put.status).toBe(201);
}, 120_000);
afterAll(async () => {
  await replicaB?.proc.stop();
  await Promise.all([replicaA?.close(), openai?.close()]);
});

let counter = 0;
async function scopedKey(grants: string[]) {
  const api = client(replicaA.baseUrl);
  const scope = await api.post(`/api/public/apps/${t.projectId}/scopes`, {
    key: t.adminKey,
    json: { scope_name: `revocation-${++counter}`, permissions: Object.fromEntries(grants.map((g) => [g, 'YES'])) },
  });
  expect(scope.status).toBe(201);
  const made = await api.post('/api/public/apikeys/create', {
    key: t.adminKey,
    json: { scope_name: scope.body.scope.scope_name, api_key_name: 'k', app_id: t.projectId },
  });
  expect(made.status).toBe(201);
  return { key: made.body.api_key.apikey as string, keyId: made.body.api_key.key_id as string, scopeId: scope.body.scope.scope_id as string };
}

it('refuses a deleted key on both processes once the delete has returned', async () => {
  const { key, keyId } = await scopedKey(['SESSIONS_LIST']);
  const [a, b] = [client(replicaA.baseUrl), client(replicaB.baseUrl)];
  const sessions = `/api/projects/${t.projectId}/sessions`;
  // Each process has just read the key and could answer for it from memory for the window.
  expect((await a.get(sessions, { key })).status).toBe(200);
  expect((await b.get(sessions, { key })).status).toBe(200);
  const deleted = await a.delete(`/api/public/apikeys/${keyId}`, { key: t.adminKey });
  expect(deleted.status).toBe(200);
  for (const api of [b, a]) {
    const res = await api.get(sessions, { key });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  }
});

it("applies a scope's change on both processes once the PUT has returned", async () => {
  const { key, scopeId } = await scopedKey(['SESSIONS_LIST', 'API_SCOPE_KEY_EDIT']);
  const [a, b] = [client(replicaA.baseUrl), client(replicaB.baseUrl)];
  const sessions = `/api/projects/${t.projectId}/sessions`;
  expect((await b.get(sessions, { key })).status).toBe(200);
  const put = await a.put(`/api/public/apps/${t.projectId}/scopes/${scopeId}`, { key, json: { permissions: { SESSIONS_LIST: 'NO' } } });
  expect(put.status).toBe(200);
  expect((await b.get(sessions, { key })).status).toBe(403);
});

it('ends a stream running on the other process when its key is deleted', async () => {
  const { key, keyId } = await scopedKey(['chat.execute']);
  openai.reset();
  openai.script({ text: Array.from({ length: 60 }, (_, i) => `word${i}`).join(' '), chunkDelayMs: 50 });
  const deleting: { request: Promise<{ status: number }> | null } = { request: null };
  const res = await openStream(replicaB.baseUrl, {
    key,
    body: { projectId: t.projectId, messages: [{ role: 'user', content: 'Tell me a long story' }], modelId: 'gpt-4o-mini' },
    onEvent: (event) => {
      if (event.event === 'text_delta' && !deleting.request) deleting.request = client(replicaA.baseUrl).delete(`/api/public/apikeys/${keyId}`, { key: t.adminKey });
    },
  });
  expect(res.status).toBe(200);
  const names = eventNames(res);
  expect(names.at(-1)).toBe('error');
  expect(names).not.toContain('complete');
  expect(res.events.at(-1)!.data).toMatchObject({ code: 'UNAUTHORIZED', retryable: false });
  // Ended well before the 60 words (3 s of upstream time) were through.
  expect(res.events.filter((e) => e.event === 'text_delta').length).toBeLessThan(60);
  expect((await deleting.request!).status).toBe(200);
});
