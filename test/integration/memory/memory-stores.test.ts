// POST /api/v1/memory against the real stack: sandbox tokens as the runtime issues them, every
// answer and error of the route, its limits, and the stores' lifetime: they last across the turns
// of a real session and are gone once it ends (COMPLETE, idle timeout, the end signal, a
// workflow that had to be terminated, deletion), with no store left by a write racing the end.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../../api/app';
import { issueSandboxToken } from '../../../core/memory-stores/sandbox-token';
import { MEMORY_STORE_LIMITS } from '../../../core/memory-stores/stores';
import { endSessionWorkflow } from '../../../core/sessions/end';
import { client } from '../../support/http';
import { eventually } from '../../support/eventually';
import { publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from '../sessions/fixtures';

jest.setTimeout(60_000);

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let toolServer: Server;
let toolBase: string;
/** Requests the held tool received, each answered when the test releases it. */
const held: { res: ServerResponse }[] = [];
let toolCalled: () => void = () => undefined;

const chatter = `AGENT: Chatter
GOAL: "Keep talking."
FLOW:
  steps: [talk]
  talk:
    REASONING: false
    RESPOND: "Go on."
    ON_INPUT:
      - ELSE:
        THEN: talk
`;

const finisher = `AGENT: Finisher
GOAL: "Greet, then finish."
FLOW:
  steps: [greet, ask, done]
  greet:
    REASONING: false
    RESPOND: "Hello."
    ON_INPUT:
      - ELSE:
        THEN: ask
  ask:
    REASONING: false
    RESPOND: "Anything else?"
    ON_INPUT:
      - ELSE:
        THEN: done
  done:
    REASONING: false
    RESPOND: "Bye."
    THEN: COMPLETE
`;

const quick = `AGENT: Quick
GOAL: "Answer, then wait."
EXECUTION:
  session_idle_timeout: 6s
FLOW:
  steps: [talk]
  talk:
    REASONING: false
    RESPOND: "Go on."
    ON_INPUT:
      - ELSE:
        THEN: talk
`;

const holder = () => `AGENT: Holder
GOAL: "Greet, then look something up."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: http
    endpoint: "${toolBase}/lookup"
    method: GET
    timeout: 30000
FLOW:
  steps: [greet, ask, fetch]
  greet:
    REASONING: false
    RESPOND: "Hello."
    ON_INPUT:
      - ELSE:
        THEN: ask
  ask:
    REASONING: false
    RESPOND: "What shall I look up?"
    ON_INPUT:
      - ELSE:
        THEN: fetch
  fetch:
    REASONING: false
    CALL: lookup(q = "x")
    AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}"
      THEN: ask
    ON_FAIL:
      RESPOND: "Lookup failed"
      THEN: ask
`;

beforeAll(async () => {
  toolServer = createServer((_req: IncomingMessage, res: ServerResponse) => {
    held.push({ res });
    toolCalled();
  });
  await new Promise<void>((resolve) => toolServer.listen(0, '127.0.0.1', resolve));
  toolBase = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
  stack = await startTestStack({ worker: true, allowPrivate: { tools: [toolBase] } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Chatter', chatter);
  await publishAgent(api, t, 'Finisher', finisher);
  await publishAgent(api, t, 'Quick', quick);
  await publishAgent(api, t, 'Holder', holder());
}, 120_000);

afterAll(async () => {
  for (const { res } of held) if (!res.writableEnded) res.end('{"answer":"late"}');
  await stack?.close();
  toolServer?.closeAllConnections();
  await new Promise((resolve) => toolServer?.close(resolve));
});

type Owner = { tenantId: string; projectId: string; sessionId: string };

const tokenFor = (owner: Owner) => issueSandboxToken(stack.ctx, { ...owner, toolCallId: 'cmd-1', tool: 'remember_cart' }, 60_000);

async function memory(owner: Owner | string, json: unknown) {
  const token = typeof owner === 'string' ? owner : await tokenFor(owner);
  return api.post('/api/v1/memory', { token, json });
}

const get = (owner: Owner, name: string) => memory(owner, { action: 'get', memoryStoreName: name });
const set = (owner: Owner, name: string, content: unknown) => memory(owner, { action: 'set', memoryStoreName: name, payload: { content } });
const del = (owner: Owner, name: string) => memory(owner, { action: 'delete', memoryStoreName: name });

/** A session record of the tenant's main project, as a running session has one. */
async function seeded(overrides: Parameters<typeof seedSession>[2] = {}): Promise<Owner> {
  const doc = await seedSession(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId }, overrides);
  return { tenantId: doc.tenantId, projectId: doc.projectId, sessionId: doc._id };
}

async function chat(agentId: string, message: string, sessionId?: string) {
  const res = await api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId, message, ...(sessionId ? { sessionId } : {}) } });
  expect(res.status).toBe(200);
  return res.body as { sessionId: string; response: string };
}

