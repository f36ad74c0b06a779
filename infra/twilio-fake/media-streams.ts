// The Twilio fake's <Connect><Stream>: a bidirectional Media Stream as Twilio opens it. The
// WebSocket upgrade is signed (X-Twilio-Signature over the stream's URL, no params, under the
// call's auth token); then `connected`, `start` (the <Parameter>s as customParameters, 8 kHz μ-law
// mono), a `media` message every 20 ms of real time carrying the caller's audio the test gave
// (`play`) or silence, marks echoed once the audio sent before them has played, and `stop` when the
// call ends. What the server sends back is kept: the audio's length and how much of it was loud,
// the marks and the clears. The stream ending (the server closes it) goes on to the next verb.
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { twilioSignature } from '../../providers/telephony/twilio-client';
import { mulawDecode, mulawEncode } from '../../providers/telephony/mulaw';
import { connectedMessage, inboundMediaMessage, playedMarkMessage, MediaStreamProtocolError, parseServerMessage, startMessage, stopMessage } from '../../providers/telephony/media-stream';
import { resample } from '../../providers/voice/pcm';
import { type PcmAudio } from '../../providers/voice/types';
import { type FakeCall, type FakeState } from './state';
import { type TwimlNode } from './twiml';

const LINE_RATE = 8000;
const FRAME = 160;
const FRAME_MS = 20;
/** Loudness (RMS) over which 20 ms of what the server sent counts as sound. */
export const STREAM_LOUD_RMS = 300;

export interface StreamLog {
  url: string;
  streamSid: string;
  status: 'connecting' | 'refused' | 'open' | 'closed';
  /** The HTTP status of a refused upgrade. */
  refusedStatus: number | null;
  customParameters: Record<string, string>;
  /** The caller's audio sent (ms, silence included). */
  sentMs: number;
  /** The audio the server sent back (ms), and how much of it was loud. */
  receivedMs: number;
  loudMs: number;
  /** When the server's audio first turned loud (ISO 8601), or null. */
  firstLoudAt: string | null;
  marks: string[];
  clears: number;
  /** How the server closed the socket, or null while open (or when the fake closed it). */
  closeCode: number | null;
  closeReason: string | null;
  error: string | null;
}

/** The caller's audio waiting to be sent, 8 kHz PCM. */
const pendingAudio = new WeakMap<FakeCall, Int16Array[]>();
/** The audio the server sent back, decoded (8 kHz PCM), per stream. */
const receivedAudio = new Map<string, Int16Array[]>();

/** Queues audio the caller says into the call's stream (resampled to 8 kHz); sent in order after what is queued. */
export function playIntoCall(call: FakeCall, audio: PcmAudio): void {
  const queue = pendingAudio.get(call) ?? [];
  pendingAudio.set(call, queue);
  queue.push(resample(audio, LINE_RATE).samples);
  call.events.push(`caller audio queued: ${Math.round((audio.samples.length * 1000) / audio.sampleRate)} ms`);
}

/** The audio a stream's server sent, as 8 kHz PCM. */
export function streamAudio(streamSid: string): PcmAudio {
  const parts = receivedAudio.get(streamSid) ?? [];
  const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    samples.set(p, at);
    at += p.length;
  }
  return { sampleRate: LINE_RATE, samples };
}

function nextFrame(call: FakeCall): Int16Array {
  const out = new Int16Array(FRAME);
  const queue = pendingAudio.get(call);
  let at = 0;
  while (queue && queue.length > 0 && at < FRAME) {
    const head = queue[0]!;
    const take = Math.min(FRAME - at, head.length);
    out.set(head.subarray(0, take), at);
    at += take;
    if (take === head.length) queue.shift();
    else queue[0] = head.subarray(take);
  }
  return out;
}

const rms = (pcm: Int16Array) => Math.sqrt(pcm.reduce((s, v) => s + v * v, 0) / Math.max(1, pcm.length));

/**
 * Runs <Connect><Stream> until the stream ends: 'continue' when the server ended it (or refused
 * it: Twilio goes on with the next verb), null when the call ended first.
 */
