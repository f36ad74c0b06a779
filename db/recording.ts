// Call recordings: one document per provider recording (a call can have several), with its
// availability and its stored files. The media itself lives in GridFS (bucket `recording_media`)
// on the same connection, written by the fetch activity (Twilio) or by the voice agent as it
// records a voice room (provider `voice_room`), and streamed by the media route in chunks, never
// held whole in memory.
import { mongo, Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';

export const RECORDING_ID_PREFIX = 'rec_';
export const newRecordingId = (): string => RECORDING_ID_PREFIX + createId();

/** Twilio's RecordingStatus values, in the order a recording moves through them. */
export const PROVIDER_RECORDING_STATUSES = ['in-progress', 'completed', 'absent', 'failed'] as const;
export type ProviderRecordingStatus = (typeof PROVIDER_RECORDING_STATUSES)[number];

export const RECORDING_AVAILABILITIES = ['available', 'media_in_progress', 'unavailable'] as const;
export type RecordingAvailability = (typeof RECORDING_AVAILABILITIES)[number];

/** Why a recording or file cannot be served: the first three pass with time, the rest do not. */
export const RETRYABLE_REASONS = ['call_in_progress', 'media_in_progress', 'url_signing_failed'] as const;
export const TERMINAL_REASONS = ['recording_disabled', 'media_not_available', 'auth_failed', 'storage_write_failed', 'media_object_missing', 'retention_expired', 'deleted'] as const;
export type UnavailableReason = (typeof RETRYABLE_REASONS)[number] | (typeof TERMINAL_REASONS)[number];

export const RECORDING_CHANNELS = ['caller', 'agent', 'mixed'] as const;

/** Where a recording comes from: Twilio's call recording, or the voice agent recording a voice room. */
export const RECORDING_PROVIDERS = ['twilio', 'voice_room'] as const;
export type RecordingProvider = (typeof RECORDING_PROVIDERS)[number];

export interface RecordingFileDoc {
  objectIndex: number;
  fileName: string;
  /** `mixed` for a mono file and for a dual-channel file stored as given (one WAV, two channels). */
  channel: (typeof RECORDING_CHANNELS)[number];
  /** Audio channels in the file (2: caller and agent each on their own). */
  audioChannels: number;
  recordingType: string;
  contentType: string;
  bytes: number;
  recordingStartTime: Date | null;
  recordingEndTime: Date | null;
  /** The GridFS file's id. */
  gridFsId: mongo.ObjectId;
}

export interface RecordingDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  /** The Twilio connection; null for a voice room's recording. */
  channelConnectionId: string | null;
  /** The session the call was; null while it cannot be told (an outbound call whose session is not known yet). */
  sessionId: string | null;
  outboundCallId: string | null;
  /** The provider's call SID (`CA…`), or a voice room's name: the recording's `callId`. */
  callSid: string;
  provider: RecordingProvider;
  /** The provider's recording SID (`RE…`), unique per tenant; a voice room's name (one recording per room). */
  providerRecordingSid: string;
  providerStatus: ProviderRecordingStatus;
  /** The provider's media URL, checked to be on the provider's own host. */
  mediaUrl: string | null;
  availability: RecordingAvailability;
  unavailableReason: UnavailableReason | null;
  retryable: boolean;
  /** 1 mono, 2 dual (caller and agent). */
  channels: number;
  source: string | null;
  durationSeconds: number | null;
  recordingStartTime: Date | null;
  files: RecordingFileDoc[];
  /** A legal hold: retention does not expire it. */
  immutable: boolean;
  retentionExpiresAt: Date;
  fetchAttempts: number;
  /**
   * Voice room only: files started so far, so the next one's objectIndex. A file being written is
   * listed in `files` once the voice agent (or the room's close) has finished it.
   */
  partsStarted: number;
  createdAt: Date;
  updatedAt: Date;
}

const RecordingFileSchema = new Schema<RecordingFileDoc>(
  {
    objectIndex: { type: Number, required: true },
    fileName: { type: String, required: true },
    channel: { type: String, enum: RECORDING_CHANNELS, required: true },
    audioChannels: { type: Number, required: true },
    recordingType: { type: String, required: true },
    contentType: { type: String, required: true },
    bytes: { type: Number, required: true },
    recordingStartTime: { type: Date, default: null },
    recordingEndTime: { type: Date, default: null },
    gridFsId: { type: Schema.Types.ObjectId, required: true },
  },
  { _id: false },
);

const RecordingSchema = new Schema<RecordingDoc>(
  {
    _id: { type: String, default: newRecordingId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    // Twilio's recordings always name their connection; a voice room's has none.
    channelConnectionId: {
      type: String,
      default: null,
      required(this: RecordingDoc) {
        return this.provider === 'twilio';
      },
    },
    sessionId: { type: String, default: null },
    outboundCallId: { type: String, default: null },
    callSid: { type: String, required: true },
    provider: { type: String, enum: RECORDING_PROVIDERS, required: true },
    providerRecordingSid: { type: String, required: true },
    providerStatus: { type: String, enum: PROVIDER_RECORDING_STATUSES, required: true },
    mediaUrl: { type: String, default: null },
    availability: { type: String, enum: RECORDING_AVAILABILITIES, required: true },
    unavailableReason: { type: String, default: null },
    retryable: { type: Boolean, default: false },
    channels: { type: Number, default: 1 },
    source: { type: String, default: null },
    durationSeconds: { type: Number, default: null },
    recordingStartTime: { type: Date, default: null },
    files: { type: [RecordingFileSchema], default: [] },
    immutable: { type: Boolean, default: false },
    retentionExpiresAt: { type: Date, required: true },
    fetchAttempts: { type: Number, default: 0 },
    partsStarted: { type: Number, default: 0 },
  },
  { versionKey: false, timestamps: true },
);
// One document per provider recording: a repeated callback updates it (and one per voice room).
RecordingSchema.index({ tenantId: 1, providerRecordingSid: 1 }, { unique: true });
// The recordings list reads a session's recordings.
RecordingSchema.index({ tenantId: 1, projectId: 1, sessionId: 1, createdAt: 1 });

export type RecordingModel = Model<RecordingDoc>;
export const recordingModel = (c: Connection): RecordingModel => c.model<RecordingDoc>('Recording', RecordingSchema, 'recordings');

export const RECORDING_MEDIA_BUCKET = 'recording_media';

/** The GridFS bucket recording media is stored in, on the models' connection. */
export function recordingMediaBucket(connection: Connection): mongo.GridFSBucket {
  if (!connection.db) throw new Error('the database connection is not open');
  return new mongo.GridFSBucket(connection.db, { bucketName: RECORDING_MEDIA_BUCKET });
}
