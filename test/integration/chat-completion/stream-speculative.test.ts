// POST /api/v1/chat/stream starts the upstream call while the checks of a key this process has
// seen before are still running (api/completions/stream.ts, lookUpStreamCall). Whatever it started,
// a request refused afterwards (revoked key, lost permission, tenant or session rate limit,
// another tenant's project) is the usual JSON error: the client never receives upstream output,
// a started upstream request is aborted, and the ledger never records it as a successful call.
import { type RecordedRequest, startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createApiKey } from '../../../core/tenancy/accounts';
import { eventNames, openStream, type StreamResult } from './sse-client';
import { eventually } from '../../support/eventually';
import { inFreshWindow } from '../../support/rate-window';

const OPENAI_KEY = 'sk-openai-speculative-test-0003';
// Per tenant and window; each test seeds its own tenant. A tenant spends one request on its
// credential and one on warming its key.
const TENANT_BUDGET = 6;
const SESSION_BUDGET = 2;
const SECRET_TEXT = 'upstream output the client must never see';

let stack: TestStack;
let api: ReturnType<typeof client>;
let openai: FakeLlmServer;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: OPENAI_KEY });
  stack = await startTestStack({
    allowPrivate: { llm: [openai.baseURL] },
    // Every request re-reads its key (as it does once what was read is older than the window),
    // so changes made straight in the database meet a speculative start on the next request.
    env: { RATE_LIMIT_REQUESTS: String(TENANT_BUDGET), RATE_LIMIT_WINDOW_SECONDS: '3600', SESSION_MESSAGES_PER_MINUTE: String(SESSION_BUDGET), API_KEY_CACHE_MS: '0' },
  });
  api = client(stack.baseUrl);
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close()]);
});
beforeEach(() => openai.reset());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const userMessage = [{ role: 'user', content: 'Hello there' }];

/** Rate-limit windows are aligned to the clock: start a test that counts early in one. */
interface Caller {
  tenant: SeededTenant;
  key: string;
  keyId: string;
  stream(body?: Record<string, unknown>): Promise<StreamResult>;
}

/** A tenant whose project calls the fake, and a key this API process has already seen once. */
async function warmCaller(): Promise<Caller> {
  const tenant = await seedTenant(stack.ctx);
  const put = await api.put(`/api/projects/${tenant.projectId}/llm-credentials/openai`, {
    key: tenant.adminKey,
    json: { apiKey: OPENAI_KEY, baseURL: openai.baseURL },
  });
  expect(put.status).toBe(201);
  const { key, apiKey } = await createApiKey(stack.ctx.models, tenant.tenantId, { name: 'stream', permissions: ['session:execute'] });
  const caller: Caller = {
    tenant,
    key,
    keyId: apiKey._id,
    stream: (body = {}) => openStream(stack.baseUrl, { key, body: { projectId: tenant.projectId, messages: userMessage, modelId: 'gpt-4o-mini', ...body } }),
  };
  const warm = await caller.stream({ sessionId: 'warm-up' });
  expect(eventNames(warm).at(-1)).toBe('complete');
  openai.reset();
  return caller;
}

/** The upstream reply for a call that should never reach the client: slow, so an abort shows. */
const scriptSecret = () => openai.script({ text: SECRET_TEXT, delayMs: 300 });

async function ledger(tenantId: string, sessionId: string) {
  return stack.ctx.models.LlmUsage.find({ tenantId, sessionId }).lean();
}

/** A refusal: the JSON envelope, no stream, no upstream text anywhere in the response. */
function expectRefused(res: StreamResult, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.events).toEqual([]);
  expect(res.json).toMatchObject({ success: false, error: { code } });
  expect(JSON.stringify(res.json)).not.toContain(SECRET_TEXT);
}

/**
 * Upstream requests made for refused calls: at most one per refused request (the speculative
 * call, when it had started before the refusal), each aborted before its response ended. Its
 * ledger row, if any, says `aborted` with no tokens.
 */
async function expectAbortedUpstream(started: RecordedRequest[], refusedRequests: number, tenantId: string, sessionId: string): Promise<void> {
  expect(started.length).toBeLessThanOrEqual(refusedRequests);
  for (const request of started) {
    await request.settled;
    expect(request.aborted).toBe(true);
  }
  const rows = await eventually(() => ledger(tenantId, sessionId), (r) => r.length >= started.length);
  // Give a late write the chance to show up before asserting there is none.
  await sleep(100);
  const final = await ledger(tenantId, sessionId);
  expect(final.map((r) => r.status)).toEqual(started.map(() => 'aborted'));
  expect(rows.every((r) => r.inputTokens === 0 && r.outputTokens === 0 && r.cost === null)).toBe(true);
}

it('still streams every event, in order, from a remembered key (the speculative path)', async () => {
  const caller = await warmCaller();
  openai.script({ text: 'The quick brown fox', textChunks: ['The', ' quick', ' brown', ' fox'], usage: { inputTokens: 120, outputTokens: 40 } });
  const res = await caller.stream({ sessionId: 'happy', temperature: 0.3 });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  expect(eventNames(res)).toEqual(['metadata', 'text_delta', 'text_delta', 'text_delta', 'text_delta', 'usage', 'complete']);
  expect(res.events[0]!.data).toEqual({ modelId: 'gpt-4o-mini', provider: 'openai', source: 'request' });
  expect(res.events.filter((e) => e.event === 'text_delta').map((e) => e.data.delta)).toEqual(['The', ' quick', ' brown', ' fox']);
  expect(res.events.at(-1)!.data).toMatchObject({ inputTokens: 120, outputTokens: 40, totalTokens: 160, finishReason: 'end_turn' });

  expect(openai.requests.length).toBe(1);
  expect(openai.requests[0]!.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0.3, messages: userMessage });
  await openai.requests[0]!.settled;
  expect(openai.requests[0]!.aborted).toBe(false);
  const rows = await ledger(caller.tenant.tenantId, 'happy');
  expect(rows.map((r) => [r.status, r.inputTokens, r.outputTokens])).toEqual([['ok', 120, 40]]);
});

