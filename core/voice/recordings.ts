// Voice room recordings in the store (docs/voice.md, "Recording"): one Recording per room
// (provider `voice_room`), one two-channel WAV file per attendance of a voice agent, written into
// GridFS (`recording_media`) chunk by chunk as the call goes on and finished (its header's sizes
// set, the file listed) when the agent leaves; what a voice agent that died left half written is
// finished from its stored chunks when the room closes, and the recording becomes available.
import { mongo } from 'mongoose';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { newRecordingId, RECORDING_MEDIA_BUCKET, type RecordingDoc, type RecordingFileDoc } from '../../db/recording';
import { setWavSizes, WAV_HEADER_BYTES, wavHeader, type WavFormat } from './recording-wav';

/** The recording's format: 16 kHz (what the voice agent hears the caller at), caller left, agent right. */
export const VOICE_RECORDING_FORMAT: WavFormat = { sampleRate: 16_000, channels: 2 };
const FRAME_BYTES = VOICE_RECORDING_FORMAT.channels * 2;
/** One second of audio per GridFS chunk: a voice agent that dies loses at most about that much. */
export const VOICE_RECORDING_CHUNK_BYTES = VOICE_RECORDING_FORMAT.sampleRate * FRAME_BYTES;
/** Largest file one attendance writes (bytes); past it the rest of the call is not recorded. */
export const MAX_VOICE_RECORDING_FILE_BYTES = 1024 * 1024 * 1024;
/**
 * A file nobody has written to for this long is its dead voice agent's (a live one writes a chunk
 * a second, and the room's attend activity times out after 15 s without a heartbeat): the room's
 * close finishes it from what it stored.
 */
export const ORPHANED_AFTER_MS = 20_000;

export interface VoiceRoomRecordingPlace {
  tenantId: string;
  projectId: string;
  sessionId: string;
  roomName: string;
}

/** A file's GridFS document: its metadata says whose it is and whether it is still being written. */
interface PartFileDoc {
  _id: mongo.ObjectId;
  length: number;
  chunkSize: number;
  uploadDate: Date;
  filename: string;
  metadata: { tenantId: string; projectId: string; recordingId: string; objectIndex: number; contentType: string; state: 'recording' | 'closed'; startedAt: Date; closedAt?: Date };
}

interface ChunkDoc {
  _id: mongo.ObjectId;
  files_id: mongo.ObjectId;
  n: number;
  data: mongo.Binary | Buffer;
}

const bucket = (models: Models) => {
  const db = models.connection.db;
  if (!db) throw new Error('the database connection is not open');
  return { files: db.collection<PartFileDoc>(`${RECORDING_MEDIA_BUCKET}.files`), chunks: db.collection<ChunkDoc>(`${RECORDING_MEDIA_BUCKET}.chunks`) };
};
const bytesOf = (data: mongo.Binary | Buffer): Buffer => (Buffer.isBuffer(data) ? data : Buffer.from(data.buffer));

