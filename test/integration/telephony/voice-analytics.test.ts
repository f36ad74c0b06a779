// Voice analytics on the real API and store: calls fed through the voice metrics' own ingestion
// path at chosen times, their hourly buckets and summary checked against figures worked out by
// hand (UTC hours, the window, hours left out, another project's and tenant's calls never
// counted), the category `voice` analytics events written beside
// them, the `hours` bounds, and one call placed through the Twilio fake and counted end to end.
import { startTwilioFake, type TwilioFake } from '../../../infra/twilio-fake';
import { ingestVoiceEvents, type CallRef, type VoiceEventInput } from '../../../core/telephony/voice-metrics';
import { voiceSessionId } from '../../../core/telephony/voice';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { ACCOUNT_SID, AUTH_TOKEN, callForm, insertConnection, postSigned, webhookPath } from '../../support/voice';

jest.setTimeout(180_000);

const HOUR = 3_600_000;
const MIN = 60_000;

let stack: TestStack;
let fake: TwilioFake;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let now: number;
/** The start of the UTC hour three hours before now: the first calls' hour. */
let base: number;

const at = (ms: number) => new Date(ms);
const iso = (ms: number) => new Date(ms).toISOString();

function callRef(owner: { tenantId: string; projectId: string }, callSid: string, environment = 'dev', connectionId = 'cc_va1'): CallRef {
  return { tenantId: owner.tenantId, projectId: owner.projectId, connectionId, callSid, sessionId: `ses-${callSid}`, environment };
}

