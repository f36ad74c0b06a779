// The usage ledger entry of one completion call (tokens, cost, latency, outcome), written
// whatever the outcome; a failed write is logged and never fails the call.
import { type Principal } from '../../lib/permissions';
import { recordLlmUsage, type LlmCallStatus } from '../../db/llm-usage';
import { type CoreContext } from '../context';
import { llmRuntime } from '../llm/runtime';
import { type CompletionRequest, type PreparedCall } from './call';

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
  return cost;
}
