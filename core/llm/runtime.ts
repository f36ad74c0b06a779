// A process's wiring of the LLM pieces, built once per context: the encryptor for stored
// credentials, the project resolver (settings + credentials + platform env → provider client)
// and the price table. Shared by the chat endpoints, agent turns, callbacks and the LLM settings routes.
// A project's settings and credentials are reused for PROJECT_LLM_TTL_MS; a write through this
// process (any successful non-GET under /api/projects/:projectId: core/projects/writes.ts) drops
// them at once, so only other replicas can see a change late, by at most that long.
import { encryptorFromConfig, type Encryptor } from '../../lib/encryption';
import { ApiError } from '../../lib/errors';
import { CredentialDecryptionError, loadDecryptedLlmCredentials } from '../../db/llm-credential';
import { getProjectLlmSettings } from '../../db/llm-settings';
import {
  createProjectLlmResolver,
  estimateCost,
  priceTableFromConfig,
  platformLlmConfig,
  type PriceTable,
  type ProjectLlmQuery,
  type ResolvedProjectLlm,
} from '../../providers/llm';
import { type CoreContext } from '../context';
import { onProjectWrite } from '../projects/writes';
import { memoizePerProject } from '../../lib/memoize-per-project';
import { destinationGuard, llmDestinationPolicy } from '../../lib/net/destination';

/** How long a project's LLM settings and decrypted credentials are reused. @default 5000 */
export const PROJECT_LLM_TTL_MS = 5_000;

export interface ApiLlmRuntime {
  encryptor: Encryptor | null;
  resolve(query: ProjectLlmQuery): Promise<ResolvedProjectLlm>;
  priceTable: PriceTable;
  /** USD or null; `model` as served (or resolved), priced under its provider. */
  cost(provider: string, model: string, usage: { inputTokens: number; outputTokens: number }): number | null;
}

const runtimes = new WeakMap<CoreContext, ApiLlmRuntime>();

export function llmRuntime(ctx: CoreContext): ApiLlmRuntime {
  const existing = runtimes.get(ctx);
  if (existing) return existing;
  const encryptor = encryptorFromConfig(ctx.config);
  const settings = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, projectId) => getProjectLlmSettings(ctx.models.LlmSettings, tenantId, projectId));
  const credentials = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, projectId) =>
    loadDecryptedLlmCredentials(ctx.models.LlmCredential, encryptor, tenantId, projectId),
  );
  onProjectWrite(ctx, (tenantId, projectId) => {
    settings.forget(tenantId, projectId);
    credentials.forget(tenantId, projectId);
  });
  const resolve = createProjectLlmResolver({
    loadSettings: settings.get,
    loadCredentials: credentials.get,
    platform: platformLlmConfig(ctx.config),
    projectBaseUrlFetch: destinationGuard(llmDestinationPolicy(ctx.config)).fetch,
  });
  const priceTable = priceTableFromConfig(ctx.config.LLM_PRICE_TABLE);
  const runtime: ApiLlmRuntime = {
    encryptor,
    resolve,
    priceTable,
    cost: (provider, model, usage) => estimateCost(`${provider}:${model}`, usage, priceTable),
  };
  runtimes.set(ctx, runtime);
  return runtime;
}

/** The encryptor, or 503 when no master key (ENCRYPTION_KEYS or ENCRYPTION_KEY) is set. */
export function requireEncryptor(ctx: CoreContext): Encryptor {
  const { encryptor } = llmRuntime(ctx);
  if (!encryptor) throw new ApiError('SERVICE_UNAVAILABLE', 'encryption not configured');
  return encryptor;
}

/** Maps a resolution failure (or an unreadable credential) to 503 "Runtime not configured: …". */
export function runtimeNotConfigured(reason: string): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', `Runtime not configured: ${reason}`);
}

export function isCredentialDecryptionError(err: unknown): err is CredentialDecryptionError {
  return err instanceof CredentialDecryptionError;
}
