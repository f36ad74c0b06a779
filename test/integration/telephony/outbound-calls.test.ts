// Outbound calls end to end: the public routes, the OutboundCall workflow and the status webhook
// against the Twilio fake, which places the calls and sends Twilio's signed status callbacks.
import { eventually } from '../../support/eventually';
import { echoAgent, publishAgent } from '../../support/agents';
import { outboundCallSessionSignal } from '../../../workflows/definitions';
import { callTo, startOutboundWorld, type OutboundWorld } from './outbound-support';
import { reconcileClosedWorkflows } from '../../../core/sessions/closed-reconciler';

let w: OutboundWorld;
const key = (k: string) => ({ headers: { 'x-api-key': k } });

beforeAll(async () => {
  w = await startOutboundWorld();
}, 120_000);
afterAll(async () => {
  await w?.close();
});

async function initiate(number: string, extra: Record<string, unknown> = {}) {
  const res = await w.api.post(w.base(), { ...key(w.keys.full), json: callTo(w.connection.id, number, extra) });
  expect(res.status).toBe(201);
  return res.body.data.outboundCallId as string;
}
const lookup = async (id: string) => (await w.api.get(`${w.base()}/${id}`, key(w.keys.full))).body.data;
const untilPhase = (id: string, phase: string, timeoutMs = 30_000) => eventually(() => lookup(id), (c) => c.phase === phase, timeoutMs, 100);
const sidOf = async (id: string) => (await eventually(() => w.stack.ctx.models.OutboundCall.findById(id).lean(), (d) => !!d?.providerCallSid, 30_000, 100))!.providerCallSid!;
const phases = (call: { statusHistory: { phase: string }[] }) => call.statusHistory.map((e) => e.phase);
let echo: Promise<void> | undefined;
/** A chat session of the tenant's Echo agent (published once), to stand for a call's conversation. */
async function chatSession(): Promise<string> {
  await (echo ??= publishAgent(w.api, { adminKey: w.tenant.adminKey, projectId: w.tenant.projectId }, 'Echo', echoAgent()));
  const chat = await w.api.post('/api/v1/chat/agent', { key: w.tenant.adminKey, json: { projectId: w.tenant.projectId, message: 'hello' } });
  expect(chat.status).toBe(200);
  return chat.body.sessionId as string;
}

