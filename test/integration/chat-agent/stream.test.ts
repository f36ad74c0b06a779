// Streamed agent turns against the real stack: the reply's text arrives as deltas before the final
// response (the offline model streams word by word), the response is the plain route's answer, a
// flow reply without a model is just turn + response, a reconnect replays exactly the events after
// Last-Event-ID (also after the turn ended, and from another API process after the one that ran
// the turn died mid-way), other tenants and other SDK end users get 404, and a refused request is
// a JSON envelope, not a stream.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { client } from '../../support/http';
import { echoAgent, publishAgent, useFakeOpenAI } from '../../support/agents';
import { startFakeOpenAI } from '../../support/fake-openai';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startApiProcess } from '../../support/api-process';
import { foldDeltas } from '../../../core/chat/turn-stream';

jest.setTimeout(120_000);

const SHOP = 'https://shop.example.com';
let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let tool: { port: number; called: Promise<void>; release: () => void; close: () => Promise<void> };
let fake: Awaited<ReturnType<typeof startFakeOpenAI>>;

interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** The events of an SSE response as they arrive (heartbeat comments skipped). */
async function* sseEvents(res: Response): AsyncGenerator<SseEvent> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const fields = Object.fromEntries(
        block
          .split('\n')
          .filter((line) => line && !line.startsWith(':'))
          .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trimStart()]),
      );
      if (fields.event) yield { id: Number(fields.id), event: fields.event, data: JSON.parse(fields.data ?? "null") };
    }
  }
}

async function allEvents(res: Response): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  for await (const event of sseEvents(res)) events.push(event);
  return events;
}

