// OpenAI text to speech over the official `openai` SDK (`POST /v1/audio/speech`,
// `response_format: 'pcm'`: 24 kHz 16-bit mono), yielded as the response streams in so the first
// audio plays before the rest has arrived. SDK retries are off so the caller decides.
import type OpenAI from 'openai';
import { startDeadline } from '../llm/deadline';
import { toProviderError } from '../llm/errors';
import { VoiceConfigError } from './errors';
import { samplesOf } from './pcm';
import { type PcmAudio, type SynthesizeOptions, type TextToSpeech } from './types';
import { newOpenAIClient } from '../llm/openai-client';

export const DEFAULT_OPENAI_TTS_MODEL = 'gpt-4o-mini-tts';
export const DEFAULT_OPENAI_TTS_VOICE = 'alloy';
/** The rate of OpenAI's `pcm` response format. */
export const OPENAI_PCM_SAMPLE_RATE = 24000;
/** The built-in voices; a custom voice is given by its id (`voice_…`). */
export const OPENAI_TTS_VOICES: readonly string[] = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse', 'marin', 'cedar'];
/** OpenAI's limit on one request's input (characters). */
const MAX_INPUT_CHARS = 4096;

export interface OpenAITextToSpeechOptions {
  apiKey: string;
  /** @default https://api.openai.com/v1 */
  baseURL?: string;
  /** @default gpt-4o-mini-tts */
  model?: string;
  /** The voice when a call names none (VOICE_TTS_VOICE); checked now. @default alloy */
  defaultVoice?: string;
  /** How long the first audio may take to arrive (ms); the stream then runs as long as it runs. @default 15000 */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

function checkVoice(voice: string): string {
  if (OPENAI_TTS_VOICES.includes(voice) || /^voice_[A-Za-z0-9]+$/.test(voice)) return voice;
  throw new VoiceConfigError(`OpenAI text to speech has no voice "${voice}": give one of ${OPENAI_TTS_VOICES.join(', ')} or a custom voice id (voice_…)`);
}

export class OpenAITextToSpeech implements TextToSpeech {
  readonly name = 'openai';
  readonly sampleRate = OPENAI_PCM_SAMPLE_RATE;
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly defaultVoice: string;
  private readonly timeoutMs: number;

  constructor(options: OpenAITextToSpeechOptions) {
    this.model = options.model ?? DEFAULT_OPENAI_TTS_MODEL;
    this.defaultVoice = checkVoice(options.defaultVoice ?? DEFAULT_OPENAI_TTS_VOICE);
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.client = newOpenAIClient({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      timeoutMs: this.timeoutMs,
      fetch: options.fetch,
    });
  }

  /**
   * The voice these options speak with. The model speaks the text's own language, so `language`
   * is not sent. @throws VoiceConfigError
   */
  validate(options: Omit<SynthesizeOptions, 'signal'>): string {
    return checkVoice(options.voice ?? this.defaultVoice);
  }

  async *synthesize(text: string, options: SynthesizeOptions): AsyncIterable<PcmAudio> {
    const voice = this.validate(options);
    if (text.length > MAX_INPUT_CHARS) throw new VoiceConfigError(`OpenAI text to speech takes at most ${MAX_INPUT_CHARS} characters per request, got ${text.length}`);
    const deadline = startDeadline(this.timeoutMs, options.signal);
    let body: ReadableStream<Uint8Array>;
    try {
      const response = await this.client.audio.speech.create(
        { model: this.model, voice: voice.startsWith('voice_') ? { id: voice } : voice, input: text, response_format: 'pcm' },
        { signal: deadline.signal },
      );
      if (!response.body) throw new Error('OpenAI text to speech answered with no audio');
      body = response.body;
    } catch (err) {
      deadline.clear();
      throw toProviderError(err, this.name, { signal: options.signal, timedOut: deadline.timedOut() });
    }
    // The first bytes arrived in time: the rest streams for as long as the speech is.
    deadline.clear();
    const reader = body.getReader();
    let odd: number | null = null;
    try {
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (err) {
          throw toProviderError(err, this.name, { signal: options.signal });
        }
        if (chunk.done) break;
        let bytes = chunk.value;
        if (odd !== null) {
          // A sample split across two network chunks.
          const joined = new Uint8Array(bytes.length + 1);
          joined[0] = odd;
          joined.set(bytes, 1);
          bytes = joined;
          odd = null;
        }
        if (bytes.length % 2 === 1) {
          odd = bytes[bytes.length - 1]!;
          bytes = bytes.subarray(0, bytes.length - 1);
        }
        if (bytes.length > 0) yield { sampleRate: OPENAI_PCM_SAMPLE_RATE, samples: samplesOf(bytes) };
      }
    } finally {
      // A consumer that stops early (barge-in) closes the response.
      await reader.cancel().catch(() => undefined);
    }
  }
}
