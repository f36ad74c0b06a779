// A recorded voice room end to end, offline: POST /api/v1/voice/sessions with `recording: true`
// makes the room and its voiceRoom workflow; voice agent processes (the product's entry with the
// speech stand-ins) attend it inside a network namespace this file makes (rtc-node's WebRTC
// ignores loopback), with an rtc-node caller speaking espeak-ng phrases; the API reaches LiveKit
// inside over a unix-socket bridge. The first voice agent greets and answers, and is killed
// mid-answer; another takes the room over and answers the next phrase; the session is ended.
// The session's recordings list then has one recording with a file per attendance (the killed
// agent's finished from what it stored), each a two-channel WAV whose header matches its bytes,
// with the caller on the left and the agent on the right when each spoke.
import { randomBytes } from 'node:crypto';
import { type Caption } from '../../../activities/voice/attend';
import { client } from '../../support/http';
import { publishAgent } from '../../support/agents';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { startVoiceNetns, type NetnsEvent, type VoiceNetns } from '../../support/voice-room/harness';
import { helpDeskAgent } from '../../support/voice-room/help-desk';
import { loudWindowsMs, readStereoWav } from '../../support/voice-room/stereo-wav';
import { attendedTurns } from '../../support/voice-room/progress';
import { scopedKey } from '../telephony/recording-fixtures';

jest.setTimeout(300_000);

// No punctuation: espeak-ng speaks it without a pause the caller's side could take for its end.
const GREETING = 'Hello you are through to the help desk how can I help';
const ANSWER =
  'Thank you for calling. Our opening hours are from nine in the morning until five in the evening on weekdays, and from ten until two on saturdays. ' +
  'We are closed on sundays and on public holidays.';
// Phrases of clearly different spoken lengths: the recogniser stand-in goes by length.
const ASK = 'I would like to check the status of my order please';
const THANKS = 'thank you';

const LIVEKIT = { port: 17900, key: 'testkey', secret: randomBytes(24).toString('hex') };
// The API reaches the namespace's LiveKit at the same address the caller and the agents use inside it.
const VOICE_ENV = { LIVEKIT_URL: `ws://127.0.0.1:${LIVEKIT.port}`, LIVEKIT_API_KEY: LIVEKIT.key, LIVEKIT_API_SECRET: LIVEKIT.secret };

let stack: TestStack;
let t: SeededTenant;
let ns: VoiceNetns;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true, env: VOICE_ENV });
  t = await seedTenant(stack.ctx);
  api = client(stack.baseUrl);
  await publishAgent(api, { projectId: t.projectId, adminKey: t.adminKey }, 'Help_Desk', helpDeskAgent(GREETING, ANSWER));
  ns = await startVoiceNetns(stack.config, LIVEKIT, [ASK, THANKS], { ...VOICE_ENV, LOG_LEVEL: 'info', VOICE_EMPTY_ROOM_TIMEOUT_SECONDS: '30' }, { exportPorts: [LIVEKIT.port] });
});

afterAll(async () => {
  await ns?.close();
  await stack?.close();
});

const isCaption =
  (role: Caption['role'], turn: number) =>
  (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'caption' }> =>
    e.event === 'caption' && e.caption.role === role && e.caption.turn === turn;
const audio = (state: 'start' | 'stop') => (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'agentAudio' }> => e.event === 'agentAudio' && e.state === state;
const agentLog = (name: string, text: string) => (e: NetnsEvent): e is Extract<NetnsEvent, { event: 'agentLog' }> => e.event === 'agentLog' && e.name === name && e.line.includes(text);

/** Runs of loud 10 ms windows (gaps under 300 ms joined), as [startMs, endMs]. */
function runs(windows: number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const w of windows) {
    const last = out.at(-1);
    if (last && w - last[1] <= 300) last[1] = w + 10;
    else out.push([w, w + 10]);
  }
  return out;
}
const loudWithin = (windows: number[], [from, to]: [number, number]) => windows.filter((w) => w >= from && w < to).length;

