// The recording fetch: downloads a completed recording's media from Twilio with the connection's
// own credentials (HTTP Basic) and streams it into GridFS, chunk by chunk, never holding the file.
// Idempotent: a recording already stored is left as it is, and what an interrupted attempt left in
// GridFS is removed before the next one writes. Refusals that waiting cannot cure are
// non-retryable failures; the workflow then marks the recording unavailable.
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type ReadableStream as WebReadableStream } from 'node:stream/web';
import { createHash } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { mongo } from 'mongoose';
import { type ActivityDeps } from '../index';
import { RECORDING_MEDIA_BUCKET, recordingMediaBucket, type UnavailableReason } from '../../db/recording';
import { connectionAuthToken } from '../../core/telephony/connections';
import { isTwilioRecordingUrl } from '../../core/telephony/recordings';
import { twilioUrl } from '../../providers/telephony/twilio-client';
import { type RecordingFetchInput } from '../../workflows/definitions';
import { type CoreContext } from '../../core/context';

/** Largest recording media stored (bytes): a longer download is stopped and the recording marked unavailable. */
export const MAX_RECORDING_BYTES = 1024 * 1024 * 1024;
/** How long the provider may take to start answering a media request (ms). */
const CONNECT_TIMEOUT_MS = 30_000;
/** How long a download may go without a byte before it is given up (and retried) (ms). */
const IDLE_TIMEOUT_MS = 60_000;

/**
 * The GridFS id an attempt writes under, known in advance (from the recording and the attempt
 * number), so a later attempt can remove what an attempt whose worker died left half written:
 * GridFS writes the chunks first and the file document last.
 */
export function attemptObjectId(recordingId: string, attempt: number): mongo.ObjectId {
  return new mongo.ObjectId(createHash('sha256').update(`${recordingId}/${attempt}`).digest('hex').slice(0, 24));
}

const terminal = (reason: UnavailableReason, message: string) => ApplicationFailure.create({ type: 'RECORDING_UNAVAILABLE', message, nonRetryable: true, details: [reason] });

/** The WAV types providers name (Twilio says `audio/x-wav`): all stored and served as `audio/wav`. */
const WAV_TYPES = new Set(['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave']);

/** The content type stored and served: `audio/wav` for a WAV (what is asked for), another audio type as the provider names it. */
function audioType(header: string | null): string {
  const type = (header ?? '').split(';')[0]!.trim().toLowerCase();
  return !WAV_TYPES.has(type) && /^audio\/[a-z0-9.+-]{1,40}$/.test(type) ? type : 'audio/wav';
}