const started = (when: number, agent = 'Plain_Line'): VoiceEventInput => ({
  type: 'voice.call_started',
  turn: 0,
  at: at(when),
  data: { direction: 'inbound', outboundCallId: null, from: '+1********21', to: '+1********00', answeredBy: null, agent, deploymentId: null },
});
const greeting = (when: number): VoiceEventInput => ({
  type: 'voice.turn',
  turn: 0,
  at: at(when),
  data: { latencyMs: 900, polls: 0, callerChars: 0, callerSpeechMs: 0, input: null, confidence: null, agentChars: 30, agentSpeechMs: 2000, sincePromptMs: null, interrupted: false, silenceMs: 0 },
});
function turn(n: number, when: number, f: { latencyMs: number; input: 'speech' | 'dtmf'; confidence: number | null; interrupted: boolean; silenceMs: number }): VoiceEventInput {
  return {
    type: 'voice.turn',
    turn: n,
    at: at(when),
    data: { latencyMs: f.latencyMs, polls: 0, callerChars: 5, callerSpeechMs: 333, input: f.input, confidence: f.confidence, agentChars: 9, agentSpeechMs: 600, sincePromptMs: 4000, interrupted: f.interrupted, silenceMs: f.silenceMs },
  };
}
const ended = (when: number, durationSec: number, outcome = 'caller_hung_up'): VoiceEventInput => ({
  type: 'voice.call_ended',
  turn: 0,
  at: at(when),
  data: { outcome, callStatus: outcome === 'failed' ? 'failed' : 'completed', durationSec },
});

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  fake = await startTwilioFake({ settings: { secondMs: 50 } });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  now = Date.now();
  base = Math.floor(now / HOUR) * HOUR - 3 * HOUR;
  const ctx = stack.ctx;

  // A: three caller turns (one cut in, one keyed), a silence, 40 s.
  await ingestVoiceEvents(ctx, callRef(t, 'CA_A'), [
    started(base + 10 * MIN),
    greeting(base + 10 * MIN + 1000),
    turn(1, base + 11 * MIN, { latencyMs: 1000, input: 'speech', confidence: 0.9, interrupted: false, silenceMs: 500 }),
    turn(2, base + 12 * MIN, { latencyMs: 2000, input: 'speech', confidence: 0.7, interrupted: true, silenceMs: 0 }),
    turn(3, base + 13 * MIN, { latencyMs: 600, input: 'dtmf', confidence: null, interrupted: false, silenceMs: 1500 }),
    { type: 'voice.no_input', turn: 41, at: at(base + 14 * MIN), data: { turn: 4, timeoutMs: 5000, final: false } },
  ]);
  // Its end comes in a call of its own, as the status callback's does.
  await ingestVoiceEvents(ctx, callRef(t, 'CA_A'), [ended(base + 15 * MIN, 40)]);
  // B: one turn, then a failed turn; 20 s.
  await ingestVoiceEvents(ctx, callRef(t, 'CA_B'), [
    started(base + 40 * MIN),
    turn(1, base + 41 * MIN, { latencyMs: 3000, input: 'speech', confidence: 0.6, interrupted: false, silenceMs: 1000 }),
    { type: 'voice.error', turn: 2, at: at(base + 42 * MIN), data: { turn: 2, reason: 'turn_failed' } },
    ended(base + 43 * MIN, 20),
  ]);
  // A machine hung up on: no session, not a voice session of any hour.
  await ingestVoiceEvents(ctx, { ...callRef(t, 'CA_G'), sessionId: null }, [
    { type: 'voice.call_ended', turn: 0, at: at(base + 20 * MIN), data: { outcome: 'machine', answeredBy: 'machine_start', turns: 0 } },
  ]);
  // C: the next hour, another connection, production, still going; Twilio gave no confidence.
  await ingestVoiceEvents(ctx, callRef(t, 'CA_C', 'production', 'cc_va2'), [
    started(base + HOUR + 5 * MIN),
    turn(1, base + HOUR + 6 * MIN, { latencyMs: 800, input: 'speech', confidence: null, interrupted: false, silenceMs: 200 }),
  ]);
  // H: ten minutes ago, a call that failed at once.
  await ingestVoiceEvents(ctx, callRef(t, 'CA_H'), [started(now - 10 * MIN), ended(now - 9 * MIN, 0, 'failed')]);
  // D: 200 hours ago, outside the default window.
  await ingestVoiceEvents(ctx, callRef(t, 'CA_D'), [started(base - 200 * HOUR), ended(base - 200 * HOUR + MIN, 10)]);
  // The other project's and the other tenant's calls, in the same hour as A and B.
  await ingestVoiceEvents(ctx, callRef({ tenantId: t.tenantId, projectId: t.otherProjectId }, 'CA_E'), [started(base + 30 * MIN), ended(base + 31 * MIN, 99)]);
  await ingestVoiceEvents(ctx, callRef(other, 'CA_F'), [started(base + 30 * MIN), ended(base + 31 * MIN, 99)]);
});
afterAll(async () => {
  await fake?.close();
  await stack?.close();
});

const hourly = (projectId: string, key: string, query = '') => api.get(`/api/projects/${projectId}/voice-analytics/hourly${query}`, { key });
const summary = (projectId: string, key: string, query = '') => api.get(`/api/projects/${projectId}/voice-analytics/summary${query}`, { key });

const UNMEASURED = { avg_inbound_mos: null, avg_outbound_mos: null, avg_inbound_jitter_ms: null, avg_outbound_jitter_ms: null, avg_tts_proxy_mos: null };

/** H's bucket: one failed call of no duration and no turns. */
const bucketH = () => ({
  hour: iso(Math.floor((now - 10 * MIN) / HOUR) * HOUR),
  session_count: 1,
  error_count: 1,
  avg_call_duration_ms: 0,
  ...UNMEASURED,
  avg_e2e_latency_ms: null,
  avg_barge_in_rate: null,
  avg_dtmf_fallback_rate: null,
  avg_asr_score: null,
  avg_silence_percent: null,
  total_turns: 0,
  total_barge_in_count: 0,
  total_dtmf_turn_count: 0,
});

