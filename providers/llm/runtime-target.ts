// Where one LLM call goes: the model (request > tier > agent > project default > `balanced`)
// and the credentials for its provider (project credential > platform env credential; `local`
// needs none). Pure resolution over plain data, plus a small injected-loader wrapper and a
// client cache shared by the chat endpoints and the agent runtime.
import { createHash } from 'node:crypto';
import { createLlmProvider, type LlmProviderConfig } from './registry';
import { MODEL_TIERS, resolveModel, type ModelSource, type ModelTier, type TierMap } from './model-resolution';
import { type LlmProvider, type LlmProviderName } from './types';

type KeyedProvider = Exclude<LlmProviderName, 'local'>;

/** Platform-wide LLM configuration (from LLM_TIER_*, *_API_KEY, *_BASE_URL, LLM_TIMEOUT_MS). */
export interface PlatformLlmConfig {
  tierMap: TierMap;
  credentials: Partial<Record<KeyedProvider, { apiKey: string; baseURL?: string }>>;
  timeoutMs?: number;
}

/** The configuration variables `platformLlmConfig` reads (a subset of lib/config's Config). */
export interface PlatformLlmEnv {
  LLM_TIER_FAST?: string;
  LLM_TIER_BALANCED?: string;
  LLM_TIER_POWERFUL?: string;
  OPENAI_API_KEY?: string;
  OPENAI_BASE_URL?: string;
  ANTHROPIC_API_KEY?: string;
  ANTHROPIC_BASE_URL?: string;
  LLM_TIMEOUT_MS?: number;
}

export function platformLlmConfig(env: PlatformLlmEnv): PlatformLlmConfig {
  const tierMap: TierMap = {};
  if (env.LLM_TIER_FAST) tierMap.fast = env.LLM_TIER_FAST;
  if (env.LLM_TIER_BALANCED) tierMap.balanced = env.LLM_TIER_BALANCED;
  if (env.LLM_TIER_POWERFUL) tierMap.powerful = env.LLM_TIER_POWERFUL;
  const credentials: PlatformLlmConfig['credentials'] = {};
  if (env.OPENAI_API_KEY) credentials.openai = { apiKey: env.OPENAI_API_KEY, ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}) };
  if (env.ANTHROPIC_API_KEY) {
    credentials.anthropic = { apiKey: env.ANTHROPIC_API_KEY, ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}) };
  }
  return { tierMap, credentials, ...(env.LLM_TIMEOUT_MS !== undefined ? { timeoutMs: env.LLM_TIMEOUT_MS } : {}) };
}

/** A project's LLM settings, as plain data. */
export interface ProjectLlmConfig {
  /** A model id or a tier name. */
  defaultModel?: string | null;
  /** Tier → model id; a set value replaces the platform's mapping for this project. */
  tierOverrides?: Partial<Record<ModelTier, string | null>>;
}

/** A project credential, already decrypted. */
export interface ProjectLlmCredential {
  provider: string;
  apiKey: string;
  baseURL?: string | null;
}

export interface RuntimeTargetRequest {
  /** The request's `modelId`. */
  modelId?: string;
  /** The request's `tier`. */
  tier?: ModelTier;
  /** The agent's model or tier (runtime only). */
  agentModel?: string;
}

export interface RuntimeTargetInput {
  request: RuntimeTargetRequest;
  settings?: ProjectLlmConfig | null;
  credentials?: readonly ProjectLlmCredential[];
  platform: PlatformLlmConfig;
  /** @default 'balanced' */
  defaultTier?: ModelTier;
}

export interface RuntimeTarget {
  /** Options for `createLlmProvider` (holds the API key: keep it in memory only). */
  provider: LlmProviderConfig;
  /** The provider's own model id. */
  modelId: string;
  /** Which step of the cascade chose the model. */
  source: ModelSource;
  /** Where the credential came from. */
  credentialSource: 'project' | 'platform' | 'none';
}

export type RuntimeTargetResult = { ok: true; target: RuntimeTarget } | { ok: false; reason: string };

/** The platform tier map with the project's overrides applied. */
export function effectiveTierMap(platform: TierMap, overrides: ProjectLlmConfig['tierOverrides'] = {}): TierMap {
  const map: TierMap = { ...platform };
  for (const tier of MODEL_TIERS) {
    const value = overrides?.[tier];
    if (value) map[tier] = value;
  }
  return map;
}

function describeUnresolved(input: RuntimeTargetInput, tierMap: TierMap): string {
  const { request, settings } = input;
  const defaultTier = input.defaultTier ?? 'balanced';
  if (request.modelId) return `model "${request.modelId}" names no known provider`;
  if (request.tier) return `tier "${request.tier}" is not mapped to a model`;
  if (request.agentModel) return `the agent's model "${request.agentModel}" cannot be resolved`;
  if (settings?.defaultModel) return `the project's default model "${settings.defaultModel}" cannot be resolved`;
  return tierMap[defaultTier] ? `the default tier "${defaultTier}" maps to an unknown model` : `no model configured (tier "${defaultTier}" is not mapped)`;
}

/**
 * Resolves the model and credentials for one call. `ok: false` carries the reason the caller
 * reports as 503 "Runtime not configured: <reason>".
 */
