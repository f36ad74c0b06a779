// The voice room recording's audio, pure: the WAV header and its sizes, and the two-channel
// timeline (caller left at 16 kHz, agent right resampled from 48 kHz, both placed by the clock; a
// caller gap stays silent; the agent's dropped queue is not recorded).
import { setWavSizes, StereoTimeline, WAV_HEADER_BYTES, wavHeader } from '../../../core/voice/recording-wav';

const RATE = 16_000;
const T0 = 1_000_000;

/** A sine frame of `samples` samples at `rate`, loud enough to tell from silence. */
function tone(samples: number, rate: number, hz = 440): Int16Array {
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

/** RMS of one channel of interleaved stereo over [fromMs, toMs). */
function channelRms(stereo: Int16Array, channel: 0 | 1, fromMs: number, toMs: number): number {
  const from = (fromMs * RATE) / 1000;
  const to = Math.min(stereo.length / 2, (toMs * RATE) / 1000);
  let sum = 0;
  for (let i = from; i < to; i++) sum += stereo[i * 2 + channel]! ** 2;
  return Math.sqrt(sum / Math.max(1, to - from));
}

/** The caller's 10 ms frames from `fromMs` to `toMs`, each arriving when it ends. */
function callerSpeaks(timeline: StereoTimeline, fromMs: number, toMs: number): void {
  for (let at = fromMs; at < toMs; at += 10) timeline.caller(tone(RATE / 100, RATE), RATE, T0 + at + 10);
}

describe('wavHeader', () => {
  it('describes 16-bit PCM with the sizes of its data', () => {
    const header = wavHeader({ sampleRate: RATE, channels: 2 }, 64_000);
    expect(header.length).toBe(WAV_HEADER_BYTES);
    expect([header.toString('ascii', 0, 4), header.toString('ascii', 8, 12), header.toString('ascii', 12, 16), header.toString('ascii', 36, 40)]).toEqual(['RIFF', 'WAVE', 'fmt ', 'data']);
    expect(header.readUInt32LE(4)).toBe(36 + 64_000);
    expect(header.readUInt16LE(20)).toBe(1);
    expect(header.readUInt16LE(22)).toBe(2);
    expect(header.readUInt32LE(24)).toBe(RATE);
    expect(header.readUInt32LE(28)).toBe(RATE * 4);
    expect(header.readUInt16LE(32)).toBe(4);
    expect(header.readUInt16LE(34)).toBe(16);
    expect(header.readUInt32LE(40)).toBe(64_000);
  });

  it('is written with unknown sizes and set when the file closes, in place', () => {
    const chunk = Buffer.concat([wavHeader({ sampleRate: RATE, channels: 2 }, 0), Buffer.alloc(400, 7)]);
    expect([chunk.readUInt32LE(4), chunk.readUInt32LE(40)]).toEqual([36, 0]);
    setWavSizes(chunk, 1_000_000);
    expect([chunk.readUInt32LE(4), chunk.readUInt32LE(40)]).toEqual([36 + 1_000_000, 1_000_000]);
    expect(chunk.subarray(WAV_HEADER_BYTES).every((b) => b === 7)).toBe(true);
  });
});

describe('StereoTimeline', () => {
  it('puts the caller on the left and the agent, resampled from 48 kHz, on the right, each when it was heard or played', () => {
    const timeline = new StereoTimeline(RATE, T0, 300);
    callerSpeaks(timeline, 0, 400);
    // The agent answers from 500 ms: 400 ms of 48 kHz audio in 10 ms frames, sent as it plays.
    for (let at = 500; at < 900; at += 10) timeline.agent(tone(480, 48_000, 300), 48_000, T0 + at);
    const stereo = timeline.take(T0 + 1300);
    expect(stereo.length).toBe(2 * RATE);
    // Left: the caller from 0 to 400 ms only.
    expect(channelRms(stereo, 0, 20, 380)).toBeGreaterThan(4000);
    expect(channelRms(stereo, 0, 420, 1000)).toBe(0);
    // Right: the agent from 500 to 900 ms only, 400 ms of it at 16 kHz.
    expect(channelRms(stereo, 1, 0, 500)).toBe(0);
    expect(channelRms(stereo, 1, 520, 880)).toBeGreaterThan(4000);
    expect(channelRms(stereo, 1, 900, 1000)).toBe(0);
    let voiced = 0;
    for (let i = 0; i < stereo.length / 2; i++) if (stereo[i * 2 + 1] !== 0) voiced++;
    expect(voiced).toBeGreaterThan(0.95 * 0.4 * RATE);
    expect(voiced).toBeLessThanOrEqual(0.4 * RATE);
  });

  it('hands out audio once, up to the lag behind now, and the rest when closing', () => {
    const timeline = new StereoTimeline(RATE, T0, 300);
    callerSpeaks(timeline, 0, 1000);
    expect(timeline.take(T0 + 200)).toHaveLength(0);
    expect(timeline.take(T0 + 800)).toHaveLength(2 * 0.5 * RATE);
    expect(timeline.take(T0 + 800)).toHaveLength(0);
    const rest = timeline.take(T0 + 1000, 0);
    expect(rest).toHaveLength(2 * 0.5 * RATE);
    expect(channelRms(rest, 0, 0, 480)).toBeGreaterThan(4000);
  });

  it('keeps a gap in the caller\'s audio silent, placing what follows by the clock', () => {
    const timeline = new StereoTimeline(RATE, T0, 0);
    callerSpeaks(timeline, 0, 500);
    callerSpeaks(timeline, 2000, 2500);
    const stereo = timeline.take(T0 + 2500);
    expect(channelRms(stereo, 0, 20, 480)).toBeGreaterThan(4000);
    expect(channelRms(stereo, 0, 520, 1980)).toBe(0);
    expect(channelRms(stereo, 0, 2020, 2480)).toBeGreaterThan(4000);
  });

  it('queues the agent\'s audio after what plays already, and drops what a barge-in cleared from the queue', () => {
    const timeline = new StereoTimeline(RATE, T0, 300);
    // One second of reply sent at once at 100 ms (the track queues it), cleared at 500 ms.
    for (let i = 0; i < 100; i++) timeline.agent(tone(480, 48_000), 48_000, T0 + 100);
    timeline.agentCleared(T0 + 500);
    // The caller who barged in is heard from 450 ms.
    callerSpeaks(timeline, 450, 900);
    const stereo = timeline.take(T0 + 1500);
    expect(channelRms(stereo, 1, 120, 480)).toBeGreaterThan(4000);
    expect(channelRms(stereo, 1, 510, 1200)).toBe(0);
    expect(channelRms(stereo, 0, 470, 880)).toBeGreaterThan(4000);
    // A new reply after the barge-in plays from when it is sent, not after the dropped one.
    timeline.agent(tone(480, 48_000), 48_000, T0 + 1400);
    const next = timeline.take(T0 + 1800);
    expect(channelRms(next, 1, 200, 210)).toBeGreaterThan(4000);
  });
});