const ownerOf = (sessionId: string): Owner => ({ tenantId: t.tenantId, projectId: t.projectId, sessionId });
const storesOf = (sessionId: string) => stack.ctx.models.MemoryStore.countDocuments({ tenantId: t.tenantId, sessionId });
const statusOf = async (sessionId: string) => (await stack.ctx.models.Session.findOne({ _id: sessionId, tenantId: t.tenantId }).lean())?.status;

describe('answers', () => {
  it('sets, gets, replaces and deletes a store: get answers the stored object, null for one never set', async () => {
    const s = await seeded();
    expect((await get(s, 'cart')).body).toEqual({ success: true, data: null });

    const content = { items: [{ sku: 'A-1', qty: 2 }], 'dotted.key': true, $dollar: 'kept', note: 'ünïcødé' };
    const saved = await set(s, 'cart', content);
    expect(saved.status).toBe(200);
    expect(saved.body).toEqual({ success: true });
    const read = await get(s, 'cart');
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ success: true, data: content });

    expect((await set(s, 'cart', { items: [] })).status).toBe(200);
    expect((await get(s, 'cart')).body.data).toEqual({ items: [] });

    expect((await del(s, 'cart')).body).toEqual({ success: true, data: { deleted: true } });
    expect((await del(s, 'cart')).body).toEqual({ success: true, data: { deleted: false } });
    expect((await get(s, 'cart')).body).toEqual({ success: true, data: null });
  });

  it('keeps stores apart by name and by session', async () => {
    const a = await seeded();
    const b = await seeded();
    await set(a, 'profile', { name: 'Ada' });
    await set(a, 'prefs', { theme: 'dark' });
    expect((await get(a, 'prefs')).body.data).toEqual({ theme: 'dark' });
    // Another session of the same tenant and project sees none of them, and may use the same names.
    expect((await get(b, 'profile')).body).toEqual({ success: true, data: null });
    expect((await del(b, 'profile')).body.data).toEqual({ deleted: false });
    await set(b, 'profile', { name: 'Grace' });
    expect((await get(a, 'profile')).body.data).toEqual({ name: 'Ada' });
    expect((await get(b, 'profile')).body.data).toEqual({ name: 'Grace' });
  });
});

