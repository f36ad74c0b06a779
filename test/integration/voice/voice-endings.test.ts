// How voice rooms end, end to end and offline: rooms made by POST /api/v1/voice/sessions, attended
// by the product's voice agent processes (speech stand-ins) inside a network namespace this file
// makes (rtc-node's WebRTC ignores loopback), with an rtc-node caller; the API reaches LiveKit
// inside over a unix-socket bridge. A caller who stays silent is reprompted, then told goodbye,
// and the session ends; a room nobody joins ends after the empty-room timeout; a caller who leaves
// and comes back goes on with the same conversation, and one who leaves for good ends it; a voice
// agent told to stop (SIGTERM) mid-call hands its room to another at once, which goes on without
// greeting again. Every ending closes the LiveKit room, ends the room's record with its reason,
// gives its place back and writes the room's `voice.call_ended` row.
import { randomBytes } from 'node:crypto';
import { type Caption } from '../../../activities/voice/attend';
import { VOICE_TEXTS } from '../../../core/telephony/voice-twiml';
import { roomService } from '../../../core/voice/livekit';
import { openVoiceRooms } from '../../../db/voice-room';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startVoiceNetns, type NetnsEvent, type VoiceNetns } from '../../support/voice-room/harness';
import { helpDeskAgent } from '../../support/voice-room/help-desk';
import { attendedTurns } from '../../support/voice-room/progress';

jest.setTimeout(300_000);

// No punctuation: espeak-ng speaks it without a pause the caller's side could take for its end.
const GREETING = 'Hello you are through to the help desk how can I help';
const ANSWER = 'Our opening hours are from nine in the morning until five in the evening on weekdays.';
// Phrases of clearly different spoken lengths: the recogniser stand-in goes by length.
const ASK = 'I would like to check the status of my order please';
const THANKS = 'thank you';
/**
 * The room's wait for a caller (and LiveKit's empty and departure timeouts): short for the test, yet
 * past the greeting's wait for a caller's audio, so a room nobody joins shows it is never greeted.
 */
const EMPTY_ROOM_SECONDS = '12';

const LIVEKIT = { port: 17920, key: 'testkey', secret: randomBytes(24).toString('hex') };
const VOICE_ENV = { LIVEKIT_URL: `ws://127.0.0.1:${LIVEKIT.port}`, LIVEKIT_API_KEY: LIVEKIT.key, LIVEKIT_API_SECRET: LIVEKIT.secret, VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: EMPTY_ROOM_SECONDS };

let stack: TestStack;
let t: SeededTenant;
let ns: VoiceNetns;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: VOICE_ENV });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  const helpDesk = helpDeskAgent(GREETING, ANSWER);
  await publishAgent(api, { projectId: t.projectId, adminKey: t.adminKey }, 'Help_Desk', helpDesk);
  // The same agent with a two-second silence timeout (its VOICE section), for the silence case.
  const quiet = helpDesk.replace('AGENT: Help_Desk', 'AGENT: Quiet_Desk').replace('silence_timeout: 60', 'silence_timeout: 2');
  expect(quiet).toContain('silence_timeout: 2');
  await publishAgent(api, { projectId: t.projectId, adminKey: t.adminKey }, 'Quiet_Desk', quiet);
  ns = await startVoiceNetns(stack.config, LIVEKIT, [ASK, THANKS], { ...VOICE_ENV, LOG_LEVEL: 'info', SHUTDOWN_GRACE_MS: '1000' }, { exportPorts: [LIVEKIT.port] });
  await ns.command({ cmd: 'startAgent', name: 'first' });
});

afterAll(async () => {
  await ns?.close();
  await stack?.close();
});

type Event<K extends NetnsEvent['event']> = Extract<NetnsEvent, { event: K }>;
const isCaption =
  (role: Caption['role'], turn: number, text?: string) =>
  (e: NetnsEvent): e is Event<'caption'> =>
    e.event === 'caption' && e.caption.role === role && e.caption.turn === turn && (text === undefined || e.caption.text === text);
const audioStop = (e: NetnsEvent): e is Event<'agentAudio'> => e.event === 'agentAudio' && e.state === 'stop';
const agentLog = (name: string, ...texts: string[]) => (e: NetnsEvent): e is Event<'agentLog'> => e.event === 'agentLog' && e.name === name && texts.every((text) => e.line.includes(text));

