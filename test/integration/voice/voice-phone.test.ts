// A phone caller in a voice room, offline, end to end: a channel connection set to `realtime`
// (created through the API), an inbound call placed by the Twilio fake, the `voice` webhook
// answering <Connect><Stream>, and the fake opening the Media Stream to the phone bridge as Twilio
// does (signed upgrade, connected/start/media/stop). The bridge (in the product's voice agent
// process, workers/voice-agent.ts with the offline pair: pocketsphinx decoding against a grammar,
// espeak-ng speaking) puts the call in its room; the caller hears the greeting in the μ-law sent
// back, says a phrase (espeak-ng, made here) and cuts the answer short with another (the bridge sends
// Twilio `clear`), and the session's transcript has the words and the agent's answers. While the call is live, upgrades without the right signature are refused before
// anything joins its room, and a signed stream naming another call, or a second stream of the
// call, is closed without joining. The caller's hang-up ends the session and closes the room; and
// a room that closes first (the session ended through the API) ends the call once its audio has played,
// and the <Redirect> after the stream hangs up without connecting it again. When the voice agent
// process carrying a live call is killed, the stream drops, Twilio follows the <Redirect> and the
// call's stream is connected again, through a stand-in load balancer, to another voice agent's
// bridge: the conversation goes on in the same session without a second greeting; a stream that
// keeps failing then ends the call with an apology after VOICE_STREAM_MAX_RECONNECTS.
// LiveKit and the voice agent run inside a network namespace this file makes (rtc-node's WebRTC
// ignores loopback); the API, Temporal, the store and the Twilio fake stay outside.
import { randomBytes, randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { RoomServiceClient } from 'livekit-server-sdk';
import { startTwilioFake, type FakeCallView, type TwilioFake } from '../../../infra/twilio-fake';
import { voiceSessionId } from '../../../core/telephony/voice';
import { VOICE_TEXTS } from '../../../core/telephony/voice-twiml';
import { phoneStreamUrl } from '../../../core/voice/phone-rooms';
import { concatPcm, silence } from '../../../providers/voice/pcm';
import { ESPEAK_SAMPLE_RATE, OfflineTextToSpeech } from '../../../providers/voice/offline-tts';
import { type PcmAudio } from '../../../providers/voice/types';
import { connectedMessage, startMessage } from '../../../providers/telephony/media-stream';
import { twilioSignature } from '../../../providers/telephony/twilio-client';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startVoiceNetns, type NetnsEvent, type VoiceNetns } from '../../support/voice-room/harness';
import { helpDeskAgent } from '../../support/voice-room/help-desk';
import { ACCOUNT_SID, AUTH_TOKEN, webhookPath } from '../../support/voice';
import { attendedTurns } from '../../support/voice-room/progress';

jest.setTimeout(300_000);

const GREETING = 'Hello, you are through to the help desk. How can I help?';
const ANSWER = 'Thank you for calling. Our opening hours are from nine until five on weekdays.';
const ASK = 'i would like to check the status of my order';
const CUT_IN = 'thank you very much';

const LIVEKIT = { port: 17910, key: 'testkey', secret: randomBytes(24).toString('hex') };
const BRIDGE_PORT = 17915;
/** A second voice agent's bridge, behind the same public URL (the stand-in load balancer tries it when the first is down). */
const SECOND_BRIDGE_PORT = 17916;
const MAX_RECONNECTS = 3;
const BRIDGE_URL = `ws://127.0.0.1:${BRIDGE_PORT}/media-stream`;
// The API reaches the namespace's LiveKit, and the Twilio fake its phone bridge, at the addresses they have inside it.
const VOICE_ENV = { LIVEKIT_URL: `ws://127.0.0.1:${LIVEKIT.port}`, LIVEKIT_API_KEY: LIVEKIT.key, LIVEKIT_API_SECRET: LIVEKIT.secret, VOICE_BRIDGE_PUBLIC_URL: BRIDGE_URL };

let stack: TestStack;
let t: SeededTenant;
let ns: VoiceNetns;
let fake: TwilioFake;
let connectionId: string;