/** The room's recording, made on the first attendance: one per room (its name is the unique key). */
async function roomRecording(models: Models, place: VoiceRoomRecordingPlace, retentionDays: number): Promise<RecordingDoc> {
  const now = new Date();
  const insert: Omit<RecordingDoc, 'partsStarted'> = {
    _id: newRecordingId(),
    tenantId: place.tenantId,
    projectId: place.projectId,
    channelConnectionId: null,
    sessionId: place.sessionId,
    outboundCallId: null,
    callSid: place.roomName,
    provider: 'voice_room',
    providerRecordingSid: place.roomName,
    providerStatus: 'in-progress',
    mediaUrl: null,
    availability: 'media_in_progress',
    unavailableReason: 'call_in_progress',
    retryable: true,
    channels: VOICE_RECORDING_FORMAT.channels,
    source: 'voice_room',
    durationSeconds: null,
    recordingStartTime: now,
    files: [],
    immutable: false,
    retentionExpiresAt: new Date(now.getTime() + retentionDays * 86_400_000),
    fetchAttempts: 0,
    createdAt: now,
    updatedAt: now,
  };
  const filter = { tenantId: place.tenantId, providerRecordingSid: place.roomName };
  // Inserted whole, then counted: an upsert's $setOnInsert loses null and empty fields on the dev store.
  if (!(await driverCollection(models.Recording).findOne(filter, { projection: { _id: 1 } }))) {
    try {
      await driverCollection(models.Recording).insertOne({ ...insert, partsStarted: 0 });
    } catch (err) {
      // Two attendances making it at once: the other's is the room's recording.
      if ((err as { code?: number }).code !== 11000) throw err;
    }
  }
  const doc = await driverCollection(models.Recording).findOneAndUpdate(filter, { $inc: { partsStarted: 1 } }, { returnDocument: 'after' });
  if (!doc || doc.provider !== 'voice_room' || doc.sessionId !== place.sessionId || doc.projectId !== place.projectId) {
    throw new Error(`the recording named ${place.roomName} is not this voice room's`);
  }
  return doc;
}

/**
 * Starts this attendance's file of the room's recording (making the recording on the first): the
 * file's GridFS document, marked `recording`, and a writer that adds chunks to it.
 */
export async function openVoiceRecordingFile(models: Models, place: VoiceRoomRecordingPlace, options: { retentionDays: number; now?: Date }): Promise<VoiceRecordingFileWriter> {
  const recording = await roomRecording(models, place, options.retentionDays);
  const objectIndex = recording.partsStarted - 1;
  const startedAt = options.now ?? new Date();
  const file: PartFileDoc = {
    _id: new mongo.ObjectId(),
    length: 0,
    chunkSize: VOICE_RECORDING_CHUNK_BYTES,
    uploadDate: startedAt,
    filename: `${place.roomName}-${objectIndex + 1}.wav`,
    metadata: { tenantId: place.tenantId, projectId: place.projectId, recordingId: recording._id, objectIndex, contentType: 'audio/wav', state: 'recording', startedAt },
  };
  await bucket(models).files.insertOne(file);
  return new VoiceRecordingFileWriter(models, file);
}

/**
 * Writes one file: the header first (sizes unknown), the interleaved samples after it, a GridFS
 * chunk each time a chunk's worth is buffered. Never holds more than a chunk (and the first chunk,
 * to set its header's sizes when it closes).
 */
export class VoiceRecordingFileWriter {
  private buffered: Buffer[] = [wavHeader(VOICE_RECORDING_FORMAT, 0)];
  private bufferedBytes = WAV_HEADER_BYTES;
  private chunks = 0;
  private firstChunk: Buffer | null = null;
  private totalBytes = WAV_HEADER_BYTES;
  private full = false;

  constructor(
    private readonly models: Models,
    readonly file: PartFileDoc,
  ) {}

  get objectIndex(): number {
    return this.file.metadata.objectIndex;
  }

  /** Appends interleaved stereo samples; past MAX_VOICE_RECORDING_FILE_BYTES the rest is dropped (returns false). */
  async write(samples: Int16Array): Promise<boolean> {
    if (this.full) return false;
    let bytes = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    if (this.totalBytes + bytes.length > MAX_VOICE_RECORDING_FILE_BYTES) {
      bytes = bytes.subarray(0, Math.max(0, Math.floor((MAX_VOICE_RECORDING_FILE_BYTES - this.totalBytes) / FRAME_BYTES) * FRAME_BYTES));
      this.full = true;
    }
    // A copy: the caller's array may be reused.
    this.buffered.push(Buffer.from(bytes));
    this.bufferedBytes += bytes.length;
    this.totalBytes += bytes.length;
    while (this.bufferedBytes >= VOICE_RECORDING_CHUNK_BYTES) {
      const all = Buffer.concat(this.buffered);
      await this.insertChunk(all.subarray(0, VOICE_RECORDING_CHUNK_BYTES));
      const rest = all.subarray(VOICE_RECORDING_CHUNK_BYTES);
      this.buffered = [rest];
      this.bufferedBytes = rest.length;
    }
    return !this.full;
  }

