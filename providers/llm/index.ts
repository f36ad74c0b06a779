// Public surface of the LLM providers: import from 'providers/llm' rather than from its files.
export * from './types';
export * from './errors';
export * from './registry';
export * from './pricing';
export * from './model-resolution';
export { LocalProvider, LOCAL_MODEL_ID, LOCAL_PROVIDER_NAME } from './local';
export { OpenAICompatibleProvider, type OpenAICompatibleOptions } from './openai-compatible';
export { AnthropicProvider, ANTHROPIC_DEFAULT_MAX_TOKENS, type AnthropicOptions } from './anthropic';
export { DEFAULT_TIMEOUT_MS } from './deadline';
export * from './runtime-target';
