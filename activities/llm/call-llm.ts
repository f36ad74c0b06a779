// The agent runtime's LLM call: resolves the model for the tenant and project, calls the provider
// (the SDKs' own retries are off, so Temporal's retry policy decides), records usage, and turns
// provider errors into ApplicationFailures whose type says whether a retry can help (and whose
// message is caller-safe: the provider's own text goes to the worker's log).
// `callLlmIfLocal` is the same call for the offline `local` model only, meant to run as a local
// activity (no task-queue hop): it answers null when the model resolves to a real provider, whose
// calls stay regular activities (TEMPORAL.md §7: long, paid calls must not re-run on a crash).
// The agent's EXECUTION settings apply here: `llm_timeout` bounds each provider call, and
// `fallback_model` answers once when the model fails with a retryable error or is unavailable.
// A call of a streamed turn (`streamId`) streams from the provider and publishes the text as it
// comes to the turn's stream (core/chat/turn-stream.ts); its result is the same as `complete()`'s.
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ChatTurn, LlmRequestSpec } from '../../abl/runtime/contract';
import { collectStream, LOCAL_PROVIDER_NAME, ProviderError, type ChatMessage, type LlmProvider, type LlmRequest, type LlmResult, type LlmStreamEvent } from '../../providers/llm';
import { TurnDeltaPublisher, type TurnStreamModels } from '../../core/chat/turn-stream';
import { startDeadline } from '../../providers/llm/deadline';
import { providerErrorLogFields, publicProviderMessage } from '../../providers/llm/public-error';
import { withSpan } from '../../lib/tracing';

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
  /** Ledger id derived from the activity's identity, so a retried or replayed call is recorded once. */
  id?: string;
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
  /**
   * The streamed turn whose reply this call writes (POST /api/v1/chat/agent/stream): its text is
   * published as it is generated. Only the id travels through history, never the text.
   */
  streamId?: string;
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
  /** Set when the agent's fallback_model answered: the model that failed and why. */
  fallbackFrom?: { model: string; reason: string };
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

/**
 * The usage ledger id of the running activity: stable across its retries and, for a local
 * activity, across the workflow task's re-execution after a worker crash (the activity id is
 * the workflow's deterministic sequence number).
 */
function usageIdOfCurrentActivity(): string | undefined {
  const info = Context.current().info;
  const run = info.workflowExecution;
  return run ? `${run.workflowId}:${run.runId}:${info.isLocal ? 'la' : 'a'}${info.activityId}` : undefined;
}

/** Where a provider failure's detail goes: the failure itself carries only a caller-safe message. */
type FailureLog = { warn(fields: Record<string, unknown>, message: string): void };
type CallLlmDeps = { resolveLlm: ResolveLlmTarget; recordUsage: RecordLlmUsage; logger?: FailureLog; models?: TurnStreamModels };

async function resolveTarget(deps: CallLlmDeps, input: CallLlmInput, model: string | null = input.request.model): Promise<LlmTarget> {
  const target = await deps.resolveLlm({
    tenantId: input.tenantId,
    projectId: input.projectId,
    modelId: model,
    tier: input.request.tier,
  });
  if (!target) {
    throw ApplicationFailure.nonRetryable(
      `Runtime not configured: no model or credentials for tier "${input.request.tier}"${model ? ` / model "${model}"` : ''}`,
      'SERVICE_UNAVAILABLE',
    );
  }
  return target;
}

/** A failure another model may not have: the provider is overloaded, slow, unreachable or not configured. */
function fallbackHelps(err: unknown): boolean {
  if (err instanceof ProviderError) return err.retryable;
  return err instanceof ApplicationFailure && err.type === 'SERVICE_UNAVAILABLE';
}

export function createCallLlm(deps: CallLlmDeps) {
  return async function callLlm(input: CallLlmInput): Promise<CallLlmResult> {
    const fallback = input.request.fallbackModel;
    try {
      return await callTarget(deps, input, await resolveTarget(deps, input));
    } catch (err) {
      if (!fallback || fallback === input.request.model || !fallbackHelps(err)) throw asFailure(err);
      const reason = err instanceof ProviderError ? `LLM_${err.kind.toUpperCase()}` : 'SERVICE_UNAVAILABLE';
      try {
        const result = await callTarget(deps, input, await resolveTarget(deps, input, fallback));
        return { ...result, fallbackFrom: { model: input.request.model ?? input.request.tier, reason } };
      } catch (fallbackErr) {
        throw asFailure(fallbackErr);
      }
    }
  };
}

export function createCallLlmIfLocal(deps: CallLlmDeps) {
  return async function callLlmIfLocal(input: CallLlmInput): Promise<CallLlmResult | null> {
    let target: LlmTarget;
    try {
      target = await resolveTarget(deps, input);
    } catch (err) {
      // An unavailable model with a fallback is the regular activity's to handle.
      if (input.request.fallbackModel && fallbackHelps(err)) return null;
      throw err;
    }
    if (target.providerName !== LOCAL_PROVIDER_NAME) return null;
    try {
      return await callTarget(deps, input, target);
    } catch (err) {
      throw asFailure(err);
    }
  };
}

