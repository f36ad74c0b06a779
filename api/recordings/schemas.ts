// Request and response schemas of the recordings routes: a session's recordings list (public,
// platform key) and a recording file's media (the signed token in the URL is the credential).
import { z } from 'zod';
import '../openapi/registry';
import { RECORDING_AVAILABILITIES, RECORDING_CHANNELS, RETRYABLE_REASONS, TERMINAL_REASONS } from '../../db/recording';
import { MEDIA_DISPOSITIONS } from '../../core/telephony/recording-media-tokens';
import { queryInt } from '../http/schemas';

const ZId = (what: string) => z.string().min(1).max(128).describe(what);
const ZDisposition = z.enum(MEDIA_DISPOSITIONS).default('attachment');

export const ZSessionRecordingsParams = z.object({ projectId: ZId('Project id (not the slug); the key must be bound to it'), sessionId: ZId('Session id') });
export const ZSessionRecordingsQuery = z.object({
  disposition: ZDisposition.describe('Content-Disposition the issued media URLs answer with'),
});

const ZReason = z.enum([...RETRYABLE_REASONS, ...TERMINAL_REASONS]).nullable();
const ZAvailability = z.enum(RECORDING_AVAILABILITIES);

const ZRecordingFile = z.object({
  recordingId: z.string(),
  objectIndex: z.number().int().min(0),
  fileName: z.string(),
  channel: z.enum(RECORDING_CHANNELS),
  recordingType: z.string(),
  bytes: z.number().int().min(0),
  recordingStartTime: z.string().nullable(),
  recordingEndTime: z.string().nullable(),
  availability: ZAvailability,
  url: z.string().nullable().describe('Relative URL (prefix the API host); null when the file cannot be served now'),
  urlKind: z.enum(['signed', 'proxied', 'external']),
  expiresIn: z.number().int().nullable().describe('Seconds the URL stays valid'),
  unavailableReason: ZReason,
  retryable: z.boolean(),
});

const ZRecording = z.object({
  recordingId: z.string(),
  callId: z.string().describe("The provider's call SID, or the voice room's name for a voice room's recording"),
  availability: ZAvailability,
  unavailableReason: ZReason,
  retryable: z.boolean(),
  durationSeconds: z.number().nullable(),
  immutable: z.boolean().describe('On legal hold: retention does not expire it'),
  createdAt: z.string(),
  retentionExpiresAt: z.string(),
  files: z.array(ZRecordingFile),
});

export const ZSessionRecordingsResponse = z.object({
  success: z.literal(true),
  data: z.object({
    sessionId: z.string(),
    projectId: z.string(),
    status: z.enum(['success', 'partial', 'call_in_progress', 'media_in_progress', 'media_unavailable']),
    unavailableReason: ZReason,
    retryable: z.boolean(),
    recordings: z.array(ZRecording),
  }),
});

export const ZRecordingMediaParams = z.object({
  projectId: ZId('Project id'),
  recordingId: ZId('Recording id'),
  mediaToken: z.string().min(1).max(4096).describe('The signed media token the recordings list issued'),
});
export const ZRecordingMediaQuery = z.object({
  objectIndex: queryInt(0, 10_000, 0).describe('The file index; must match the token'),
  disposition: ZDisposition.describe('inline or attachment; must match the token'),
});

export const ZRecordingMediaBody = z.string().openapi({ type: 'string', format: 'binary' });

/** Twilio's recording-status form, as posted (every field a string; the handler checks the ones it uses). */
export const ZRecordingStatusForm = z.record(z.string(), z.string());
export const ZRecordingStatusParams = z.object({ channelConnectionId: ZId('Channel connection id (`cc_…`)') });
export const ZRecordingStatusQuery = z.object({
  sessionId: ZId('The session the call is').optional(),
  outboundCallId: ZId('The outbound call (`oc_…`) the recording is of').optional(),
});
export const ZRecordingStatusResponse = z.object({ success: z.literal(true), data: z.object({ recordingId: z.string(), availability: ZAvailability }) });