interface VoiceSession {
  sessionId: string;
  room: string;
  url: string;
  token: string;
}

async function createRoom(agentId: string): Promise<VoiceSession> {
  const created = await api.post('/api/v1/voice/sessions', { key: t.adminKey, json: { projectId: t.projectId, agentId } });
  expect(created.status).toBe(201);
  return created.body as VoiceSession;
}

async function transcript(sessionId: string): Promise<{ role: string; content: string }[]> {
  const res = await api.get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey });
  expect(res.status).toBe(200);
  return (res.body as { messages: { role: string; content: string }[] }).messages.map(({ role, content }) => ({ role, content }));
}

/** The room's workflow result, once it has closed the room. */
async function roomClosed(sessionId: string): Promise<{ reason: string; turns: number | null }> {
  const temporal = await stack.ctx.temporal.client();
  return (await temporal.workflow.getHandle(`voice-room/${sessionId}`).result()) as { reason: string; turns: number | null };
}

/** What a closed room left behind: its record, its session, its `voice.call_ended` row, and no LiveKit room. */
async function expectEnded(v: VoiceSession, roomReason: string, sessionReason: string, outcome: string): Promise<Record<string, unknown>> {
  expect(await stack.ctx.models.VoiceRoom.findById(v.sessionId).lean()).toMatchObject({ status: 'ended', endReason: roomReason, endedAt: expect.any(Date) });
  const session = await eventually(
    () => stack.ctx.models.Session.findOne({ _id: v.sessionId, tenantId: t.tenantId }).lean(),
    (s) => s?.status === 'ended',
    30_000,
    200,
  );
  expect(session).toMatchObject({ status: 'ended', endReason: sessionReason });
  const ended = await stack.ctx.models.VoiceEvent.findOne({ tenantId: t.tenantId, callSid: v.room, type: 'voice.call_ended' }).lean();
  expect(ended).toMatchObject({ connectionId: null, sessionId: v.sessionId, data: { outcome } });
  expect(await roomService(stack.config).listRooms([v.room])).toEqual([]);
  const got = await api.get(`/api/v1/voice/sessions/${v.sessionId}`, { key: t.adminKey });
  expect(got.body.voiceSession).toMatchObject({ status: 'ended', endReason: roomReason, participants: null });
  return ended!.data;
}

test('a silent caller is reprompted, then told goodbye and the session ends; a room nobody joins ends after the empty-room timeout', async () => {
  // Two rooms at once: one nobody ever joins, one whose caller says nothing.
  const nobody = await createRoom('Help_Desk');
  const silent = await createRoom('Quiet_Desk');
  expect(await openVoiceRooms(stack.ctx.models)).toBe(2);
  const from = ns.events.length;
  await ns.command({ cmd: 'join', url: silent.url, token: silent.token });

  // The greeting, then the reprompt after the silence timeout, then the goodbye after another.
  const greeting = await ns.next(isCaption('agent', 0, GREETING), from);
  const reprompt = await ns.next(isCaption('agent', 0, VOICE_TEXTS.reprompt), ns.events.indexOf(greeting));
  await ns.next(audioStop, ns.events.indexOf(reprompt));
  await ns.next(isCaption('agent', 0, VOICE_TEXTS.noInputGoodbye), ns.events.indexOf(reprompt));
  expect((await roomClosed(silent.sessionId)).reason).toBe('session_ended');
  const silentEnd = await expectEnded(silent, 'session_ended', 'no_input', 'no_input');
  expect(silentEnd).toMatchObject({ noInputs: 2, turns: 0 });
  const silences = await stack.ctx.models.VoiceEvent.find({ tenantId: t.tenantId, callSid: silent.room, type: 'voice.no_input' }).sort({ turn: 1 }).lean();
  expect(silences.map((s) => s.data.final)).toEqual([false, true]);
  expect((await transcript(silent.sessionId)).filter((m) => m.role === 'user')).toEqual([]);

  // The room nobody joined: the voice agent waited for a caller without greeting an empty room, then left.
  expect(await roomClosed(nobody.sessionId)).toEqual({ reason: 'empty_timeout', turns: 0 });
  expect(await expectEnded(nobody, 'empty_timeout', 'voice_room_closed', 'no_answer')).toMatchObject({ turns: 0 });
  expect(await transcript(nobody.sessionId)).toEqual([]);

  // Both places are given back.
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
  await ns.command({ cmd: 'leave' });
});