describe('a call through every phase', () => {
  it('answers 201 at once, then goes accepted → dialing → ringing → in_progress → terminal completed when the person hangs up', async () => {
    const res = await w.api.post(w.base(), { ...key(w.keys.full), json: callTo(w.connection.id, '+15005550020', { clientReferenceId: 'order-1' }) });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ success: true, data: { outboundCallId: expect.stringMatching(/^oc_/), phase: 'accepted', initiationState: expect.any(String) } });
    const id = res.body.data.outboundCallId as string;
    const live = await untilPhase(id, 'in_progress');
    expect(live).toMatchObject({ initiationState: 'submitted', destination: '+1********20', destinationType: 'phone', clientReferenceId: 'order-1', amdMode: 'off', outcome: null });
    expect(live.providerCallSid).toMatch(/^CA\*+[0-9a-f]{4}$/);
    const placed = await w.fake.waitForCall((c) => c.to === '+15005550020' && c.status === 'in-progress');
    // What the provider was asked: our webhooks, the connection's number, the status events.
    expect(placed.from).toBe('+15017122661');
    w.fake.hangup(placed.sid);
    const ended = await untilPhase(id, 'terminal');
    expect(ended).toMatchObject({ outcome: 'completed', failureReason: null });
    expect(phases(ended)).toEqual(['accepted', 'dialing', 'ringing', 'in_progress', 'terminal']);
    for (const entry of ended.statusHistory) expect(Object.keys(entry).sort()).toEqual(['ingestedAt', 'outcome', 'phase', 'providerEventAt']);
    expect(ended.statusHistory.slice(1).every((e: { providerEventAt: string | null }) => typeof e.providerEventAt === 'string')).toBe(true);
  });

  it.each([
    ['+15005550010', 'busy'],
    ['+15005550011', 'no_answer'],
    ['+15005550012', 'failed'],
    ['+15005550013', 'rejected'],
  ])('%s ends %s, with a failure reason', async (number, outcome) => {
    const id = await initiate(number);
    const ended = await untilPhase(id, 'terminal');
    expect(ended.outcome).toBe(outcome);
    expect(ended.failureReason).toEqual(expect.any(String));
    expect(ended.statusHistory.filter((e: { phase: string }) => e.phase === 'terminal')).toHaveLength(1);
  });

  it('a machine with amdMode continue: the call goes on, and ends `machine`', async () => {
    const id = await initiate('+15005550014', { amdMode: 'continue' });
    await untilPhase(id, 'in_progress');
    const placed = await w.fake.waitForCall((c) => c.to === '+15005550014' && c.status === 'in-progress');
    w.fake.hangup(placed.sid);
    const ended = await untilPhase(id, 'terminal');
    expect(ended).toMatchObject({ outcome: 'machine', amdMode: 'continue' });
    expect(ended.failureReason).toMatch(/machine/);
  });

  it('a machine with amdMode disconnect is hung up on, and ends `machine`', async () => {
    const id = await initiate('+15005550014', { amdMode: 'disconnect' });
    const ended = await untilPhase(id, 'terminal');
    expect(ended).toMatchObject({ outcome: 'machine', amdMode: 'disconnect' });
    const sid = await sidOf(id);
    expect((await w.fake.waitForStatus(sid, 'completed')).status).toBe('completed');
  });

  it('terminate before it connects cancels the provider call; a second terminate answers the same end', async () => {
    const id = await initiate('+15005550015');
    await untilPhase(id, 'ringing');
    const res = await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { outboundCallId: id, phase: 'terminal', outcome: 'canceled' } });
    const sid = await sidOf(id);
    expect((await w.fake.waitForStatus(sid, 'canceled')).status).toBe('canceled');
    const again = await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
    expect(again.body.data).toEqual({ outboundCallId: id, phase: 'terminal', outcome: 'canceled' });
    expect((await untilPhase(id, 'terminal')).outcome).toBe('canceled');
  });

  it("an operator's cancellation request in Temporal (Web UI, CLI) ends the call as terminate does", async () => {
    const id = await initiate('+15005550015');
    await untilPhase(id, 'ringing');
    const handle = (await w.stack.ctx.temporal.client()).workflow.getHandle(`outbound-call/${id}`);
    await handle.cancel();
    const ended = await untilPhase(id, 'terminal');
    expect(ended).toMatchObject({ outcome: 'canceled', failureReason: 'workflow cancellation requested in Temporal before it connected' });
    const sid = await sidOf(id);
    expect((await w.fake.waitForStatus(sid, 'canceled')).status).toBe('canceled');
    // The workflow finishes its own way (completed, not cancelled): its result is the call's end.
    expect((await handle.result()).phase).toBe('terminal');
  });

  it('terminate after it connects hangs up: the outcome is completed', async () => {
    const id = await initiate('+15005550021');
    await untilPhase(id, 'in_progress');
    const res = await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
    expect(res.body.data).toEqual({ outboundCallId: id, phase: 'terminal', outcome: 'completed' });
    const placed = await w.fake.waitForCall((c) => c.to === '+15005550021');
    expect((await w.fake.waitForStatus(placed.sid, 'completed')).status).toBe('completed');
  });

  it('a call the provider goes silent on expires, and the provider call is cancelled', async () => {
    const before = w.stack.ctx.config;
    w.stack.ctx.config = { ...before, OUTBOUND_CALL_ABANDON_MS: 1500 };
    let id: string;
    try {
      id = await initiate('+15005550015', { clientReferenceId: 'expire-me' });
    } finally {
      w.stack.ctx.config = before;
    }
    const ended = await untilPhase(id, 'terminal');
    expect(ended.outcome).toBe('expired');
    const sid = await sidOf(id);
    expect((await w.fake.waitForStatus(sid, 'canceled')).status).toBe('canceled');
  });
});