/**
 * Provider errors as ApplicationFailures whose type says whether a retry can help. Their message
 * reaches workflow history, traces and the caller's reply: it says what kind of failure it was,
 * never the provider's own text (logged by callTarget).
 */
function asFailure(err: unknown): unknown {
  if (err instanceof ProviderError) {
    return ApplicationFailure.create({
      message: publicProviderMessage(err),
      type: `LLM_${err.kind.toUpperCase()}`,
      nonRetryable: !err.retryable,
      nextRetryDelay: err.retryAfterMs,
    });
  }
  return err;
}

/**
 * One provider call, in a `chat <model>` span when tracing is on (lib/tracing.ts): the provider,
 * the model and the token counts, never the prompt or the answer.
 */
function callTarget(deps: CallLlmDeps, input: CallLlmInput, target: LlmTarget): Promise<CallLlmResult> {
  const attributes = { 'gen_ai.operation.name': 'chat', 'gen_ai.system': target.providerName, 'gen_ai.request.model': target.modelId, 'switchboard.llm.streamed': Boolean(input.streamId) };
  return withSpan(`chat ${target.modelId}`, { attributes }, async (span) => {
    const result = await callTargetUntraced(deps, input, target);
    span?.setAttributes({ 'gen_ai.response.model': result.model || target.modelId, 'gen_ai.usage.input_tokens': result.usage.inputTokens, 'gen_ai.usage.output_tokens': result.usage.outputTokens });
    return result;
  });
}

/** One provider call, bounded by the agent's llm_timeout; throws ProviderError on failure. */
async function callTargetUntraced(deps: CallLlmDeps, input: CallLlmInput, target: LlmTarget): Promise<CallLlmResult> {
  const started = Date.now();
  const cancelled = Context.current().cancellationSignal;
  const deadline = input.request.timeoutMs ? startDeadline(input.request.timeoutMs, cancelled) : null;
  const publisher = input.streamId && deps.models ? deltaPublisher(deps, input, input.streamId) : null;
  try {
    const request: LlmRequest = {
      model: target.modelId,
      messages: input.request.messages.map(toChatMessage),
      tools: input.request.tools.length > 0 ? (input.request.tools as never) : undefined,
      temperature: input.request.temperature,
      maxTokens: input.request.maxTokens,
      signal: deadline?.signal ?? cancelled,
    };
    const result = publisher ? await streamedCall(target, request, publisher) : await target.provider.complete(request);
    deadline?.clear();
    const latencyMs = Date.now() - started;
    const id = usageIdOfCurrentActivity();
    const { estimatedCost } = await deps.recordUsage({
      ...(id ? { id } : {}),
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
    const failure =
      deadline?.timedOut() && !(err instanceof ProviderError && err.kind === 'timeout')
        ? new ProviderError(`${target.providerName}: no answer within the agent's llm_timeout (${input.request.timeoutMs} ms)`, {
            kind: 'timeout',
            provider: target.providerName,
            retryable: true,
            cause: err,
          })
        : err;
    if (failure instanceof ProviderError) {
      // The provider's own text goes to the log only; asFailure gives history, traces and the
      // caller's reply a description of the kind of failure.
      deps.logger?.warn({ sessionId: input.sessionId, agent: input.agent, activityId: Context.current().info.activityId, ...providerErrorLogFields(failure) }, 'LLM provider call failed');
    }
    throw failure;
  } finally {
    deadline?.clear();
    // A failed call's text stays until its retry resets it, or the final event replaces it.
    await publisher?.close();
  }
}

function deltaPublisher(deps: CallLlmDeps, input: CallLlmInput, turnId: string): TurnDeltaPublisher {
  const info = Context.current().info;
  const run = info.workflowExecution;
  // The call's identity across its retries (and a local activity's re-run after a crash).
  const part = `${run?.workflowId ?? ''}:${run?.runId ?? ''}:${info.isLocal ? 'la' : 'a'}${info.activityId}`;
  return new TurnDeltaPublisher(deps.models!, { tenantId: input.tenantId, sessionId: input.sessionId, turnId }, part, deps.logger);
}

/** The provider's stream folded into `complete()`'s result, its text published as it comes. */
async function streamedCall(target: LlmTarget, request: LlmRequest, publisher: TurnDeltaPublisher): Promise<LlmResult> {
  async function* tap(events: AsyncIterable<LlmStreamEvent>): AsyncGenerator<LlmStreamEvent> {
    for await (const event of events) {
      if (event.type === 'text_delta') publisher.push(event.delta);
      yield event;
    }
  }
  const result = await collectStream(tap(target.provider.stream(request)), target.providerName);
  // Text beside tool calls is not a reply (the agent goes on with the tools' results).
  await publisher.close({ notAReply: result.toolCalls.length > 0 });
  return { ...result, model: result.model || request.model };
}
