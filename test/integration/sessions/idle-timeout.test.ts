// Sessions end after SESSION_IDLE_TIMEOUT_MS without a turn (workflows/agent-session.ts, patch
// idle-watchdog-v1: one timer per idle period that re-arms for what is left since the last turn).
// Checked through the API and the workflow itself with a 2-second timeout: an idle session ends
// with reason idle_timeout no sooner than the timeout after its last turn and not much later; turns
// closer together than the timeout keep it alive for several timeouts; a turn longer than the
// timeout is not cut short. Times are compared on the workflow's own clock (the transcript's
// message timestamps and the summary's endedAt), so a slow box does not make them flaky.
import { createServer, type Server } from 'node:http';
import { type AddressInfo } from 'node:net';
import { client } from '../../support/http';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { createAgent } from './fixtures';
import { publishAgent } from '../../support/agents';

jest.setTimeout(45_000);

const IDLE_MS = 2000;
/** How late past the timeout an end may be observed on the workflow clock (timer and task latency). */
const LATE_MS = 2500;

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let toolServer: Server;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  // A tool that answers after a pause longer than the idle timeout.
  toolServer = createServer((_req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answer: 'sunny' }));
    }, IDLE_MS + 800);
  });
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  stack = await startTestStack({
    worker: true,
    env: { SESSION_IDLE_TIMEOUT_MS: String(IDLE_MS) },
    allowPrivate: { tools: [`http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`] },
  });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx, 'idle-sessions');
  await createAgent(stack.baseUrl, t.adminKey, t.projectId, 'Idle_Agent');
  const slow = `AGENT: Slow_Agent
GOAL: "Look the weather up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/lookup"
    method: GET
    timeout: 15000
FLOW:
  entry_point: fetch
  steps: [fetch, more]
  fetch:
    REASONING: false
    CALL: lookup(q = "weather")
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
      THEN: more
    ON_FAIL:
      RESPOND: "Lookup failed"
      THEN: more
  more:
    REASONING: false
    RESPOND: "Anything else?"
    ON_INPUT:
      - ELSE:
        THEN: more
`;
  await publishAgent(api, t, 'Slow_Agent', slow);
});
afterAll(async () => {
  await stack.close();
  toolServer.closeAllConnections();
  await new Promise((resolve) => toolServer.close(resolve));
});

const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });
const detailPath = (id: string) => `/api/projects/${t.projectId}/sessions/${id}`;

/** Polls the session detail (which asks the session to write what it holds) until it has ended. */
async function waitForEnd(id: string, withinMs: number) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const res = await api.get(detailPath(id), { key: t.adminKey });
    expect(res.status).toBe(200);
    if (res.body.session.status === 'ended') return { session: res.body.session, seenAt: Date.now() };
    if (Date.now() > deadline) throw new Error(`session ${id} still ${res.body.session.status} after ${withinMs} ms`);
    await sleep(100);
  }
}

async function lastMessageAt(id: string): Promise<number> {
  const res = await api.get(`/api/v1/sessions/${id}/transcripts?limit=100`, { key: t.adminKey });
  expect(res.status).toBe(200);
  const times = (res.body.messages as { timestamp: string }[]).map((m) => Date.parse(m.timestamp));
  expect(times.length).toBeGreaterThan(0);
  return Math.max(...times);
}

async function workflow(id: string) {
  return (await stack.ctx.temporal.client()).workflow.getHandle(`session/${id}`);
}

/** What an idle end leaves: summary, trace event, workflow result, and 409 for a further message. */
async function expectEndedByIdleTimeout(id: string, session: Record<string, unknown>) {
  expect(session).toMatchObject({ status: 'ended', endReason: 'idle_timeout', live: false });
  // Ending is not activity: the last activity is still the last message.
  expect(Date.parse(session.lastActivityAt as string)).toBe(await lastMessageAt(id));
  const traces = await api.get(`${detailPath(id)}/traces?limit=200`, { key: t.adminKey });
  expect(traces.status).toBe(200);
  const events = traces.body.traceEvents as { type: string; data: Record<string, unknown> }[];
  const ends = events.filter((e) => e.type === 'state_change' && e.data.variable === '_session' && e.data.value === 'ended');
  expect(ends).toHaveLength(1);
  expect(ends[0]!.data.reason).toBe('idle_timeout');
  expect(events[events.length - 1]).toBe(ends[0]);
  const handle = await workflow(id);
  expect(await handle.result()).toEqual({ status: 'ended', reason: 'idle_timeout' });
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  const late = await chat({ sessionId: id, message: 'are you there?' });
  expect(late.status).toBe(409);
  expect(late.body.error.code).toBe('CONFLICT');
}

