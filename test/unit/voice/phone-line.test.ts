// The phone line's audio and protocol, as pure code: G.711 μ-law both ways (against the reference
// code table), the 8 kHz → 48 kHz upsampler that feeds the voice room, the Twilio Media Streams
// messages (bad, oversized and out-of-protocol ones refused), the stream URL's path and its
// signature over the wss:// URL with the twilio SDK.
import { MULAW_SILENCE, mulawByte, mulawDecode, mulawEncode, mulawSample, Upsampler } from '../../../providers/telephony/mulaw';
import {
  isMulaw8k,
  MAX_MESSAGE_BYTES,
  mediaMessage,
  mediaPayload,
  MediaStreamProtocolError,
  parseMediaStreamMessage,
  startMessage,
} from '../../../providers/telephony/media-stream';
import { isValidTwilioSignature, twilioSignature } from '../../../providers/telephony/twilio-client';
import { streamTarget } from '../../../core/voice/phone-bridge';
import { phoneBridgeBaseUrl, phoneStreamUrl } from '../../../core/voice/phone-rooms';

const STREAM = 'MZ0123456789abcdef0123456789abcdef';
const CALL = 'CA0123456789abcdef0123456789abcdef';
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef';

describe('μ-law', () => {
  test('codes match G.711: silence, the extremes and a segment edge', () => {
    expect(mulawByte(0)).toBe(MULAW_SILENCE);
    expect(mulawByte(32767)).toBe(0x80);
    expect(mulawByte(-32768)).toBe(0x00);
    expect(mulawByte(-1)).toBe(0x7f);
    expect(mulawSample(0xff)).toBe(0);
    expect(mulawSample(0x80)).toBe(32124);
    expect(mulawSample(0x00)).toBe(-32124);
    // The first segment's step is 8 (the 0..30 range codes as 0xff..0xf0 around 2 a step).
    expect(mulawSample(0xfe)).toBe(8);
  });

  test('every code decodes and encodes back to itself (but the two zeros)', () => {
    for (let code = 0; code < 256; code++) {
      if (code === 0x7f) continue; // -0 decodes to 0, which encodes as +0 (0xff)
      expect(mulawByte(mulawSample(code))).toBe(code);
    }
  });

  test('a round trip keeps speech-level audio within μ-law\'s quantisation (under 1/16 of the value)', () => {
    const tone = Int16Array.from({ length: 800 }, (_, i) => Math.round(12000 * Math.sin((2 * Math.PI * 440 * i) / 8000)));
    const back = mulawDecode(mulawEncode(tone));
    for (let i = 0; i < tone.length; i++) expect(Math.abs(back[i]! - tone[i]!)).toBeLessThanOrEqual(Math.max(8, Math.abs(tone[i]!) / 16));
  });
});

