// Builds the activities' real dependencies from configuration and models: the project-aware
// model resolution (project settings and credentials over the platform's), the usage ledger,
// the session-bundle store (with this worker's bundle cache) and tool secrets (read from the
// encrypted store at each call). A project's LLM settings and credentials are reused for
// PROJECT_LLM_TTL_MS: a change reaches running sessions within that time.
import { encryptorFromConfig } from '../lib/encryption';
import { type Config } from '../lib/config';
import { type Logger } from '../lib/logger';
import { type Models } from '../db/models';
import { loadDecryptedLlmCredentials } from '../db/llm-credential';
import { getProjectLlmSettings } from '../db/llm-settings';
import { createLlmUsageRecorder } from '../db/llm-usage';
import {
  createProjectLlmResolver,
  estimateCost,
  priceTableFromConfig,
  platformLlmConfig,
} from '../providers/llm';
import { type ActivityDeps } from '../activities';
import { createSessionBundleStore } from '../activities/persistence/session-bundles';
import { type ResolveLlmTarget } from '../activities/llm/call-llm';
import { memoizePerProject } from '../lib/memoize-per-project';
import { destinationGuard, llmDestinationPolicy } from '../lib/net/destination';
import { secretMasterKeyRing } from '../lib/secret-envelope';
import { resolveToolSecretsWithHosts } from '../db/tool-secret';
import { createSecretVault } from '../db/tool-vault';
import { createModerationResolver } from '../providers/moderation/resolve';

/** How long the worker reuses a project's LLM settings and decrypted credentials. @default 5000 */
export const PROJECT_LLM_TTL_MS = 5_000;

export function createActivityDeps(options: { config: Config; models: Models; logger: Logger }): ActivityDeps {
  const { config, models, logger } = options;
  const encryptor = encryptorFromConfig(config);
  const settings = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, projectId) => getProjectLlmSettings(models.LlmSettings, tenantId, projectId));
  const credentials = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, projectId) => loadDecryptedLlmCredentials(models.LlmCredential, encryptor, tenantId, projectId));
  const resolveProject = createProjectLlmResolver({
    loadSettings: settings.get,
    loadCredentials: credentials.get,
    platform: platformLlmConfig(config),
    projectBaseUrlFetch: destinationGuard(llmDestinationPolicy(config)).fetch,
  });
  // The agent's EXECUTION.model (a model id or tier) wins, then the project default, then the
  // balanced tier.
  const resolveLlm: ResolveLlmTarget = async (query) => {
    const resolved = await resolveProject({ tenantId: query.tenantId, projectId: query.projectId, ...(query.modelId ? { agentModel: query.modelId } : {}) });
    if (!resolved.ok) return null;
    return { provider: resolved.llm, providerName: resolved.target.provider.provider, modelId: resolved.target.modelId };
  };
  // Tool secrets are read at each call, so a rotation is seen by the very next one.
  const masterKeys = secretMasterKeyRing(config);
  const prices = priceTableFromConfig(config.LLM_PRICE_TABLE);
  const recordUsage = createLlmUsageRecorder(models.LlmUsage, (usage) =>
    estimateCost(`${usage.provider}:${usage.modelId}`, { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }, prices),
  );
  return {
    config,
    models,
    logger,
    resolveLlm,
    recordUsage,
    sessionBundles: createSessionBundleStore({ models, cacheSize: config.SESSION_BUNDLE_CACHE_SIZE }),
    resolveToolSecrets: (query) => resolveToolSecretsWithHosts(models, masterKeys, query),
    secretVault: createSecretVault(models, masterKeys),
    encryptor,
    // Moderation uses the project's OpenAI LLM credential (same cache, same destination rules).
    resolveModeration: createModerationResolver({
      env: config,
      loadCredentials: credentials.get,
      projectBaseUrlFetch: destinationGuard(llmDestinationPolicy(config)).fetch,
    }),
  };
}
