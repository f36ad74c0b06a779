// Twilio Media Streams' WebSocket protocol (bidirectional, <Connect><Stream>): the JSON messages
// Twilio sends (`connected`, `start`, `media`, `mark`, `dtmf`, `stop`), parsed and bounded, and the
// ones a server sends back (`media`, `mark`, `clear`). Both the phone bridge and the Twilio fake
// speak it through this module. https://www.twilio.com/docs/voice/media-streams/websocket-messages
import { z } from 'zod';

/** The largest message accepted (bytes): a `start` with its custom parameters, or 20 ms of media, fit many times over. */
export const MAX_MESSAGE_BYTES = 16 * 1024;
/** The most custom parameters a `start` may carry, and the longest name plus value (Twilio's own limit is 500 characters). */
export const MAX_CUSTOM_PARAMETERS = 32;
export const MAX_PARAMETER_CHARS = 500;
/** The largest media payload (μ-law bytes, decoded): Twilio sends 20 ms (160 bytes). */
export const MAX_MEDIA_BYTES = 4096;

/** The audio every stream carries: 8 kHz mono μ-law. */
export const MEDIA_FORMAT = { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } as const;

export class MediaStreamProtocolError extends Error {}

const sid = (prefix: string) => z.string().regex(new RegExp(`^${prefix}[0-9a-zA-Z]{1,64}$`), `must be a ${prefix}… SID`);
const seq = z.union([z.string().regex(/^[0-9]{1,12}$/), z.number().int().nonnegative()]).optional();
const base64 = z.string().max(Math.ceil(MAX_MEDIA_BYTES / 3) * 4).regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

const ZConnected = z.object({ event: z.literal('connected'), protocol: z.string().max(64).optional(), version: z.string().max(32).optional() });

const ZStart = z.object({
  event: z.literal('start'),
  sequenceNumber: seq,
  streamSid: sid('MZ'),
  start: z.object({
    accountSid: sid('AC'),
    callSid: sid('CA'),
    streamSid: sid('MZ').optional(),
    tracks: z.array(z.enum(['inbound', 'outbound'])).max(2).optional(),
    customParameters: z
      .record(z.string().max(MAX_PARAMETER_CHARS), z.string().max(MAX_PARAMETER_CHARS))
      .refine((p) => Object.keys(p).length <= MAX_CUSTOM_PARAMETERS, `at most ${MAX_CUSTOM_PARAMETERS} custom parameters`)
      .optional(),
    mediaFormat: z.object({ encoding: z.string().max(64), sampleRate: z.number().int(), channels: z.number().int() }),
  }),
});

const ZMedia = z.object({
  event: z.literal('media'),
  sequenceNumber: seq,
  streamSid: sid('MZ'),
  media: z.object({
    track: z.enum(['inbound', 'outbound']).optional(),
    chunk: z.union([z.string().max(16), z.number()]).optional(),
    timestamp: z.union([z.string().max(16), z.number()]).optional(),
    payload: base64,
  }),
});

const ZMark = z.object({ event: z.literal('mark'), sequenceNumber: seq, streamSid: sid('MZ'), mark: z.object({ name: z.string().max(256) }) });
const ZDtmf = z.object({ event: z.literal('dtmf'), sequenceNumber: seq, streamSid: sid('MZ'), dtmf: z.object({ track: z.string().max(32).optional(), digit: z.string().max(1) }) });
const ZStop = z.object({
  event: z.literal('stop'),
  sequenceNumber: seq,
  streamSid: sid('MZ'),
  stop: z.object({ accountSid: sid('AC').optional(), callSid: sid('CA').optional() }).optional(),
});

const ZMessage = z.discriminatedUnion('event', [ZConnected, ZStart, ZMedia, ZMark, ZDtmf, ZStop]);

export type MediaStreamMessage = z.infer<typeof ZMessage>;
export type StartMessage = z.infer<typeof ZStart>;

/** One WebSocket message's JSON, bounded in size first. */
function decodeMessage(data: string | Buffer): unknown {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  if (size > MAX_MESSAGE_BYTES) throw new MediaStreamProtocolError(`message of ${size} bytes, over ${MAX_MESSAGE_BYTES}`);
  try {
    return JSON.parse(typeof data === 'string' ? data : data.toString('utf8'));
  } catch {
    throw new MediaStreamProtocolError('message is not JSON');
  }
}

