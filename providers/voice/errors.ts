// Errors of the voice providers beyond the vendor failures (those are ProviderErrors, as the LLM
// adapters'): a setting the provider cannot honour, found when it is configured, not mid-call.

/** A voice, language or provider setting the provider cannot honour; never replaced by a default. */
export class VoiceConfigError extends Error {
  override readonly name = 'VoiceConfigError';
}