describe('the call\'s conversation', () => {
  it('records the session the voice webhook started, and ends it when the call ends', async () => {
    const sessionId = await chatSession();
    const id = await initiate('+15005550023');
    await untilPhase(id, 'in_progress');
    const client = await w.stack.ctx.temporal.client();
    // What the voice webhook sends once it has started the call's session.
    await client.workflow.getHandle(`outbound-call/${id}`).signal(outboundCallSessionSignal, { sessionId });
    expect((await eventually(() => lookup(id), (c) => c.sessionId === sessionId, 30_000, 100)).sessionId).toBe(sessionId);
    const placed = await w.fake.waitForCall((c) => c.to === '+15005550023');
    w.fake.hangup(placed.sid);
    expect((await untilPhase(id, 'terminal')).outcome).toBe('completed');
    const closed = await eventually(() => client.workflow.getHandle(`session/${sessionId}`).describe(), (d) => d.status.name !== 'RUNNING', 30_000, 200);
    expect(closed.status.name).toBe('COMPLETED');
  });
});

describe('a call whose workflow an operator terminates in Temporal', () => {
  // What the API process runs every SESSION_RECONCILE_MS; visibility lists a close a moment after
  // it, so it is run again until the call is in.
  const reconcileUntil = async (id: string, since: Date, config = w.stack.ctx.config) => {
    const deps = { models: w.stack.ctx.models, config, logger: w.stack.ctx.logger, temporalClient: await w.stack.ctx.temporal.client() };
    const ended = await eventually(
      async () => {
        await reconcileClosedWorkflows(deps, since);
        return w.stack.ctx.models.OutboundCall.findById(id).lean();
      },
      (c) => c?.phase === 'terminal',
      30_000,
      250,
    );
    return { ended: ended!, again: () => reconcileClosedWorkflows(deps, since) };
  };

  // A call to the number that rings until cancelled, its workflow terminated while it rings.
  const terminatedWhileRinging = async () => {
    const since = new Date(Date.now() - 60_000);
    const id = await initiate('+15005550015');
    await untilPhase(id, 'ringing');
    const sid = await sidOf(id);
    await (await w.stack.ctx.temporal.client()).workflow.getHandle(`outbound-call/${id}`).terminate('operator: stuck call');
    return { since, id, sid };
  };

  it('connected: the reconciliation hangs up the provider call, records it ended and ends its session', async () => {
    const sessionId = await chatSession();
    const since = new Date(Date.now() - 60_000);
    const id = await initiate('+15005550024');
    await untilPhase(id, 'in_progress');
    const client = await w.stack.ctx.temporal.client();
    await client.workflow.getHandle(`outbound-call/${id}`).signal(outboundCallSessionSignal, { sessionId });
    await eventually(() => w.stack.ctx.models.OutboundCall.findById(id).lean(), (c) => c?.sessionId === sessionId, 30_000, 100);
    const placed = await w.fake.waitForCall((c) => c.to === '+15005550024' && c.status === 'in-progress');
    await client.workflow.getHandle(`outbound-call/${id}`).terminate('operator: stuck call');
    // Nothing ran the call's own end: the provider's call goes on.
    expect(w.fake.calls().find((c) => c.sid === placed.sid)!.status).toBe('in-progress');
    const { ended, again } = await reconcileUntil(id, since);
    expect(ended).toMatchObject({ outcome: 'completed', failureReason: "hung up: the call's workflow was terminated in Temporal" });
    expect(phases(ended)).toEqual(['accepted', 'dialing', 'ringing', 'in_progress', 'terminal']);
    expect((await w.fake.waitForStatus(placed.sid, 'completed')).status).toBe('completed');
    const session = await eventually(() => client.workflow.getHandle(`session/${sessionId}`).describe(), (d) => d.status.name !== 'RUNNING', 30_000, 200);
    expect(session.status.name).toBe('COMPLETED');
    // The API answers from the row, as for any ended call; a second look changes nothing.
    expect(await lookup(id)).toMatchObject({ phase: 'terminal', outcome: 'completed' });
    expect((await again()).callsEnded).toBe(0);
    expect((await w.stack.ctx.models.OutboundCall.findById(id).lean())!.statusHistory).toHaveLength(5);
  });

  it('the provider cannot be reached: the call is recorded ended all the same, saying so, and the operator is warned without the number', async () => {
    const { since, id, sid } = await terminatedWhileRinging();
    const linesBefore = w.logLines.length;
    // The provider's API is where nothing answers (a closed port) for this reconciliation only.
    const { ended } = await reconcileUntil(id, since, { ...w.stack.ctx.config, TWILIO_API_BASE_URL: 'http://127.0.0.1:9' });
    expect(ended).toMatchObject({
      phase: 'terminal',
      outcome: 'canceled',
      failureReason: "the call's workflow was terminated in Temporal before the call connected; the provider could not be told to end it",
    });
    // The logger writes asynchronously: its line may follow the row's write by a moment.
    const warned = await eventually(async () => w.logLines.slice(linesBefore).filter((l) => l.includes('the provider could not be told to end a call')), (l) => l.length > 0, 5_000, 50);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(id);
    expect(warned[0]).not.toContain('+15005550015');
    // Nothing told the provider: its call is still ringing, for the operator to end in its console.
    expect(w.fake.call(sid).status).toBe('ringing');
    w.fake.hangup(sid);
  });

  it('before it connects: the provider call is cancelled and the call recorded canceled', async () => {
    const { since, id, sid } = await terminatedWhileRinging();
    const { ended } = await reconcileUntil(id, since);
    expect(ended).toMatchObject({ outcome: 'canceled', failureReason: "the call's workflow was terminated in Temporal before the call connected" });
    expect((await w.fake.waitForStatus(sid, 'canceled')).status).toBe('canceled');
  });

  // A call to the number whose create the provider holds unanswered (the call exists), its
  // workflow terminated while that request is out, so the row knows no provider sid. The
  // provider's first status callback comes `initiateMs` after the create.
  const terminatedDuringSubmit = async () => {
    const since = new Date(Date.now() - 60_000);
    const before = new Set(w.fake.calls().map((c) => c.sid));
    const id = await initiate('+15005550003');
    const placed = await w.fake.waitForCall((c) => c.to === '+15005550003' && !before.has(c.sid));
    await (await w.stack.ctx.temporal.client()).workflow.getHandle(`outbound-call/${id}`).terminate('operator: stuck submit');
    expect(await w.stack.ctx.models.OutboundCall.findById(id).lean()).toMatchObject({ initiationState: 'provider_requesting', providerCallSid: null });
    return { since, id, sid: placed.sid };
  };

  it('during its submit: the reconciliation finds the call the request placed and cancels it', async () => {
    w.fake.settings({ initiateMs: 8_000 });
    try {
      const { since, id, sid } = await terminatedDuringSubmit();
      const { ended } = await reconcileUntil(id, since);
      expect(ended).toMatchObject({ outcome: 'canceled', initiationState: 'submitted', providerCallSid: sid, failureReason: "the call's workflow was terminated in Temporal before the call connected" });
      // Cancelled while it waits to dial; hung up if a busy machine let it be answered first.
      const over = await w.fake.waitForStatus(sid);
      expect(['canceled', 'completed']).toContain(over.status);
      expect(over.events[over.events.length - 1]).toMatch(/through the REST API/);
    } finally {
      w.fake.settings({ initiateMs: 10 });
    }
  });

  it("during its submit, the provider's calls unlisted: the call's first live status callback has it cancelled, and the ended call learns its sid", async () => {
    w.fake.settings({ initiateMs: 6_000 });
    try {
      const { since, id, sid } = await terminatedDuringSubmit();
      const linesBefore = w.logLines.length;
      const { ended } = await reconcileUntil(id, since, { ...w.stack.ctx.config, TWILIO_API_BASE_URL: 'http://127.0.0.1:9' });
      expect(ended).toMatchObject({
        outcome: 'canceled',
        providerCallSid: null,
        failureReason: "the call's workflow was terminated in Temporal before the call connected; the provider could not be asked whether it was placed",
      });
      // Nothing could tell the provider yet: the call it placed is still waiting to dial.
      expect(w.fake.call(sid).status).toBe('queued');
      // Its first live status callback ends it through the REST API: cancelled while it rings, hung
      // up if the fake answered it (40 ms after ringing) before the cancel came.
      const over = await w.fake.waitForStatus(sid);
      expect(['canceled', 'completed']).toContain(over.status);
      expect(over.events[over.events.length - 1]).toMatch(/through the REST API/);
      const learnt = await eventually(() => w.stack.ctx.models.OutboundCall.findById(id).lean(), (c) => c?.providerCallSid === sid, 10_000, 100);
      expect(learnt).toMatchObject({ phase: 'terminal', outcome: 'canceled', initiationState: 'submitted' });
      const warnedOf = () => w.logLines.slice(linesBefore).filter((l) => l.includes('could not be asked whether') || l.includes('reported a live call'));
      const warned = await eventually(async () => warnedOf(), (l) => l.some((x) => x.includes('reported a live call')), 5_000, 50);
      expect(warned.filter((l) => l.includes('could not be asked whether'))).toHaveLength(1);
      expect(warned.length).toBeGreaterThanOrEqual(2);
      for (const line of warned) {
        expect(line).toContain(id);
        expect(line).not.toContain('+15005550003');
        expect(line).not.toContain(sid);
      }
    } finally {
      w.fake.settings({ initiateMs: 10 });
    }
  });
});

