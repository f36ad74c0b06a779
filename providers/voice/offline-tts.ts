// The offline text to speech of the development stack: espeak-ng compiled to WebAssembly (npm
// `espeak-ng`, GPL-3.0-or-later, voice data inside the package), run in a worker thread so that
// synthesis never holds up the event loop that carries the call's audio. Speaks sentence by
// sentence, the next one made while the last is played. For development: robotic, but no key.
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { ProviderError } from '../llm/errors';
import { resolveEspeakVoice } from './espeak-voices';
import { parseWav } from './pcm';
import { type PcmAudio, type SynthesizeOptions, type TextToSpeech } from './types';

/** espeak-ng's own output rate: audio is yielded at it, never resampled here. */
export const ESPEAK_SAMPLE_RATE = 22050;

const THREAD_FILE = join(__dirname, 'espeak-thread.mjs');
/** The longest piece of audio one yield carries (ms), so a consumer can stop mid-sentence. */
const MAX_CHUNK_MS = 500;

export interface OfflineTextToSpeechOptions {
  /** The voice when a call names none (VOICE_TTS_VOICE); checked now. Absent: the language's own. */
  defaultVoice?: string;
}

type FromThread =
  | { type: 'ready' }
  | { type: 'broken'; message: string }
  | { type: 'spoken'; id: number; wav: Uint8Array; ms: number }
  | { type: 'failed'; id: number; message: string }
  | { type: 'pong'; id: number }
  | { type: 'voices'; id: number; languages: string[]; variants: string[] };

interface Waiting {
  resolve: (msg: FromThread) => void;
  reject: (err: Error) => void;
}

/** Splits text into sentences (or clauses of long ones), each spoken and yielded before the next. */
export function sentencesOf(text: string): string[] {
  return text
    .split(/(?<=[.!?;:])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
}

export class OfflineTextToSpeech implements TextToSpeech {
  readonly name = 'offline';
  readonly sampleRate = ESPEAK_SAMPLE_RATE;
  private readonly defaultVoice: string | undefined;
  private worker: Worker | null = null;
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  constructor(options: OfflineTextToSpeechOptions = {}) {
    this.defaultVoice = options.defaultVoice;
    // A default voice espeak-ng does not have fails here, at configuration, for any language.
    if (options.defaultVoice) resolveEspeakVoice({ voice: options.defaultVoice, language: 'en-US' });
  }

  /** The espeak-ng voice these options speak with. @throws VoiceConfigError */
  validate(options: Omit<SynthesizeOptions, 'signal'>): string {
    return resolveEspeakVoice({ voice: options.voice ?? this.defaultVoice, language: options.language });
  }

  async *synthesize(text: string, options: SynthesizeOptions): AsyncIterable<PcmAudio> {
    const voice = this.validate(options);
    const sentences = sentencesOf(text);
    // One sentence ahead: the next is made while the consumer plays this one.
    let ahead: Promise<PcmAudio> | null = sentences.length > 0 ? this.speak(sentences[0]!, voice) : null;
    for (let i = 0; i < sentences.length; i++) {
      options.signal?.throwIfAborted();
      const audio = await ahead!;
      ahead = i + 1 < sentences.length ? this.speak(sentences[i + 1]!, voice) : null;
      // An unawaited look-ahead that fails after the consumer stopped must not go unhandled.
      ahead?.catch(() => undefined);
      options.signal?.throwIfAborted();
      const step = Math.round((MAX_CHUNK_MS * audio.sampleRate) / 1000);
      for (let at = 0; at < audio.samples.length; at += step) {
        yield { sampleRate: audio.sampleRate, samples: audio.samples.subarray(at, at + step) };
      }
    }
  }

  /** Loads espeak-ng now (about a second) rather than on the first phrase. */
  async warmUp(): Promise<void> {
    await this.send({ type: 'ping' });
  }

  /** espeak-ng's own voice lists (`--voices`, `--voices=variant`), as printed. */
  async listVoices(): Promise<{ languages: string[]; variants: string[] }> {
    const reply = await this.send({ type: 'voices' });
    if (reply.type !== 'voices') throw new Error('unexpected reply from the espeak-ng thread');
    return { languages: reply.languages, variants: reply.variants };
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.failAll(new ProviderError('the offline text to speech was closed', { kind: 'aborted', provider: this.name, retryable: false }));
    if (worker) await worker.terminate();
  }

  private async speak(sentence: string, voice: string): Promise<PcmAudio> {
    const reply = await this.send({ type: 'speak', text: sentence, voice });
    if (reply.type === 'failed') throw new ProviderError(`espeak-ng could not speak: ${reply.message}`, { kind: 'bad_request', provider: this.name, retryable: false });
    if (reply.type !== 'spoken') throw new Error('unexpected reply from the espeak-ng thread');
    const audio = parseWav(reply.wav);
    if (audio.sampleRate !== ESPEAK_SAMPLE_RATE) throw new Error(`espeak-ng spoke at ${audio.sampleRate} Hz, not ${ESPEAK_SAMPLE_RATE}`);
    return audio;
  }

  private send(message: { type: 'speak'; text: string; voice: string } | { type: 'voices' } | { type: 'ping' }): Promise<FromThread> {
    if (this.closed) return Promise.reject(new ProviderError('the offline text to speech is closed', { kind: 'aborted', provider: this.name, retryable: false }));
    const worker = this.thread();
    const id = this.nextId++;
    return new Promise<FromThread>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      // A thread with work keeps the process alive until it answers.
      worker.ref();
      worker.postMessage({ ...message, id });
    });
  }

  /** The thread, started on first use and again after one died. */
  private thread(): Worker {
    if (this.worker) return this.worker;
    // A plain ESM file: no loader (tsx) or flag of the parent's is needed in the thread.
    const worker = new Worker(THREAD_FILE, { execArgv: [], env: {} });
    worker.on('message', (msg: FromThread) => {
      if (msg.type === 'ready') return;
      if (msg.type === 'broken') {
        this.failAll(new ProviderError(`espeak-ng did not load: ${msg.message}`, { kind: 'unknown', provider: this.name, retryable: false }));
        void worker.terminate();
        return;
      }
      const waiting = this.waiting.get(msg.id);
      this.waiting.delete(msg.id);
      if (this.waiting.size === 0) worker.unref();
      waiting?.resolve(msg);
    });
    const died = (why: string): void => {
      if (this.worker === worker) this.worker = null;
      this.failAll(new ProviderError(`the espeak-ng thread stopped: ${why}`, { kind: 'unknown', provider: this.name, retryable: true }));
    };
    worker.on('error', (err) => died(err.message));
    worker.on('exit', (code) => died(`exit code ${code}`));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(err);
  }
}