  private async insertChunk(data: Buffer): Promise<void> {
    const n = this.chunks;
    await bucket(this.models).chunks.insertOne({ _id: new mongo.ObjectId(), files_id: this.file._id, n, data: new mongo.Binary(data) });
    if (n === 0) this.firstChunk = Buffer.from(data);
    this.chunks++;
  }

  /** Stores what is buffered, sets the header's sizes and lists the file in the recording. */
  async close(now = new Date()): Promise<RecordingFileDoc | null> {
    if (this.bufferedBytes > 0 && (this.chunks > 0 || this.bufferedBytes > WAV_HEADER_BYTES)) await this.insertChunk(Buffer.concat(this.buffered));
    this.buffered = [];
    this.bufferedBytes = 0;
    return finishFile(this.models, this.file, this.totalBytes, this.firstChunk, now);
  }
}

/**
 * Finishes a file whose chunks are all stored: marks it closed with its length (one conditional
 * update: the voice agent closing it and the room's close finishing it for a dead one never both
 * do), sets its header's sizes, and lists it in the recording. A file with no audio is removed; a
 * file whose recording was deleted meanwhile is removed with its chunks.
 */
async function finishFile(models: Models, file: PartFileDoc, length: number, firstChunk: Buffer | null, now: Date): Promise<RecordingFileDoc | null> {
  const { files, chunks } = bucket(models);
  const sealed = await files.updateOne({ _id: file._id, 'metadata.state': 'recording' }, { $set: { length, 'metadata.state': 'closed', 'metadata.closedAt': now } });
  if (sealed.matchedCount === 0) {
    // Finished by the room's close already, or deleted under its writer (the recording erased or its
    // project deleted mid-call): then the chunks stored since go too.
    if (!(await files.findOne({ _id: file._id }, { projection: { _id: 1 } }))) await chunks.deleteMany({ files_id: file._id });
    return null;
  }
  return listFile(models, { ...file, length }, firstChunk);
}

/** Sets a closed file's header sizes from its length and lists it in its recording (or removes it: no audio, or no recording). */
async function listFile(models: Models, file: PartFileDoc, firstChunk: Buffer | null): Promise<RecordingFileDoc | null> {
  const { files, chunks } = bucket(models);
  const { tenantId, recordingId, objectIndex, startedAt } = file.metadata;
  const recording = await models.Recording.findOne({ _id: recordingId, tenantId }, { _id: 1 }).lean();
  const dataBytes = Math.floor((file.length - WAV_HEADER_BYTES) / FRAME_BYTES) * FRAME_BYTES;
  if (!recording || dataBytes <= 0) {
    await chunks.deleteMany({ files_id: file._id });
    await files.deleteOne({ _id: file._id });
    return null;
  }
  const first = firstChunk ?? (await chunks.findOne({ files_id: file._id, n: 0 }).then((c) => (c ? bytesOf(c.data) : null)));
  if (!first || first.length < WAV_HEADER_BYTES) throw new Error(`recording file ${file._id.toHexString()} has no first chunk`);
  const patched = Buffer.from(first);
  setWavSizes(patched, dataBytes);
  await chunks.updateOne({ files_id: file._id, n: 0 }, { $set: { data: new mongo.Binary(patched) } });
  if (dataBytes + WAV_HEADER_BYTES !== file.length) await files.updateOne({ _id: file._id }, { $set: { length: dataBytes + WAV_HEADER_BYTES } });
  const seconds = dataBytes / (VOICE_RECORDING_FORMAT.sampleRate * FRAME_BYTES);
  const entry: RecordingFileDoc = {
    objectIndex,
    fileName: file.filename,
    // As Twilio's dual recordings are listed: one file holding both parties, each on its own channel.
    channel: 'mixed',
    audioChannels: VOICE_RECORDING_FORMAT.channels,
    recordingType: 'voice_room',
    contentType: 'audio/wav',
    bytes: dataBytes + WAV_HEADER_BYTES,
    recordingStartTime: startedAt,
    recordingEndTime: new Date(startedAt.getTime() + Math.round(seconds * 1000)),
    gridFsId: file._id,
  };
  await models.Recording.updateOne({ _id: recordingId, tenantId }, { $push: { files: entry } });
  return entry;
}