describe('status callbacks', () => {
  it('duplicated and reordered callbacks never move the call back, and the first terminal status is final', async () => {
    const id = await initiate('+15005550015');
    await untilPhase(id, 'ringing');
    const sid = await sidOf(id);
    const form = (status: string, seq: number, extra: Record<string, string> = {}) => ({
      CallSid: sid,
      AccountSid: w.connection.accountSid,
      CallStatus: status,
      SequenceNumber: String(seq),
      Timestamp: new Date().toUTCString(),
      ...extra,
    });
    expect(await w.postStatus(w.connection.id, id, form('in-progress', 100))).toBe(204);
    expect(await w.postStatus(w.connection.id, id, form('in-progress', 100))).toBe(204);
    expect(await w.postStatus(w.connection.id, id, form('ringing', 101))).toBe(204);
    const live = await untilPhase(id, 'in_progress');
    expect(phases(live)).toEqual(['accepted', 'dialing', 'ringing', 'in_progress']);
    expect(await w.postStatus(w.connection.id, id, form('busy', 103))).toBe(204);
    expect(await w.postStatus(w.connection.id, id, form('completed', 102, { CallDuration: '3' }))).toBe(204);
    expect(await w.postStatus(w.connection.id, id, form('completed', 104))).toBe(204);
    const ended = await untilPhase(id, 'terminal');
    // The busy one arrived first (a duplicate sequence number is dropped, a later status is not a second end).
    expect(ended.outcome).toBe('busy');
    const final = await lookup(id);
    expect(phases(final)).toEqual(['accepted', 'dialing', 'ringing', 'in_progress', 'terminal']);
    expect(final.outcome).toBe('busy');
  });

  it('a forged signature is 403 and changes nothing; so is another connection\'s token', async () => {
    const id = await initiate('+15005550015');
    const before = await untilPhase(id, 'ringing');
    const params = { CallSid: 'CA' + '0'.repeat(32), AccountSid: w.connection.accountSid, CallStatus: 'completed', SequenceNumber: '500' };
    expect(await w.postStatus(w.connection.id, id, params, { signature: 'bm90LWEtc2lnbmF0dXJl' })).toBe(403);
    expect(await w.postStatus(w.connection.id, id, params, { authToken: 'f'.repeat(32) })).toBe(403);
    const other = await w.addConnection();
    expect(await w.postStatus(other.id, id, params, { signature: 'x' })).toBe(403);
    // Signed by the other connection for its own URL: genuine, but the call is not its: 404, nothing done.
    expect(await w.postStatus(other.id, id, { ...params, AccountSid: other.accountSid }, { authToken: other.authToken })).toBe(404);
    // Even carrying the call's own ref from the URL it was placed with: a ref proves the call for
    // its own connection only, so the row is read and says the same.
    const placedWith = w.fake.calls().flatMap((c) => c.statusCallbacks.map((cb) => new URL(cb.url))).find((u) => u.searchParams.get('outboundCallId') === id);
    const ref = placedWith!.searchParams.get('ref')!;
    expect(ref).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(await w.postStatus(other.id, id, { ...params, AccountSid: other.accountSid }, { authToken: other.authToken, ref })).toBe(404);
    const after = await lookup(id);
    expect(after.phase).toBe('ringing');
    expect(after.statusHistory).toEqual(before.statusHistory);
    await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
  });
});

