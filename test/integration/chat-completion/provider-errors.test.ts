// A provider's error text never reaches callers: /chat/complete, /chat/stream and agent turns
// answer with a clear message and a code, while the provider's own text (here holding a
// secret-looking string) and its request id go to the logs alone, not to responses, traces,
// the usage ledger or workflow history. The real SDKs run against fake provider servers.
import { Writable } from 'node:stream';
import { seedDevProject } from '../../../infra/seed-project';
import { createLogger } from '../../../lib/logger';
import { useFakeOpenAI } from '../../support/agents';
import { startFakeAnthropic } from '../../support/fake-anthropic';
import { startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { sessionHistory } from '../../support/workflow-history';
import { openStream } from './sse-client';

const SECRET = 'sk-live-LEAKED-9f2c7a41d0e3b865';
const LEAKY = `Upstream said: account acct_0042 key ${SECRET} is over quota`;

const logLines: string[] = [];
const logs = () => logLines.join('');

let stack: TestStack;
let api: ReturnType<typeof client>;
let acme: SeededTenant;
let openai: FakeLlmServer;
let anthropic: FakeLlmServer;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  // The fakes first: their loopback addresses are the only private destinations the stack allows.
  [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
  stack = await startTestStack({ worker: true, allowPrivate: { llm: [openai.baseURL, anthropic.baseURL] }, logger: createLogger({ level: 'info' }, sink) });
  api = client(stack.baseUrl);
  acme = await seedTenant(stack.ctx, 'acme-provider-errors');
  const anthropicCredential = await api.put(`/api/projects/${acme.projectId}/llm-credentials/anthropic`, {
    key: acme.adminKey,
    json: { apiKey: 'sk-test', baseURL: anthropic.baseURL },
  });
  expect(anthropicCredential.status).toBe(201);
  await useFakeOpenAI(api, acme, openai.baseURL);
  // The agent project: the seeded dev agents, their model calls going to the fake OpenAI server.
  await seedDevProject(stack.ctx.models, { tenantId: acme.tenantId, projectId: acme.otherProjectId });
  await useFakeOpenAI(api, { adminKey: acme.adminKey, projectId: acme.otherProjectId }, openai.baseURL);
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close(), anthropic.close()]);
});
beforeEach(() => {
  openai.reset();
  anthropic.reset();
});

const messages = [{ role: 'user', content: 'Hello' }];
const complete = (modelId: string) => api.post('/api/v1/chat/complete', { key: acme.adminKey, json: { projectId: acme.projectId, messages, modelId } });

async function expectOnlyLogged(requestId: string | null, providerRequestId: string): Promise<void> {
  const line = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.providerRequestId === providerRequestId);
  expect(line).toMatchObject({ msg: 'LLM provider call failed', providerMessage: expect.stringContaining(SECRET) });
  if (requestId) expect(line!.requestId).toBe(requestId);
  const ledger = await stack.ctx.models.LlmUsage.find({ tenantId: acme.tenantId }).lean();
  expect(JSON.stringify(ledger)).not.toContain(SECRET);
}

describe('/chat/complete', () => {
  it.each([
    ['openai', 'openai:gpt-4o-mini', 400, 'x-request-id', 400, 'BAD_REQUEST'],
    ['openai', 'openai:gpt-4o-mini', 401, 'x-request-id', 503, 'SERVICE_UNAVAILABLE'],
    ['anthropic', 'anthropic:claude-haiku-4-5', 429, 'request-id', 429, 'RATE_LIMIT_EXCEEDED'],
    ['anthropic', 'anthropic:claude-haiku-4-5', 403, 'request-id', 503, 'SERVICE_UNAVAILABLE'],
  ] as const)('%s (%s) answering HTTP %s: a clear message and a code; the provider text only in the log', async (provider, modelId, upstream, header, status, code) => {
    const providerRequestId = `req_${provider}_${upstream}`;
    const fake = provider === 'openai' ? openai : anthropic;
    fake.script({ error: { status: upstream, message: LEAKY, headers: { [header]: providerRequestId, 'retry-after': '1' } } });
    const res = await complete(modelId);
    expect(res.status).toBe(status);
    expect(res.body.error).toEqual({ code, message: expect.stringMatching(new RegExp(`^The LLM provider ${provider} .*\\(HTTP ${upstream}\\)$`)) });
    expect(res.text).not.toContain(SECRET);
    expect(res.text).not.toContain('acct_0042');
    await expectOnlyLogged(res.headers.get('x-request-id'), providerRequestId);
  });
});

