// G.711 μ-law, the audio of Twilio Media Streams (8 kHz mono, one byte a sample), to and from
// 16-bit PCM, and the streaming upsampler that takes the caller's 8 kHz audio to the rate the
// voice room's audio source runs at.

const BIAS = 0x84;
const CLIP = 32635;

/** One 16-bit sample as a μ-law byte (ITU-T G.711, the segment search of the reference encoder). */
export function mulawByte(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (sign) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** One μ-law byte as a 16-bit sample. */
export function mulawSample(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + BIAS) << exponent) - BIAS;
  return u & 0x80 ? -magnitude : magnitude;
}

const DECODE_TABLE = Int16Array.from({ length: 256 }, (_, b) => mulawSample(b));

export function mulawEncode(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = mulawByte(samples[i]!);
  return out;
}

export function mulawDecode(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = DECODE_TABLE[bytes[i]!]!;
  return out;
}

/** μ-law's silence (the code of 0). */
export const MULAW_SILENCE = 0xff;

/**
 * Upsamples a stream by a whole factor (8 kHz → 48 kHz is 6) with linear interpolation, carrying
 * the last sample of one chunk into the next so that chunk edges make no step. Speech on a phone
 * line holds nothing above 4 kHz, so interpolation's images stay small and out of the band the
 * recognisers use.
 */
export class Upsampler {
  private last: number | null = null;

  constructor(readonly factor: number) {
    if (!Number.isInteger(factor) || factor < 1) throw new RangeError(`the factor must be a positive integer, got ${factor}`);
  }

  /** `factor` output samples per input sample, delayed by one input sample. */
  push(input: Int16Array): Int16Array {
    const out = new Int16Array(input.length * this.factor);
    let at = 0;
    for (const sample of input) {
      const from = this.last ?? sample;
      for (let k = 0; k < this.factor; k++) out[at++] = Math.round(from + ((sample - from) * k) / this.factor);
      this.last = sample;
    }
    return out;
  }
}
