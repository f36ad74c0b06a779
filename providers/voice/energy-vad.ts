// The development voice activity detector: frame energy against a threshold that follows the
// line's steady noise, with a minimum speech length (a click is not speech) and a hangover (the
// silence that ends an utterance). Cheap and deterministic; it cannot tell speech from any other
// loud sound (docs/voice.md, "Speech providers").
import { concatPcm } from './pcm';
import { type PcmAudio, type VadEvent, type VoiceActivityDetector } from './types';

export interface EnergyVadOptions {
  /** Silence after speech that ends the utterance (ms); the endpointing delay. @default 500 */
  silenceMs?: number;
  /** Speech must last this long before it counts (ms): shorter bursts are noise. @default 150 */
  minSpeechMs?: number;
  /** Audio kept from before the speech started, so the recogniser hears its onset (ms). @default 300 */
  preRollMs?: number;
  /** An utterance this long ends even without silence (ms). @default 30000 */
  maxUtteranceMs?: number;
  /** A frame quieter than this is never speech (dBFS). @default -45 */
  thresholdDb?: number;
  /** A frame must be this far above the tracked noise floor to be speech (dB). @default 12 */
  noiseMarginDb?: number;
  /** Analysis window (ms). @default 20 */
  frameMs?: number;
}

export const ENERGY_VAD_DEFAULTS: Readonly<Required<EnergyVadOptions>> = {
  silenceMs: 500,
  minSpeechMs: 150,
  preRollMs: 300,
  maxUtteranceMs: 30_000,
  thresholdDb: -45,
  noiseMarginDb: 12,
  frameMs: 20,
};

/** Unvoiced time an onset may hold before it is dropped as noise (ms). */
const ONSET_GAP_MS = 60;
/** Silence kept at the end of an utterance (ms). */
const TAIL_MS = 300;

/** Frame loudness in dBFS (digital silence: -100). */
export function frameDb(samples: Int16Array, from = 0, to = samples.length): number {
  if (to <= from) return -100;
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!;
  const rms = Math.sqrt(sum / (to - from));
  return rms < 1e-3 ? -100 : Math.max(-100, 20 * Math.log10(rms / 32768));
}

