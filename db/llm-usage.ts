// The LLM usage ledger: one record per LLM call, from the completion endpoints (`source: api`)
// and from agent sessions (`source: agent`, written by the runtime's activities through
// `recordLlmUsage`). GET /api/v1/chat/usage sums it over an indexed, tenant-scoped range.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';
import { driverCollection } from './driver-collection';

export const LLM_USAGE_SOURCES = ['api', 'agent'] as const;
export type LlmUsageSource = (typeof LLM_USAGE_SOURCES)[number];

/**
 * `ok`: the call finished; `error`: the provider failed; `aborted`: the client went away, or the
 * request was refused after its speculative upstream call had started (chat/stream).
 */
export const LLM_CALL_STATUSES = ['ok', 'error', 'aborted'] as const;
export type LlmCallStatus = (typeof LLM_CALL_STATUSES)[number];

export interface LlmUsageDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string | null;
  /** The resolved model id (no provider prefix), stable for grouping. */
  modelId: string;
  /** The model the provider said served the call (often a dated snapshot); null when unknown. */
  servedModel: string | null;
  provider: string;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** USD; null when the model's price is unknown or the usage was never reported. */
  cost: number | null;
  latencyMs: number;
  source: LlmUsageSource;
  status: LlmCallStatus;
  createdAt: Date;
}

const LlmUsageSchema = new Schema<LlmUsageDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, default: null },
    modelId: { type: String, required: true },
    servedModel: { type: String, default: null },
    provider: { type: String, required: true },
    inputTokens: { type: Number, required: true, min: 0 },
    outputTokens: { type: Number, required: true, min: 0 },
    totalTokens: { type: Number, required: true, min: 0 },
    cost: { type: Number, default: null },
    latencyMs: { type: Number, required: true, min: 0 },
    source: { type: String, required: true, enum: LLM_USAGE_SOURCES },
    status: { type: String, required: true, enum: LLM_CALL_STATUSES, default: 'ok' },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
LlmUsageSchema.index({ tenantId: 1, projectId: 1, createdAt: 1 });

export type LlmUsageModel = Model<LlmUsageDoc>;
export const llmUsageModel = (c: Connection): LlmUsageModel => c.model<LlmUsageDoc>('LlmUsage', LlmUsageSchema, 'llm_usage');

export interface LlmUsageEntry {
  /** A caller-chosen id makes the write idempotent (a retried runtime call is recorded once). */
  id?: string;
  tenantId: string;
  projectId: string;
  sessionId?: string | null;
  modelId: string;
  servedModel?: string | null;
  provider: string;
  inputTokens: number;
  outputTokens: number;
  cost: number | null;
  latencyMs: number;
  source: LlmUsageSource;
  status?: LlmCallStatus;
  /** @default now */
  createdAt?: Date;
}

/**
 * Records one LLM call. The single writer of the ledger: the chat endpoints call it, and so do
 * the runtime's LLM activities for agent-session calls (`source: 'agent'`).
 */
export async function recordLlmUsage(model: LlmUsageModel, entry: LlmUsageEntry): Promise<void> {
  const doc: LlmUsageDoc = {
    _id: entry.id ?? newId(),
    tenantId: entry.tenantId,
    projectId: entry.projectId,
    sessionId: entry.sessionId ?? null,
    modelId: entry.modelId,
    servedModel: entry.servedModel ?? null,
    provider: entry.provider,
    inputTokens: entry.inputTokens,
    outputTokens: entry.outputTokens,
    totalTokens: entry.inputTokens + entry.outputTokens,
    cost: entry.cost,
    latencyMs: Math.max(0, Math.round(entry.latencyMs)),
    source: entry.source,
    status: entry.status ?? 'ok',
    createdAt: entry.createdAt ?? new Date(),
  };
  try {
    // Through the driver: every field is set above, and mongoose's document building and
    // validation cost several times the CPU of the insert itself on this per-call path.
    await driverCollection(model).insertOne(doc);
  } catch (err) {
    // The same id again: this call is already in the ledger.
    if (!(entry.id && (err as { code?: number }).code === 11000)) throw err;
  }
}

export interface LlmUsageQuery {
  tenantId: string;
  projectId: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

export interface LlmUsageTotals {
  totalTokens: number;
  /** USD; calls with an unknown price add nothing. */
  totalCost: number;
  requestCount: number;
}

export interface LlmUsageSummary {
  summary: LlmUsageTotals & { avgLatency: number };
  byModel: (LlmUsageTotals & { modelId: string; provider: string })[];
}

// Sums of float dollars accumulate noise; cost estimates carry 10 decimals.
const roundCost = (value: number): number => Math.round(value * 1e10) / 1e10;

/**
 * Totals and a per-model breakdown over a date range. Summed in TypeScript over the
 * (tenantId, projectId, createdAt) index with a narrow projection, which works the same on
 * MongoDB and FerretDB.
 */
export async function summarizeLlmUsage(model: LlmUsageModel, query: LlmUsageQuery): Promise<LlmUsageSummary> {
  const createdAt: Record<string, Date> = {};
  if (query.from) createdAt.$gte = query.from;
  if (query.to) createdAt.$lt = query.to;
  const filter = {
    tenantId: query.tenantId,
    projectId: query.projectId,
    ...(Object.keys(createdAt).length > 0 ? { createdAt } : {}),
  };
  const cursor = model
    .find(filter, { modelId: 1, provider: 1, totalTokens: 1, cost: 1, latencyMs: 1, _id: 0 })
    .lean<Pick<LlmUsageDoc, 'modelId' | 'provider' | 'totalTokens' | 'cost' | 'latencyMs'>[]>()
    .cursor();
  let totalTokens = 0;
  let totalCost = 0;
  let requestCount = 0;
  let latencySum = 0;
  const groups = new Map<string, LlmUsageTotals & { modelId: string; provider: string }>();
  for await (const row of cursor) {
    totalTokens += row.totalTokens;
    totalCost += row.cost ?? 0;
    requestCount += 1;
    latencySum += row.latencyMs;
    const key = `${row.provider}\u0000${row.modelId}`;
    const group = groups.get(key) ?? { modelId: row.modelId, provider: row.provider, totalTokens: 0, totalCost: 0, requestCount: 0 };
    group.totalTokens += row.totalTokens;
    group.totalCost += row.cost ?? 0;
    group.requestCount += 1;
    groups.set(key, group);
  }
  const byModel = [...groups.values()]
    .map((group) => ({ ...group, totalCost: roundCost(group.totalCost) }))
    .sort((a, b) => b.totalTokens - a.totalTokens || a.modelId.localeCompare(b.modelId));
  return {
    summary: {
      totalTokens,
      totalCost: roundCost(totalCost),
      requestCount,
      avgLatency: requestCount === 0 ? 0 : Math.round(latencySum / requestCount),
    },
    byModel,
  };
}

/** Prices a call: USD or null. Injected so db/ need not know the price table. */
export type EstimateLlmCost = (call: { modelId: string; provider: string; inputTokens: number; outputTokens: number }) => number | null;

/**
 * A recorder with the runtime's `RecordLlmUsage` shape: prices the call, writes it to the
 * ledger and returns the estimate. Wire it into the worker's ActivityDeps as `recordUsage`.
 */
export function createLlmUsageRecorder(model: LlmUsageModel, estimate: EstimateLlmCost) {
  return async (usage: Omit<LlmUsageEntry, 'cost'>): Promise<{ estimatedCost: number | null }> => {
    const estimatedCost = estimate(usage);
    await recordLlmUsage(model, { ...usage, cost: estimatedCost });
    return { estimatedCost };
  };
}