test('a caller who leaves and comes back within the timeout goes on with the same conversation; one who leaves for good ends it', async () => {
  const v = await createRoom('Help_Desk');
  const from = ns.events.length;
  await ns.command({ cmd: 'join', url: v.url, token: v.token });
  const greeting = await ns.next(isCaption('agent', 0, GREETING), from);
  await ns.next(audioStop, ns.events.indexOf(greeting));

  // Away and back (the same token, the same identity) before the empty-room timeout.
  await ns.command({ cmd: 'leave' });
  const back = ns.events.length;
  await ns.command({ cmd: 'join', url: v.url, token: v.token });
  await ns.next(agentLog('first', 'listening to the caller', v.sessionId), back);
  await ns.command({ cmd: 'say', text: ASK });
  expect((await ns.next(isCaption('user', 1), back)).caption.text).toBe(ASK);
  expect((await ns.next(isCaption('agent', 1), back)).caption.text).toBe(ANSWER);
  // The same conversation: greeted once, the question answered in the same session.
  expect(ns.events.slice(back).some(isCaption('agent', 0))).toBe(false);
  const words = await transcript(v.sessionId);
  expect(words.filter((m) => m.content === GREETING)).toHaveLength(1);
  expect(words).toEqual(expect.arrayContaining([{ role: 'user', content: ASK }, { role: 'assistant', content: ANSWER }]));
  expect(await stack.ctx.models.VoiceRoom.findById(v.sessionId).lean()).toMatchObject({ status: 'active' });

  // Gone for good: the voice agent leaves after the timeout and the room and session end.
  await ns.command({ cmd: 'leave' });
  expect(await roomClosed(v.sessionId)).toEqual({ reason: 'caller_left', turns: 1 });
  expect(await expectEnded(v, 'caller_left', 'voice_room_closed', 'caller_hung_up')).toMatchObject({ turns: 1 });
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
});

test('a voice agent told to stop mid-call hands its room to another at once, which goes on without greeting again', async () => {
  const v = await createRoom('Help_Desk');
  const from = ns.events.length;
  await ns.command({ cmd: 'join', url: v.url, token: v.token });
  const greeting = await ns.next(isCaption('agent', 0, GREETING), from);
  await ns.next(audioStop, ns.events.indexOf(greeting));
  await ns.command({ cmd: 'say', text: ASK });
  await ns.next(isCaption('agent', 1), from);

  // Its first turn heartbeated; a second voice agent is serving the queue.
  const temporal = await stack.ctx.temporal.client();
  const room = temporal.workflow.getHandle(`voice-room/${v.sessionId}`);
  await attendedTurns(stack, room, 1);
  await ns.command({ cmd: 'startAgent', name: 'second' });

  // SIGTERM: the first stops gracefully (the command returns once its process has exited).
  const stopped = ns.events.length;
  await ns.command({ cmd: 'termAgent', name: 'first' });
  expect(ns.events.slice(stopped).some(agentLog('first', 'leaving the voice room for another voice agent to take over'))).toBe(true);
  await ns.next(agentLog('second', 'joined the voice room'), stopped);
  // The attempt it left failed as a hand-over, not by a lost heartbeat.
  const pending = (await room.describe()).raw.pendingActivities?.[0];
  expect(pending?.lastFailure?.applicationFailureInfo?.type).toBe('VOICE_AGENT_STOPPED');

  await ns.command({ cmd: 'say', text: THANKS });
  expect((await ns.next(isCaption('user', 2), stopped)).caption.text).toBe(THANKS);
  await ns.next(isCaption('agent', 2), stopped);
  expect(ns.events.slice(stopped).some(isCaption('agent', 0))).toBe(false);
  const words = await transcript(v.sessionId);
  expect(words.filter((m) => m.content === GREETING)).toHaveLength(1);
  expect(words).toEqual(expect.arrayContaining([{ role: 'user', content: THANKS }]));

  expect((await api.post(`/api/v1/voice/sessions/${v.sessionId}/end`, { key: t.adminKey })).status).toBe(200);
  expect((await roomClosed(v.sessionId)).reason).toBe('session_ended');
  expect(await openVoiceRooms(stack.ctx.models)).toBe(0);
});
