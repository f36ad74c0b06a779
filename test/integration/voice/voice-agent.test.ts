// The voice agent end to end, offline: inside a network namespace this file makes (rtc-node's
// WebRTC ignores loopback), a real livekit-server, voice agent processes and an rtc-node caller
// speaking espeak-ng phrases; Temporal, the store, the API and the session's worker stay outside,
// bridged in over unix sockets. The agent greets, answers an utterance with captions both ways and
// the session's transcript, is cut off by a second utterance (barge-in), writes its turns' voice
// metrics, and when its process is killed mid-call another one continues the same conversation
// without greeting again.
import { randomBytes } from 'node:crypto';
import { AccessToken } from 'livekit-server-sdk';
import { NativeConnection, Worker } from '@temporalio/worker';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import { startSession } from '../../../core/sessions/start';
import { type Caption } from '../../../activities/voice/attend';
import { type AttendVoiceRoomInput } from '../../../activities/voice/types';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { eventually } from '../../support/eventually';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startVoiceNetns, type NetnsEvent, type VoiceNetns } from '../../support/voice-room/harness';
import { helpDeskAgent } from '../../support/voice-room/help-desk';
import { attendedTurns } from '../../support/voice-room/progress';

jest.setTimeout(300_000);

const GREETING = 'Hello, you are through to the help desk. How can I help?';
const ANSWER =
  'Thank you for calling. Our opening hours are from nine in the morning until five in the evening on weekdays, and from ten until two on saturdays. ' +
  'We are closed on sundays and on public holidays. If you would like to speak to someone about an order, please have your order number ready.';
// Phrases of clearly different spoken lengths: the recogniser stand-in goes by length.
const ASK = 'I would like to check the status of my order please';
const CUT_IN = 'stop';
const THANKS = 'thank you very much';

const HELP_DESK = helpDeskAgent(GREETING, ANSWER);

const LIVEKIT = { port: 17880, key: 'testkey', secret: randomBytes(24).toString('hex') };
const VOICE_ENV = { LIVEKIT_URL: `ws://127.0.0.1:${LIVEKIT.port}`, LIVEKIT_API_KEY: LIVEKIT.key, LIVEKIT_API_SECRET: LIVEKIT.secret };