async function speech(text: string): Promise<PcmAudio> {
  const tts = new OfflineTextToSpeech();
  try {
    const chunks: PcmAudio[] = [];
    for await (const chunk of tts.synthesize(text, { language: 'en-US' })) chunks.push(chunk);
    return concatPcm([silence(500, ESPEAK_SAMPLE_RATE), ...chunks, silence(1500, ESPEAK_SAMPLE_RATE)], ESPEAK_SAMPLE_RATE);
  } finally {
    await tts.close();
  }
}

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: { ...VOICE_ENV, VOICE_STREAM_MAX_RECONNECTS: String(MAX_RECONNECTS) } });
  t = await seedTenant(stack.ctx);
  const api = client(stack.baseUrl);
  await publishAgent(api, { projectId: t.projectId, adminKey: t.adminKey }, 'Help_Desk', helpDeskAgent(GREETING, ANSWER));
  const created = await api.post(`/api/projects/${t.projectId}/channel-connections`, {
    key: t.adminKey,
    json: { name: 'Help line', accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, callerNumber: '+15550001000', agentId: 'Help_Desk', voiceMode: 'realtime' },
  });
  expect(created.status).toBe(201);
  expect(created.body.data.voiceMode).toBe('realtime');
  connectionId = created.body.data.id as string;
  fake = await startTwilioFake();
  ns = await startVoiceNetns(
    stack.config,
    LIVEKIT,
    [],
    { ...VOICE_ENV, LOG_LEVEL: 'info', VOICE_STT_HINTS: [ASK, CUT_IN, 'goodbye'].join('|'), VOICE_BRIDGE_PORT: String(BRIDGE_PORT), VOICE_BRIDGE_HOST: '127.0.0.1' },
    { exportPorts: [LIVEKIT.port, BRIDGE_PORT], exportFallbacks: { [BRIDGE_PORT]: [SECOND_BRIDGE_PORT] }, agentEntry: 'workers/voice-agent.ts' },
  );
  await ns.command({ cmd: 'startAgent', name: 'agent' });
});

afterAll(async () => {
  await fake?.close();
  await ns?.close();
  await stack?.close();
});

/** Opens a WebSocket to the bridge; resolves with the HTTP status of a refusal, or the close code after `then` ran on the open socket. */
function openStream(url: string, signature: string | null, then: (ws: WebSocket) => void = () => undefined): Promise<{ refused: number } | { closed: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers: signature ? { 'x-twilio-signature': signature } : {} });
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      resolve({ refused: res.statusCode ?? 0 });
    });
    ws.on('open', () => then(ws));
    ws.on('close', (code) => resolve({ closed: code }));
    ws.on('error', (err) => {
      if (!/Unexpected server response/.test(err.message)) reject(err);
    });
  });
}

function callIn(): FakeCallView {
  return fake.inbound({
    accountSid: ACCOUNT_SID,
    authToken: AUTH_TOKEN,
    from: '+15557654321',
    to: '+15550001000',
    url: stack.baseUrl + webhookPath(connectionId, 'voice'),
    statusCallback: stack.baseUrl + webhookPath(connectionId, 'voice-status'),
  });
}

const participantsOf = async (room: string) => (await new RoomServiceClient(`http://127.0.0.1:${LIVEKIT.port}`, LIVEKIT.key, LIVEKIT.secret).listParticipants(room)).map((p) => p.identity).sort();

