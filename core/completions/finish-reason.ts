// The chat API's finish-reason vocabulary (docs/chat-api.md): every provider's stop reason is
// mapped onto one small set, so a caller never needs to know which provider answered. The
// provider's own value is kept beside it as `providerFinishReason`.

export const FINISH_REASONS = ['end_turn', 'max_tokens', 'tool_use', 'stop_sequence', 'content_filter', 'other'] as const;
export type FinishReason = (typeof FINISH_REASONS)[number];

/**
 * Provider values by meaning. The names do not collide across providers, so one table serves
 * OpenAI-compatible servers (and the local model, which speaks their values) and Anthropic.
 * OpenAI reports a matched stop sequence as `stop`, like a natural end: that is `end_turn`.
 */
const PROVIDER_VALUES: Record<string, FinishReason> = {
  // OpenAI-compatible and local
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'content_filter',
  // Anthropic
  end_turn: 'end_turn',
  max_tokens: 'max_tokens',
  model_context_window_exceeded: 'max_tokens',
  tool_use: 'tool_use',
  stop_sequence: 'stop_sequence',
  refusal: 'content_filter',
};

/** The vocabulary's value for a provider's stop reason; `other` for anything else (`pause_turn`, none). */
export function toFinishReason(providerValue: string | null | undefined): FinishReason {
  if (!providerValue || !Object.prototype.hasOwnProperty.call(PROVIDER_VALUES, providerValue)) return 'other';
  return PROVIDER_VALUES[providerValue]!;
}
