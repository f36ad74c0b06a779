// Small PCM helpers the voice adapters share at their edges: resampling to a recogniser's rate,
// reading and writing 16-bit mono WAV, joining chunks and measuring loudness.
import { type PcmAudio } from './types';

/**
 * Resamples to `rate` by linear interpolation; going down, each output sample first averages the
 * input samples it covers (a box filter), which keeps most aliasing out of the speech band. Good
 * enough for speech recognisers; not a music-grade resampler.
 */
export function resample(audio: PcmAudio, rate: number): PcmAudio {
  if (!Number.isInteger(rate) || rate <= 0) throw new RangeError(`sample rate must be a positive integer, got ${rate}`);
  if (audio.sampleRate === rate || audio.samples.length === 0) return { sampleRate: rate, samples: audio.samples };
  const input = audio.samples;
  const step = audio.sampleRate / rate;
  const length = Math.max(1, Math.round(input.length / step));
  const out = new Int16Array(length);
  const last = input.length - 1;
  for (let i = 0; i < length; i++) {
    const at = i * step;
    if (step > 1) {
      // Average the span [at, at + step) of the input.
      const from = Math.floor(at);
      const to = Math.min(last, Math.floor(at + step - 1e-9));
      let sum = 0;
      for (let k = from; k <= to; k++) sum += input[k]!;
      out[i] = Math.round(sum / (to - from + 1));
    } else {
      const k = Math.min(last, Math.floor(at));
      const frac = at - k;
      const a = input[k]!;
      const b = input[Math.min(last, k + 1)]!;
      out[i] = Math.round(a + (b - a) * frac);
    }
  }
  return { sampleRate: rate, samples: out };
}

/** Reads a PCM WAV file (16-bit, mono); other formats are refused with the reason. */
export function parseWav(bytes: Uint8Array): PcmAudio {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number): string => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
  if (bytes.length < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new Error('not a WAV file');
  let at = 12;
  let sampleRate = 0;
  while (at + 8 <= bytes.length) {
    const id = tag(at);
    const size = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'fmt ') {
      const format = view.getUint16(body, true);
      const channels = view.getUint16(body + 2, true);
      sampleRate = view.getUint32(body + 4, true);
      const bits = view.getUint16(body + 14, true);
      if (format !== 1 || channels !== 1 || bits !== 16) throw new Error(`WAV must be 16-bit mono PCM (format ${format}, ${channels} channels, ${bits} bits)`);
    } else if (id === 'data') {
      if (!sampleRate) throw new Error('WAV data before its format');
      // A writer that could not seek back leaves the size unset (0 or 0xFFFFFFFF): take what is there.
      const end = size === 0 || body + size > bytes.length ? bytes.length : body + size;
      const count = Math.floor((end - body) / 2);
      const samples = new Int16Array(count);
      for (let i = 0; i < count; i++) samples[i] = view.getInt16(body + i * 2, true);
      return { sampleRate, samples };
    }
    at = body + size + (size % 2);
  }
  throw new Error('WAV has no data chunk');
}

/** A 16-bit mono PCM WAV file of `audio` (what vendors that take a file upload are sent). */
export function toWav(audio: PcmAudio): Buffer {
  const data = audio.samples.length * 2;
  const out = Buffer.alloc(44 + data);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + data, 4);
  out.write('WAVE', 8, 'ascii');
  out.write('fmt ', 12, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(1, 20);
  out.writeUInt16LE(1, 22);
  out.writeUInt32LE(audio.sampleRate, 24);
  out.writeUInt32LE(audio.sampleRate * 2, 28);
  out.writeUInt16LE(2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(data, 40);
  pcmBytes(audio.samples).copy(out, 44);
  return out;
}

/** The samples as little-endian bytes (a view when the platform is little-endian, as Node's are). */
export function pcmBytes(samples: Int16Array): Buffer {
  return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
}

/** Little-endian 16-bit bytes as samples (copied, so the result is aligned). */
export function samplesOf(bytes: Uint8Array): Int16Array {
  const count = Math.floor(bytes.byteLength / 2);
  const out = new Int16Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
  for (let i = 0; i < count; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Chunks of one rate, one after the other. */
export function concatPcm(chunks: readonly PcmAudio[], sampleRate = chunks[0]?.sampleRate ?? 16000): PcmAudio {
  let length = 0;
  for (const c of chunks) {
    if (c.sampleRate !== sampleRate) throw new Error(`cannot join ${c.sampleRate} Hz audio to ${sampleRate} Hz`);
    length += c.samples.length;
  }
  const samples = new Int16Array(length);
  let at = 0;
  for (const c of chunks) {
    samples.set(c.samples, at);
    at += c.samples.length;
  }
  return { sampleRate, samples };
}

/** `ms` of digital silence at `sampleRate`. */
export function silence(ms: number, sampleRate: number): PcmAudio {
  return { sampleRate, samples: new Int16Array(Math.round((ms * sampleRate) / 1000)) };
}

/** Root mean square of the samples, 0 (silence) to 32768 (full scale). */
export function rms(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / samples.length);
}

/** Length of the audio in milliseconds. */
export const durationMs = (audio: PcmAudio): number => (audio.samples.length * 1000) / audio.sampleRate;
