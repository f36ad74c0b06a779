// Picks the model for a call from the request, the agent, the project and the tier map — a pure
// function. `null` means nothing is configured: the caller answers 503 "runtime not configured".
import { isLlmProviderName, type LlmProviderName } from './types';

export const MODEL_TIERS = ['fast', 'balanced', 'powerful'] as const;
export type ModelTier = (typeof MODEL_TIERS)[number];

export type ModelSource = 'request' | 'agent' | 'project' | 'tier';

/** Model ids per tier, each written like any model id (`openai:gpt-4o-mini`, `claude-haiku-4-5`, `local`). */
export type TierMap = Partial<Record<ModelTier, string>>;

export interface ResolveModelInput {
  /** `modelId` from the request body. */
  requestModelId?: string;
  /** `tier` from the request body. */
  tier?: ModelTier;
  /** The agent's MODEL: a model id or a tier name. */
  agentModel?: string;
  /** The project's default model: a model id or a tier name. */
  projectDefault?: string;
  tierMap: TierMap;
  /** Tier used when nothing else names a model (e.g. `balanced`); omit for "no fallback". */
  defaultTier?: ModelTier;
}

export interface ResolvedModel {
  /** The provider's own model id, without the `provider:` prefix. */
  modelId: string;
  provider: LlmProviderName;
  source: ModelSource;
}

export interface ParsedModelId {
  provider: LlmProviderName;
  model: string;
}

export function isModelTier(value: string): value is ModelTier {
  return (MODEL_TIERS as readonly string[]).includes(value);
}

/** Provider of a bare model id, from its name; undefined when the name says nothing. */
export function inferProvider(model: string): LlmProviderName | undefined {
  if (model === 'local') return 'local';
  if (/^(gpt-|chatgpt-|o\d)/i.test(model)) return 'openai';
  if (/^claude-/i.test(model)) return 'anthropic';
  return undefined;
}

/** `abc` → `[Aa][Bb][Cc]`: a case-insensitive literal every regular-expression dialect reads alike. */
function anyCase(word: string): string {
  return [...word].map((c) => (/[a-z]/.test(c) ? `[${c.toUpperCase()}${c}]` : c)).join('');
}

const MODEL_CHARS = '[!-~]'; // printable ASCII, no space
const MODEL_ID_SOURCE =
  `(?:${anyCase('openai')}|${anyCase('anthropic')}):${MODEL_CHARS}+` +
  `|${anyCase('local')}:${MODEL_CHARS}*|local` +
  `|(?:${anyCase('gpt-')}|${anyCase('chatgpt-')}|[Oo][0-9]|${anyCase('claude-')})${MODEL_CHARS}*`;

/**
 * The model ids the API takes, as one pattern for the OpenAPI document: a known provider
 * prefix, or a name whose provider can be inferred (see inferProvider); printable ASCII without
 * spaces. Every id it matches parses with parseModelId.
 */
export const MODEL_ID_PATTERN = new RegExp(`^(?:${MODEL_ID_SOURCE})$`);

/** A tier name (any case) or a model id (MODEL_ID_PATTERN). */
export const MODEL_OR_TIER_PATTERN = new RegExp(`^(?:${MODEL_TIERS.map(anyCase).join('|')}|${MODEL_ID_SOURCE})$`);

/**
 * `openai:gpt-4o-mini` → { openai, gpt-4o-mini }; `claude-sonnet-4-5` → { anthropic, … }.
 * Only a known provider name counts as a prefix, so `openai:llama3.1:8b` keeps its own colon.
 * Undefined when the provider is neither written nor inferable (write `openai:<model>` for
 * self-hosted models).
 */
export function parseModelId(id: string): ParsedModelId | undefined {
  const trimmed = id.trim();
  const colon = trimmed.indexOf(':');
  if (colon > 0) {
    const prefix = trimmed.slice(0, colon).toLowerCase();
    const model = trimmed.slice(colon + 1);
    if (isLlmProviderName(prefix)) {
      if (prefix === 'local') return { provider: 'local', model: 'local' };
      return model === '' ? undefined : { provider: prefix, model };
    }
  }
  if (trimmed === '') return undefined;
  const provider = inferProvider(trimmed);
  return provider ? { provider, model: trimmed } : undefined;
}

/** A model id or tier name → a model, through the tier map for tier names. */
function resolveReference(reference: string, tierMap: TierMap): ParsedModelId | undefined {
  const trimmed = reference.trim();
  if (isModelTier(trimmed.toLowerCase())) {
    const mapped = tierMap[trimmed.toLowerCase() as ModelTier];
    return mapped === undefined ? undefined : parseModelId(mapped);
  }
  return parseModelId(trimmed);
}

/**
 * First hit wins: request `modelId` → request `tier` → agent model → project default →
 * `defaultTier`. Agent and project values may be tier names. A value that is present but
 * cannot be resolved (unknown tier mapping, unknown provider) stops the cascade with `null`
 * rather than silently using another model.
 */
export function resolveModel(input: ResolveModelInput): ResolvedModel | null {
  const steps: { value: string | undefined; source: ModelSource }[] = [
    { value: input.requestModelId, source: 'request' },
    { value: input.tier, source: 'tier' },
    { value: input.agentModel, source: 'agent' },
    { value: input.projectDefault, source: 'project' },
    { value: input.defaultTier, source: 'tier' },
  ];
  for (const { value, source } of steps) {
    if (value === undefined || value.trim() === '') continue;
    const parsed = resolveReference(value, input.tierMap);
    if (!parsed) return null;
    return { modelId: parsed.model, provider: parsed.provider, source };
  }
  return null;
}
