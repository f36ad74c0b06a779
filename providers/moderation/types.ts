// The moderation provider interface: a provider guardrail's text goes to `moderate`, which answers
// per text whether it is flagged and a score per category (OpenAI's ids, abl/moderation.ts).
import type { ModerationVerdict } from '../../abl/moderation';

export interface ModerationResult extends ModerationVerdict {
  /** The model that judged (`omni-moderation-latest`, `local-rules`). */
  model: string;
}

export interface ModerationProvider {
  /** `openai`, or `local` for the offline rules. */
  readonly name: string;
  /** One result per text, in order. @throws ProviderError (providers/llm/errors.ts) on failure. */
  moderate(texts: string[], options?: { signal?: AbortSignal }): Promise<ModerationResult[]>;
}