/** The length a dead writer's file has: its stored chunks (all whole but the last), and when it last wrote one. */
async function storedLength(models: Models, file: PartFileDoc): Promise<{ length: number; lastWriteAt: number }> {
  const last = await bucket(models).chunks.find({ files_id: file._id }).sort({ n: -1 }).limit(1).next();
  if (!last) return { length: 0, lastWriteAt: file.uploadDate.getTime() };
  return { length: last.n * file.chunkSize + bytesOf(last.data).length, lastWriteAt: last._id.getTimestamp().getTime() };
}

export type VoiceRoomRecordingOutcome = { state: 'none' } | { state: 'writing'; files: number } | { state: 'finished'; availability: RecordingDoc['availability']; files: number };

/**
 * Once the room has closed: finishes the files whose voice agent died (nothing written for
 * ORPHANED_AFTER_MS) from their stored chunks, and when no file is still being written makes the
 * recording `available` (or `unavailable`, `media_not_available`, when nothing was recorded).
 * Answers `writing` while a live voice agent is still closing its file: call again shortly.
 */
export async function finishVoiceRoomRecording(models: Models, room: { tenantId: string; roomName: string }, now = Date.now()): Promise<VoiceRoomRecordingOutcome> {
  const recording = await models.Recording.findOne({ tenantId: room.tenantId, providerRecordingSid: room.roomName, provider: 'voice_room' }).lean();
  if (!recording) return { state: 'none' };
  const { files } = bucket(models);
  const parts = await files.find({ 'metadata.tenantId': room.tenantId, 'metadata.recordingId': recording._id }).sort({ 'metadata.objectIndex': 1 }).toArray();
  const listed = new Set(recording.files.map((f) => f.gridFsId.toHexString()));
  let writing = 0;
  for (const part of parts) {
    if (listed.has(part._id.toHexString())) continue;
    if (part.metadata.state === 'recording') {
      const { length, lastWriteAt } = await storedLength(models, part);
      if (now - lastWriteAt < ORPHANED_AFTER_MS) writing++;
      else await finishFile(models, part, length, null, new Date(now));
    } else if (now - (part.metadata.closedAt?.getTime() ?? 0) < ORPHANED_AFTER_MS) {
      // Closed by its voice agent a moment ago, being listed now.
      writing++;
    } else {
      // Its voice agent died between closing it and listing it.
      await listFile(models, part, null);
    }
  }
  if (writing > 0) return { state: 'writing', files: writing };
  const done = await models.Recording.findOne({ _id: recording._id, tenantId: room.tenantId }, { files: 1 }).lean();
  const stored = done?.files ?? [];
  const seconds = stored.reduce((sum, f) => sum + (f.bytes - WAV_HEADER_BYTES) / (VOICE_RECORDING_FORMAT.sampleRate * FRAME_BYTES), 0);
  const state =
    stored.length > 0
      ? { availability: 'available' as const, unavailableReason: null, retryable: false, durationSeconds: Math.round(seconds) }
      : { availability: 'unavailable' as const, unavailableReason: 'media_not_available' as const, retryable: false, durationSeconds: 0 };
  await models.Recording.updateOne({ _id: recording._id, tenantId: room.tenantId }, { $set: { ...state, providerStatus: 'completed' } });
  return { state: 'finished', availability: state.availability, files: stored.length };
}