describe('the upsampler', () => {
  test('six samples out per sample in, along the line between neighbours, with no step between chunks', () => {
    const up = new Upsampler(6);
    const a = up.push(Int16Array.from([0, 600]));
    expect(Array.from(a)).toEqual([0, 0, 0, 0, 0, 0, 0, 100, 200, 300, 400, 500]);
    const b = up.push(Int16Array.from([0]));
    expect(Array.from(b)).toEqual([600, 500, 400, 300, 200, 100]);
  });

  test('a tone keeps its frequency and level at 48 kHz', () => {
    const line = Int16Array.from({ length: 8000 }, (_, i) => Math.round(10000 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
    const up = new Upsampler(6);
    const out = new Int16Array(48000);
    for (let at = 0; at < line.length; at += 160) out.set(up.push(line.subarray(at, at + 160)), at * 6);
    let crossings = 0;
    for (let i = 1; i < out.length; i++) if (out[i - 1]! < 0 && out[i]! >= 0) crossings++;
    expect(crossings).toBeGreaterThanOrEqual(299);
    expect(crossings).toBeLessThanOrEqual(301);
    const rms = Math.sqrt(out.reduce((s, v) => s + v * v, 0) / out.length);
    expect(rms).toBeGreaterThan(6800);
    expect(rms).toBeLessThan(7300);
  });

  test('refuses a factor that is not a whole number', () => {
    expect(() => new Upsampler(1.5)).toThrow(RangeError);
  });
});

describe('Media Streams messages', () => {
  const media = (payload: string) => JSON.stringify({ event: 'media', sequenceNumber: '3', streamSid: STREAM, media: { track: 'inbound', chunk: '1', timestamp: '5', payload } });

  test('Twilio\'s own messages parse: connected, start with its parameters, media, mark, dtmf, stop', () => {
    expect(parseMediaStreamMessage('{"event":"connected","protocol":"Call","version":"1.0.0"}').event).toBe('connected');
    const start = parseMediaStreamMessage(startMessage({ streamSid: STREAM, accountSid: ACCOUNT, callSid: CALL, customParameters: { sessionId: 's' }, sequenceNumber: 1 }));
    expect(start).toMatchObject({ event: 'start', streamSid: STREAM, start: { callSid: CALL, accountSid: ACCOUNT, customParameters: { sessionId: 's' } } });
    if (start.event !== 'start') throw new Error('not a start');
    expect(isMulaw8k(start.start.mediaFormat)).toBe(true);
    expect(isMulaw8k({ encoding: 'audio/x-l16', sampleRate: 16000, channels: 1 })).toBe(false);
    const frame = mulawEncode(new Int16Array(160).fill(1000));
    const parsed = parseMediaStreamMessage(media(Buffer.from(frame).toString('base64')));
    if (parsed.event !== 'media') throw new Error('not media');
    expect(Array.from(mediaPayload(parsed))).toEqual(Array.from(frame));
    expect(parseMediaStreamMessage(JSON.stringify({ event: 'mark', sequenceNumber: '4', streamSid: STREAM, mark: { name: 'end-1' } })).event).toBe('mark');
    expect(parseMediaStreamMessage(JSON.stringify({ event: 'dtmf', streamSid: STREAM, sequenceNumber: '5', dtmf: { track: 'inbound_track', digit: '1' } })).event).toBe('dtmf');
    expect(parseMediaStreamMessage(JSON.stringify({ event: 'stop', sequenceNumber: '6', streamSid: STREAM, stop: { accountSid: ACCOUNT, callSid: CALL } })).event).toBe('stop');
  });

  test.each([
    ['not JSON', 'hello'],
    ['an unknown event', JSON.stringify({ event: 'dance', streamSid: STREAM })],
    ['a media payload that is not base64', media('not base64!')],
    ['a media payload over 4 KiB', media(Buffer.alloc(5000).toString('base64'))],
    ['a streamSid that is not one', JSON.stringify({ event: 'stop', streamSid: 'MZ../../etc' })],
    ['a start without its call', JSON.stringify({ event: 'start', streamSid: STREAM, start: { accountSid: ACCOUNT, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } } })],
    [
      'a start with too many parameters',
      startMessage({ streamSid: STREAM, accountSid: ACCOUNT, callSid: CALL, customParameters: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, 'v'])), sequenceNumber: 1 }),
    ],
  ])('refuses %s', (_what, message) => {
    expect(() => parseMediaStreamMessage(message)).toThrow(MediaStreamProtocolError);
  });

  test('refuses a message over the size limit before reading it', () => {
    const big = JSON.stringify({ event: 'connected', protocol: 'x'.repeat(MAX_MESSAGE_BYTES) });
    expect(() => parseMediaStreamMessage(big)).toThrow(/bytes, over/);
  });

  test('the server\'s media message carries the μ-law as base64', () => {
    const sent = JSON.parse(mediaMessage(STREAM, Uint8Array.from([0xff, 0x00, 0x80]))) as { event: string; streamSid: string; media: { payload: string } };
    expect(sent).toEqual({ event: 'media', streamSid: STREAM, media: { payload: Buffer.from([0xff, 0x00, 0x80]).toString('base64') } });
  });
});

describe('the stream URL', () => {
  const config = { PUBLIC_BASE_URL: 'https://switchboard.example.com/', VOICE_BRIDGE_PUBLIC_URL: undefined };
  const session = '2f1c7a9e-8d4b-4c1e-9f7a-3b2d1e0c9a8b';

  test('defaults to PUBLIC_BASE_URL as wss with /media-stream; VOICE_BRIDGE_PUBLIC_URL overrides it', () => {
    expect(phoneBridgeBaseUrl(config)).toBe('wss://switchboard.example.com/media-stream');
    expect(phoneStreamUrl(config, 'cc_abc', session)).toBe(`wss://switchboard.example.com/media-stream/cc_abc/${session}`);
    expect(phoneStreamUrl({ ...config, VOICE_BRIDGE_PUBLIC_URL: 'wss://bridge.example.com:8443/' }, 'cc_abc', session)).toBe(`wss://bridge.example.com:8443/cc_abc/${session}`);
  });

  test('the bridge reads the connection and session from the path\'s last two segments, and nothing else', () => {
    expect(streamTarget(`/media-stream/cc_abc/${session}`)).toEqual({ connectionId: 'cc_abc', sessionId: session });
    expect(streamTarget(`/cc_abc/${session}`)).toEqual({ connectionId: 'cc_abc', sessionId: session });
    expect(streamTarget('/media-stream/cc_abc')).toBeNull();
    expect(streamTarget(`/media-stream/../${session}`)).toBeNull();
    expect(streamTarget('/media-stream/cc_abc/not-a-session')).toBeNull();
    expect(streamTarget(`/media-stream/cc_ABC%2F/${session}`)).toBeNull();
  });

  test('an upgrade signed over the wss URL with no parameters checks with the SDK; another URL or token does not', () => {
    const url = phoneStreamUrl(config, 'cc_abc', session);
    const signature = twilioSignature('token', url, {});
    expect(isValidTwilioSignature('token', signature, url, {})).toBe(true);
    expect(isValidTwilioSignature('other', signature, url, {})).toBe(false);
    expect(isValidTwilioSignature('token', signature, phoneStreamUrl(config, 'cc_abc', '3f1c7a9e-8d4b-4c1e-9f7a-3b2d1e0c9a8b'), {})).toBe(false);
  });
});
