// The usage ledger entry of one completion call (tokens, cost, latency, outcome), written
// whatever the outcome; a failed write is logged and never fails the call.
import { type Principal } from '../../lib/permissions';
import { recordLlmUsage, type LlmCallStatus } from '../../db/llm-usage';
import { type CoreContext } from '../context';
import { llmRuntime } from '../llm/runtime';
import { type CompletionRequest, type PreparedCall } from './call';
import { holdAnalyticsEvent } from '../analytics/batcher';

export interface CallRecord {
  principal: Principal;
  body: Pick<CompletionRequest, 'sessionId'>;
  call: PreparedCall;
  servedModel: string | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  latencyMs: number;
  status: LlmCallStatus;
}

/** Writes the ledger entry; a failed write is logged, never turned into a failed call. */
export async function record(ctx: CoreContext, entry: CallRecord): Promise<number | null> {
  const { target } = entry.call;
  const provider = target.provider.provider;
  const cost = entry.usage ? llmRuntime(ctx).cost(provider, entry.servedModel || target.modelId, entry.usage) : null;
  try {
    await recordLlmUsage(ctx.models.LlmUsage, {
      tenantId: entry.principal.tenantId,
      projectId: entry.call.projectId,
      sessionId: entry.body.sessionId ?? null,
      modelId: target.modelId,
      servedModel: entry.servedModel,
      provider,
      inputTokens: entry.usage?.inputTokens ?? 0,
      outputTokens: entry.usage?.outputTokens ?? 0,
      cost,
      latencyMs: entry.latencyMs,
      source: 'api',
      status: entry.status,
    });
  } catch (err) {
    ctx.logger.error({ err }, 'failed to record LLM usage');
  }
  // The call's analytics event joins the process's next batch: no write of its own on this path.
  const tokensIn = entry.usage?.inputTokens ?? 0;
  const tokensOut = entry.usage?.outputTokens ?? 0;
  holdAnalyticsEvent(ctx, {
    tenantId: entry.principal.tenantId,
    projectId: entry.call.projectId,
    category: 'llm',
    eventType: entry.status === 'ok' ? 'llm.call' : 'llm.error',
    timestamp: new Date(),
    durationMs: entry.latencyMs,
    error: entry.status === 'ok' ? null : entry.status,
    tokens: tokensIn + tokensOut,
    cost: cost ?? 0,
    metadata: {
      model: entry.servedModel || target.modelId,
      provider,
      tokens_in: tokensIn,
      tokens_out: tokensOut,
      cost: cost ?? 0,
      cost_known: cost !== null,
      source: 'completions_api',
      status: entry.status,
      // The caller's own label, not a platform session's id: kept apart from `sessionId`.
      ...(entry.body.sessionId ? { client_session_id: entry.body.sessionId } : {}),
    },
  });
  return cost;
}
