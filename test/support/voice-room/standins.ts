// Test-only speech parts behind the voice provider interfaces, for voice agent tests that run
// before (or without) the real adapters: espeak-ng (npm WebAssembly build) speaks, a recogniser
// stand-in names the scripted phrase whose spoken length is nearest the utterance's, and an
// energy detector endpoints. Never used by product code.
import type { PcmAudio, SpeechToText, TextToSpeech, Transcript, VadEvent, VoiceActivityDetector } from '../../../providers/voice/types';

type ESpeakModule = { FS: { readFile(path: string): Uint8Array } };
type ESpeakFactory = (options: { arguments: string[] }) => Promise<ESpeakModule>;

const ESPEAK_MODULE: string = 'espeak-ng';

/** espeak-ng's speech for `text` as 16-bit mono PCM (22050 Hz). */
export async function espeak(text: string, voice = 'en-us'): Promise<PcmAudio> {
  // An ES module with no types of its own, loaded by name.
  const { default: ESpeakNg } = (await import(ESPEAK_MODULE)) as { default: ESpeakFactory };
  const mod = await ESpeakNg({ arguments: ['-v', voice, '-w', 'out.wav', text] });
  const wav = Buffer.from(mod.FS.readFile('out.wav'));
  // A canonical 44-byte header: the rate at 24, the samples after "data" + size.
  const sampleRate = wav.readUInt32LE(24);
  const dataAt = wav.indexOf('data') + 8;
  const bytes = wav.subarray(dataAt);
  const samples = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < samples.length; i++) samples[i] = bytes.readInt16LE(i * 2);
  return { sampleRate, samples };
}

const rms = (s: Int16Array, from: number, to: number): number => {
  let sum = 0;
  for (let i = from; i < to; i++) sum += s[i]! * s[i]!;
  return Math.sqrt(sum / Math.max(1, to - from));
};

/** The loud part of `audio` in ms: from its first to its last 10 ms window above the threshold. */
export function voicedMs(audio: PcmAudio, threshold = VOICED_RMS): number {
  const win = audio.sampleRate / 100;
  let first = -1;
  let last = -1;
  for (let i = 0, w = 0; i + win <= audio.samples.length; i += win, w++) {
    if (rms(audio.samples, i, i + win) > threshold) {
      if (first < 0) first = w;
      last = w;
    }
  }
  return first < 0 ? 0 : (last - first + 1) * 10;
}

export const VOICED_RMS = 400;

/** espeak-ng as a TextToSpeech: the whole phrase made at once, yielded in 100 ms chunks. */
export function espeakTts(): TextToSpeech {
  return {
    name: 'test-espeak',
    async *synthesize(text, options) {
      const pcm = await espeak(text, (options.voice ?? options.language).toLowerCase());
      const chunk = pcm.sampleRate / 10;
      for (let i = 0; i < pcm.samples.length; i += chunk) {
        if (options.signal?.aborted) return;
        yield { sampleRate: pcm.sampleRate, samples: pcm.samples.slice(i, i + chunk) };
      }
    },
  };
}

export interface ScriptedPhrase {
  text: string;
  /** Its voiced length (voicedMs of its espeak audio). */
  ms: number;
}

/** Names the phrase whose voiced length is nearest the utterance's (confidence 0.9); silence is no words. */
export function scriptedStt(phrases: readonly ScriptedPhrase[]): SpeechToText & { heard: string[] } {
  const heard: string[] = [];
  return {
    name: 'test-scripted',
    heard,
    transcribe(audio): Promise<Transcript> {
      const ms = voicedMs(audio);
      if (ms === 0 || phrases.length === 0) return Promise.resolve({ text: '', confidence: null });
      const best = phrases.reduce((a, b) => (Math.abs(b.ms - ms) < Math.abs(a.ms - ms) ? b : a));
      heard.push(best.text);
      return Promise.resolve({ text: best.text, confidence: 0.9 });
    },
  };
}

/**
 * Energy endpointing: speech starts after 30 ms above the threshold and ends after `hangoverMs`
 * below it; the utterance keeps 100 ms before its start.
 */
export function energyVad(hangoverMs = 600): VoiceActivityDetector {
  let inSpeech = false;
  let voicedRun = 0;
  let quietMs = 0;
  let clockMs = 0;
  let lastVoicedEndMs = 0;
  let rate = 16000;
  let buffer: Int16Array[] = [];
  let preroll: Int16Array[] = [];
  return {
    push(frame) {
      rate = frame.sampleRate;
      const ms = (frame.samples.length / frame.sampleRate) * 1000;
      clockMs += ms;
      const loud = rms(frame.samples, 0, frame.samples.length) > VOICED_RMS;
      const events: VadEvent[] = [];
      if (!inSpeech) {
        preroll.push(frame.samples);
        if (preroll.length > 13) preroll.shift();
        voicedRun = loud ? voicedRun + ms : 0;
        if (voicedRun >= 30) {
          inSpeech = true;
          quietMs = 0;
          buffer = [...preroll];
          preroll = [];
          lastVoicedEndMs = clockMs;
          events.push({ type: 'speech_start', atMs: clockMs - voicedRun });
        }
        return events;
      }
      buffer.push(frame.samples);
      if (loud) {
        quietMs = 0;
        lastVoicedEndMs = clockMs;
      } else quietMs += ms;
      if (quietMs >= hangoverMs) {
        inSpeech = false;
        voicedRun = 0;
        const samples = new Int16Array(buffer.reduce((n, b) => n + b.length, 0));
        let at = 0;
        for (const b of buffer) {
          samples.set(b, at);
          at += b.length;
        }
        buffer = [];
        events.push({ type: 'speech_end', atMs: lastVoicedEndMs, utterance: { sampleRate: rate, samples } });
      }
      return events;
    },
    reset() {
      inSpeech = false;
      voicedRun = 0;
      buffer = [];
      preroll = [];
    },
  };
}