test('records both sides of a voice room, a file per voice agent attendance, listed and served as call recordings are', async () => {
  await ns.command({ cmd: 'startAgent', name: 'first' });
  const created = await api.post('/api/v1/voice/sessions', { key: t.adminKey, json: { projectId: t.projectId, agentId: 'Help_Desk', recording: true } });
  expect([created.status, created.body.recording]).toEqual([201, true]);
  const { sessionId } = created.body;
  await ns.command({ cmd: 'join', url: created.body.url, token: created.body.token });

  // The greeting, heard whole; then the caller asks, and the answer starts.
  const greeting = await ns.next(isCaption('agent', 0));
  await ns.next(audio('stop'), ns.events.indexOf(greeting));
  await ns.command({ cmd: 'say', text: ASK });
  expect((await ns.next(isCaption('user', 1))).caption.text).toBe(ASK);
  const answer = await ns.next(isCaption('agent', 1));
  await ns.next(audio('start'), ns.events.indexOf(answer));

  // The first voice agent dies mid-answer, once its turn is heartbeated; another takes the room over.
  const temporal = await stack.ctx.temporal.client();
  const room = temporal.workflow.getHandle(`voice-room/${sessionId}`);
  await attendedTurns(stack, room, 1);
  const killedAt = ns.events.length;
  await ns.command({ cmd: 'killAgent', name: 'first' });
  await ns.command({ cmd: 'startAgent', name: 'second' });
  await ns.next(agentLog('second', 'recording the voice room'), killedAt, 90_000);
  await ns.command({ cmd: 'say', text: THANKS });
  expect((await ns.next(isCaption('user', 2), killedAt)).caption.text).toBe(THANKS);
  const reply = await ns.next(isCaption('agent', 2), killedAt);
  await ns.next(audio('start'), ns.events.indexOf(reply));

  // The session ends: the room closes and its recording is finished (the dead agent's file from its chunks).
  expect((await api.post(`/api/v1/voice/sessions/${sessionId}/end`, { key: t.adminKey })).status).toBe(200);
  await room.result();
  expect(await stack.ctx.models.VoiceRoom.findById(sessionId).lean()).toMatchObject({ status: 'ended', recording: true });

  const { key } = await scopedKey(stack.ctx, t, ['recordings.read']);
  const listed = await api.get(`/api/public/recordings/projects/${t.projectId}/sessions/${sessionId}/recordings`, { headers: { 'x-api-key': key } });
  expect(listed.status).toBe(200);
  expect(listed.body.data).toMatchObject({ sessionId, status: 'success' });
  expect(listed.body.data.recordings).toHaveLength(1);
  const [recording] = listed.body.data.recordings;
  expect(recording).toMatchObject({ callId: created.body.room, availability: 'available', unavailableReason: null });
  const files = recording.files as { objectIndex: number; channel: string; recordingType: string; bytes: number; url: string; recordingStartTime: string }[];
  expect(files.map((f) => [f.objectIndex, f.channel, f.recordingType])).toEqual([
    [0, 'mixed', 'voice_room'],
    [1, 'mixed', 'voice_room'],
  ]);
  expect(Date.parse(files[0]!.recordingStartTime)).toBeLessThan(Date.parse(files[1]!.recordingStartTime));

  const wavs = [];
  for (const file of files) {
    const res = await fetch(stack.baseUrl + file.url);
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'audio/wav']);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(file.bytes);
    const wav = readStereoWav(bytes);
    // A valid WAV: its header's sizes are those of the bytes served.
    expect(wav).toMatchObject({ sampleRate: 16_000, channels: 2, riffSize: bytes.length - 8, dataSize: bytes.length - 44 });
    wavs.push({ left: loudWindowsMs(wav.left, wav.sampleRate), right: loudWindowsMs(wav.right, wav.sampleRate) });
  }

  // The first attendance: the greeting on the right, then the caller's question on the left while
  // the agent is silent, then the answer on the right.
  const first = wavs[0]!;
  const [greeted] = runs(first.right);
  const [asked] = runs(first.left);
  expect(greeted![1] - greeted![0]).toBeGreaterThan(1000);
  expect(asked![1] - asked![0]).toBeGreaterThan(1000);
  expect(greeted![1]).toBeLessThan(asked![0]);
  expect(loudWithin(first.right, asked!)).toBe(0);
  expect(loudWithin(first.left, greeted!)).toBe(0);
  expect(runs(first.right).some(([from]) => from > asked![1])).toBe(true);

  // The second: no greeting; the caller's thanks on the left, then the answer on the right.
  const second = wavs[1]!;
  const [thanked] = runs(second.left);
  const [answered] = runs(second.right);
  expect(thanked).toBeDefined();
  expect(answered).toBeDefined();
  expect(thanked![1]).toBeLessThan(answered![0]);
  expect(loudWithin(second.right, thanked!)).toBe(0);
});