export function checkVadOptions(options: EnergyVadOptions): Required<EnergyVadOptions> {
  const o = { ...ENERGY_VAD_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as Required<EnergyVadOptions>;
  const positive: (keyof EnergyVadOptions)[] = ['silenceMs', 'minSpeechMs', 'maxUtteranceMs', 'frameMs'];
  for (const k of positive) if (!(Number.isFinite(o[k]) && o[k] > 0)) throw new RangeError(`VAD ${k} must be a positive number of milliseconds, got ${o[k]}`);
  if (!(Number.isFinite(o.preRollMs) && o.preRollMs >= 0)) throw new RangeError(`VAD preRollMs must be 0 or more, got ${o.preRollMs}`);
  if (!(o.thresholdDb < 0 && o.thresholdDb > -100)) throw new RangeError(`VAD thresholdDb must be between -100 and 0 dBFS, got ${o.thresholdDb}`);
  if (!(o.noiseMarginDb >= 0)) throw new RangeError(`VAD noiseMarginDb must be 0 or more, got ${o.noiseMarginDb}`);
  if (o.frameMs > 100) throw new RangeError(`VAD frameMs must be at most 100, got ${o.frameMs}`);
  return o;
}

export class EnergyVad implements VoiceActivityDetector {
  private readonly o: Required<EnergyVadOptions>;
  private rate = 0;
  private frameLen = 0;
  /** Samples not yet analysed (less than one frame). */
  private carry = new Int16Array(0);
  /** Samples analysed so far: the stream's clock. */
  private clock = 0;
  private noiseDb = -100;
  private state: 'quiet' | 'onset' | 'speech' = 'quiet';
  /** Frames kept: the pre-roll while quiet, the utterance so far otherwise. */
  private frames: Int16Array[] = [];
  private onsetAt = 0;
  private voicedRun = 0;
  /** Unvoiced time inside an onset (a consonant, a breath). */
  private onsetGap = 0;
  private lastVoicedEnd = 0;
  private utteranceStart = 0;

  constructor(options: EnergyVadOptions = {}) {
    this.o = checkVadOptions(options);
  }

  push(frame: PcmAudio): VadEvent[] {
    if (this.rate === 0) {
      this.rate = frame.sampleRate;
      this.frameLen = Math.max(1, Math.round((this.o.frameMs * this.rate) / 1000));
    } else if (frame.sampleRate !== this.rate) {
      throw new RangeError(`VAD got ${frame.sampleRate} Hz audio after ${this.rate} Hz: reset() it between streams`);
    }
    const input = this.carry.length ? concatPcm([{ sampleRate: this.rate, samples: this.carry }, frame]).samples : frame.samples;
    const events: VadEvent[] = [];
    let at = 0;
    for (; at + this.frameLen <= input.length; at += this.frameLen) {
      const event = this.analyse(input.slice(at, at + this.frameLen));
      if (event) events.push(event);
    }
    this.carry = input.slice(at);
    return events;
  }

  reset(): void {
    this.rate = 0;
    this.carry = new Int16Array(0);
    this.clock = 0;
    this.noiseDb = -100;
    this.toQuiet();
  }

  private ms(samples: number): number {
    return Math.round((samples * 1000) / this.rate);
  }

  private toQuiet(): void {
    this.state = 'quiet';
    this.frames = [];
    this.voicedRun = 0;
  }

  private analyse(frame: Int16Array): VadEvent | null {
    const start = this.clock;
    this.clock += frame.length;
    const db = frameDb(frame);
    const voiced = db >= Math.max(this.o.thresholdDb, this.noiseDb + this.o.noiseMarginDb);
    if (!voiced && this.state === 'quiet') {
      // The floor follows steady noise: quickly down, slowly up (speech must not raise it).
      this.noiseDb = db < this.noiseDb ? db : this.noiseDb + (db - this.noiseDb) * 0.05;
    }
    const frameMs = this.ms(frame.length);
    switch (this.state) {
      case 'quiet': {
        this.frames.push(frame);
        const keep = Math.max(1, Math.ceil(this.o.preRollMs / this.o.frameMs) + 1);
        if (this.frames.length > keep) this.frames.splice(0, this.frames.length - keep);
        if (voiced) {
          this.state = 'onset';
          this.onsetAt = start;
          this.utteranceStart = start - (this.frames.length - 1) * this.frameLen;
          this.voicedRun = frameMs;
          this.onsetGap = 0;
          this.lastVoicedEnd = this.clock;
          return this.maybeStart();
        }
        return null;
      }
      case 'onset': {
        this.frames.push(frame);
        if (!voiced) {
          this.onsetGap += frameMs;
          if (this.onsetGap <= ONSET_GAP_MS) return null;
          // Too short to be speech: back to quiet, keeping what now serves as pre-roll.
          const kept = this.frames;
          this.toQuiet();
          this.frames = kept.slice(-Math.max(1, Math.ceil(this.o.preRollMs / this.o.frameMs) + 1));
          return null;
        }
        this.voicedRun += frameMs;
        this.lastVoicedEnd = this.clock;
        return this.maybeStart();
      }
      case 'speech': {
        this.frames.push(frame);
        if (voiced) this.lastVoicedEnd = this.clock;
        const silentFor = this.ms(this.clock - this.lastVoicedEnd);
        const length = this.ms(this.clock - this.utteranceStart);
        if (silentFor >= this.o.silenceMs || length >= this.o.maxUtteranceMs) return this.end();
        return null;
      }
    }
  }

  private maybeStart(): VadEvent | null {
    if (this.voicedRun < this.o.minSpeechMs) return null;
    this.state = 'speech';
    return { type: 'speech_start', atMs: this.ms(this.onsetAt) };
  }

  private end(): VadEvent {
    // The utterance keeps a little of the silence that ended it, not all of it.
    const tail = Math.round((Math.min(this.o.silenceMs, TAIL_MS) * this.rate) / 1000);
    const all = concatPcm(this.frames.map((samples) => ({ sampleRate: this.rate, samples })), this.rate);
    const keep = Math.min(all.samples.length, this.lastVoicedEnd - this.utteranceStart + tail);
    const utterance = { sampleRate: this.rate, samples: all.samples.slice(0, keep) };
    const atMs = this.ms(this.lastVoicedEnd);
    this.toQuiet();
    return { type: 'speech_end', atMs, utterance };
  }
}