/** A message from Twilio, parsed; a message too large, not JSON or not of the protocol is a MediaStreamProtocolError. */
export function parseMediaStreamMessage(data: string | Buffer): MediaStreamMessage {
  const json = decodeMessage(data);
  const parsed = ZMessage.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new MediaStreamProtocolError(`not a Media Streams message: ${issue ? `${issue.path.join('.') || 'event'}: ${issue.message}` : 'invalid'}`);
  }
  return parsed.data;
}

/** A media message's audio: μ-law bytes. */
export function mediaPayload(message: Extract<MediaStreamMessage, { event: 'media' }>): Uint8Array {
  return Buffer.from(message.media.payload, 'base64');
}

/** Whether a stream's declared audio is the one Media Streams carry (8 kHz mono μ-law). */
export function isMulaw8k(format: StartMessage['start']['mediaFormat']): boolean {
  return format.encoding === MEDIA_FORMAT.encoding && format.sampleRate === MEDIA_FORMAT.sampleRate && format.channels === MEDIA_FORMAT.channels;
}

// ── what a server sends back ─────────────────────────────────────────────────────────────────

export const mediaMessage = (streamSid: string, mulaw: Uint8Array): string =>
  JSON.stringify({ event: 'media', streamSid, media: { payload: Buffer.from(mulaw.buffer, mulaw.byteOffset, mulaw.byteLength).toString('base64') } });

export const markMessage = (streamSid: string, name: string): string => JSON.stringify({ event: 'mark', streamSid, mark: { name } });

export const clearMessage = (streamSid: string): string => JSON.stringify({ event: 'clear', streamSid });

// ── what Twilio sends (the Twilio fake builds its messages with these) ───────────────────────────

export const connectedMessage = (): string => JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' });

export function startMessage(input: { streamSid: string; accountSid: string; callSid: string; customParameters: Record<string, string>; sequenceNumber: number }): string {
  return JSON.stringify({
    event: 'start',
    sequenceNumber: String(input.sequenceNumber),
    streamSid: input.streamSid,
    start: {
      accountSid: input.accountSid,
      streamSid: input.streamSid,
      callSid: input.callSid,
      tracks: ['inbound'],
      mediaFormat: MEDIA_FORMAT,
      customParameters: input.customParameters,
    },
  });
}

export function inboundMediaMessage(input: { streamSid: string; sequenceNumber: number; chunk: number; timestampMs: number; mulaw: Uint8Array }): string {
  return JSON.stringify({
    event: 'media',
    sequenceNumber: String(input.sequenceNumber),
    streamSid: input.streamSid,
    media: { track: 'inbound', chunk: String(input.chunk), timestamp: String(input.timestampMs), payload: Buffer.from(input.mulaw).toString('base64') },
  });
}

/** Twilio's answer to a mark, once the audio sent before it has played. */
export const playedMarkMessage = (input: { streamSid: string; sequenceNumber: number; name: string }): string =>
  JSON.stringify({ event: 'mark', sequenceNumber: String(input.sequenceNumber), streamSid: input.streamSid, mark: { name: input.name } });

export const stopMessage = (input: { streamSid: string; sequenceNumber: number; accountSid: string; callSid: string }): string =>
  JSON.stringify({ event: 'stop', sequenceNumber: String(input.sequenceNumber), streamSid: input.streamSid, stop: { accountSid: input.accountSid, callSid: input.callSid } });

/** What a server sends back, as the Twilio fake reads it. */
const ZServerMessage = z.discriminatedUnion('event', [
  z.object({ event: z.literal('media'), streamSid: z.string().max(64), media: z.object({ payload: base64 }) }),
  z.object({ event: z.literal('mark'), streamSid: z.string().max(64), mark: z.object({ name: z.string().max(256) }) }),
  z.object({ event: z.literal('clear'), streamSid: z.string().max(64) }),
]);
export type ServerMessage = z.infer<typeof ZServerMessage>;

export function parseServerMessage(data: string | Buffer): ServerMessage {
  const json = decodeMessage(data);
  const parsed = ZServerMessage.safeParse(json);
  if (!parsed.success) throw new MediaStreamProtocolError(`not a Media Streams message: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}