test('a phone caller on a realtime connection hears the greeting, is heard and answered, cuts the answer short, and nobody else gets into the room', async () => {
  const call = callIn();
  const sessionId = voiceSessionId(connectionId, call.sid);
  const streamUrl = phoneStreamUrl({ VOICE_BRIDGE_PUBLIC_URL: BRIDGE_URL, PUBLIC_BASE_URL: stack.baseUrl }, connectionId, sessionId);

  // The webhook answered <Connect><Stream> to the bridge, with the call's session in the URL.
  const open = await fake.waitForCall((c) => c.sid === call.sid && c.streams[0]?.status === 'open', 60_000);
  expect(open.streams[0]!.url).toBe(streamUrl);
  expect(open.streams[0]!.customParameters).toEqual({ sessionId });
  expect(open.twimlRequests[0]!.twiml).toContain('<Connect><Stream');

  // The greeting, as sound in the μ-law the bridge sends back (some 3 s of speech).
  const greeted = await fake.waitForCall((c) => c.sid === call.sid && (c.streams[0]?.loudMs ?? 0) > 1500, 90_000);
  const room = await stack.ctx.models.VoiceRoom.findOne({ _id: sessionId, tenantId: t.tenantId }).lean();
  expect(room).toMatchObject({ status: 'active', identity: `phone:${call.sid}` });
  expect(await participantsOf(room!.roomName)).toEqual(['agent', `phone:${call.sid}`]);

  // Upgrades without the right signature are refused before anything joins the room.
  expect(await openStream(streamUrl, null)).toEqual({ refused: 403 });
  expect(await openStream(streamUrl, twilioSignature('another-token', streamUrl, {}))).toEqual({ refused: 403 });
  const otherSession = phoneStreamUrl({ VOICE_BRIDGE_PUBLIC_URL: BRIDGE_URL, PUBLIC_BASE_URL: stack.baseUrl }, connectionId, randomUUID());
  expect(await openStream(otherSession, twilioSignature(AUTH_TOKEN, streamUrl, {}))).toEqual({ refused: 403 });
  // Signed for this call's URL, but its start names another call, or this call a second time: closed, never joined.
  const start = (callSid: string) => (ws: WebSocket) => {
    ws.send(connectedMessage());
    ws.send(startMessage({ streamSid: `MZ${randomBytes(16).toString('hex')}`, accountSid: ACCOUNT_SID, callSid, customParameters: { sessionId }, sequenceNumber: 1 }));
  };
  expect(await openStream(streamUrl, twilioSignature(AUTH_TOKEN, streamUrl, {}), start(`CA${randomBytes(16).toString('hex')}`))).toEqual({ closed: 1008 });
  expect(await openStream(streamUrl, twilioSignature(AUTH_TOKEN, streamUrl, {}), start(call.sid))).toEqual({ closed: 1008 });
  expect(await participantsOf(room!.roomName)).toEqual(['agent', `phone:${call.sid}`]);

  // The caller asks; the answer is heard, and the caller cuts it short (barge-in): the bridge tells
  // Twilio to drop what it still holds of the reply.
  const [ask, cutIn] = [await speech(ASK), await speech(CUT_IN)];
  // Once the greeting has been said to its end (its row is written when it has played), so that the
  // question is not a barge-in on it; asked again if the offline recogniser, on a loaded machine,
  // heard no words in it (at most three times, as a caller would).
  await eventually(() => stack.ctx.models.VoiceEvent.findOne({ tenantId: t.tenantId, sessionId, type: 'voice.turn', turn: 0 }).lean(), (e) => e !== null, 60_000, 200);
  const afterGreeting = Math.max(greeted.streams[0]!.loudMs, fake.call(call.sid).streams[0]!.loudMs);
  for (let tries = 0; tries < 3; tries++) {
    fake.play(call.sid, ask);
    const answered = await fake
      .waitForCall((c) => c.sid === call.sid && (c.streams[0]?.loudMs ?? 0) > afterGreeting + 600, 25_000)
      .then(() => true, () => false);
    if (answered) break;
  }
  await fake.waitForCall((c) => c.sid === call.sid && (c.streams[0]?.loudMs ?? 0) > afterGreeting + 600, 30_000);
  fake.play(call.sid, cutIn);
  const cut = await fake.waitForCall((c) => c.sid === call.sid && (c.streams[0]?.clears ?? 0) >= 1, 60_000);
  expect(cut.streams[0]!.status).toBe('open');
  // The transcript: the greeting, the caller's words as recognised, and the agent's answers.
  const messages = await eventually(
    async () => (await client(stack.baseUrl).get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey })).body as { messages?: { role: string; content: string }[] },
    (body) => (body.messages?.filter((m) => m.role === 'assistant' && m.content === ANSWER).length ?? 0) === 2,
    120_000,
    250,
  );
  expect(messages.messages!.map(({ role, content }) => ({ role, content }))).toEqual([
    { role: 'assistant', content: GREETING },
    { role: 'user', content: ASK },
    { role: 'assistant', content: ANSWER },
    { role: 'user', content: CUT_IN },
    { role: 'assistant', content: ANSWER },
  ]);
  const interrupted = await eventually(
    () => stack.ctx.models.VoiceEvent.findOne({ tenantId: t.tenantId, sessionId, type: 'voice.turn', turn: 1 }).lean(),
    (row) => row !== null,
    30_000,
    200,
  );
  expect(interrupted!.data).toMatchObject({ source: 'room', input: 'speech', interrupted: true });
  const session = await stack.ctx.models.Session.findOne({ _id: sessionId }).lean();
  expect(session).toMatchObject({ channel: 'voice', tenantId: t.tenantId });

  // The caller hangs up: the stream stops, the session ends and the room closes.
  fake.hangup(call.sid);
  const ended: FakeCallView = await fake.waitForCall((c) => c.sid === call.sid && c.status === 'completed' && c.streams[0]?.status === 'closed', 30_000);
  expect(ended.events).toContain('stream stopped: the call ended');
  const closed = await eventually(
    () => stack.ctx.models.VoiceRoom.findOne({ _id: sessionId, tenantId: t.tenantId }).lean(),
    (r) => r?.status === 'ended',
    60_000,
    250,
  );
  expect(closed!.endReason).toBe('session_ended');
  expect((await stack.ctx.models.Session.findOne({ _id: sessionId }).lean())!.status).toBe('ended');
});

