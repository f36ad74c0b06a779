// Price table lookups, cost estimates and the model resolution cascade (pure functions).
import {
  inferProvider,
  parseModelId,
  resolveModel,
  type TierMap,
} from '../../../providers/llm/model-resolution';
import {
  DEFAULT_PRICE_TABLE,
  estimateCost,
  lookupPrice,
  mergePriceTable,
  parsePriceTable,
} from '../../../providers/llm/pricing';

describe('estimateCost', () => {
  it('prices input and output tokens per million', () => {
    expect(estimateCost('gpt-4o-mini', { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(0.75);
    expect(estimateCost('claude-sonnet-4-5', { inputTokens: 2000, outputTokens: 1000 })).toBe(0.021);
  });

  it('is zero for the local model and null for an unknown model', () => {
    expect(estimateCost('local', { inputTokens: 5000, outputTokens: 5000 })).toBe(0);
    expect(estimateCost('mystery-model-7b', { inputTokens: 10, outputTokens: 10 })).toBeNull();
  });

  it('finds dated snapshots and provider-qualified ids under their base model', () => {
    expect(lookupPrice('gpt-4o-mini-2024-07-18')).toEqual(DEFAULT_PRICE_TABLE['gpt-4o-mini']);
    expect(lookupPrice('claude-sonnet-4-5-20250929')).toEqual(DEFAULT_PRICE_TABLE['claude-sonnet-4-5']);
    expect(lookupPrice('openai:gpt-4o')).toEqual(DEFAULT_PRICE_TABLE['gpt-4o']);
    // gpt-4o's price must not leak onto a different model that merely starts with its name.
    expect(lookupPrice('gpt-4o-audio-preview')).toBeUndefined();
  });

  it('uses a configured table, where a qualified entry beats a bare one', () => {
    const table = mergePriceTable({
      'openai:llama3.1:8b': { inputPerMillion: 0.01, outputPerMillion: 0.02 },
      'gpt-4o-mini': { inputPerMillion: 0.1, outputPerMillion: 0.5 },
      'openai:gpt-4o-mini': { inputPerMillion: 0.2, outputPerMillion: 0.4 },
    });
    expect(estimateCost('openai:llama3.1:8b', { inputTokens: 1_000_000, outputTokens: 0 }, table)).toBe(0.01);
    expect(estimateCost('openai:gpt-4o-mini', { inputTokens: 1_000_000, outputTokens: 1_000_000 }, table)).toBe(0.6);
    expect(estimateCost('claude-haiku-4-5', { inputTokens: 1_000_000, outputTokens: 0 }, table)).toBe(1);
    expect(estimateCost('claude-haiku-4-5', { inputTokens: 1_000_000, outputTokens: 0 }, {})).toBeNull();
  });

  it('parses a JSON table and rejects negative or missing prices', () => {
    expect(parsePriceTable('{"my-model":{"inputPerMillion":1,"outputPerMillion":2}}')).toEqual({
      'my-model': { inputPerMillion: 1, outputPerMillion: 2 },
    });
    expect(() => parsePriceTable('{"my-model":{"inputPerMillion":-1,"outputPerMillion":2}}')).toThrow();
    expect(() => parsePriceTable('{"my-model":{"inputPerMillion":1}}')).toThrow();
  });
});

describe('parseModelId', () => {
  it('reads provider prefixes and infers the provider of bare ids', () => {
    expect(parseModelId('openai:gpt-4o-mini')).toEqual({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(parseModelId('anthropic:claude-sonnet-4-5')).toEqual({ provider: 'anthropic', model: 'claude-sonnet-4-5' });
    expect(parseModelId('claude-haiku-4-5')).toEqual({ provider: 'anthropic', model: 'claude-haiku-4-5' });
    expect(parseModelId('gpt-4.1')).toEqual({ provider: 'openai', model: 'gpt-4.1' });
    expect(parseModelId('o4-mini')).toEqual({ provider: 'openai', model: 'o4-mini' });
    expect(parseModelId('local')).toEqual({ provider: 'local', model: 'local' });
  });

  it('keeps colons inside self-hosted model names and refuses what it cannot place', () => {
    expect(parseModelId('openai:llama3.1:8b')).toEqual({ provider: 'openai', model: 'llama3.1:8b' });
    expect(parseModelId('llama3.1:8b')).toBeUndefined();
    expect(parseModelId('mistral-large')).toBeUndefined();
    expect(parseModelId('openai:')).toBeUndefined();
    expect(inferProvider('ollama-thing')).toBeUndefined();
  });
});

describe('resolveModel', () => {
  const tierMap: TierMap = { fast: 'openai:gpt-4o-mini', balanced: 'claude-sonnet-4-5', powerful: 'anthropic:claude-opus-4-5' };

  it('prefers the request modelId over everything', () => {
    expect(
      resolveModel({ requestModelId: 'gpt-4.1', tier: 'fast', agentModel: 'claude-haiku-4-5', projectDefault: 'local', tierMap }),
    ).toEqual({ modelId: 'gpt-4.1', provider: 'openai', source: 'request' });
  });

  it('then the request tier, through the tier map', () => {
    expect(resolveModel({ tier: 'powerful', agentModel: 'local', tierMap })).toEqual({
      modelId: 'claude-opus-4-5',
      provider: 'anthropic',
      source: 'tier',
    });
  });

  it('then the agent model, which may name a tier', () => {
    expect(resolveModel({ agentModel: 'claude-haiku-4-5', projectDefault: 'local', tierMap })).toEqual({
      modelId: 'claude-haiku-4-5',
      provider: 'anthropic',
      source: 'agent',
    });
    expect(resolveModel({ agentModel: 'fast', projectDefault: 'local', tierMap })).toEqual({
      modelId: 'gpt-4o-mini',
      provider: 'openai',
      source: 'agent',
    });
  });

  it('then the project default, then the default tier', () => {
    expect(resolveModel({ projectDefault: 'local', defaultTier: 'balanced', tierMap })).toEqual({
      modelId: 'local',
      provider: 'local',
      source: 'project',
    });
    expect(resolveModel({ defaultTier: 'balanced', tierMap })).toEqual({
      modelId: 'claude-sonnet-4-5',
      provider: 'anthropic',
      source: 'tier',
    });
  });

  it('returns null when nothing is configured (the caller answers 503)', () => {
    expect(resolveModel({ tierMap })).toBeNull();
    expect(resolveModel({ tierMap: {}, defaultTier: 'balanced' })).toBeNull();
  });

  it('returns null rather than silently using another model when the chosen value cannot be resolved', () => {
    expect(resolveModel({ tier: 'fast', agentModel: 'local', tierMap: { balanced: 'local' } })).toBeNull();
    expect(resolveModel({ requestModelId: 'mistral-large', projectDefault: 'local', tierMap })).toBeNull();
  });

  it('ignores blank values', () => {
    expect(resolveModel({ requestModelId: ' ', agentModel: '', projectDefault: 'local', tierMap })?.source).toBe('project');
  });
});
