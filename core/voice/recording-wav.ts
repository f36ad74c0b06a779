// The audio of a voice room's recording, pure: a 16-bit PCM WAV header (written with its sizes
// unknown, fixed when the file closes) and the two-channel timeline the voice agent fills as the
// call goes on: the caller on the left, the agent on the right, each placed by wall-clock time.
import { resample } from '../../providers/voice/pcm';

/** A canonical PCM WAV header: RIFF, `fmt ` (16 bytes), `data`. */
export const WAV_HEADER_BYTES = 44;

export interface WavFormat {
  sampleRate: number;
  channels: number;
}

/** The header of a 16-bit PCM WAV with `dataBytes` bytes of samples. */
export function wavHeader(format: WavFormat, dataBytes: number): Buffer {
  const header = Buffer.alloc(WAV_HEADER_BYTES);
  const blockAlign = format.channels * 2;
  header.write('RIFF', 0, 'ascii');
  header.write('WAVE', 8, 'ascii');
  header.write('fmt ', 12, 'ascii');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(format.channels, 22);
  header.writeUInt32LE(format.sampleRate, 24);
  header.writeUInt32LE(format.sampleRate * blockAlign, 28);
  header.writeUInt16LE(blockAlign, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'ascii');
  setWavSizes(header, dataBytes);
  return header;
}

/** Writes the RIFF and data sizes of a file holding `dataBytes` of samples into its header (in place). */
export function setWavSizes(header: Buffer, dataBytes: number): void {
  header.writeUInt32LE(WAV_HEADER_BYTES - 8 + dataBytes, 4);
  header.writeUInt32LE(dataBytes, 40);
}

/**
 * Two channels of one call on a common clock, in samples at `sampleRate` since `startedAt` (epoch
 * ms). The caller's audio arrives in steady frames: each follows the last, unless it is more than
 * RESYNC_MS away from where the clock says it belongs (a gap: the caller joined late, left, or the
 * stream stalled), when it is placed by the clock. The agent's audio is sent ahead of its playout
 * (the track queues it), so each frame plays where the last one ends, or now if that is past; audio
 * dropped from the queue (barge-in) is taken out again. `take` hands out interleaved stereo
 * (left, right) up to `lagMs` before now: later audio may still change.
 */
export class StereoTimeline {
  static readonly RESYNC_MS = 250;
  private committed = 0;
  private readonly pending: [Int16Array, Int16Array] = [new Int16Array(0), new Int16Array(0)];
  private callerCursor: number | null = null;
  private agentCursor = 0;

  constructor(
    readonly sampleRate: number,
    readonly startedAt: number,
    private readonly lagMs = 300,
  ) {}

  /** The sample index of a wall-clock time. */
  indexAt(at: number): number {
    return Math.max(0, Math.floor(((at - this.startedAt) * this.sampleRate) / 1000));
  }

  caller(samples: Int16Array, sampleRate: number, at = Date.now()): void {
    const audio = this.atRate(samples, sampleRate);
    const clock = this.indexAt(at);
    const resync = (StereoTimeline.RESYNC_MS * this.sampleRate) / 1000;
    // The frame that just arrived ends now: it began one frame earlier.
    const due = Math.max(0, clock - audio.length);
    if (this.callerCursor === null || Math.abs(due - this.callerCursor) > resync) this.callerCursor = due;
    this.place(0, this.callerCursor, audio);
    this.callerCursor += audio.length;
  }

  agent(samples: Int16Array, sampleRate: number, at = Date.now()): void {
    const audio = this.atRate(samples, sampleRate);
    const start = Math.max(this.agentCursor, this.indexAt(at));
    this.place(1, start, audio);
    this.agentCursor = start + audio.length;
  }

  /** The agent's queued audio was dropped at `at`: what was to play from then on is silence. */
  agentCleared(at = Date.now()): void {
    const from = Math.max(this.indexAt(at), this.committed);
    const right = this.pending[1];
    if (from - this.committed < right.length) right.fill(0, from - this.committed);
    this.agentCursor = Math.min(this.agentCursor, from);
  }

  /** Interleaved stereo from where the last take ended to `lagMs` (or `lagMs` given) before `at`. */
  take(at = Date.now(), lagMs = this.lagMs): Int16Array {
    const upTo = this.indexAt(at - lagMs);
    const frames = upTo - this.committed;
    if (frames <= 0) return new Int16Array(0);
    const out = new Int16Array(frames * 2);
    for (let channel = 0; channel < 2; channel++) {
      const buffer = this.pending[channel as 0 | 1];
      const n = Math.min(frames, buffer.length);
      for (let i = 0; i < n; i++) out[i * 2 + channel] = buffer[i]!;
      this.pending[channel as 0 | 1] = buffer.slice(n);
    }
    this.committed = upTo;
    return out;
  }

  private atRate(samples: Int16Array, sampleRate: number): Int16Array {
    return sampleRate === this.sampleRate ? samples : resample({ sampleRate, samples }, this.sampleRate).samples;
  }

  private place(channel: 0 | 1, index: number, audio: Int16Array): void {
    // Audio for time already handed out is too late to keep.
    const skip = Math.max(0, this.committed - index);
    if (skip >= audio.length) return;
    const offset = index + skip - this.committed;
    const end = offset + audio.length - skip;
    let buffer = this.pending[channel];
    if (end > buffer.length) {
      // A second or two at most is pending: growing to fit is cheap.
      const grown = new Int16Array(end);
      grown.set(buffer);
      buffer = grown;
      this.pending[channel] = buffer;
    }
    buffer.set(audio.subarray(skip), offset);
  }
}