describe('/chat/stream', () => {
  it('an error before the first chunk is an error event without the provider text', async () => {
    openai.script({ error: { status: 400, message: LEAKY, headers: { 'x-request-id': 'req_stream_400' } } });
    const res = await openStream(stack.baseUrl, { key: acme.adminKey, body: { projectId: acme.projectId, messages, modelId: 'openai:gpt-4o-mini' } });
    const error = res.events.find((e) => e.event === 'error');
    expect(error?.data).toEqual({ error: 'The LLM provider openai rejected the request as invalid (HTTP 400)', code: 'LLM_BAD_REQUEST', retryable: false });
    expect(JSON.stringify(res.events) + JSON.stringify(res.json)).not.toContain(SECRET);
    await expectOnlyLogged(res.headers.get('x-request-id'), 'req_stream_400');
  });

  it("a provider's in-stream error event is relayed as a kind, not as its text", async () => {
    anthropic.script({ text: 'Half an answer', streamError: { afterChunks: 3, type: 'overloaded_error', message: LEAKY } });
    const res = await openStream(stack.baseUrl, { key: acme.adminKey, body: { projectId: acme.projectId, messages, modelId: 'anthropic:claude-haiku-4-5' } });
    const error = res.events.find((e) => e.event === 'error');
    expect(error?.data).toEqual({ error: 'The LLM provider anthropic is overloaded', code: 'LLM_OVERLOADED', retryable: true });
    expect(JSON.stringify(res.events)).not.toContain(SECRET);
    expect(logs()).toContain(SECRET);
  });
});

describe('agent turns', () => {
  it('the reply, its traces and the workflow history hold the kind of failure, never the provider text', async () => {
    openai.script({ error: { status: 401, message: LEAKY, headers: { 'x-request-id': 'req_agent_401' } } });
    const res = await api.post('/api/v1/chat/agent', { key: acme.adminKey, json: { projectId: acme.otherProjectId, message: 'Something is off with what you charged me' } });
    expect(res.status).toBe(200);
    expect(openai.requests).toHaveLength(1);
    const error = res.body.traceEvents.find((e: { type: string }) => e.type === 'error');
    expect(error.data).toMatchObject({ kind: 'LLM_AUTH', message: 'The LLM provider openai refused the credentials (HTTP 401)' });
    expect(res.text).not.toContain(SECRET);

    const sessionId: string = res.body.sessionId;
    await flushProjection(stack.ctx, sessionId);
    const traces = await api.get(`/api/projects/${acme.otherProjectId}/sessions/${sessionId}/traces`, { key: acme.adminKey });
    expect(traces.status).toBe(200);
    expect(traces.text).toContain('LLM_AUTH');
    expect(traces.text).not.toContain(SECRET);
    const transcript = await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: acme.adminKey });
    expect(transcript.text).not.toContain(SECRET);

    const history = await sessionHistory(stack, sessionId);
    const decoded = JSON.stringify(history, (_key, value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value));
    expect(decoded).toContain('LLM_AUTH');
    expect(decoded).not.toContain(SECRET);

    const line = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.providerRequestId === 'req_agent_401');
    expect(line).toMatchObject({ msg: 'LLM provider call failed', sessionId, kind: 'auth', status: 401, providerMessage: expect.stringContaining(SECRET) });
  });
});