function post(baseUrl: string, body: Record<string, unknown>, headers: Record<string, string> = { authorization: `Bearer ${t.adminKey}` }) {
  return fetch(`${baseUrl}/api/v1/chat/agent/stream`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

function resume(baseUrl: string, turnId: string, headers: Record<string, string> = { authorization: `Bearer ${t.adminKey}` }, query = '') {
  return fetch(`${baseUrl}/api/v1/chat/agent/stream/${turnId}${query}`, { headers });
}

/** A tool that answers `{answer: 'sunny'}` once released, so a turn can be held mid-way. */
async function startGatedTool() {
  let called!: () => void;
  let release!: () => void;
  const calledP = new Promise<void>((r) => (called = r));
  const released = new Promise<void>((r) => (release = r));
  const server: Server = createServer((_req, res) => {
    called();
    void released.then(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: 'sunny' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    called: calledP,
    release,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

beforeAll(async () => {
  tool = await startGatedTool();
  fake = await startFakeOpenAI();
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [`http://127.0.0.1:${tool.port}`], llm: [fake.baseURL] } });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, t, 'Helper', 'AGENT: Helper\nGOAL: "Answer questions about the weather."\n');
  await publishAgent(api, t, 'Echo', echoAgent());
  await publishAgent(
    api,
    t,
    'Slow_Agent',
    `AGENT: Slow_Agent
GOAL: "Look the weather up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "http://127.0.0.1:${tool.port}/lookup"
    method: GET
    timeout: 30000
FLOW:
  steps: [fetch]
  fetch:
    REASONING: false
    CALL: lookup(q = "weather")
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
    ON_FAIL:
      RESPOND: "Lookup failed"
`,
  );
});
afterAll(async () => {
  await stack.close();
  await tool.close();
  await fake.close();
});

describe('a turn whose reply a model generates', () => {
  let events: SseEvent[];

  beforeAll(async () => {
    const res = await post(stack.baseUrl, { projectId: t.projectId, agentId: 'Helper', message: 'Will it rain today?' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    events = await allEvents(res);
  });

  it('sends turn, the text as deltas, then the response whose text the deltas add up to', async () => {
    expect(events.map((e) => e.id)).toEqual(events.map((_, i) => i));
    const [turn, ...rest] = events;
    expect(turn).toMatchObject({ event: 'turn', data: { turnId: expect.stringMatching(/^trn_[A-Za-z0-9_-]{22}$/), sessionId: expect.any(String), isNewSession: true } });
    const deltas = rest.filter((e) => e.event === 'delta');
    expect(deltas.length).toBeGreaterThan(0);
    expect(rest.map((e) => e.event)).toEqual([...deltas.map(() => 'delta'), 'response']);
    const response = events.at(-1)!.data;
    expect(response).toMatchObject({ success: true, status: 200, sessionId: turn!.data.sessionId, metadata: { models: ['local:local'] } });
    expect(response.response).toContain('Will it rain today?');
    expect(foldDeltas(deltas)).toBe(response.response);
  });

  it('answers in the response event what the plain route answers', async () => {
    const plain = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Helper', message: 'Will it rain today?' } });
    expect(plain.status).toBe(200);
    const { status, ...streamed } = events.at(-1)!.data;
    expect(status).toBe(plain.status);
    expect(Object.keys(streamed).sort()).toEqual(Object.keys(plain.body).sort());
    expect(streamed.response).toBe(plain.body.response);
    expect(streamed.state).toEqual(plain.body.state);
    expect((streamed.traceEvents as { type: string }[]).map((e) => e.type)).toEqual(plain.body.traceEvents.map((e: { type: string }) => e.type));
  });

  it('replays exactly the events after Last-Event-ID once the turn has ended, or after `after`', async () => {
    const turnId = events[0]!.data.turnId as string;
    const replayed = await resume(stack.baseUrl, turnId, { authorization: `Bearer ${t.adminKey}`, 'last-event-id': '1' });
    expect(replayed.status).toBe(200);
    expect(await allEvents(replayed)).toEqual(events.slice(2));
    expect(await allEvents(await resume(stack.baseUrl, turnId, { authorization: `Bearer ${t.adminKey}` }, '?after=0'))).toEqual(events.slice(1));
    expect(await allEvents(await resume(stack.baseUrl, turnId))).toEqual(events);
  });

  it("is 404 to another tenant, to a key of another project, and for an unknown turn; a bad Last-Event-ID is 400", async () => {
    const turnId = events[0]!.data.turnId as string;
    const otherProjectKey = await t.keyWith(['session:execute'], t.otherProjectId);
    for (const res of [
      await resume(stack.baseUrl, turnId, { authorization: `Bearer ${other.adminKey}` }),
      await resume(stack.baseUrl, turnId, { authorization: `Bearer ${otherProjectKey}` }),
      await resume(stack.baseUrl, 'trn_AAAAAAAAAAAAAAAAAAAAAA'),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ success: false, error: expect.objectContaining({ code: 'NOT_FOUND' }) });
    }
    const bad = await resume(stack.baseUrl, turnId, { authorization: `Bearer ${t.adminKey}`, 'last-event-id': 'x1' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/json');
  });
});

it('starts over when a model call is retried, so the text is never doubled', async () => {
  // The other project's model is a hosted one (the fake): its stream breaks after a few chunks,
  // the activity is retried, and its second attempt's first delta resets the text.
  const owner = { adminKey: t.adminKey, projectId: t.otherProjectId };
  await useFakeOpenAI(api, owner, fake.baseURL);
  await publishAgent(api, owner, 'Forecaster', 'AGENT: Forecaster\nGOAL: "Forecast the weather."\n');
  const text = 'Partly cloudy, with a chance of rain after noon.';
  fake.script([{ text, failAfterChunks: 4 }, { text }]);
  const events = await allEvents(await post(stack.baseUrl, { projectId: t.otherProjectId, agentId: 'Forecaster', message: 'Rain?' }));
  const deltas = events.filter((e) => e.event === 'delta');
  const reset = deltas.findIndex((d) => d.data.reset === true);
  expect(reset).toBeGreaterThan(0);
  expect(deltas[reset]!.data.text).toBe(text.slice(0, (deltas[reset]!.data.text as string).length));
  expect(foldDeltas(deltas)).toBe(text);
  expect(events.at(-1)).toMatchObject({ event: 'response', data: { response: text, metadata: { models: ['openai:gpt-4o-mini'] } } });
  expect(fake.requests.map((r) => r.stream)).toEqual([true, true]);
});

it('streams a flow reply (no model) as turn and response only', async () => {
  const events = await allEvents(await post(stack.baseUrl, { projectId: t.projectId, agentId: 'Echo', message: 'hi', metadata: { n: 7 } }));
  expect(events.map((e) => [e.id, e.event])).toEqual([
    [0, 'turn'],
    [1, 'response'],
  ]);
  expect(events[1]!.data).toMatchObject({ success: true, status: 200, response: expect.stringMatching(/Noted 7\.$/) });
  // The next turn of the session is a stream too, of a session that is not new.
  const next = await allEvents(await post(stack.baseUrl, { projectId: t.projectId, sessionId: events[0]!.data.sessionId, message: 'again', metadata: { n: 8 } }));
  expect(next[0]!.data).toMatchObject({ sessionId: events[0]!.data.sessionId, isNewSession: false });
  expect(next[1]!.data).toMatchObject({ response: 'Noted 8.' });
});

it('refuses a bad body or an unknown project with a JSON envelope, not a stream', async () => {
  const bad = await post(stack.baseUrl, { message: 'no project' });
  expect(bad.status).toBe(400);
  expect(bad.headers.get('content-type')).toContain('application/json');
  expect(await bad.json()).toEqual({ success: false, error: expect.objectContaining({ code: 'VALIDATION_ERROR' }) });
  const unknown = await post(stack.baseUrl, { projectId: 'no-such-project', message: 'hi' });
  expect(unknown.status).toBe(404);
  expect(await unknown.json()).toEqual({ success: false, error: expect.objectContaining({ code: 'NOT_FOUND' }) });
});

it("lets an SDK end user resume its own turn, and nobody else's", async () => {
  // Echo is not the project's entry agent (Helper is): the key offers it.
  const created = await api.post(`/api/projects/${t.projectId}/public-keys`, { key: t.adminKey, json: { name: 'Shop', allowedOrigins: [SHOP], environment: 'dev', allowedAgents: ['Echo'] } });
  expect(created.status).toBe(201);
  const init = async () => {
    const res = await api.post('/api/v1/sdk/init', { headers: { 'x-public-key': created.body.publicKey.key, origin: SHOP }, json: { projectId: t.projectId } });
    expect(res.status).toBe(200);
    return { 'x-sdk-token': res.body.token as string, origin: SHOP };
  };
  const [alice, bob] = [await init(), await init()];
  const started = await post(stack.baseUrl, { projectId: t.projectId, agentId: 'Echo', message: 'hi' }, alice);
  expect(started.status).toBe(200);
  expect(started.headers.get('access-control-allow-origin')).toBe(SHOP);
  const events = await allEvents(started);
  const turnId = events[0]!.data.turnId as string;
  expect(await allEvents(await resume(stack.baseUrl, turnId, alice))).toEqual(events);
  const refused = await resume(stack.baseUrl, turnId, bob);
  expect(refused.status).toBe(404);
});

it('finishes a turn whose API process died mid-way: a reconnect elsewhere re-attaches to its update', async () => {
  const first = await startApiProcess(stack.config);
  let turnId: string;
  try {
    const res = await post(first.baseUrl, { projectId: t.projectId, agentId: 'Slow_Agent', message: 'weather please' });
    const events = sseEvents(res);
    const turn = (await events.next()).value as SseEvent;
    expect(turn).toMatchObject({ id: 0, event: 'turn' });
    turnId = turn.data.turnId as string;
    await tool.called;
    first.proc.child.kill('SIGKILL');
    await first.proc.exited;
    // The client sees the stream cut, as in a crash or a redeploy.
    await events.next().then((next) => expect(next.done).toBe(true), () => undefined);
  } finally {
    await first.proc.stop();
  }
  // Another API process: no final event in the store, so it waits on the workflow update.
  const resumed = resume(stack.baseUrl, turnId, { authorization: `Bearer ${t.adminKey}`, 'last-event-id': '0' });
  tool.release();
  const replayed = await allEvents(await resumed);
  expect(replayed).toEqual([{ id: 1, event: 'response', data: expect.objectContaining({ success: true, status: 200, response: 'Found sunny' }) }]);
  // Stored for the next reconnect.
  expect((await allEvents(await resume(stack.baseUrl, turnId))).map((e) => e.event)).toEqual(['turn', 'response']);
});