it('ends a session with no further turns by idle timeout, about the timeout after its last turn', async () => {
  const first = await chat({ agentId: 'Idle_Agent', message: 'Hello' });
  expect(first.status).toBe(200);
  const repliedAt = Date.now();
  const id: string = first.body.sessionId;
  const detail = await api.get(detailPath(id), { key: t.adminKey });
  expect(detail.body.session).toMatchObject({ status: 'active', live: true });

  const { session, seenAt } = await waitForEnd(id, IDLE_MS + 10_000);
  // Not before the timeout (the reply came after the turn ended)...
  expect(seenAt - repliedAt).toBeGreaterThanOrEqual(IDLE_MS - 100);
  // ...and, on the workflow clock, between the timeout and a little more after the last turn.
  const idleFor = Date.parse(session.endedAt) - (await lastMessageAt(id));
  expect(idleFor).toBeGreaterThanOrEqual(IDLE_MS);
  expect(idleFor).toBeLessThan(IDLE_MS + LATE_MS);
  await expectEndedByIdleTimeout(id, session);
});

it('keeps a session alive through several timeouts while turns come more often, then ends it once they stop', async () => {
  const first = await chat({ agentId: 'Idle_Agent', message: 'Hello' });
  expect(first.status).toBe(200);
  const id: string = first.body.sessionId;
  const startedAt = Date.now();
  let turns = 1;
  while (Date.now() - startedAt < 3 * IDLE_MS + 500) {
    await sleep(IDLE_MS / 4);
    const res = await chat({ sessionId: id, message: `still here ${turns}` });
    // An ended session would answer 409.
    expect(res.status).toBe(200);
    turns++;
  }
  const handle = await workflow(id);
  expect((await handle.describe()).status.name).toBe('RUNNING');
  expect((await api.get(detailPath(id), { key: t.adminKey })).body.session).toMatchObject({ status: 'active', live: true, turnCount: turns });

  const { session } = await waitForEnd(id, IDLE_MS + 10_000);
  const lastTurnAt = await lastMessageAt(id);
  const idleFor = Date.parse(session.endedAt) - lastTurnAt;
  expect(idleFor).toBeGreaterThanOrEqual(IDLE_MS);
  expect(idleFor).toBeLessThan(IDLE_MS + LATE_MS);
  expect(Date.parse(session.endedAt) - Date.parse(session.createdAt)).toBeGreaterThan(3 * IDLE_MS);
  expect(session.messageCount).toBe(2 * turns);
  await expectEndedByIdleTimeout(id, session);

  // One idle timer per idle period, not one per turn: timers of at least IDLE_MS / 2 (the
  // watchdog's; projection writes use SESSION_PROJECTION_FLUSH_MS) number fewer than turns. A timer
  // per turn would make at least as many as turns; how many fewer depends on how fast turns came,
  // which depends on the machine's load, so the bound is the count of turns itself.
  const history = await handle.fetchHistory();
  const durations = (history.events ?? [])
    .map((e) => e.timerStartedEventAttributes?.startToFireTimeout)
    .filter((d): d is NonNullable<typeof d> => !!d)
    .map((d) => Number(d.seconds ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6));
  const watchdog = durations.filter((ms) => ms >= IDLE_MS / 2 && ms !== stack.config.SESSION_PROJECTION_FLUSH_MS);
  expect(watchdog.length).toBeGreaterThan(0);
  expect(watchdog.length).toBeLessThan(turns);
});

it('does not end a session while a turn longer than the timeout runs; it ends a timeout after that turn', async () => {
  const startedAt = Date.now();
  const res = await chat({ agentId: 'Slow_Agent', message: 'What is the weather?' });
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('Found sunny');
  expect(res.body.action.type).toBe('continue');
  expect(Date.now() - startedAt).toBeGreaterThan(IDLE_MS);
  const id: string = res.body.sessionId;
  expect((await (await workflow(id)).describe()).status.name).toBe('RUNNING');

  const { session } = await waitForEnd(id, IDLE_MS + 10_000);
  const idleFor = Date.parse(session.endedAt) - (await lastMessageAt(id));
  expect(idleFor).toBeGreaterThanOrEqual(IDLE_MS);
  expect(idleFor).toBeLessThan(IDLE_MS + LATE_MS);
  await expectEndedByIdleTimeout(id, session);
});
