// Builds the activities' real dependencies from configuration and models: the project-aware
// model resolution (project settings and credentials over the platform's), the usage ledger,
// the compiled-agent loader and tool secrets.
import { Encryptor } from '../lib/encryption';
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';
import { loadDecryptedLlmCredentials } from '../db/llm-credential';
import { getProjectLlmSettings } from '../db/llm-settings';
import { createLlmUsageRecorder } from '../db/llm-usage';
import {
  createProjectLlmResolver,
  DEFAULT_PRICE_TABLE,
  estimateCost,
  mergePriceTable,
  parsePriceTable,
  platformLlmConfig,
  type PriceTable,
} from '../providers/llm';
import { type ActivityDeps } from '../activities';
import { createLoadCompiledProject } from '../activities/persistence/load-compiled-project';
import { type ResolveLlmTarget } from '../activities/llm/call-llm';

function priceTable(config: Config, logger: Logger): PriceTable {
  if (!config.LLM_PRICE_TABLE) return { ...DEFAULT_PRICE_TABLE };
  try {
    return mergePriceTable(parsePriceTable(config.LLM_PRICE_TABLE));
  } catch (err) {
    logger.error({ err }, 'LLM_PRICE_TABLE is not a valid price table; using the built-in prices');
    return { ...DEFAULT_PRICE_TABLE };
  }
}

export function createActivityDeps(options: { config: Config; models: Models; logger: Logger }): ActivityDeps {
  const { config, models, logger } = options;
  const encryptor = config.ENCRYPTION_KEY ? new Encryptor(config.ENCRYPTION_KEY) : null;
  const resolveProject = createProjectLlmResolver({
    loadSettings: (tenantId, projectId) => getProjectLlmSettings(models.LlmSettings, tenantId, projectId),
    loadCredentials: (tenantId, projectId) => loadDecryptedLlmCredentials(models.LlmCredential, encryptor, tenantId, projectId),
    platform: platformLlmConfig(config),
  });
  // The agent's EXECUTION.model (a model id or tier) wins, then the project default, then the
  // balanced tier.
  const resolveLlm: ResolveLlmTarget = async (query) => {
    const resolved = await resolveProject({ tenantId: query.tenantId, projectId: query.projectId, ...(query.modelId ? { agentModel: query.modelId } : {}) });
    if (!resolved.ok) return null;
    return { provider: resolved.llm, providerName: resolved.target.provider.provider, modelId: resolved.target.modelId };
  };
  const prices = priceTable(config, logger);
  const recordUsage = createLlmUsageRecorder(models.LlmUsage, (usage) =>
    estimateCost(`${usage.provider}:${usage.modelId}`, { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }, prices),
  );
  return {
    config,
    models,
    logger,
    resolveLlm,
    recordUsage,
    loadCompiledProject: createLoadCompiledProject({ models }),
    resolveToolSecrets: async () => ({}),
  };
}
