// Builds the LlmProvider for a configured provider name; the single entry point callers use.
import { AnthropicProvider } from './anthropic';
import { LocalProvider } from './local';
import { OpenAICompatibleProvider } from './openai-compatible';
import type { LlmProvider, LlmProviderName } from './types';

export { LLM_PROVIDER_NAMES, isLlmProviderName, type LlmProviderName } from './types';

export interface LlmProviderConfig {
  provider: LlmProviderName;
  /** Ignored by `local`. */
  apiKey?: string;
  /** Points `openai` at Azure/vLLM/Ollama/LM Studio, or `anthropic` at a proxy or a fake. */
  baseURL?: string;
  /** Per-request timeout. @default 60000 */
  timeoutMs?: number;
  /** Ignored by `local`. Set for project base URLs: a fetch that enforces the destination rules. */
  fetch?: typeof globalThis.fetch;
}

export function createLlmProvider(config: LlmProviderConfig): LlmProvider {
  const { provider } = config;
  const common = {
    ...(config.apiKey !== undefined ? { apiKey: config.apiKey } : {}),
    ...(config.baseURL !== undefined ? { baseURL: config.baseURL } : {}),
    ...(config.timeoutMs !== undefined ? { timeoutMs: config.timeoutMs } : {}),
    ...(config.fetch !== undefined ? { fetch: config.fetch } : {}),
  };
  switch (provider) {
    case 'openai':
      return new OpenAICompatibleProvider(common);
    case 'anthropic':
      return new AnthropicProvider(common);
    case 'local':
      return new LocalProvider();
    default: {
      const unreachable: never = provider;
      throw new Error(`unknown LLM provider ${String(unreachable)}`);
    }
  }
}