test('a room that closes first ends the call: the bridge lets the audio play out, then ends the stream and Twilio the call', async () => {
  const call = callIn();
  const sessionId = voiceSessionId(connectionId, call.sid);
  await fake.waitForCall((c) => c.sid === call.sid && (c.streams[0]?.loudMs ?? 0) > 500, 90_000);
  const ended = await client(stack.baseUrl).post(`/api/v1/voice/sessions/${sessionId}/end`, { key: t.adminKey });
  expect(ended.status).toBe(200);
  // The server ended the stream (after Twilio said its mark had played); the <Redirect> after it
  // found the room closed and hung up, saying nothing and connecting no second stream.
  const done = await fake.waitForCall((c) => c.sid === call.sid && c.status === 'completed', 30_000);
  expect(done.streams).toHaveLength(1);
  expect(done.streams[0]).toMatchObject({ status: 'closed', closeCode: 1000, marks: ['end-1'] });
  expect(done.twimlRequests.map((r) => r.url)).toEqual([stack.baseUrl + webhookPath(connectionId, 'voice'), stack.baseUrl + webhookPath(connectionId, 'stream-ended', `sessionId=${sessionId}&reconnects=0`)]);
  expect(done.twimlRequests[1]!.twiml).toContain('<Hangup/>');
  expect(done.twimlRequests[1]!.twiml).not.toContain('<Connect>');
  expect(done.said).toEqual([]);
  const room = await eventually(
    () => stack.ctx.models.VoiceRoom.findOne({ _id: sessionId, tenantId: t.tenantId }).lean(),
    (r) => r?.status === 'ended',
    30_000,
    250,
  );
  expect(room!.endReason).toBe('session_ended');
  expect((await stack.ctx.models.Session.findOne({ _id: sessionId }).lean())!.status).toBe('ended');
});

const agentLog = (name: string, text: string) => (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'agentLog' }> => e.event === 'agentLog' && e.name === name && e.line.includes(text);

async function transcript(sessionId: string): Promise<{ role: string; content: string }[]> {
  const body = (await client(stack.baseUrl).get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey })).body as { messages?: { role: string; content: string }[] };
  return (body.messages ?? []).map(({ role, content }) => ({ role, content }));
}

