// Moderation providers for provider guardrails: the interface, OpenAI over its SDK, the offline rules.
export * from './types';
export { LocalModerationProvider, localModeration, LOCAL_MODERATION_MODEL, LOCAL_MODERATION_RULES } from './local';
export { OpenAIModerationProvider, DEFAULT_MODERATION_MODEL, type OpenAIModerationOptions } from './openai';
export * from './resolve';
