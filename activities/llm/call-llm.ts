// The agent runtime's LLM call: resolves the model for the tenant and project, calls the provider
// (the SDKs' own retries are off, so Temporal's retry policy decides), records usage, and turns
// provider errors into ApplicationFailures whose type says whether a retry can help.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ChatTurn, LlmRequestSpec } from '../../abl/runtime/contract';
import { ProviderError, type ChatMessage, type LlmProvider } from '../../providers/llm';

export interface LlmTarget {
  provider: LlmProvider;
  providerName: string;
  modelId: string;
}

export interface LlmTargetQuery {
  tenantId: string;
  projectId: string;
  modelId: string | null;
  tier: 'fast' | 'balanced' | 'powerful';
}

/** Finds the model and credentials to use, or null when the runtime is not configured. */
export type ResolveLlmTarget = (query: LlmTargetQuery) => Promise<LlmTarget | null>;

export interface LlmUsageRecord {
  tenantId: string;
  projectId: string;
  sessionId: string | null;
  modelId: string;
  provider: string;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  source: 'agent' | 'api';
}
export type RecordLlmUsage = (usage: LlmUsageRecord) => Promise<{ estimatedCost: number | null }>;

export interface CallLlmInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  agent: string;
  request: LlmRequestSpec;
}

export interface CallLlmResult {
  content: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  model: string;
  provider: string;
  finishReason: string;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
  estimatedCost: number | null;
  latencyMs: number;
}

function toChatMessage(turn: ChatTurn): ChatMessage {
  return {
    role: turn.role,
    content: turn.content,
    ...(turn.toolCallId ? { tool_call_id: turn.toolCallId } : {}),
    ...(turn.toolCalls?.length
      ? { tool_calls: turn.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }
      : {}),
  };
}

export function createCallLlm(deps: { resolveLlm: ResolveLlmTarget; recordUsage: RecordLlmUsage }) {
  return async function callLlm(input: CallLlmInput): Promise<CallLlmResult> {
    const target = await deps.resolveLlm({
      tenantId: input.tenantId,
      projectId: input.projectId,
      modelId: input.request.model,
      tier: input.request.tier,
    });
    if (!target) {
      throw ApplicationFailure.nonRetryable(
        `Runtime not configured: no model or credentials for tier "${input.request.tier}"${input.request.model ? ` / model "${input.request.model}"` : ''}`,
        'SERVICE_UNAVAILABLE',
      );
    }
    const started = Date.now();
    try {
      const result = await target.provider.complete({
        model: target.modelId,
        messages: input.request.messages.map(toChatMessage),
        tools: input.request.tools.length > 0 ? (input.request.tools as never) : undefined,
        temperature: input.request.temperature,
        maxTokens: input.request.maxTokens,
        signal: Context.current().cancellationSignal,
      });
      const latencyMs = Date.now() - started;
      const { estimatedCost } = await deps.recordUsage({
        tenantId: input.tenantId,
        projectId: input.projectId,
        sessionId: input.sessionId,
        modelId: result.model || target.modelId,
        provider: target.providerName,
        inputTokens: result.usage.inputTokens,
        outputTokens: result.usage.outputTokens,
        latencyMs,
        source: 'agent',
      });
      return { ...result, provider: target.providerName, estimatedCost, latencyMs };
    } catch (err) {
      if (err instanceof ProviderError) {
        throw ApplicationFailure.create({
          message: err.message,
          type: `LLM_${err.kind.toUpperCase()}`,
          nonRetryable: !err.retryable,
          nextRetryDelay: err.retryAfterMs,
        });
      }
      throw err;
    }
  };
}
