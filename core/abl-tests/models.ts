// Where a scenario run's models come from: the platform's settings for the CLI (the offline
// `local` model unless LLM_TIER_* and a provider key say otherwise), and a project's own LLM
// settings and credentials for the route, through the same resolver the chat endpoints use.
import { createProjectLlmResolver, platformLlmConfig, type ResolvedProjectLlm } from '../../providers/llm';
import type { ResolveModel } from './runner';

type Resolve = (query: { tenantId: string; projectId: string; modelId?: string; agentModel?: string }) => Promise<ResolvedProjectLlm>;

/**
 * A ResolveModel over a project resolver. `force` replaces every agent's model (the CLI's
 * `--model`); otherwise a call's model is the agent's EXECUTION model, else the project's default.
 */
export function modelResolver(resolve: Resolve, scope: { tenantId: string; projectId: string }, force?: string): ResolveModel {
  return async (model) => {
    const chosen = force ?? model;
    const resolved = await resolve({ ...scope, ...(chosen ? { agentModel: chosen } : {}) });
    if (!resolved.ok) throw new Error(`Runtime not configured: ${resolved.reason}`);
    return { llm: resolved.llm, provider: resolved.target.provider.provider, model: resolved.target.modelId };
  };
}

/** The CLI's models: the platform's tiers and keys from the environment; a tier left unset is the offline model. */
export function platformModelResolver(env: Record<string, string | undefined>, force?: string): ResolveModel {
  const timeout = Number(env['LLM_TIMEOUT_MS']);
  const platform = platformLlmConfig({
    LLM_TIER_FAST: env['LLM_TIER_FAST'] || 'local',
    LLM_TIER_BALANCED: env['LLM_TIER_BALANCED'] || 'local',
    LLM_TIER_POWERFUL: env['LLM_TIER_POWERFUL'] || 'local',
    ...(env['OPENAI_API_KEY'] ? { OPENAI_API_KEY: env['OPENAI_API_KEY'] } : {}),
    ...(env['OPENAI_BASE_URL'] ? { OPENAI_BASE_URL: env['OPENAI_BASE_URL'] } : {}),
    ...(env['ANTHROPIC_API_KEY'] ? { ANTHROPIC_API_KEY: env['ANTHROPIC_API_KEY'] } : {}),
    ...(env['ANTHROPIC_BASE_URL'] ? { ANTHROPIC_BASE_URL: env['ANTHROPIC_BASE_URL'] } : {}),
    ...(Number.isFinite(timeout) && timeout > 0 ? { LLM_TIMEOUT_MS: timeout } : {}),
  });
  const resolve = createProjectLlmResolver({ loadSettings: async () => null, loadCredentials: async () => [], platform });
  return modelResolver(resolve, { tenantId: 'cli', projectId: 'cli' }, force);
}