export function createRecordingFetchActivities(deps: ActivityDeps) {
  const core: CoreContext = {
    config: deps.config,
    models: deps.models,
    logger: deps.logger,
    temporal: {
      client: () => Promise.reject(new Error('no Temporal client in the recording activities')),
    },
  };

  /** Copies the recording's media into GridFS; returns its availability afterwards. */
  async function fetchRecordingMedia(input: RecordingFetchInput): Promise<{ availability: string }> {
    const { models, config, logger } = deps;
    const recording = await models.Recording.findOne({ _id: input.recordingId, tenantId: input.tenantId }).lean();
    if (!recording) throw terminal('deleted', 'The recording no longer exists');
    if (recording.availability === 'available') return { availability: 'available' };
    if (recording.availability === 'unavailable') return { availability: 'unavailable' };
    const connection = await models.ChannelConnection.findOne({ _id: recording.channelConnectionId, tenantId: recording.tenantId }).lean();
    if (!connection) throw terminal('auth_failed', 'The channel connection of the recording no longer exists');
    // Checked again here, not only when the callback was taken: only Twilio's host is ever fetched.
    if (!recording.mediaUrl || !isTwilioRecordingUrl(recording.mediaUrl, connection.accountSid, recording.providerRecordingSid)) {
      throw terminal('media_not_available', "The recording's media URL is not this recording's on Twilio's API host");
    }
    await models.Recording.updateOne({ _id: recording._id, tenantId: recording.tenantId }, { $inc: { fetchAttempts: 1 } });
    Context.current().heartbeat({ bytes: 0 });

    const authToken = await connectionAuthToken(core, connection);
    // A dual-channel recording is asked for with both channels (Twilio mixes it to mono otherwise): stored as recorded.
    const url = twilioUrl(`${recording.mediaUrl}.wav${recording.channels === 2 ? '?RequestedChannels=2' : ''}`, config.TWILIO_API_BASE_URL);
    const abort = new AbortController();
    let idle = setTimeout(() => abort.abort(), CONNECT_TIMEOUT_MS);
    const stillGoing = () => {
      clearTimeout(idle);
      idle = setTimeout(() => abort.abort(), IDLE_TIMEOUT_MS);
    };
    let response: Response;
    try {
      response = await fetch(url, {
        headers: { authorization: `Basic ${Buffer.from(`${connection.accountSid}:${authToken}`).toString('base64')}`, accept: 'audio/wav' },
        signal: abort.signal,
      });
      stillGoing();
    } catch (err) {
      clearTimeout(idle);
      throw ApplicationFailure.retryable(`The provider could not be reached for the recording's media: ${(err as Error).name}`, 'RECORDING_FETCH_FAILED');
    }
    if (response.status === 401 || response.status === 403) {
      clearTimeout(idle);
      await response.body?.cancel();
      throw terminal('auth_failed', `The provider refused the connection's credentials for the recording's media (HTTP ${response.status})`);
    }
    if (!response.ok || !response.body) {
      clearTimeout(idle);
      await response.body?.cancel();
      throw ApplicationFailure.retryable(`The provider answered HTTP ${response.status} for the recording's media`, 'RECORDING_FETCH_FAILED');
    }

    const bucket = recordingMediaBucket(models.connection);
    // What earlier attempts wrote (whole or half, their worker gone) is dropped: one stored object per file.
    const attempt = Context.current().info.attempt;
    const earlier = Array.from({ length: attempt }, (_, i) => attemptObjectId(recording._id, i + 1));
    const db = models.connection.db!;
    await db.collection(`${RECORDING_MEDIA_BUCKET}.chunks`).deleteMany({ files_id: { $in: earlier } });
    await db.collection(`${RECORDING_MEDIA_BUCKET}.files`).deleteMany({ _id: { $in: earlier } });
    const fileName = `${recording.providerRecordingSid}.wav`;
    const contentType = audioType(response.headers.get('content-type'));
    const upload = bucket.openUploadStreamWithId(attemptObjectId(recording._id, attempt), fileName, {
      metadata: { tenantId: recording.tenantId, projectId: recording.projectId, recordingId: recording._id, objectIndex: 0, contentType },
    });
    let bytes = 0;
    let lastBeat = 0;
    const count = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        stillGoing();
        bytes += chunk.length;
        if (bytes > MAX_RECORDING_BYTES) return done(terminal('storage_write_failed', `The recording is larger than ${MAX_RECORDING_BYTES} bytes`));
        const now = Date.now();
        if (now - lastBeat > 5_000) {
          lastBeat = now;
          Context.current().heartbeat({ bytes });
        }
        done(null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), count, upload);
    } catch (err) {
      await upload.abort().catch(() => undefined);
      await bucket.delete(upload.id).catch(() => undefined);
      if (err instanceof ApplicationFailure) throw err;
      logger.warn({ recordingId: recording._id, err: (err as Error).message }, 'recording media download interrupted');
      throw ApplicationFailure.retryable("The recording's media could not be copied into the store", 'RECORDING_FETCH_FAILED');
    } finally {
      clearTimeout(idle);
    }

    const start = recording.recordingStartTime;
    const end = start && recording.durationSeconds !== null ? new Date(start.getTime() + recording.durationSeconds * 1000) : null;
    const stored = await models.Recording.updateOne(
      { _id: recording._id, tenantId: recording.tenantId, availability: { $ne: 'available' } },
      {
        $set: {
          availability: 'available',
          unavailableReason: null,
          retryable: false,
          files: [
            {
              objectIndex: 0,
              fileName,
              channel: 'mixed',
              audioChannels: recording.channels,
              recordingType: 'external',
              contentType,
              bytes,
              recordingStartTime: start,
              recordingEndTime: end,
              gridFsId: upload.id,
            },
          ],
        },
      },
    );
    if (stored.modifiedCount === 0) await bucket.delete(upload.id).catch(() => undefined);
    logger.info({ tenantId: recording.tenantId, recordingId: recording._id, bytes }, 'recording media stored');
    return { availability: 'available' };
  }

  /** Marks a recording whose fetch gave up as unavailable, with the reason (never one already stored). */
  async function markRecordingUnavailable(input: RecordingFetchInput & { reason: UnavailableReason }): Promise<void> {
    await deps.models.Recording.updateOne(
      { _id: input.recordingId, tenantId: input.tenantId, availability: { $ne: 'available' } },
      { $set: { availability: 'unavailable', unavailableReason: input.reason, retryable: false } },
    );
  }

  return { fetchRecordingMedia, markRecordingUnavailable };
}

export type RecordingFetchActivities = ReturnType<typeof createRecordingFetchActivities>;