export function resolveRuntimeTarget(input: RuntimeTargetInput): RuntimeTargetResult {
  const tierMap = effectiveTierMap(input.platform.tierMap, input.settings?.tierOverrides);
  const resolved = resolveModel({
    ...(input.request.modelId ? { requestModelId: input.request.modelId } : {}),
    ...(input.request.tier ? { tier: input.request.tier } : {}),
    ...(input.request.agentModel ? { agentModel: input.request.agentModel } : {}),
    ...(input.settings?.defaultModel ? { projectDefault: input.settings.defaultModel } : {}),
    tierMap,
    defaultTier: input.defaultTier ?? 'balanced',
  });
  if (!resolved) return { ok: false, reason: describeUnresolved(input, tierMap) };
  const timeout = input.platform.timeoutMs !== undefined ? { timeoutMs: input.platform.timeoutMs } : {};
  const base = { modelId: resolved.modelId, source: resolved.source };
  if (resolved.provider === 'local') {
    return { ok: true, target: { ...base, provider: { provider: 'local', ...timeout }, credentialSource: 'none' } };
  }
  const own = input.credentials?.find((c) => c.provider === resolved.provider);
  if (own) {
    return {
      ok: true,
      target: {
        ...base,
        provider: { provider: resolved.provider, apiKey: own.apiKey, ...(own.baseURL ? { baseURL: own.baseURL } : {}), ...timeout },
        credentialSource: 'project',
      },
    };
  }
  const platform = input.platform.credentials[resolved.provider];
  if (platform) {
    return {
      ok: true,
      target: {
        ...base,
        provider: { provider: resolved.provider, apiKey: platform.apiKey, ...(platform.baseURL ? { baseURL: platform.baseURL } : {}), ...timeout },
        credentialSource: 'platform',
      },
    };
  }
  return { ok: false, reason: `no credentials for provider "${resolved.provider}" (model "${resolved.modelId}")` };
}

/**
 * Reuses provider clients across calls (SDK clients are not free to build). Keyed by provider,
 * base URL, timeout and a hash of the key, so a rotated key gets a fresh client. Bounded.
 */
export class LlmProviderCache {
  private readonly clients = new Map<string, LlmProvider>();

  constructor(
    private readonly maxEntries = 256,
    private readonly create: (config: LlmProviderConfig) => LlmProvider = createLlmProvider,
  ) {}

  get(config: LlmProviderConfig): LlmProvider {
    const keyHash = config.apiKey === undefined ? '' : createHash('sha256').update(config.apiKey).digest('base64url');
    const key = [config.provider, config.baseURL ?? '', config.timeoutMs ?? '', keyHash, config.fetch ? 'guarded' : ''].join('\u0000');
    const cached = this.clients.get(key);
    if (cached) {
      // Refresh recency: Map iteration order is insertion order.
      this.clients.delete(key);
      this.clients.set(key, cached);
      return cached;
    }
    const created = this.create(config);
    this.clients.set(key, created);
    if (this.clients.size > this.maxEntries) {
      const oldest = this.clients.keys().next().value;
      if (oldest !== undefined) this.clients.delete(oldest);
    }
    return created;
  }
}

export interface ProjectLlmResolverDeps {
  loadSettings(tenantId: string, projectId: string): Promise<ProjectLlmConfig | null>;
  /** Decrypted credentials of the project. */
  loadCredentials(tenantId: string, projectId: string): Promise<readonly ProjectLlmCredential[]>;
  platform: PlatformLlmConfig;
  cache?: LlmProviderCache;
  /**
   * The fetch for calls to a base URL a project set (not the operator's *_BASE_URL): one that
   * enforces the destination rules (lib/net/destination), so a tenant cannot aim calls inside.
   */
  projectBaseUrlFetch?: typeof globalThis.fetch;
}

export interface ProjectLlmQuery extends RuntimeTargetRequest {
  tenantId: string;
  projectId: string;
}

export type ResolvedProjectLlm = { ok: true; target: RuntimeTarget; llm: LlmProvider } | { ok: false; reason: string };

/**
 * Loads a project's settings and credentials (in parallel, through the injected loaders),
 * resolves the target and returns a ready client. Used by the chat endpoints and meant for the
 * runtime's `ResolveLlmTarget`.
 */
export function createProjectLlmResolver(deps: ProjectLlmResolverDeps) {
  const cache = deps.cache ?? new LlmProviderCache();
  return async (query: ProjectLlmQuery): Promise<ResolvedProjectLlm> => {
    const [settings, credentials] = await Promise.all([
      deps.loadSettings(query.tenantId, query.projectId),
      deps.loadCredentials(query.tenantId, query.projectId),
    ]);
    const result = resolveRuntimeTarget({ request: query, settings, credentials, platform: deps.platform });
    if (!result.ok) return result;
    const { target } = result;
    const guarded = target.credentialSource === 'project' && target.provider.baseURL !== undefined && deps.projectBaseUrlFetch !== undefined;
    const provider = guarded ? { ...target.provider, fetch: deps.projectBaseUrlFetch } : target.provider;
    return { ok: true, target: { ...target, provider }, llm: cache.get(provider) };
  };
}
