// Deepgram speech to text over its REST wire protocol (`POST /v1/listen` with the utterance as a
// WAV body; no SDK), failures classified as the other vendors' are.
import { type Deadline, startDeadline } from '../llm/deadline';
import { classifyStatus, parseRetryAfter, ProviderError, toProviderError } from '../llm/errors';
import { toWav } from './pcm';
import { type PcmAudio, type SpeechToText, type TranscribeOptions, type Transcript } from './types';

export const DEFAULT_DEEPGRAM_MODEL = 'nova-3';
/** Deepgram's limit on key terms per request. */
const MAX_KEYTERMS = 100;

export interface DeepgramSpeechToTextOptions {
  apiKey: string;
  /** @default https://api.deepgram.com */
  baseURL?: string;
  /** @default nova-3 */
  model?: string;
  /** Per-request timeout (ms). @default 15000 */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

interface ListenResponse {
  results?: { channels?: { alternatives?: { transcript?: string; confidence?: number }[] }[] };
}

export class DeepgramSpeechToText implements SpeechToText {
  readonly name = 'deepgram';
  private readonly apiKey: string;
  private readonly baseURL: string;
  private readonly model: string;
  private readonly timeoutMs: number;
  private readonly fetch: typeof globalThis.fetch;

  constructor(options: DeepgramSpeechToTextOptions) {
    this.apiKey = options.apiKey;
    this.baseURL = (options.baseURL ?? 'https://api.deepgram.com').replace(/\/+$/, '');
    this.model = options.model ?? DEFAULT_DEEPGRAM_MODEL;
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  async transcribe(audio: PcmAudio, options: TranscribeOptions): Promise<Transcript> {
    const query = new URLSearchParams({ model: this.model, language: options.language, smart_format: 'true' });
    // Key terms are Nova-3's way to favour phrases; older models have no equivalent for phrases.
    if (this.model.startsWith('nova-3')) {
      for (const hint of (options.hints ?? []).map((h) => h.trim()).filter(Boolean).slice(0, MAX_KEYTERMS)) query.append('keyterm', hint);
    }
    const deadline = startDeadline(this.timeoutMs, options.signal);
    try {
      const response = await this.fetch(`${this.baseURL}/v1/listen?${query.toString()}`, {
        method: 'POST',
        headers: { authorization: `Token ${this.apiKey}`, 'content-type': 'audio/wav' },
        body: toWav(audio),
        signal: deadline.signal,
      });
      if (!response.ok) throw await this.failure(response);
      const body = (await response.json()) as ListenResponse;
      const best = body.results?.channels?.[0]?.alternatives?.[0];
      const text = (best?.transcript ?? '').trim();
      const confidence = text && typeof best?.confidence === 'number' ? Math.min(1, Math.max(0, best.confidence)) : null;
      return { text, confidence };
    } catch (err) {
      throw this.classify(err, options, deadline);
    } finally {
      deadline.clear();
    }
  }

  private async failure(response: Response): Promise<ProviderError> {
    let detail = '';
    let code: string | undefined;
    try {
      const body = (await response.json()) as { err_code?: string; err_msg?: string };
      code = body.err_code;
      detail = body.err_msg ?? '';
    } catch {
      // Not Deepgram's JSON error: the status says enough.
    }
    const { kind, retryable } = classifyStatus(response.status, code);
    const retryAfterMs = kind === 'rate_limited' || kind === 'overloaded' ? parseRetryAfter(response.headers) : undefined;
    return new ProviderError(`deepgram: ${response.status}${detail ? ` ${detail}` : ''}`, {
      kind,
      provider: this.name,
      retryable,
      status: response.status,
      ...(code ? { code } : {}),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }

  private classify(err: unknown, options: TranscribeOptions, deadline: Deadline): ProviderError {
    return toProviderError(err, this.name, { signal: options.signal, timedOut: deadline.timedOut() });
  }
}