it('answers 401 with no output once a remembered key is revoked, aborts what it started, and then starts nothing', async () => {
  const caller = await warmCaller();
  await stack.ctx.models.ApiKey.updateOne({ _id: caller.keyId }, { $set: { revokedAt: new Date() } });

  scriptSecret();
  const refused = await caller.stream({ sessionId: 'revoked' });
  expectRefused(refused, 401, 'UNAUTHORIZED');
  expect(refused.json.error.message).toMatch(/revoked/);
  const started = [...openai.requests];

  // The process forgot the key with the first refusal: nothing upstream for the next ones.
  for (let i = 0; i < 3; i++) expectRefused(await caller.stream({ sessionId: 'revoked' }), 401, 'UNAUTHORIZED');
  await sleep(100);
  expect(openai.requests.length).toBe(started.length);
  await expectAbortedUpstream(started, 1, caller.tenant.tenantId, 'revoked');
});

it('answers 403 with no output when a remembered key lost session:execute', async () => {
  const caller = await warmCaller();
  await stack.ctx.models.ApiKey.updateOne({ _id: caller.keyId }, { $set: { permissions: ['session:read'] } });
  scriptSecret();
  expectRefused(await caller.stream({ sessionId: 'narrowed' }), 403, 'FORBIDDEN');
  await sleep(100);
  await expectAbortedUpstream([...openai.requests], 1, caller.tenant.tenantId, 'narrowed');
});

it('answers 429 with no output when the tenant is over its limit, and starts nothing once it is known to be', async () => {
  await inFreshWindow(3600_000, 8000);
  const caller = await warmCaller();
  // The credential and the warm-up spent two requests of the budget.
  for (let i = 2; i < TENANT_BUDGET; i++) expect(eventNames(await caller.stream()).at(-1)).toBe('complete');
  openai.reset();

  scriptSecret();
  const limited = await caller.stream({ sessionId: 'limited' });
  expectRefused(limited, 429, 'RATE_LIMIT_EXCEEDED');
  expect(limited.json.retryAfterMs).toBeGreaterThan(0);
  const started = [...openai.requests];

  // The refusal is remembered until the window ends: no upstream call is started for the next.
  expectRefused(await caller.stream({ sessionId: 'limited' }), 429, 'RATE_LIMIT_EXCEEDED');
  await sleep(100);
  expect(openai.requests.length).toBe(started.length);
  await expectAbortedUpstream(started, 1, caller.tenant.tenantId, 'limited');
});

it("answers 429 with no output when the session's message budget is spent", async () => {
  await inFreshWindow(60_000, 8000);
  const caller = await warmCaller();
  for (let i = 0; i < SESSION_BUDGET; i++) expect(eventNames(await caller.stream({ sessionId: 'chatty' })).at(-1)).toBe('complete');
  openai.reset();

  scriptSecret();
  const limited = await caller.stream({ sessionId: 'chatty' });
  expectRefused(limited, 429, 'RATE_LIMIT_EXCEEDED');
  expect(limited.json.error.message).toBe('Session message rate limit exceeded');
  await sleep(100);
  const rows = await eventually(() => ledger(caller.tenant.tenantId, 'chatty'), (r) => r.length >= SESSION_BUDGET + openai.requests.length);
  expect(rows.filter((r) => r.status === 'ok')).toHaveLength(SESSION_BUDGET);
  const started = [...openai.requests];
  expect(started.length).toBeLessThanOrEqual(1);
  for (const request of started) {
    await request.settled;
    expect(request.aborted).toBe(true);
  }
  expect(rows.filter((r) => r.status !== 'ok').map((r) => r.status)).toEqual(started.map(() => 'aborted'));
});

it("answers 404 for another tenant's project from a remembered key, and calls no upstream", async () => {
  const caller = await warmCaller();
  const other = await seedTenant(stack.ctx);
  scriptSecret();
  for (let i = 0; i < 2; i++) {
    const res = await caller.stream({ projectId: other.projectId, sessionId: 'elsewhere' });
    expectRefused(res, 404, 'NOT_FOUND');
    expect(res.json.error.message).toBe('Project not found');
  }
  await sleep(100);
  expect(openai.requests.length).toBe(0);
  expect(await stack.ctx.models.LlmUsage.countDocuments({ sessionId: 'elsewhere' })).toBe(0);
});

it('calls no upstream for a key this process has never seen that turns out to be revoked', async () => {
  const tenant = await seedTenant(stack.ctx);
  const put = await api.put(`/api/projects/${tenant.projectId}/llm-credentials/openai`, { key: tenant.adminKey, json: { apiKey: OPENAI_KEY, baseURL: openai.baseURL } });
  expect(put.status).toBe(201);
  const { key, apiKey } = await createApiKey(stack.ctx.models, tenant.tenantId, { name: 'cold', permissions: ['session:execute'] });
  await stack.ctx.models.ApiKey.updateOne({ _id: apiKey._id }, { $set: { revokedAt: new Date() } });
  scriptSecret();
  const res = await openStream(stack.baseUrl, { key, body: { projectId: tenant.projectId, messages: userMessage, modelId: 'gpt-4o-mini' } });
  expectRefused(res, 401, 'UNAUTHORIZED');
  await sleep(100);
  expect(openai.requests.length).toBe(0);
});