it('buckets the calls by the UTC hour they started, leaves out hours without calls, and counts only the project\'s own', async () => {
  const res = await hourly(t.projectId, t.adminKey);
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  expect(res.body.data).toEqual([
    {
      // A and B. A: latency (1000+2000+600)/3 = 1200, cut in 1/3, keyed 1/3, confidence (0.9+0.7)/2 = 0.8,
      // silence (500+0+1500+5000)/40000 = 17.5 %. B: 3000, 0, 0, 0.6, 1000/20000 = 5 %, a failed turn.
      hour: iso(base),
      session_count: 2,
      error_count: 1,
      avg_call_duration_ms: 30000,
      ...UNMEASURED,
      avg_e2e_latency_ms: 2100,
      avg_barge_in_rate: 0.1667,
      avg_dtmf_fallback_rate: 0.1667,
      avg_asr_score: 0.7,
      avg_silence_percent: 11.25,
      total_turns: 4,
      total_barge_in_count: 1,
      total_dtmf_turn_count: 1,
    },
    {
      // C, still going: no duration, no silence share; no confidence reported.
      hour: iso(base + HOUR),
      session_count: 1,
      error_count: 0,
      avg_call_duration_ms: null,
      ...UNMEASURED,
      avg_e2e_latency_ms: 800,
      avg_barge_in_rate: 0,
      avg_dtmf_fallback_rate: 0,
      avg_asr_score: null,
      avg_silence_percent: null,
      total_turns: 1,
      total_barge_in_count: 0,
      total_dtmf_turn_count: 0,
    },
    bucketH(),
  ]);
});

it('summarises the window: A, B, C and H over the default 168 hours', async () => {
  const res = await summary(t.projectId, t.adminKey);
  expect(res.status).toBe(200);
  expect(res.body.data).toEqual({
    from: expect.any(String),
    to: expect.any(String),
    hours: 168,
    total_calls: 4,
    total_errors: 2,
    // (40000 + 20000 + 0) / 3: C has not ended.
    avg_call_duration_ms: 20000,
    overall_avg_inbound_mos: null,
    overall_avg_outbound_mos: null,
    // (1200 + 3000 + 800) / 3
    overall_avg_latency_ms: 1667,
    // (1/3 + 0 + 0) / 3
    overall_barge_in_rate: 0.1111,
    overall_dtmf_fallback_rate: 0.1111,
    overall_asr_score: 0.7,
    total_turns: 5,
    total_barge_in_count: 1,
    total_dtmf_turn_count: 1,
  });
  expect(Date.parse(res.body.data.to) - Date.parse(res.body.data.from)).toBe(168 * HOUR);
});

it('`hours` sets the window: 1 hour holds H only, 720 hours D as well', async () => {
  const one = await hourly(t.projectId, t.adminKey, '?hours=1');
  expect(one.body.data).toEqual([bucketH()]);
  expect((await summary(t.projectId, t.adminKey, '?hours=1')).body.data).toMatchObject({ hours: 1, total_calls: 1, total_errors: 1, total_turns: 0 });

  const month = await hourly(t.projectId, t.adminKey, '?hours=720');
  expect(month.body.data).toHaveLength(4);
  expect(month.body.data[0]).toMatchObject({ hour: iso(base - 200 * HOUR), session_count: 1, avg_call_duration_ms: 10000, total_turns: 0 });
  // (40000 + 20000 + 0 + 10000) / 4
  expect((await summary(t.projectId, t.adminKey, '?hours=720')).body.data).toMatchObject({ total_calls: 5, avg_call_duration_ms: 17500 });
});

it('another project of the tenant sees its own call only; an unknown project is 404', async () => {
  expect((await summary(t.otherProjectId, t.adminKey)).body.data).toMatchObject({ total_calls: 1, avg_call_duration_ms: 99000 });
  expect((await summary(other.projectId, other.adminKey)).body.data).toMatchObject({ total_calls: 1, avg_call_duration_ms: 99000 });
  for (const read of [hourly, summary]) {
    const res = await read('prj_nope', t.adminKey);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  }
});

