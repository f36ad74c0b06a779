// Voice room recordings in the real store (GridFS on the dev store) and through the recordings
// API: a voice agent's file is written chunk by chunk, closed with its WAV sizes and listed; the
// room's close makes the recording available, and the session's recordings list and media route
// serve it as they serve call recordings (ranges, tenancy). A file whose voice agent died is
// finished from its stored chunks once nobody has written to it for ORPHANED_AFTER_MS (the clock
// is passed in), never served half-made; one with no audio at all leaves nothing behind; a
// project's deletion takes its recordings, files being written included.
import { startTestStack, seedTenant, type TestStack, type SeededTenant } from '../../support/stack';
import { client } from '../../support/http';
import { RECORDING_MEDIA_BUCKET } from '../../../db/recording';
import { finishVoiceRoomRecording, openVoiceRecordingFile, ORPHANED_AFTER_MS, VOICE_RECORDING_CHUNK_BYTES } from '../../../core/voice/recordings';
import { deleteProjectData } from '../../../core/lifecycle/cascade';
import { scopedKey, seedSession } from '../telephony/recording-fixtures';
import { loudWindowsMs, readStereoWav } from '../../support/voice-room/stereo-wav';

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let api: ReturnType<typeof client>;
let key: string;

beforeAll(async () => {
  stack = await startTestStack();
  api = client(stack.baseUrl);
  [t, other] = await Promise.all([seedTenant(stack.ctx), seedTenant(stack.ctx)]);
  key = (await scopedKey(stack.ctx, t, ['recordings.read'])).key;
}, 120_000);

afterAll(async () => {
  await stack?.close();
});

const RATE = 16_000;
const list = (sessionId: string, apiKey = key, projectId = t.projectId) =>
  api.get(`/api/public/recordings/projects/${projectId}/sessions/${sessionId}/recordings`, { headers: { 'x-api-key': apiKey } });
const placeOf = (sessionId: string) => ({ tenantId: t.tenantId, projectId: t.projectId, sessionId, roomName: `voice-${sessionId}` });

/** `seconds` of interleaved stereo: the caller's tone on the left in the first half, the agent's on the right in the second. */
function conversation(seconds: number): Int16Array[] {
  const pieces: Int16Array[] = [];
  const frames = RATE / 4;
  for (let p = 0; p < seconds * 4; p++) {
    const piece = new Int16Array(frames * 2);
    const caller = p < seconds * 2;
    for (let i = 0; i < frames; i++) piece[i * 2 + (caller ? 0 : 1)] = Math.round(6000 * Math.sin((2 * Math.PI * (caller ? 300 : 500) * i) / RATE));
    pieces.push(piece);
  }
  return pieces;
}

async function download(url: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; bytes: Buffer }> {
  const res = await fetch(stack.baseUrl + url, { headers });
  return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
}

it("writes a voice agent's file in chunks, closes it with its sizes, and serves it like a call recording", async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const writer = await openVoiceRecordingFile(stack.ctx.models, placeOf(sessionId), { retentionDays: 90 });
  for (const piece of conversation(2.5)) await writer.write(piece);
  // Written as it goes: two whole chunks are stored before the file closes, and the recording is not served yet.
  const db = stack.ctx.models.connection.db!;
  expect(await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).countDocuments({ files_id: writer.file._id })).toBe(2);
  const during = await list(sessionId);
  expect(during.status).toBe(200);
  expect(during.body.data).toMatchObject({ status: 'call_in_progress', recordings: [{ callId: `voice-${sessionId}`, availability: 'media_in_progress', unavailableReason: 'call_in_progress', files: [] }] });

  const file = await writer.close();
  expect(file).toMatchObject({ objectIndex: 0, channel: 'mixed', audioChannels: 2, recordingType: 'voice_room', contentType: 'audio/wav', bytes: 44 + 2.5 * VOICE_RECORDING_CHUNK_BYTES });
  expect(await finishVoiceRoomRecording(stack.ctx.models, { tenantId: t.tenantId, roomName: `voice-${sessionId}` })).toEqual({ state: 'finished', availability: 'available', files: 1 });

  const res = await list(sessionId);
  expect(res.body.data).toMatchObject({ sessionId, status: 'success', unavailableReason: null });
  const [recording] = res.body.data.recordings;
  expect(recording).toMatchObject({ callId: `voice-${sessionId}`, availability: 'available', durationSeconds: 3, immutable: false });
  expect(recording.files).toHaveLength(1);
  expect(recording.files[0]).toMatchObject({ objectIndex: 0, fileName: `voice-${sessionId}-1.wav`, channel: 'mixed', recordingType: 'voice_room', bytes: 160_044, urlKind: 'proxied' });

  const media = await download(recording.files[0].url);
  expect([media.status, media.type, media.bytes.length]).toEqual([200, 'audio/wav', 160_044]);
  const wav = readStereoWav(media.bytes);
  expect(wav).toMatchObject({ sampleRate: RATE, channels: 2, riffSize: 160_036, dataSize: 160_000 });
  // The caller on the left in the first half, the agent on the right in the second.
  const left = loudWindowsMs(wav.left, RATE);
  const right = loudWindowsMs(wav.right, RATE);
  expect([left[0], left.at(-1), left.length]).toEqual([0, 1240, 125]);
  expect([right[0], right.at(-1), right.length]).toEqual([1250, 2490, 125]);
  // One byte range across the first chunk's end: the bytes as stored.
  const range = await download(recording.files[0].url, { range: 'bytes=63990-64009' });
  expect(range.status).toBe(206);
  expect(range.bytes.equals(media.bytes.subarray(63_990, 64_010))).toBe(true);

  // Another tenant's key does not see the project, nor its recordings.
  const stranger = (await scopedKey(stack.ctx, other, ['recordings.read'])).key;
  expect((await list(sessionId, stranger)).status).toBe(404);
  expect((await list(sessionId, stranger, other.projectId)).status).toBe(404);
});

