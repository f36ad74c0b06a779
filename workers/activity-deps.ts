// Builds the activities' real dependencies from configuration and models: model resolution and
// provider clients, usage recording, the compiled-agent loader and tool secrets.
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';
import { createLlmProvider, estimateCost, resolveModel, type LlmProvider } from '../providers/llm';
import { type ActivityDeps } from '../activities';
import { createLoadCompiledProject } from '../activities/persistence/load-compiled-project';
import { type LlmTarget, type ResolveLlmTarget } from '../activities/llm/call-llm';

/** Resolves tiers to models with the platform credentials of the environment; clients are cached. */
export function createPlatformLlmResolver(config: Config): ResolveLlmTarget {
  const clients = new Map<string, LlmProvider>();
  const client = (provider: 'openai' | 'anthropic' | 'local'): LlmProvider | null => {
    const cached = clients.get(provider);
    if (cached) return cached;
    const credentials =
      provider === 'openai'
        ? config.OPENAI_API_KEY && { apiKey: config.OPENAI_API_KEY, baseURL: config.OPENAI_BASE_URL }
        : provider === 'anthropic'
          ? config.ANTHROPIC_API_KEY && { apiKey: config.ANTHROPIC_API_KEY, baseURL: config.ANTHROPIC_BASE_URL }
          : {};
    if (!credentials) return null;
    const created = createLlmProvider({ provider, ...credentials, timeoutMs: config.LLM_TIMEOUT_MS });
    clients.set(provider, created);
    return created;
  };
  const tierMap = { fast: config.LLM_TIER_FAST, balanced: config.LLM_TIER_BALANCED, powerful: config.LLM_TIER_POWERFUL };
  return async (query): Promise<LlmTarget | null> => {
    const resolved = resolveModel({ agentModel: query.modelId ?? undefined, tier: query.modelId ? undefined : query.tier, tierMap });
    if (!resolved) return null;
    const provider = client(resolved.provider as 'openai' | 'anthropic' | 'local');
    return provider ? { provider, providerName: resolved.provider, modelId: resolved.modelId } : null;
  };
}

export function createActivityDeps(options: { config: Config; models: Models; logger: Logger }): ActivityDeps {
  const { config, models, logger } = options;
  return {
    config,
    models,
    logger,
    resolveLlm: createPlatformLlmResolver(config),
    recordUsage: async (usage) => ({
      estimatedCost: estimateCost(usage.modelId, { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }),
    }),
    loadCompiledProject: createLoadCompiledProject({ models }),
    resolveToolSecrets: async () => ({}),
  };
}