describe('bad requests', () => {
  const cases: [string, unknown, string][] = [
    ['no action', { memoryStoreName: 'cart' }, 'body.action'],
    ['an unknown action', { action: 'append', memoryStoreName: 'cart' }, 'body.action'],
    ['no store name', { action: 'get' }, 'body.memoryStoreName'],
    ['an empty store name', { action: 'get', memoryStoreName: '' }, 'body.memoryStoreName'],
    ['a store name with a slash', { action: 'get', memoryStoreName: 'a/b' }, 'body.memoryStoreName'],
    ['a store name over 128 characters', { action: 'get', memoryStoreName: 'n'.repeat(MEMORY_STORE_LIMITS.nameChars + 1) }, 'body.memoryStoreName'],
    ['set without payload', { action: 'set', memoryStoreName: 'cart' }, 'body.payload'],
    ['set without payload.content', { action: 'set', memoryStoreName: 'cart', payload: {} }, 'body.payload.content'],
    ['set with an array as content', { action: 'set', memoryStoreName: 'cart', payload: { content: [1, 2] } }, 'body.payload.content'],
    ['set with a string as content', { action: 'set', memoryStoreName: 'cart', payload: { content: 'x' } }, 'body.payload.content'],
  ];
  it.each(cases)('answers 400 to %s and changes nothing', async (_name, body, field) => {
    const s = await seeded();
    const res = await memory(s, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(res.body.error.message).toContain(field);
    expect(await storesOf(s.sessionId)).toBe(0);
  });

  it('accepts a name of exactly 128 characters of the allowed set', async () => {
    const s = await seeded();
    const name = `a_b-c.d:${'e'.repeat(MEMORY_STORE_LIMITS.nameChars - 8)}`;
    expect((await set(s, name, { ok: 1 })).status).toBe(200);
    expect((await get(s, name)).body.data).toEqual({ ok: 1 });
  });

  it('answers 415 to a body that is not JSON', async () => {
    const s = await seeded();
    const res = await api.post('/api/v1/memory', { token: await tokenFor(s), raw: 'action=get', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(415);
  });
});

describe('limits', () => {
  it('answers 413 to content over 64 KB as JSON and keeps what was stored', async () => {
    const s = await seeded();
    await set(s, 'big', { v: 1 });
    // 64 KB of text, plus the JSON around it.
    const res = await set(s, 'big', { text: 'x'.repeat(MEMORY_STORE_LIMITS.contentBytes) });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, error: { code: 'MEMORY_STORE_CONTENT_TOO_LARGE' } });
    expect((await get(s, 'big')).body.data).toEqual({ v: 1 });
    // Just under the limit is fine.
    const fits = { text: 'y'.repeat(MEMORY_STORE_LIMITS.contentBytes - 20) };
    expect((await set(s, 'big', fits)).status).toBe(200);
    expect((await get(s, 'big')).body.data).toEqual(fits);
  });

  it('answers 413 to a body over its limit before parsing it', async () => {
    const s = await seeded();
    const res = await memory(s, { action: 'set', memoryStoreName: 'big', payload: { content: { text: 'z'.repeat(300 * 1024) } } });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
    expect(await storesOf(s.sessionId)).toBe(0);
  });

  it('holds at most 100 stores per session; replacing or deleting one still works at the limit', async () => {
    const s = await seeded();
    const token = await tokenFor(s);
    for (let i = 0; i < MEMORY_STORE_LIMITS.storesPerSession; i += 10) {
      const batch = Array.from({ length: 10 }, (_, j) => memory(token, { action: 'set', memoryStoreName: `s${i + j}`, payload: { content: { i: i + j } } }));
      for (const res of await Promise.all(batch)) expect(res.status).toBe(200);
    }
    const over = await memory(token, { action: 'set', memoryStoreName: 'one-more', payload: { content: {} } });
    expect(over.status).toBe(413);
    expect(over.body).toMatchObject({ success: false, error: { code: 'MEMORY_STORE_LIMIT_REACHED' } });
    expect(await storesOf(s.sessionId)).toBe(MEMORY_STORE_LIMITS.storesPerSession);
    expect((await memory(token, { action: 'get', memoryStoreName: 'one-more' })).body.data).toBeNull();
    expect((await memory(token, { action: 'set', memoryStoreName: 's7', payload: { content: { i: 'again' } } })).status).toBe(200);
    expect((await memory(token, { action: 'delete', memoryStoreName: 's0' })).body.data).toEqual({ deleted: true });
    expect((await memory(token, { action: 'set', memoryStoreName: 'one-more', payload: { content: { now: true } } })).status).toBe(200);
  });

  it('never lets concurrent creates pass the limit together', async () => {
    const s = await seeded();
    const token = await tokenFor(s);
    for (let i = 0; i < MEMORY_STORE_LIMITS.storesPerSession - 2; i += 14) {
      const n = Math.min(14, MEMORY_STORE_LIMITS.storesPerSession - 2 - i);
      await Promise.all(Array.from({ length: n }, (_, j) => memory(token, { action: 'set', memoryStoreName: `p${i + j}`, payload: { content: {} } })));
    }
    const racing = await Promise.all(Array.from({ length: 8 }, (_, j) => memory(token, { action: 'set', memoryStoreName: `race${j}`, payload: { content: {} } })));
    expect(racing.filter((r) => r.status === 200).length).toBeLessThanOrEqual(2);
    for (const r of racing) expect([200, 413]).toContain(r.status);
    expect(await storesOf(s.sessionId)).toBeLessThanOrEqual(MEMORY_STORE_LIMITS.storesPerSession);
  });
});

describe('sessions without a memory bridge', () => {
  it('answers 404 "Session not found" for an ended session, an unknown one, and one of another project', async () => {
    const ended = await seeded({ status: 'ended', endedAt: new Date(), endReason: 'completed' });
    const unknown = ownerOf(randomUUID());
    const live = await seeded();
    const otherProject = { ...live, projectId: t.otherProjectId };
    for (const owner of [ended, unknown, otherProject]) {
      for (const res of [await get(owner, 'cart'), await set(owner, 'cart', { a: 1 }), await del(owner, 'cart')]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Session not found' } });
      }
    }
    // A set is checked after its write (so that one racing the session's end leaves nothing): what it wrote is gone.
    expect(await storesOf(ended.sessionId)).toBe(0);
    expect(await storesOf(live.sessionId)).toBe(0);
    expect(await stack.ctx.models.MemoryStore.countDocuments({ tenantId: t.tenantId, sessionId: unknown.sessionId })).toBe(0);
  });

  it('answers 503 "Sandbox auth not configured" in production without SANDBOX_JWT_SECRET', async () => {
    const s = await seeded();
    const token = await tokenFor(s);
    const production = createServer(createApp({ ...stack.ctx, config: { ...stack.ctx.config, NODE_ENV: 'production', SANDBOX_JWT_SECRET: undefined } }));
    await new Promise<void>((resolve) => production.listen(0, '127.0.0.1', resolve));
    try {
      const base = `http://127.0.0.1:${(production.address() as AddressInfo).port}`;
      for (const authorization of [`Bearer ${token}`, undefined]) {
        const res = await client(base).post('/api/v1/memory', { json: { action: 'get', memoryStoreName: 'cart' }, headers: authorization ? { authorization } : {} });
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ success: false, error: { code: 'SERVICE_UNAVAILABLE', message: 'Sandbox auth not configured' } });
      }
    } finally {
      production.closeAllConnections();
      await new Promise((resolve) => production.close(resolve));
    }
  });
});