it('finishes the file of a voice agent that died from what it stored, once nobody writes to it', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const room = { tenantId: t.tenantId, roomName: `voice-${sessionId}` };
  // The first voice agent stores two chunks (and has half a second buffered) when it dies.
  const dead = await openVoiceRecordingFile(stack.ctx.models, placeOf(sessionId), { retentionDays: 90 });
  for (const piece of conversation(2.5)) await dead.write(piece);
  // Its replacement records the rest of the call and closes its file.
  const replacement = await openVoiceRecordingFile(stack.ctx.models, placeOf(sessionId), { retentionDays: 90 });
  expect(replacement.objectIndex).toBe(1);
  for (const piece of conversation(1)) await replacement.write(piece);
  await replacement.close();

  // Just written to: it may be a live voice agent closing it, so the recording waits.
  expect(await finishVoiceRoomRecording(stack.ctx.models, room)).toEqual({ state: 'writing', files: 1 });
  expect((await list(sessionId)).body.data.recordings[0]).toMatchObject({ availability: 'media_in_progress' });

  const later = Date.now() + ORPHANED_AFTER_MS + 5_000;
  expect(await finishVoiceRoomRecording(stack.ctx.models, room, later)).toEqual({ state: 'finished', availability: 'available', files: 2 });
  const [recording] = (await list(sessionId)).body.data.recordings;
  const files = recording.files as { objectIndex: number; bytes: number; url: string }[];
  expect(files.map((f) => [f.objectIndex, f.bytes])).toEqual([
    [0, 2 * VOICE_RECORDING_CHUNK_BYTES],
    [1, 44 + VOICE_RECORDING_CHUNK_BYTES],
  ]);
  expect(recording.durationSeconds).toBe(3);
  // The dead one's file: what it stored, with a header that says so.
  const media = await download(files[0]!.url);
  const wav = readStereoWav(media.bytes);
  expect([media.bytes.length, wav.riffSize, wav.dataSize, wav.channels]).toEqual([128_000, 127_992, 127_956, 2]);
  expect(loudWindowsMs(wav.left, RATE).length).toBe(125);
  // Finishing again changes nothing.
  expect(await finishVoiceRoomRecording(stack.ctx.models, room, later)).toEqual({ state: 'finished', availability: 'available', files: 2 });
});

it('leaves nothing behind of a voice agent that died before it stored any audio', async () => {
  const sessionId = await seedSession(stack.ctx, t);
  const writer = await openVoiceRecordingFile(stack.ctx.models, placeOf(sessionId), { retentionDays: 90 });
  await writer.write(conversation(0.5)[0]!);
  const room = { tenantId: t.tenantId, roomName: `voice-${sessionId}` };
  expect(await finishVoiceRoomRecording(stack.ctx.models, room, Date.now() + ORPHANED_AFTER_MS + 5_000)).toEqual({ state: 'finished', availability: 'unavailable', files: 0 });
  expect(await stack.ctx.models.connection.db!.collection(`${RECORDING_MEDIA_BUCKET}.files`).countDocuments({ _id: writer.file._id })).toBe(0);
  const res = await list(sessionId);
  expect(res.body.data).toMatchObject({ status: 'media_unavailable', recordings: [{ availability: 'unavailable', unavailableReason: 'media_not_available', files: [] }] });
});

it("goes with its project, the files still being written too", async () => {
  const place = { tenantId: other.tenantId, projectId: other.projectId, sessionId: await seedSession(stack.ctx, other), roomName: '' };
  place.roomName = `voice-${place.sessionId}`;
  const closed = await openVoiceRecordingFile(stack.ctx.models, place, { retentionDays: 90 });
  for (const piece of conversation(1.5)) await closed.write(piece);
  await closed.close();
  const open = await openVoiceRecordingFile(stack.ctx.models, place, { retentionDays: 90 });
  for (const piece of conversation(1.5)) await open.write(piece);
  const db = stack.ctx.models.connection.db!;
  const ids = [closed.file._id, open.file._id];
  // Two chunks of the closed file, one stored so far of the open one.
  expect(await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).countDocuments({ files_id: { $in: ids } })).toBe(3);

  const counts = await deleteProjectData(stack.ctx.models, { tenantId: other.tenantId, projectId: other.projectId });
  expect(counts).toMatchObject({ recordings: 1, [RECORDING_MEDIA_BUCKET]: 2 });
  expect(await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).countDocuments({ files_id: { $in: ids } })).toBe(0);
  expect(await stack.ctx.models.Recording.countDocuments({ tenantId: other.tenantId })).toBe(0);
  // The voice agent still in the room writes on until it leaves; closing, it finds its file gone and removes what it stored since.
  for (const piece of conversation(1.5)) await open.write(piece);
  expect(await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).countDocuments({ files_id: open.file._id })).toBeGreaterThan(0);
  expect(await open.close()).toBeNull();
  expect(await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).countDocuments({ files_id: open.file._id })).toBe(0);
  // The other tenant's recordings are untouched.
  expect(await stack.ctx.models.Recording.countDocuments({ tenantId: t.tenantId })).toBe(3);
});