test('a call whose voice agent process dies is connected again to another one and goes on; a stream that keeps failing ends with an apology', async () => {
  const call = callIn();
  const sessionId = voiceSessionId(connectionId, call.sid);
  const streamUrl = phoneStreamUrl({ VOICE_BRIDGE_PUBLIC_URL: BRIDGE_URL, PUBLIC_BASE_URL: stack.baseUrl }, connectionId, sessionId);
  const streamEnded = (reconnects: number) => stack.baseUrl + webhookPath(connectionId, 'stream-ended', `sessionId=${sessionId}&reconnects=${reconnects}`);
  const greeted = await fake.waitForCall((c) => c.sid === call.sid && (c.streams[0]?.loudMs ?? 0) > 1500, 90_000);
  // The answer that connected the stream goes on to the stream-ended webhook when the stream ends.
  expect(greeted.twimlRequests[0]!.twiml).toContain(`</Connect><Redirect method="POST">${streamEnded(0).replace(/&/g, '&amp;')}</Redirect>`);

  // One turn, answered, and the voice agent's progress (the greeting and that turn) heartbeated.
  fake.play(call.sid, await speech(ASK));
  expect(await eventually(() => transcript(sessionId), (m) => m.length >= 3, 120_000, 250)).toEqual([
    { role: 'assistant', content: GREETING },
    { role: 'user', content: ASK },
    { role: 'assistant', content: ANSWER },
  ]);
  const room = (await stack.ctx.temporal.client()).workflow.getHandle(`voice-room/${sessionId}`);
  await attendedTurns(stack, room, 1);

  // Another voice agent runs beside it, its bridge behind the same public URL; the one carrying the
  // call (its stream and its room) is killed.
  await ns.command({ cmd: 'startAgent', name: 'second', env: { VOICE_BRIDGE_PORT: String(SECOND_BRIDGE_PORT) } });
  const killedAt = ns.events.length;
  await ns.command({ cmd: 'killAgent', name: 'agent' });

  // The stream dropped; Twilio followed the <Redirect>, which connected the call's stream again at once.
  const back = await fake.waitForCall((c) => c.sid === call.sid && c.streams[1]?.status === 'open', 60_000);
  expect(back.streams[0]).toMatchObject({ status: 'closed', closeCode: 1006 });
  expect(back.twimlRequests[1]!.url).toBe(streamEnded(0));
  expect(back.twimlRequests[1]!.twiml).toContain(`<Connect><Stream url="${streamUrl}">`);
  expect(back.twimlRequests[1]!.twiml).not.toContain('<Pause');
  expect(back.twimlRequests[1]!.twiml).toContain(streamEnded(1).replace(/&/g, '&amp;'));
  expect(back.streams[1]).toMatchObject({ url: streamUrl, customParameters: { sessionId } });
  // The second voice agent takes the room over (the attend activity retried) and the call's new stream is in it.
  await ns.next(agentLog('second', 'joined the voice room'), killedAt, 90_000);
  await ns.next(agentLog('second', 'a phone caller joined the voice room'), killedAt, 60_000);

  // The conversation goes on in the same session: heard on the new stream, no second greeting.
  const heardBefore = fake.call(call.sid).streams[1]!.loudMs;
  // The new voice agent subscribes to the caller's track a moment after it joined, and nothing says
  // when: the caller says it again until it is heard, as a caller would (at most three times).
  const again = await speech(CUT_IN);
  for (let tries = 0; tries < 3 && (await transcript(sessionId)).length === 3; tries++) {
    fake.play(call.sid, again);
    await eventually(() => transcript(sessionId), (m) => m.length > 3, 20_000, 250);
  }
  const words = await eventually(() => transcript(sessionId), (m) => m.length === 5, 60_000, 250);
  expect(words).toEqual([
    { role: 'assistant', content: GREETING },
    { role: 'user', content: ASK },
    { role: 'assistant', content: ANSWER },
    { role: 'user', content: CUT_IN },
    { role: 'assistant', content: ANSWER },
  ]);
  await fake.waitForCall((c) => c.sid === call.sid && c.streams[1]!.loudMs > heardBefore + 1000, 60_000);
  expect((await stack.ctx.models.Session.findOne({ _id: sessionId }).lean())!.status).toBe('active');

  // Now no voice agent is left: every attempt to connect the stream fails, and after
  // VOICE_STREAM_MAX_RECONNECTS the caller hears an apology and the call ends with its session.
  await ns.command({ cmd: 'killAgent', name: 'second' });
  const lost = await fake.waitForCall((c) => c.sid === call.sid && c.status === 'completed', 60_000);
  expect(lost.streams.map((s) => s.status)).toEqual(['closed', 'closed', ...Array<string>(MAX_RECONNECTS - 1).fill('refused')]);
  expect(lost.twimlRequests.map((r) => r.url).slice(1)).toEqual([0, 1, 2, 3].map(streamEnded));
  // From the second reconnect on, a pause first: time for a voice agent to come back.
  expect(lost.twimlRequests[2]!.twiml).toContain('<Response><Pause length="1"/><Connect>');
  expect(lost.twimlRequests[3]!.twiml).toContain('<Response><Pause length="2"/><Connect>');
  expect(lost.twimlRequests.at(-1)!.twiml).toContain(`<Say>${VOICE_TEXTS.streamLost}</Say><Hangup/>`);
  expect(lost.said).toEqual([VOICE_TEXTS.streamLost]);
  const ended = await eventually(() => stack.ctx.models.Session.findOne({ _id: sessionId }).lean(), (s) => s?.status === 'ended', 30_000, 250);
  expect(ended!.endReason).toBe('voice_stream_lost');
  const closed = await eventually(() => stack.ctx.models.VoiceRoom.findOne({ _id: sessionId, tenantId: t.tenantId }).lean(), (r) => r?.status === 'ended', 60_000, 250);
  expect(closed!.status).toBe('ended');
  const error = await stack.ctx.models.VoiceEvent.findOne({ tenantId: t.tenantId, sessionId, type: 'voice.error' }).lean();
  expect(error!.data).toMatchObject({ reason: 'stream_lost', reconnects: MAX_RECONNECTS });
});