describe('lifetime', () => {
  it('keeps stores across the turns of a real session and deletes them when it is deleted', async () => {
    const first = await chat('Chatter', 'Hello');
    const owner = ownerOf(first.sessionId);
    expect((await set(owner, 'progress', { step: 1 })).status).toBe(200);
    await chat('Chatter', 'Next', first.sessionId);
    expect((await get(owner, 'progress')).body.data).toEqual({ step: 1 });
    expect((await set(owner, 'progress', { step: 2 })).status).toBe(200);
    await chat('Chatter', 'And next', first.sessionId);
    expect((await get(owner, 'progress')).body.data).toEqual({ step: 2 });

    const removed = await api.delete(`/api/projects/${t.projectId}/sessions/${first.sessionId}`, { key: t.adminKey });
    expect(removed.status).toBe(200);
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
    expect((await get(owner, 'progress')).status).toBe(404);
  });

  it('deletes a session’s stores when its flow completes, and only its own', async () => {
    const other = await chat('Chatter', 'Hello');
    const first = await chat('Finisher', 'Hello');
    const owner = ownerOf(first.sessionId);
    expect((await set(owner, 'cart', { items: 3 })).status).toBe(200);
    expect((await set(ownerOf(other.sessionId), 'cart', { items: 1 })).status).toBe(200);
    await chat('Finisher', 'Done', first.sessionId);
    const status = await eventually(() => statusOf(first.sessionId), (s) => s === 'ended', 30_000);
    expect(status).toBe('ended');
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
    expect((await get(owner, 'cart')).status).toBe(404);
    expect((await get(ownerOf(other.sessionId), 'cart')).body.data).toEqual({ items: 1 });
  });

  it('deletes a session’s stores when it ends after its idle timeout', async () => {
    const first = await chat('Quick', 'Hello');
    const owner = ownerOf(first.sessionId);
    expect((await set(owner, 'cart', { items: 3 })).status).toBe(200);
    const status = await eventually(() => statusOf(first.sessionId), (s) => s === 'ended', 40_000, 200);
    expect(status).toBe('ended');
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
    expect((await get(owner, 'cart')).status).toBe(404);
  });

  it('deletes a session’s stores when it is terminated (the end signal)', async () => {
    const first = await chat('Chatter', 'Hello');
    const owner = ownerOf(first.sessionId);
    expect((await set(owner, 'cart', { items: 3 })).status).toBe(200);
    expect(await endSessionWorkflow(stack.ctx, owner, 'terminated')).toBe('ended');
    expect(await statusOf(first.sessionId)).toBe('ended');
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
    expect((await set(owner, 'cart', { items: 4 })).status).toBe(404);
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
  });

  it('records the end and deletes the stores of a session whose workflow had to be terminated mid-turn', async () => {
    const first = await chat('Holder', 'Hello');
    const owner = ownerOf(first.sessionId);
    const called = new Promise<void>((resolve) => (toolCalled = resolve));
    // The turn waits on the held tool, so the workflow cannot honour the end signal in time.
    const turn = api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Holder', message: 'Look it up', sessionId: first.sessionId } });
    await called;
    expect((await set(owner, 'during', { mid: 'turn' })).status).toBe(200);
    expect(await endSessionWorkflow(stack.ctx, owner, 'terminated', 500)).toBe('terminated');
    expect(await statusOf(first.sessionId)).toBe('ended');
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
    // The tool call still running holds a valid token: its writes find no session.
    expect((await set(owner, 'during', { after: 'end' })).status).toBe(404);
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
    for (const { res } of held) if (!res.writableEnded) res.end('{"answer":"late"}');
    await turn;
  });

  it('leaves no store behind when writes race the end of the session', async () => {
    const first = await chat('Chatter', 'Hello');
    const owner = ownerOf(first.sessionId);
    const token = await tokenFor(owner);
    let stop = false;
    const writer = async (n: number) => {
      const statuses: number[] = [];
      for (let i = 0; !stop && i < 200; i++) statuses.push((await memory(token, { action: 'set', memoryStoreName: `w${n}-${i % 5}`, payload: { content: { i } } })).status);
      return statuses;
    };
    const writers = Array.from({ length: 12 }, (_, n) => writer(n));
    // Let the writers get going, then end the session under them.
    await eventually(() => storesOf(first.sessionId), (n) => n > 0, 10_000);
    await endSessionWorkflow(stack.ctx, owner, 'terminated');
    // Writes keep coming for a while after the end.
    await eventually(async () => (await memory(token, { action: 'get', memoryStoreName: 'w0-0' })).status, (s) => s === 404, 10_000);
    stop = true;
    const statuses = (await Promise.all(writers)).flat();
    expect(statuses).toContain(200);
    expect(statuses.filter((s) => s !== 200 && s !== 404)).toEqual([]);
    // The end is recorded first, then the stores go (a write that saw the session active goes too).
    expect(await eventually(() => storesOf(first.sessionId), (n) => n === 0, 10_000)).toBe(0);
  });
});