describe('initiate', () => {
  it('20 concurrent retries with one key place one call: one 201, the rest 200 with the same call; another body is 409', async () => {
    const body = callTo(w.connection.id, '+15005550022', { clientReferenceId: 'once' });
    const results = await Promise.all(Array.from({ length: 20 }, () => w.api.post(w.base(), { ...key(w.keys.full), json: body })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    const ids = new Set(results.map((r) => r.body.data.outboundCallId));
    expect(ids.size).toBe(1);
    const [id] = [...ids] as string[];
    await untilPhase(id!, 'in_progress');
    expect(w.fake.calls().filter((c) => c.to === '+15005550022')).toHaveLength(1);
    const conflict = await w.api.post(w.base(), { ...key(w.keys.full), json: { ...body, clientReferenceId: 'other' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toEqual({ success: false, error: { code: 'IDEMPOTENCY_CONFLICT', message: expect.any(String), requestId: expect.any(String) } });
    await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
    expect(await w.stack.ctx.models.OutboundCall.countDocuments({ idempotencyKey: body.idempotencyKey })).toBe(1);
  });

  it('a submit whose answer never comes is reconciled by finding the call at the provider, never placed twice', async () => {
    // No status callback before the submit gives up: the call is found by looking for it.
    w.fake.settings({ initiateMs: 6_000 });
    const before = new Set(w.fake.calls().map((c) => c.sid));
    let id: string;
    try {
      id = await initiate('+15005550003');
      const submitted = await eventually(() => lookup(id), (c) => c.initiationState === 'submitted', 30_000, 100);
      expect(submitted.providerCallSid).toMatch(/^CA\*+/);
      expect(submitted.failureReason).toBeNull();
    } finally {
      w.fake.settings({ initiateMs: 10 });
    }
    expect(w.fake.calls().filter((c) => c.to === '+15005550003' && !before.has(c.sid))).toHaveLength(1);
    const client = await w.stack.ctx.temporal.client();
    const history = await client.workflow.getHandle(`outbound-call/${id}`).fetchHistory();
    const scheduled = (history.events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
    expect(scheduled).toContain('findOutboundCall');
    await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
  });

  it('refuses what is not a number or a safe SIP URI, a missing key, and changes nothing', async () => {
    const count = await w.stack.ctx.models.OutboundCall.countDocuments();
    const refused = async (to: unknown, code: string) => {
      const res = await w.api.post(w.base(), { ...key(w.keys.full), json: { channelConnectionId: w.connection.id, to, idempotencyKey: `v-${Math.random()}` } });
      expect({ status: res.status, code: res.body.error?.code, requestId: typeof res.body.error?.requestId }).toEqual({ status: 400, code, requestId: 'string' });
    };
    await refused({ type: 'phone', number: '5551234567' }, 'INVALID_PHONE_NUMBER');
    await refused({ type: 'phone', number: '+0123456' }, 'INVALID_PHONE_NUMBER');
    await refused({ type: 'sip', sipUri: 'sip:alice@example.com?X-Evil=1' }, 'SIP_INJECTION_REJECTED');
    await refused({ type: 'sip', sipUri: 'sip:alice@example.com;maddr=10.0.0.1' }, 'SIP_INJECTION_REJECTED');
    await refused({ type: 'sip', sipUri: 'sip:alice@example.com\r\nVia: evil' }, 'SIP_INJECTION_REJECTED');
    await refused({ type: 'sip', sipUri: '<sip:alice@example.com>' }, 'SIP_INJECTION_REJECTED');
    await refused({ type: 'sip', sipUri: 'tel:+15551234567' }, 'SIP_INJECTION_REJECTED');
    const noKey = await w.api.post(w.base(), { ...key(w.keys.full), json: { channelConnectionId: w.connection.id, to: { type: 'phone', number: '+15551234567' } } });
    expect(noKey.status).toBe(400);
    expect(await w.stack.ctx.models.OutboundCall.countDocuments()).toBe(count);
  });

  it('a SIP destination is placed and shown masked', async () => {
    const res = await w.api.post(w.base(), { ...key(w.keys.full), json: { channelConnectionId: w.connection.id, to: { type: 'sip', sipUri: 'sip:alice.smith@pbx.example.com;transport=tls' }, idempotencyKey: `sip-${Math.random()}` } });
    expect(res.status).toBe(201);
    const call = await lookup(res.body.data.outboundCallId);
    expect(call).toMatchObject({ destinationType: 'sip', destination: 'sip:a********th@pbx.example.com' });
    await w.api.post(`${w.base()}/${call.outboundCallId}/terminate`, key(w.keys.full));
  });
});

describe('who may see and do what', () => {
  it('another project\'s call and connection, a disabled one and an unknown id are all 404 CHANNEL_NOT_FOUND', async () => {
    const otherConnection = await w.addConnection({ projectId: w.tenant.otherProjectId });
    const otherKey = await w.keyFor(w.tenant.otherProjectId, ['outbound_calls.initiate', 'outbound_calls.read']);
    const other = await w.stack.ctx.models.Project.findById(w.tenant.otherProjectId).lean();
    const placed = await w.api.post(w.base('production', other!.slug), { ...key(otherKey), json: callTo(otherConnection.id, '+15005550015') });
    expect(placed.status).toBe(201);
    const foreignId = placed.body.data.outboundCallId;
    const notFound = async (res: { status: number; body: { error?: { code?: string } } }) => expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'CHANNEL_NOT_FOUND' });
    await notFound(await w.api.get(`${w.base()}/${foreignId}`, key(w.keys.full)));
    await notFound(await w.api.post(`${w.base()}/${foreignId}/terminate`, key(w.keys.full)));
    await notFound(await w.api.get(`${w.base()}/oc_nothing`, key(w.keys.full)));
    await notFound(await w.api.post(w.base(), { ...key(w.keys.full), json: callTo(otherConnection.id, '+15005550015') }));
    const disabled = await w.addConnection({ status: 'disabled' });
    await notFound(await w.api.post(w.base(), { ...key(w.keys.full), json: callTo(disabled.id, '+15005550015') }));
    // The other project's key cannot reach this project by its slug either.
    await notFound(await w.api.get(`${w.base()}/oc_nothing`, key(otherKey)));
    expect((await w.api.get(`${w.base('production', other!.slug)}/${foreignId}`, key(otherKey))).status).toBe(200);
    await w.api.post(`${w.base('production', other!.slug)}/${foreignId}/terminate`, key(otherKey));
  });

  it('scopes and environments: read-only cannot initiate or terminate (401), a staging key cannot act in production (403)', async () => {
    const res = await w.api.post(w.base(), { ...key(w.keys.read), json: callTo(w.connection.id, '+15005550015') });
    expect(res.status).toBe(401);
    expect((await w.api.get(w.base(), key(w.keys.read))).status).toBe(200);
    expect((await w.api.get(w.base(), key(w.keys.staging))).status).toBe(403);
    expect((await w.api.get(w.base())).status).toBe(401);
  });
});

describe('list, summary and search', () => {
  it('lists newest first with filters and a cursor, counts, and finds by the real number without echoing it', async () => {
    const conn = await w.addConnection();
    const ids: string[] = [];
    for (const n of ['+15005550010', '+15005550011', '+15005550010']) {
      const res = await w.api.post(w.base(), { ...key(w.keys.full), json: callTo(conn.id, n, { clientReferenceId: 'batch' }) });
      ids.push(res.body.data.outboundCallId);
    }
    for (const id of ids) await untilPhase(id, 'terminal');
    // Lists, summaries and search read the projection, which may trail the call's live view by a write.
    for (const id of ids) await eventually(() => w.stack.ctx.models.OutboundCall.findById(id).lean(), (d) => d?.phase === 'terminal', 30_000, 100);
    const page1 = await w.api.get(`${w.base()}?channelConnectionId=${conn.id}&limit=2`, key(w.keys.read));
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((c: { outboundCallId: string }) => c.outboundCallId)).toEqual([ids[2], ids[1]]);
    const page2 = await w.api.get(`${w.base()}?channelConnectionId=${conn.id}&limit=2&cursor=${page1.body.nextCursor}`, key(w.keys.read));
    expect(page2.body.data.map((c: { outboundCallId: string }) => c.outboundCallId)).toEqual([ids[0]]);
    expect(page2.body.nextCursor).toBeNull();
    const busy = await w.api.get(`${w.base()}?channelConnectionId=${conn.id}&outcome=busy`, key(w.keys.read));
    expect(busy.body.data).toHaveLength(2);
    const summary = await w.api.get(`${w.base()}/summary?channelConnectionId=${conn.id}`, key(w.keys.read));
    expect(summary.body).toEqual({ success: true, data: { total: 3, answered: 0, inFlight: 0, machineDetected: 0, byOutcome: { busy: 2, no_answer: 1 } } });
    const found = await w.api.post(`${w.base()}/search`, { ...key(w.keys.read), json: { destination: '+15005550010', channelConnectionId: conn.id } });
    expect(found.status).toBe(200);
    expect(found.body.data.map((c: { outboundCallId: string }) => c.outboundCallId).sort()).toEqual([ids[0], ids[2]].sort());
    expect(found.text).not.toContain('5005550010');
    const none = await w.api.post(`${w.base()}/search`, { ...key(w.keys.read), json: { destination: '+15005550099', channelConnectionId: conn.id } });
    expect(none.body.data).toEqual([]);
    const bad = await w.api.post(`${w.base()}/search`, { ...key(w.keys.read), json: { destination: 'not a number' } });
    expect(bad.status).toBe(400);
  });
});

describe('the event stream', () => {
  async function* events(path: string, k: string, lastEventId?: number) {
    const res = await fetch(w.stack.baseUrl + path, { headers: { 'x-api-key': k, ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}) } });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = res.body!.getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += Buffer.from(value).toString('utf8');
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const lines = Object.fromEntries(block.split('\n').filter((l) => !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
        if (!lines.event) continue;
        w.seen.push(block);
        yield { id: Number(lines.id), event: lines.event, data: JSON.parse(lines.data!) as { phase: string; outcome: string | null; version: number } };
      }
    }
  }

  it('snapshot first, phase events with rising versions to one final terminal event, for several listeners; Last-Event-ID resumes with nothing lost', async () => {
    const id = await initiate('+15005550015');
    const path = `${w.base()}/${id}/events`;
    const first: { event: string; data: { phase: string; version: number } }[] = [];
    const stream = events(path, w.keys.read);
    for await (const e of stream) {
      first.push(e);
      if (e.data.phase === 'ringing') break;
    }
    await stream.return(undefined);
    expect(first[0]!.event).toBe('snapshot');
    const versions = first.map((e) => e.data.version);
    expect([...versions].sort((a, b) => a - b)).toEqual(versions);
    expect(new Set(versions).size).toBe(versions.length);
    const lastSeen = first[first.length - 1]!.data.version;

    // Two listeners at once, one fresh and one resuming, while the call is ended.
    const collect = async (lastEventId?: number) => {
      const got: { event: string; data: { phase: string; outcome: string | null; version: number } }[] = [];
      for await (const e of events(path, w.keys.read, lastEventId)) got.push(e);
      return got;
    };
    const fresh = collect();
    const resumed = collect(lastSeen - 1);
    await new Promise((r) => setTimeout(r, 300));
    await w.api.post(`${w.base()}/${id}/terminate`, key(w.keys.full));
    const [a, b] = await Promise.all([fresh, resumed]);
    expect(a[0]!.event).toBe('snapshot');
    expect(a[a.length - 1]!.data).toMatchObject({ phase: 'terminal', outcome: 'canceled' });
    expect(a.filter((e) => e.data.phase === 'terminal')).toHaveLength(1);
    expect(b[0]).toMatchObject({ event: 'phase', data: { phase: 'ringing', version: lastSeen } });
    expect(b.map((e) => e.event)).not.toContain('snapshot');
    expect(b[b.length - 1]!.data).toMatchObject({ phase: 'terminal', outcome: 'canceled', version: lastSeen + 1 });
    // After the end: a snapshot at terminal, and the stream closes.
    const after = await collect();
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ event: 'snapshot', data: { phase: 'terminal', outcome: 'canceled' } });
  });
});

describe('no number in clear', () => {
  it('no response body read in this file, nor any log line, carries a destination unmasked', async () => {
    expect(w.seen.length).toBeGreaterThan(20);
    expect(w.logLines.length).toBeGreaterThan(0);
    const all = [...w.seen, ...w.logLines].join('\n');
    for (const digits of ['5005550', 'alice.smith']) expect(all).not.toContain(digits);
  });
});
