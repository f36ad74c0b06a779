// The API's wiring of the LLM pieces, built once per AppContext: the encryptor for stored
// credentials, the project resolver (settings + credentials + platform env → provider client)
// and the price table. Shared by the chat endpoints and the LLM settings routes.
import { Encryptor } from '../../lib/encryption';
import { ApiError } from '../../lib/errors';
import { CredentialDecryptionError, loadDecryptedLlmCredentials } from '../../db/llm-credential';
import { getProjectLlmSettings } from '../../db/llm-settings';
import {
  createProjectLlmResolver,
  DEFAULT_PRICE_TABLE,
  estimateCost,
  mergePriceTable,
  parsePriceTable,
  platformLlmConfig,
  type PriceTable,
  type ProjectLlmQuery,
  type ResolvedProjectLlm,
} from '../../providers/llm';
import { type AppContext } from '../context';

export interface ApiLlmRuntime {
  encryptor: Encryptor | null;
  resolve(query: ProjectLlmQuery): Promise<ResolvedProjectLlm>;
  priceTable: PriceTable;
  /** USD or null; `model` as served (or resolved), priced under its provider. */
  cost(provider: string, model: string, usage: { inputTokens: number; outputTokens: number }): number | null;
}

const runtimes = new WeakMap<AppContext, ApiLlmRuntime>();

function loadPriceTable(ctx: AppContext): PriceTable {
  if (!ctx.config.LLM_PRICE_TABLE) return { ...DEFAULT_PRICE_TABLE };
  try {
    return mergePriceTable(parsePriceTable(ctx.config.LLM_PRICE_TABLE));
  } catch (err) {
    ctx.logger.error({ err }, 'LLM_PRICE_TABLE is not a valid price table; using the built-in prices');
    return { ...DEFAULT_PRICE_TABLE };
  }
}

export function llmRuntime(ctx: AppContext): ApiLlmRuntime {
  const existing = runtimes.get(ctx);
  if (existing) return existing;
  const encryptor = ctx.config.ENCRYPTION_KEY ? new Encryptor(ctx.config.ENCRYPTION_KEY) : null;
  const resolve = createProjectLlmResolver({
    loadSettings: (tenantId, projectId) => getProjectLlmSettings(ctx.models.LlmSettings, tenantId, projectId),
    loadCredentials: (tenantId, projectId) => loadDecryptedLlmCredentials(ctx.models.LlmCredential, encryptor, tenantId, projectId),
    platform: platformLlmConfig(ctx.config),
  });
  const priceTable = loadPriceTable(ctx);
  const runtime: ApiLlmRuntime = {
    encryptor,
    resolve,
    priceTable,
    cost: (provider, model, usage) => estimateCost(`${provider}:${model}`, usage, priceTable),
  };
  runtimes.set(ctx, runtime);
  return runtime;
}

/** The encryptor, or 503 when ENCRYPTION_KEY is not set. */
export function requireEncryptor(ctx: AppContext): Encryptor {
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
