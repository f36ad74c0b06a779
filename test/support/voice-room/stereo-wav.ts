// Reads a recording's two-channel 16-bit WAV as the tests receive it, checking its header against
// the bytes it came in, and measures where each channel is loud.
export interface StereoWav {
  sampleRate: number;
  channels: number;
  /** The header's RIFF and data sizes. */
  riffSize: number;
  dataSize: number;
  left: Int16Array;
  right: Int16Array;
}

export function readStereoWav(bytes: Buffer): StereoWav {
  const tag = (at: number) => bytes.toString('ascii', at, at + 4);
  if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE' || tag(12) !== 'fmt ' || tag(36) !== 'data') throw new Error('not a canonical WAV');
  const channels = bytes.readUInt16LE(22);
  const dataSize = bytes.readUInt32LE(40);
  const frames = Math.floor(Math.min(dataSize, bytes.length - 44) / (channels * 2));
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = bytes.readInt16LE(44 + i * channels * 2);
    right[i] = channels > 1 ? bytes.readInt16LE(44 + i * channels * 2 + 2) : 0;
  }
  return { sampleRate: bytes.readUInt32LE(24), channels, riffSize: bytes.readUInt32LE(4), dataSize, left, right };
}

/** The 10 ms windows of `samples` louder than `threshold` (RMS), as start times in ms. */
export function loudWindowsMs(samples: Int16Array, sampleRate: number, threshold = 400): number[] {
  const win = sampleRate / 100;
  const out: number[] = [];
  for (let i = 0; i + win <= samples.length; i += win) {
    let sum = 0;
    for (let k = i; k < i + win; k++) sum += samples[k]! * samples[k]!;
    if (Math.sqrt(sum / win) > threshold) out.push((i / sampleRate) * 1000);
  }
  return out;
}
