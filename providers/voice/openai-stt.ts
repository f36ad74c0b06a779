// OpenAI speech to text over the official `openai` SDK (`POST /v1/audio/transcriptions`), with SDK
// retries off so the caller decides. The utterance goes up as a 16-bit WAV at its own rate.
import type OpenAI from 'openai';
import { toFile } from 'openai/uploads';
import { startDeadline } from '../llm/deadline';
import { toProviderError } from '../llm/errors';
import { toWav } from './pcm';
import { type PcmAudio, type SpeechToText, type TranscribeOptions, type Transcript } from './types';
import { newOpenAIClient } from '../llm/openai-client';

export const DEFAULT_OPENAI_STT_MODEL = 'gpt-4o-mini-transcribe';
/** Longest prompt built from hints (characters); OpenAI reads only the prompt's last 224 tokens anyway. */
const MAX_PROMPT_CHARS = 800;

export interface OpenAISpeechToTextOptions {
  apiKey: string;
  /** @default https://api.openai.com/v1 */
  baseURL?: string;
  /** @default gpt-4o-mini-transcribe */
  model?: string;
  /** Per-request timeout (ms). @default 15000 */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

/** The models that report token log probabilities (`include: ['logprobs']`). */
const reportsLogprobs = (model: string): boolean => /^gpt-4o(-mini)?-transcribe/.test(model);

/**
 * Confidence from the transcription's token log probabilities: the geometric mean of the tokens'
 * probabilities, exp(mean logprob), 0–1; null when the model reports none.
 */
export function confidenceFromLogprobs(logprobs: readonly { logprob?: number | undefined }[] | undefined): number | null {
  const values = (logprobs ?? []).map((l) => l.logprob).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (values.length === 0) return null;
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.min(1, Math.max(0, Math.exp(mean)));
}

export class OpenAISpeechToText implements SpeechToText {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly timeoutMs: number;

  constructor(options: OpenAISpeechToTextOptions) {
    this.model = options.model ?? DEFAULT_OPENAI_STT_MODEL;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.client = newOpenAIClient({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      timeoutMs: this.timeoutMs,
      fetch: options.fetch,
    });
  }

  async transcribe(audio: PcmAudio, options: TranscribeOptions): Promise<Transcript> {
    const deadline = startDeadline(this.timeoutMs, options.signal);
    try {
      const file = await toFile(toWav(audio), 'utterance.wav', { type: 'audio/wav' });
      const hints = (options.hints ?? []).map((h) => h.trim()).filter(Boolean);
      const logprobs = reportsLogprobs(this.model);
      const result = await this.client.audio.transcriptions.create(
        {
          file,
          model: this.model,
          // OpenAI takes ISO 639-1: the tag's language subtag.
          language: options.language.split(/[-_]/)[0]!.toLowerCase(),
          response_format: 'json',
          ...(hints.length ? { prompt: `Expected phrases: ${hints.join('; ')}`.slice(0, MAX_PROMPT_CHARS) } : {}),
          ...(logprobs ? { include: ['logprobs' as const] } : {}),
        },
        { signal: deadline.signal },
      );
      return { text: result.text.trim(), confidence: confidenceFromLogprobs(result.logprobs) };
    } catch (err) {
      throw toProviderError(err, this.name, { signal: options.signal, timedOut: deadline.timedOut() });
    } finally {
      deadline.clear();
    }
  }
}