export async function runStream(state: FakeState, call: FakeCall, connect: TwimlNode, live: () => boolean): Promise<'continue' | null> {
  const stream = connect.children.find((c) => c.name === 'Stream');
  const url = stream?.attributes.url ?? '';
  if (!stream || !/^wss?:\/\//.test(url)) {
    call.errors.push(`31941 Stream - Invalid URL: ${url || '(none)'}`);
    call.events.push('error: <Connect> without a ws(s) <Stream url>');
    state.changed();
    return 'continue';
  }
  const customParameters: Record<string, string> = {};
  for (const p of stream.children) if (p.name === 'Parameter' && p.attributes.name) customParameters[p.attributes.name] = p.attributes.value ?? '';
  const log: StreamLog = {
    url,
    streamSid: `MZ${randomBytes(16).toString('hex')}`,
    status: 'connecting',
    refusedStatus: null,
    customParameters,
    sentMs: 0,
    receivedMs: 0,
    loudMs: 0,
    firstLoudAt: null,
    marks: [],
    clears: 0,
    closeCode: null,
    closeReason: null,
    error: null,
  };
  call.streams.push(log);
  call.events.push(`stream connecting: ${url}`);
  state.changed();
  receivedAudio.set(log.streamSid, []);

  const ws = new WebSocket(url, { headers: { 'x-twilio-signature': twilioSignature(call.authToken, url, {}), 'user-agent': 'Twilio.TmeWs/1.0' } });
  let sequence = 1;
  /** When the audio the server sent so far will have played (ms since the epoch). */
  let playedUntil = 0;
  const ended = new Promise<'server' | 'refused'>((resolve) => {
    ws.on('unexpected-response', (_req, res) => {
      log.status = 'refused';
      log.refusedStatus = res.statusCode ?? 0;
      call.errors.push(`31920 Stream - WebSocket - Handshake Error: ${res.statusCode}`);
      call.events.push(`stream refused: ${res.statusCode}`);
      state.changed();
      res.resume();
      resolve('refused');
    });
    ws.on('error', (err) => {
      log.error = err.message;
      if (log.status === 'connecting') {
        log.status = 'refused';
        call.errors.push(`31920 Stream - WebSocket - Handshake Error: ${err.message}`);
        state.changed();
        resolve('refused');
      }
    });
    ws.on('close', (code, reason) => {
      if (log.status === 'open') {
        log.status = 'closed';
        log.closeCode = code;
        log.closeReason = reason.toString();
        call.events.push(`stream closed by the server: ${code} ${log.closeReason}`);
        state.changed();
      }
      resolve('server');
    });
    ws.on('message', (data: Buffer) => {
      let message;
      try {
        message = parseServerMessage(data);
      } catch (err) {
        call.errors.push(`31951 Stream - Protocol - Invalid Message: ${err instanceof MediaStreamProtocolError ? err.message : String(err)}`);
        state.changed();
        return;
      }
      if (message.streamSid !== log.streamSid) {
        call.errors.push('31951 Stream - Protocol - Invalid Message: wrong streamSid');
        return;
      }
      if (message.event === 'media') {
        const pcm = mulawDecode(Buffer.from(message.media.payload, 'base64'));
        receivedAudio.get(log.streamSid)?.push(pcm);
        const ms = (pcm.length * 1000) / LINE_RATE;
        log.receivedMs += ms;
        playedUntil = Math.max(playedUntil, Date.now()) + ms;
        if (rms(pcm) > STREAM_LOUD_RMS) {
          log.loudMs += ms;
          log.firstLoudAt ??= new Date().toISOString();
        }
        state.changed();
      } else if (message.event === 'mark') {
        const name = message.mark.name;
        // Twilio answers a mark when the audio sent before it has played.
        setTimeout(() => {
          log.marks.push(name);
          if (ws.readyState === WebSocket.OPEN) ws.send(playedMarkMessage({ streamSid: log.streamSid, sequenceNumber: ++sequence, name }));
          state.changed();
        }, Math.max(0, playedUntil - Date.now()));
      } else {
        log.clears++;
        playedUntil = Date.now();
        call.events.push('stream: clear');
        state.changed();
      }
    });
  });

  const opened = await Promise.race([new Promise<boolean>((resolve) => ws.once('open', () => resolve(true))), ended.then(() => false)]);
  if (!opened) return live() ? 'continue' : null;
  log.status = 'open';
  call.events.push('stream open');
  state.changed();
  ws.send(connectedMessage());
  ws.send(startMessage({ streamSid: log.streamSid, accountSid: call.accountSid, callSid: call.sid, customParameters, sequenceNumber: sequence }));

  // The caller's line: 20 ms of μ-law every 20 ms of real time, whatever the fake's `secondMs`.
  const startedAt = Date.now();
  let chunk = 0;
  let serverEnded = false;
  void ended.then(() => (serverEnded = true));
  while (!serverEnded && live()) {
    chunk++;
    ws.send(inboundMediaMessage({ streamSid: log.streamSid, sequenceNumber: ++sequence, chunk, timestampMs: (chunk - 1) * FRAME_MS, mulaw: mulawEncode(nextFrame(call)) }));
    log.sentMs += FRAME_MS;
    const wait = startedAt + chunk * FRAME_MS - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }
  if (serverEnded) return live() ? 'continue' : null;
  // The call ended (the caller hung up, the REST API ended it): Twilio says stop and closes.
  if (ws.readyState === WebSocket.OPEN) {
    ws.send(stopMessage({ streamSid: log.streamSid, sequenceNumber: ++sequence, accountSid: call.accountSid, callSid: call.sid }));
    log.status = 'closed';
    call.events.push('stream stopped: the call ended');
    ws.close(1000, 'call ended');
  }
  state.changed();
  return null;
}