let stack: TestStack;
let t: SeededTenant;
let ns: VoiceNetns;
let roomWorker: Worker;
let roomWorkerRun: Promise<void>;
let connection: NativeConnection;
const roomQueue = `voice-room-test-${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: VOICE_ENV });
  t = await seedTenant(stack.ctx);
  await publishAgent(client(stack.baseUrl), { projectId: t.projectId, adminKey: t.adminKey }, 'Help_Desk', HELP_DESK);
  connection = await NativeConnection.connect({ address: stack.config.TEMPORAL_ADDRESS });
  roomWorker = await Worker.create({
    connection,
    namespace: stack.config.TEMPORAL_NAMESPACE,
    taskQueue: roomQueue,
    workflowsPath: require.resolve('../../support/voice-room/attend-workflow'),
    dataConverter: switchboardDataConverter(stack.ctx.payloadCodec),
  });
  roomWorkerRun = roomWorker.run();
  ns = await startVoiceNetns(stack.config, LIVEKIT, [ASK, CUT_IN, THANKS], { ...VOICE_ENV, LOG_LEVEL: 'info', VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: '30' });
});

afterAll(async () => {
  await ns?.close();
  roomWorker?.shutdown();
  await roomWorkerRun;
  await connection?.close();
  await stack?.close();
});

const isCaption =
  (role: Caption['role'], turn: number) =>
  (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'caption' }> =>
    e.event === 'caption' && e.caption.role === role && e.caption.turn === turn;
const audioStart = (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'agentAudio' }> => e.event === 'agentAudio' && e.state === 'start';
const agentLog = (name: string, text: string) => (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'agentLog' }> => e.event === 'agentLog' && e.name === name && e.line.includes(text);

async function transcript(sessionId: string): Promise<{ role: string; content: string }[]> {
  const res = await client(stack.baseUrl).get(`/api/v1/sessions/${sessionId}/transcripts`, { key: t.adminKey });
  expect(res.status).toBe(200);
  return (res.body as { messages: { role: string; content: string }[] }).messages.map(({ role, content }) => ({ role, content }));
}

test('the agent greets, answers with captions and audio, is interrupted, and survives the loss of its process', async () => {
  const { session } = await startSession(stack.ctx, { tenantId: t.tenantId, projectId: t.projectId, agentId: null, agentName: 'Help_Desk', channel: 'voice_realtime' });
  const roomName = `voice-${session._id}`;
  const token = new AccessToken(LIVEKIT.key, LIVEKIT.secret, { identity: 'caller', ttl: 600 });
  token.addGrant({ roomJoin: true, room: roomName, canPublish: true, canSubscribe: true, canPublishData: true });

  await ns.command({ cmd: 'startAgent', name: 'first' });
  await ns.command({ cmd: 'join', url: ns.url, token: await token.toJwt() });
  const temporal = await stack.ctx.temporal.client();
  const input: AttendVoiceRoomInput = { tenantId: t.tenantId, projectId: t.projectId, sessionId: session._id, roomName, voiceConfig: { language: 'en-US', silenceTimeout: 60 }, recording: false };
  const room = await temporal.workflow.start('attendRoomForTest', { taskQueue: roomQueue, workflowId: `voice-room-test/${session._id}`, args: [input, stack.config.voiceTaskQueue] });

  // The greeting: its caption, then its audio at the caller.
  const greeting = await ns.next(isCaption('agent', 0));
  expect(greeting.caption).toEqual({ role: 'agent', text: GREETING, final: true, turn: 0 });
  const heard = await ns.next(audioStart, ns.events.indexOf(greeting));
  const greeted = await ns.next((e): e is Extract<NetnsEvent, { event: 'agentAudio' }> => e.event === 'agentAudio' && e.state === 'stop', ns.events.indexOf(heard));
  // All of it: the greeting's audio (some 3 s of speech) was not cut short.
  expect(greeted.loudMs).toBeGreaterThan(1000);

  // An utterance: the caller's words and the agent's answer as captions, the answer heard.
  await ns.command({ cmd: 'say', text: ASK });
  expect((await ns.next(isCaption('user', 1))).caption.text).toBe(ASK);
  const answer = await ns.next(isCaption('agent', 1));
  expect(answer.caption.text).toBe(ANSWER);
  await ns.next(audioStart, ns.events.indexOf(answer));

  // A second utterance while the answer plays cuts it off, and is itself a turn.
  await ns.command({ cmd: 'say', text: CUT_IN });
  expect((await ns.next(isCaption('user', 2))).caption.text).toBe(CUT_IN);
  await ns.next(isCaption('agent', 2));

  const turnRow = await eventually(
    () => stack.ctx.models.VoiceEvent.findOne({ tenantId: t.tenantId, sessionId: session._id, type: 'voice.turn', turn: 1 }).lean(),
    (row) => row !== null,
    20_000,
    100,
  );
  expect(turnRow).toMatchObject({ connectionId: null, callSid: roomName, data: { source: 'room', input: 'speech', confidence: 0.9, interrupted: true } });
  expect(turnRow!.data.latencyMs).toEqual(expect.any(Number));
  // The link's quality from WebRTC's statistics, and the MOS estimated from it.
  expect(turnRow!.data).toMatchObject({ jitterMs: expect.any(Number), packetLossPct: expect.any(Number), mos: expect.any(Number) });
  expect(turnRow!.data.interruptedText).toEqual(expect.any(String));
  expect(ANSWER.endsWith(turnRow!.data.interruptedText as string)).toBe(true);
  expect((turnRow!.data.interruptedText as string).length).toBeGreaterThan(0);

  const words = await transcript(session._id);
  expect(words).toEqual(expect.arrayContaining([{ role: 'user', content: ASK }, { role: 'assistant', content: ANSWER }, { role: 'user', content: CUT_IN }]));
  expect(words[0]).toEqual({ role: 'assistant', content: GREETING });

  // The voice agent's process dies mid-call once its progress (two turns) has been heartbeated;
  // another one takes the room over and the conversation goes on, without a second greeting.
  await attendedTurns(stack, room, 2);
  const killedAt = ns.events.length;
  await ns.command({ cmd: 'killAgent', name: 'first' });
  await ns.command({ cmd: 'startAgent', name: 'second' });
  await ns.next(agentLog('second', 'joined the voice room'), killedAt);
  await ns.command({ cmd: 'say', text: THANKS });
  expect((await ns.next(isCaption('user', 3), killedAt)).caption.text).toBe(THANKS);
  await ns.next(isCaption('agent', 3), killedAt);
  expect(ns.events.slice(killedAt).some(isCaption('agent', 0))).toBe(false);
  const after = await transcript(session._id);
  expect(after.filter((m) => m.content === GREETING)).toHaveLength(1);
  expect(after).toEqual(expect.arrayContaining([{ role: 'user', content: THANKS }]));

  // The session's room is cancelled (as when the session ends): the agent leaves the room.
  await room.cancel();
  await ns.next(agentLog('second', 'left the voice room'), killedAt);
});
