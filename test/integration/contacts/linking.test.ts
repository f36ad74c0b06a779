// Sessions find their contact on the real stack: an HTTP-async conversation's key, a call's number
// (any spelling), an agentic app's userReference and a chat test's caller id find or create one
// live contact, move its lastSeenAt and list the session under it; concurrent first calls of one
// number make one contact; a deleted contact is not reused; tenants do not share contacts; the
// workflow's start input carries the contact, across continue-as-new, and never the identity.
import { randomBytes } from 'node:crypto';
import { voiceSessionId } from '../../../core/telephony/voice';
import { startSession } from '../../../core/sessions/start';
import { resolveSessionAgent } from '../../../core/sessions/target';
import { sdkUserCaller } from '../../../core/contacts/linking';
import { type SessionStartInput } from '../../../workflows/definitions';
import { echoAgent, publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { client } from '../../support/http';
import { startReceiver, type Receiver } from '../../support/receiver';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { callForm, insertConnection, postSigned, webhookPath } from '../../support/voice';
import { historyBytes, rawSessionHistory, sessionHistory } from '../../support/workflow-history';

jest.setTimeout(180_000);

// Answers once and ends: each HTTP-async message after the first opens a new session.
const ONE_SHOT = `AGENT: One_Shot
GOAL: "Answer once."
FLOW:
  steps: [answer]
  answer:
    REASONING: false
    RESPOND: "Done."
`;
const DESK = `AGENT: Desk
GOAL: "Answer the phone."
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Front desk."
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

let stack: TestStack;
let api: ReturnType<typeof client>;
let t: SeededTenant;
let other: SeededTenant;
let receiver: Receiver;
let receiverUrl: string;
let line: string;
let otherLine: string;

beforeAll(async () => {
  receiver = await startReceiver();
  receiverUrl = `${receiver.origin}/hooks`;
  // Sessions roll over after a few turns, so the contact is seen to cross continue-as-new.
  stack = await startTestStack({ worker: true, allowPrivate: { httpAsync: [receiverUrl] }, env: { SESSION_MAX_HISTORY_EVENTS: '40' } });
  api = client(stack.baseUrl);
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  await publishAgent(api, t, 'Desk', DESK);
  await publishAgent(api, other, 'Desk', DESK);
  line = await insertConnection(stack, t, { agentId: 'Desk' });
  otherLine = await insertConnection(stack, other, { agentId: 'Desk' });
});
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

interface ContactBody {
  id: string;
  type: string;
  identity: string;
  identityType: string;
  channel: string | null;
  firstSeenAt: string;
  lastSeenAt: string;
  sessionIds?: string[];
}

const newCallSid = () => 'CA' + randomBytes(16).toString('hex');
const newNumber = () => `+1555${String(1_000_000 + Math.floor(Math.random() * 8_999_999)).slice(0, 7)}`;
const lookup = (identity: string, identityType: string, key = t.adminKey) =>
  api.get<{ data: ContactBody }>(`/api/contacts/lookup?identity=${encodeURIComponent(identity)}&identityType=${identityType}`, { key });
const readContact = (id: string, key = t.adminKey) => api.get<{ data: ContactBody }>(`/api/contacts/${id}`, { key });
const contactsOf = (tenantId: string, identityType: string, identity: string) =>
  stack.ctx.models.Contact.find({ tenantId, identityType, identity }).lean();

/** A call answered on the connection from `from`: its session id once the answer has come. */
async function call(from: string, connectionId = line): Promise<string> {
  const callSid = newCallSid();
  const answered = await postSigned(stack, webhookPath(connectionId, 'voice'), callForm(callSid, { From: from }));
  expect(answered.status).toBe(200);
  expect(answered.text).toContain('<Say>Front desk.</Say>');
  return voiceSessionId(connectionId, callSid);
}

/** The AgentSession's start input of the run (the latest without runId), as workflow code sees it. */
async function startInput(sessionId: string, runId?: string): Promise<SessionStartInput> {
  const history = await sessionHistory(stack, sessionId, runId);
  const started = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
  return JSON.parse(Buffer.from(started.data!).toString('utf8')) as SessionStartInput;
}

describe('HTTP-async', () => {
  it('a conversation key makes one external contact; the next session of the key reuses it and moves lastSeenAt', async () => {
    // A tenant of its own, whose entry agent is the one-shot agent.
    const h = await seedTenant(stack.ctx);
    await publishAgent(api, h, 'One_Shot', ONE_SHOT);
    const sub = await api.post<{ subscription: { id: string } }>(`/api/projects/${h.projectId}/channels/http-async/subscriptions`, {
      key: h.adminKey,
      json: { name: 'Contacts', callbackUrl: receiverUrl, events: ['agent.response'] },
    });
    expect(sub.status).toBe(201);
    const send = (sessionKey: string, message: string) =>
      api.post<{ session_key: string; message_id: string }>('/api/v1/channels/http-async/message', {
        headers: { 'x-api-key': h.adminKey },
        json: { project_id: h.projectId, subscription_id: sub.body.subscription.id, session_key: sessionKey, message },
      });
    const replyTo = (messageId: string) =>
      eventually(async () => receiver.received.find((d) => d.body.message_id === messageId || d.body.in_reply_to === messageId), (d) => d !== undefined, 60_000, 100);

    const first = await send(`visitor-${randomBytes(4).toString('hex')}`, 'Hello');
    expect(first.status).toBe(202);
    const key = first.body.session_key;
    const firstReply = (await replyTo(first.body.message_id))!.body;
    const firstSession = String(firstReply.session_id);

    const found = await lookup(key, 'external', h.adminKey);
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({ type: 'customer', identity: key, identityType: 'external', channel: 'http_async' });
    expect(found.body.data.lastSeenAt).toBe(found.body.data.firstSeenAt);
    const contactId = found.body.data.id;
    expect((await readContact(contactId, h.adminKey)).body.data.sessionIds).toEqual([firstSession]);

    // The one-shot session has ended: the next message with the key opens a new session.
    await eventually(() => stack.ctx.models.Session.findOne({ _id: firstSession }).lean(), (s) => s?.status === 'ended', 30_000, 100);
    const second = await send(key, 'Hello again');
    expect(second.status).toBe(202);
    const secondReply = (await replyTo(second.body.message_id))!.body;
    expect(secondReply.is_new_session).toBe(true);
    const secondSession = String(secondReply.session_id);
    expect(secondSession).not.toBe(firstSession);

    const again = await readContact(contactId, h.adminKey);
    expect(again.status).toBe(200);
    expect(again.body.data.sessionIds!.slice().sort()).toEqual([firstSession, secondSession].sort());
    expect(Date.parse(again.body.data.lastSeenAt)).toBeGreaterThan(Date.parse(found.body.data.lastSeenAt));
    expect(again.body.data.firstSeenAt).toBe(found.body.data.firstSeenAt);
    expect(await contactsOf(h.tenantId, 'external', key)).toHaveLength(1);

    // Both sessions' workflows carry the contact, without the key.
    for (const sessionId of [firstSession, secondSession]) {
      const input = await startInput(sessionId);
      expect(input.contact).toEqual({ contactId, type: 'customer', identityType: 'external', displayName: null, company: null, department: null, accountRef: null, tags: [] });
    }
  });
});

describe('voice', () => {
  it("a caller's number makes one phone contact; the same number spelt otherwise reuses it; the history never holds the number", async () => {
    const number = newNumber();
    const firstSession = await call(number);
    const found = await lookup(number, 'phone');
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({ type: 'customer', identity: number, identityType: 'phone', channel: 'voice' });
    const contactId = found.body.data.id;

    // `00` for `+`, spaces, brackets and dashes: the same number.
    const spelt = `00${number.slice(1, 2)} (${number.slice(2, 5)}) ${number.slice(5, 8)}-${number.slice(8)}`;
    const secondSession = await call(spelt);
    const again = await readContact(contactId);
    expect(again.body.data.sessionIds!.slice().sort()).toEqual([firstSession, secondSession].sort());
    expect(Date.parse(again.body.data.lastSeenAt)).toBeGreaterThan(Date.parse(found.body.data.lastSeenAt));
    expect(await contactsOf(t.tenantId, 'phone', number)).toHaveLength(1);

    const input = await startInput(firstSession);
    expect(input.contact).toEqual({ contactId, type: 'customer', identityType: 'phone', displayName: null, company: null, department: null, accountRef: null, tags: [] });
    // Not the number in any spelling: not in the history as the worker reads it, nor as stored.
    const digits = number.slice(1);
    for (const history of [await sessionHistory(stack, firstSession), await rawSessionHistory(stack, firstSession), await sessionHistory(stack, secondSession)]) {
      const bytes = historyBytes(history).toString('latin1');
      expect(bytes).not.toContain(digits);
      expect(bytes).not.toContain(digits.slice(-7));
    }
  });

  it('twelve first calls of one number at once make exactly one contact, with every session listed', async () => {
    const number = newNumber();
    const sessions = await Promise.all(Array.from({ length: 12 }, () => call(number)));
    const contacts = await contactsOf(t.tenantId, 'phone', number);
    expect(contacts).toHaveLength(1);
    const read = await readContact(contacts[0]!._id);
    expect(read.body.data.sessionIds!.slice().sort()).toEqual(sessions.slice().sort());
    for (const sessionId of sessions.slice(0, 3)) expect((await startInput(sessionId)).contact?.contactId).toBe(contacts[0]!._id);
  });

  it('a deleted contact is not reused: the next call makes a new one', async () => {
    const number = newNumber();
    const firstSession = await call(number);
    const first = (await lookup(number, 'phone')).body.data;
    expect((await api.delete(`/api/contacts/${first.id}`, { key: t.adminKey })).status).toBe(200);

    const secondSession = await call(number);
    const second = await lookup(number, 'phone');
    expect(second.status).toBe(200);
    expect(second.body.data.id).not.toBe(first.id);
    expect((await readContact(second.body.data.id)).body.data.sessionIds).toEqual([secondSession]);
    expect((await readContact(first.id)).status).toBe(404);
    expect((await startInput(firstSession)).contact?.contactId).toBe(first.id);
    expect((await startInput(secondSession)).contact?.contactId).toBe(second.body.data.id);
  });

  it("the same number in two tenants is two contacts, each tenant's own", async () => {
    const number = newNumber();
    const mine = await call(number, line);
    const theirs = await call(number, otherLine);
    const a = await lookup(number, 'phone', t.adminKey);
    const b = await lookup(number, 'phone', other.adminKey);
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.data.id).not.toBe(b.body.data.id);
    expect((await readContact(a.body.data.id)).body.data.sessionIds).toEqual([mine]);
    expect((await readContact(b.body.data.id, other.adminKey)).body.data.sessionIds).toEqual([theirs]);
    // Neither tenant sees the other's contact.
    expect((await readContact(b.body.data.id, t.adminKey)).status).toBe(404);
    expect((await readContact(a.body.data.id, other.adminKey)).status).toBe(404);
  });

  it('deleting a session takes it off its contact, which stays', async () => {
    const number = newNumber();
    const kept = await call(number);
    const deleted = await call(number);
    const contact = (await lookup(number, 'phone')).body.data;
    expect((await api.delete(`/api/projects/${t.projectId}/sessions/${deleted}`, { key: t.adminKey })).status).toBe(200);
    const read = await readContact(contact.id);
    expect(read.status).toBe(200);
    expect(read.body.data.sessionIds).toEqual([kept]);
  });

  it('a withheld number or a text that is no number makes no contact; the call goes on', async () => {
    for (const from of ['+266696687', 'anonymous', '']) {
      const sessionId = await call(from);
      expect((await startInput(sessionId)).contact).toBeUndefined();
      expect(await stack.ctx.models.ContactSession.countDocuments({ tenantId: t.tenantId, sessionId })).toBe(0);
    }
    expect(await stack.ctx.models.Contact.countDocuments({ tenantId: t.tenantId, identity: '+266696687' })).toBe(0);
  });

  it('an app client is an external contact', async () => {
    const clientName = `client:Agent-${randomBytes(3).toString('hex')}`;
    const sessionId = await call(clientName);
    const found = await lookup(clientName.toLowerCase(), 'external');
    expect(found.status).toBe(200);
    expect((await readContact(found.body.data.id)).body.data.sessionIds).toEqual([sessionId]);
  });
});

describe('agentic apps and chat', () => {
  it("an app session's userReference makes an external contact", async () => {
    const userReference = `customer-${randomBytes(4).toString('hex')}`;
    const res = await api.post<{ session: { sessionId: string } }>(`/api/v2/apps/${t.projectId}/environments/dev/sessions`, {
      headers: { 'x-api-key': t.adminKey },
      json: { sessionIdentity: [{ type: 'userReference', value: userReference }] },
    });
    expect(res.status).toBe(200);
    const sessionId = res.body.session.sessionId.replace(/^s-/, '');
    const found = await lookup(userReference, 'external');
    expect(found.status).toBe(200);
    expect(found.body.data).toMatchObject({ identityType: 'external', channel: 'api', type: 'customer' });
    expect((await readContact(found.body.data.id)).body.data.sessionIds).toEqual([sessionId]);
    expect((await startInput(sessionId)).contact?.contactId).toBe(found.body.data.id);
  });

  it("a chat test's caller userId makes a contact that the session keeps across continue-as-new", async () => {
    await publishAgent(api, t, 'Echo', echoAgent());
    const userId = `tester-${randomBytes(4).toString('hex')}`;
    const chat = (json: Record<string, unknown>) => api.post<{ sessionId: string }>('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Echo', ...json } });
    const first = await chat({ message: 'hello', testContext: { callerContext: { userId } } });
    expect(first.status).toBe(200);
    const sessionId = first.body.sessionId;
    const found = await lookup(userId, 'external');
    expect(found.status).toBe(200);
    expect((await readContact(found.body.data.id)).body.data.sessionIds).toEqual([sessionId]);

    const handle = (await stack.ctx.temporal.client()).workflow.getHandle(`session/${sessionId}`);
    const firstRun = (await handle.describe()).runId;
    for (let i = 0; i < 15 && (await handle.describe()).runId === firstRun; i++) expect((await chat({ sessionId, message: `turn ${i}` })).status).toBe(200);
    const { runId } = await handle.describe();
    expect(runId).not.toBe(firstRun);
    const carried = await startInput(sessionId, runId);
    expect(carried.carried).toBeDefined();
    expect(carried.contact).toEqual((await startInput(sessionId, firstRun)).contact);
    expect(carried.contact?.contactId).toBe(found.body.data.id);
  });

  it('a caller who cannot be linked still gets their session, without a contact', async () => {
    const agent = await resolveSessionAgent(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
    const before = await stack.ctx.models.Contact.countDocuments({ tenantId: t.tenantId });
    for (const caller of [sdkUserCaller({ email: 'not an address' }), sdkUserCaller({ userId: 'x'.repeat(400) })]) {
      const started = await startSession(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId, ...agent, channel: 'api', caller });
      expect(started.start.contact).toBeUndefined();
      expect((await startInput(started.session._id)).contact).toBeUndefined();
      expect(await stack.ctx.models.ContactSession.countDocuments({ tenantId: t.tenantId, sessionId: started.session._id })).toBe(0);
    }
    expect(await stack.ctx.models.Contact.countDocuments({ tenantId: t.tenantId })).toBe(before);
  });

  it('an e-mail identity (the SDK path) reaches the workflow as its contact, never as the address', async () => {
    const email = `Ada.${randomBytes(4).toString('hex')}@Example.com`;
    const agent = await resolveSessionAgent(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
    const started = await startSession(stack.ctx, {
      tenantId: t.tenantId,
      projectId: t.projectId,
      ...agent,
      channel: 'api',
      caller: sdkUserCaller({ email, displayName: 'Ada' }),
    });
    const contactId = started.start.contact?.contactId;
    expect(contactId).toMatch(/^ct_/);
    // Compared case-insensitively, as the API does.
    const found = await lookup(email.toLowerCase(), 'email');
    expect(found.body.data).toMatchObject({ id: contactId, identity: email, displayName: 'Ada' });
    const input = await startInput(started.session._id);
    expect(input.contact).toMatchObject({ contactId, identityType: 'email', displayName: 'Ada' });
    const bytes = historyBytes(await sessionHistory(stack, started.session._id)).toString('latin1').toLowerCase();
    expect(bytes).not.toContain(email.toLowerCase());
    expect(bytes).not.toContain(email.split('@')[0]!.toLowerCase());
  });
});