it('needs session:read, and refuses an `hours` that is not an integer from 1 to 720', async () => {
  const noRead = await t.keyWith(['agent:read']);
  expect((await hourly(t.projectId, noRead)).status).toBe(403);
  expect((await summary(t.projectId, noRead)).status).toBe(403);
  expect((await api.get(`/api/projects/${t.projectId}/voice-analytics/summary`)).status).toBe(401);
  for (const hours of ['0', '721', '1.5', '-3', 'abc', '', '1e2']) {
    for (const read of [hourly, summary]) {
      const res = await read(t.projectId, t.adminKey, `?hours=${hours}`);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    }
  }
  expect((await summary(t.projectId, t.adminKey, '?hours=720')).status).toBe(200);
});

it('writes a category `voice` analytics event per voice event, once, with the session, the turn latency and the call duration', async () => {
  const events = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, sessionId: 'ses-CA_A' }).sort({ timestamp: 1 }).lean();
  expect(events.map((e) => [e.category, e.eventType, e.channel, e.durationMs])).toEqual([
    ['voice', 'voice.call_started', 'voice', null],
    ['voice', 'voice.turn', 'voice', 900],
    ['voice', 'voice.turn', 'voice', 1000],
    ['voice', 'voice.turn', 'voice', 2000],
    ['voice', 'voice.turn', 'voice', 600],
    ['voice', 'voice.no_input', 'voice', null],
    ['voice', 'voice.call_ended', 'voice', 40000],
  ]);
  expect(events[0]).toMatchObject({ agentName: 'Plain_Line', projectId: t.projectId, timestamp: at(base + 10 * MIN), _id: 'voice:cc_va1:CA_A:voice.call_started:0' });
  expect(events[4]!.metadata).toMatchObject({ input: 'dtmf', turn: 3, callSid: 'CA_A' });
  const failed = await stack.ctx.models.AnalyticsEvent.find({ tenantId: t.tenantId, sessionId: { $in: ['ses-CA_B', 'ses-CA_H'] }, error: { $ne: null } }).lean();
  expect(failed.map((e) => `${e.eventType}: ${e.error}`).sort()).toEqual(['voice.call_ended: call failed', 'voice.error: turn failed: turn_failed']);

  // The same events again (a retried webhook) write nothing twice, in either collection.
  const voiceBefore = await stack.ctx.models.VoiceEvent.countDocuments({ tenantId: t.tenantId });
  await ingestVoiceEvents(stack.ctx, callRef(t, 'CA_A'), [started(base + 10 * MIN), ended(base + 15 * MIN, 40)]);
  expect(await stack.ctx.models.VoiceEvent.countDocuments({ tenantId: t.tenantId })).toBe(voiceBefore);
  expect(await stack.ctx.models.AnalyticsEvent.countDocuments({ tenantId: t.tenantId, sessionId: 'ses-CA_A' })).toBe(7);
});

/** Barge-in off: the fake's caller answers at once, which with barge-in on counts as cutting in. */
const PLAIN = `AGENT: Plain_Line
GOAL: "Acknowledge what the caller says."
VOICE:
  barge_in: false
FLOW:
  steps: [listen]
  listen:
    REASONING: false
    RESPOND: "Go ahead."
    ON_INPUT:
      - ELSE:
        THEN: listen
`;

