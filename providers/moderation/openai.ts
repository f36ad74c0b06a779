// OpenAI moderation over the official `openai` SDK (`POST /v1/moderations`), with SDK retries off
// so Temporal's retry policy decides. Failures become ProviderErrors like the LLM adapters'.
import type OpenAI from 'openai';
import { startDeadline } from '../llm/deadline';
import { toProviderError } from '../llm/errors';
import type { ModerationProvider, ModerationResult } from './types';
import { newOpenAIClient } from '../llm/openai-client';

export const DEFAULT_MODERATION_MODEL = 'omni-moderation-latest';

export interface OpenAIModerationOptions {
  apiKey: string;
  /** @default https://api.openai.com/v1 */
  baseURL?: string;
  /** @default omni-moderation-latest */
  model?: string;
  /** Per-request timeout. @default 10000 */
  timeoutMs?: number;
  /** The fetch the SDK sends with, e.g. one that enforces destination rules (lib/net/destination). */
  fetch?: typeof globalThis.fetch;
}

export class OpenAIModerationProvider implements ModerationProvider {
  readonly name = 'openai';
  private readonly client: OpenAI;
  private readonly model: string;
  private readonly timeoutMs: number;

  constructor(options: OpenAIModerationOptions) {
    this.model = options.model ?? DEFAULT_MODERATION_MODEL;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.client = newOpenAIClient({
      apiKey: options.apiKey,
      baseURL: options.baseURL,
      timeoutMs: this.timeoutMs,
      fetch: options.fetch,
    });
  }

  async moderate(texts: string[], options: { signal?: AbortSignal } = {}): Promise<ModerationResult[]> {
    const deadline = startDeadline(this.timeoutMs, options.signal);
    try {
      const response = await this.client.moderations.create({ model: this.model, input: texts }, { signal: deadline.signal });
      return texts.map((_, i) => {
        const r = response.results[i];
        if (!r) return { flagged: false, scores: {}, flaggedCategories: [], model: response.model };
        const scores: Record<string, number> = {};
        for (const [id, score] of Object.entries(r.category_scores ?? {})) if (typeof score === 'number') scores[id] = score;
        const flaggedCategories = Object.entries(r.categories ?? {}).filter(([, on]) => on === true).map(([id]) => id);
        return { flagged: r.flagged === true, scores, flaggedCategories, model: response.model };
      });
    } catch (err) {
      throw toProviderError(err, this.name, { signal: options.signal, timedOut: deadline.timedOut() });
    } finally {
      deadline.clear();
    }
  }
}
