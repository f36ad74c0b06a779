// A graceful stop of the API process (SIGTERM, as a redeploy sends) with provider calls running:
// a stream that ends within SHUTDOWN_GRACE_MS finishes normally; one still running then ends with
// a retryable `error` event, and a /chat/complete call with a 503, their upstream calls aborted and
// the calls on record as `aborted`. Either way the process then exits cleanly (code 0), without
// waiting out kept-alive connections.
import { Agent, type Dispatcher } from 'undici';
import { splitWords, startFakeOpenAI, type FakeLlmServer } from '../../support/fake-openai';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startApiProcess } from '../../support/api-process';
import { eventNames, openStream } from './sse-client';
import { eventually } from '../../support/eventually';

const OPENAI_KEY = 'sk-openai-shutdown-test-0005';

let stack: TestStack;
let openai: FakeLlmServer;
let tenant: SeededTenant;

beforeAll(async () => {
  openai = await startFakeOpenAI({ apiKey: OPENAI_KEY });
  stack = await startTestStack({ allowPrivate: { llm: [openai.baseURL] } });
  tenant = await seedTenant(stack.ctx);
  const put = await client(stack.baseUrl).put(`/api/projects/${tenant.projectId}/llm-credentials/openai`, {
    key: tenant.adminKey,
    json: { apiKey: OPENAI_KEY, baseURL: openai.baseURL },
  });
  expect(put.status).toBe(201);
});
afterAll(async () => {
  await Promise.all([stack.close(), openai.close()]);
});
beforeEach(() => openai.reset());

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');

/** Opens a stream on `baseUrl` and sends the API process SIGTERM once the first delta arrives. */
function streamThenStop(api: Awaited<ReturnType<typeof startApiProcess>>, sessionId: string, dispatcher?: Dispatcher) {
  let signalled = false;
  return openStream(api.baseUrl, {
    key: tenant.adminKey,
    dispatcher,
    body: { projectId: tenant.projectId, messages: [{ role: 'user', content: 'Tell me a story' }], modelId: 'gpt-4o-mini', sessionId },
    onEvent: (event) => {
      if (event.event === 'text_delta' && !signalled) {
        signalled = true;
        api.proc.child.kill('SIGTERM');
      }
    },
  });
}

const ledger = (sessionId: string) =>
  eventually(
    () => stack.ctx.models.LlmUsage.find({ tenantId: tenant.tenantId, sessionId }).lean(),
    (rows) => rows.length > 0,
  );

it('lets a stream that ends within the grace period finish, then exits cleanly at once', async () => {
  const api = await startApiProcess(stack.config, { SHUTDOWN_GRACE_MS: '60000' });
  // A client that keeps its idle connection open as long as the server lets it (65 s), longer
  // than this test may run: fetch's own pool drops it after about 4 s, and browsers and proxies
  // keep connections far longer.
  const keepAlive = new Agent({ keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 });
  try {
    openai.script({ text: words(20), chunkDelayMs: 50 });
    const res = await streamThenStop(api, 'finishes-during-stop', keepAlive);
    expect(res.status).toBe(200);
    expect(eventNames(res).at(-1)).toBe('complete');
    expect(res.events.filter((e) => e.event === 'text_delta').map((e) => e.data.delta).join('')).toBe(words(20));
    // Closed as soon as nothing runs, not held open by the stream's kept-alive connection: a
    // process that waited for it would still run when the test times out (the grace period is
    // a minute), and then be forced out with code 1.
    expect(await api.proc.exited).toBe(0);
  } finally {
    await keepAlive.destroy();
  }
  expect((await ledger('finishes-during-stop')).map((r) => r.status)).toEqual(['ok']);
});

it('ends a stream still running when the grace period is over with a retryable error, on record', async () => {
  const api = await startApiProcess(stack.config, { SHUTDOWN_GRACE_MS: '300' });
  // The upstream sends three words and then nothing more until it is cut: the call is still
  // running when the grace period ends, however slow the machine.
  openai.script({ text: words(60), hold: { afterChunks: 4 } });
  const res = await streamThenStop(api, 'cut-by-stop');
  expect(res.status).toBe(200);
  const names = eventNames(res);
  expect(names).not.toContain('complete');
  expect(names.at(-1)).toBe('error');
  expect(res.events.at(-1)!.data).toEqual({ error: 'The API is restarting; send the request again', code: 'SERVICE_UNAVAILABLE', retryable: true });
  expect(res.ended).toBe(true);
  // The role chunk and three words: everything the upstream sent, and nothing else.
  expect(res.events.filter((e) => e.event === 'text_delta').map((e) => e.data.delta).join('')).toBe(splitWords(words(60)).slice(0, 3).join(''));
  const upstream = openai.requests[0]!;
  await upstream.settled;
  expect(upstream.aborted).toBe(true);
  expect(await api.proc.exited).toBe(0);
  expect((await ledger('cut-by-stop')).map((r) => r.status)).toEqual(['aborted']);
});

it('answers a completion still running when the grace period is over with 503, on record', async () => {
  const api = await startApiProcess(stack.config, { SHUTDOWN_GRACE_MS: '300' });
  // The upstream never answers: the completion is still running when the grace period ends.
  openai.script({ text: 'Much later.', hold: true });
  const pending = client(api.baseUrl).post('/api/v1/chat/complete', {
    key: tenant.adminKey,
    json: { projectId: tenant.projectId, messages: [{ role: 'user', content: 'Take your time' }], modelId: 'gpt-4o-mini', sessionId: 'complete-cut-by-stop' },
  });
  // Stop only once the provider call runs (a busy machine can take seconds to get there): a stop
  // before it would refuse the request before it began instead of ending a running call. Bounded
  // by the test's own timeout, not by a guess at how fast the machine is.
  await openai.waitForRequests(1, 60_000);
  api.proc.child.kill('SIGTERM');
  const res = await pending;
  expect(res.status).toBe(503);
  expect(res.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'The API is restarting; send the request again' } });
  const upstream = openai.requests[0]!;
  await upstream.settled;
  expect(upstream.aborted).toBe(true);
  expect(await api.proc.exited).toBe(0);
  expect((await ledger('complete-cut-by-stop')).map((r) => r.status)).toEqual(['aborted']);
});