it('a call through the Twilio fake, one spoken and one keyed turn, is counted once it ends', async () => {
  const t2 = await seedTenant(stack.ctx);
  await publishAgent(api, t2, 'Plain_Line', PLAIN);
  const cc = await insertConnection(stack, t2, { agentId: 'Plain_Line' });
  const view = fake.inbound({
    accountSid: ACCOUNT_SID,
    authToken: AUTH_TOKEN,
    from: '+15557654321',
    to: '+15550001000',
    url: stack.baseUrl + webhookPath(cc, 'voice'),
    statusCallback: stack.baseUrl + webhookPath(cc, 'voice-status'),
    utterances: ['hello'],
    hangupAfter: true,
  });
  // Then the caller presses 7, and hangs up once nothing is left to say.
  fake.digits(view.sid, '7');
  const call = await fake.waitForStatus(view.sid, undefined, 120_000);
  expect(call.errors).toEqual([]);
  expect(call.said).toEqual(['Go ahead.', 'Go ahead.', 'Go ahead.']);
  expect(call.twimlRequests[0]?.twiml).toContain('<Gather input="dtmf speech"');

  const res = await eventually(
    () => summary(t2.projectId, t2.adminKey),
    (r) => r.body?.data?.avg_call_duration_ms !== null && r.body?.data?.total_calls === 1,
    60_000,
    200,
  );
  expect(res.body.data).toMatchObject({
    total_calls: 1,
    total_errors: 0,
    total_turns: 2,
    total_dtmf_turn_count: 1,
    total_barge_in_count: 0,
    overall_barge_in_rate: 0,
    overall_dtmf_fallback_rate: 0.5,
    // The fake reports Twilio's Confidence 0.92 for speech; the keyed turn has none.
    overall_asr_score: 0.92,
    overall_avg_inbound_mos: null,
  });
  expect(typeof res.body.data.avg_call_duration_ms).toBe('number');
  expect(typeof res.body.data.overall_avg_latency_ms).toBe('number');
  const buckets = (await hourly(t2.projectId, t2.adminKey)).body.data;
  expect(buckets).toHaveLength(1);
  expect(buckets[0]).toMatchObject({ session_count: 1, total_turns: 2, total_dtmf_turn_count: 1 });

  // The session's voice analytics events, written by the same path.
  const sessionId = voiceSessionId(cc, call.sid);
  const types = (await stack.ctx.models.AnalyticsEvent.find({ tenantId: t2.tenantId, sessionId, category: 'voice' }).lean()).map((e) => e.eventType).sort();
  expect(types).toEqual(['voice.call_ended', 'voice.call_started', 'voice.turn', 'voice.turn', 'voice.turn']);
  const keyed = await stack.ctx.models.VoiceEvent.findOne({ callSid: call.sid, type: 'voice.turn', turn: 2 }).lean();
  expect(keyed?.data).toMatchObject({ input: 'dtmf', confidence: null, callerChars: 1 });
  // The agent heard the keys as the caller's message.
  const transcript = await api.get(`/api/v1/sessions/${sessionId}/transcripts?limit=50`, { key: t2.adminKey });
  expect((transcript.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['hello', '7']);
});

it('the gather webhook records keys as a keyed turn, and a Confidence outside 0 to 1 as none', async () => {
  const t3 = await seedTenant(stack.ctx);
  await publishAgent(api, t3, 'Plain_Line', PLAIN);
  const cc = await insertConnection(stack, t3, { agentId: 'Plain_Line' });
  const callSid = 'CA' + 'c3'.repeat(16);
  const sessionId = voiceSessionId(cc, callSid);
  expect((await postSigned(stack, webhookPath(cc, 'voice'), callForm(callSid))).status).toBe(200);
  const first = await postSigned(stack, webhookPath(cc, 'gather', `sessionId=${sessionId}&turn=1`), callForm(callSid, { SpeechResult: 'hello', Confidence: '7' }));
  expect(first.text).toContain('Go ahead.');
  const second = await postSigned(stack, webhookPath(cc, 'gather', `sessionId=${sessionId}&turn=2`), callForm(callSid, { Digits: '42', FinishedOnKey: '#' }));
  expect(second.text).toContain('Go ahead.');
  const turns = await stack.ctx.models.VoiceEvent.find({ callSid, type: 'voice.turn', turn: { $gt: 0 } }).sort({ turn: 1 }).lean();
  expect(turns.map((e) => [e.data.input, e.data.confidence, e.data.callerChars])).toEqual([
    ['speech', null, 5],
    ['dtmf', null, 2],
  ]);
  expect(turns[0]).toMatchObject({ environment: 'dev', sessionId, projectId: t3.projectId });
});
