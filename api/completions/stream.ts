// POST /chat/stream: one completion as SSE. The route's preload may start the upstream call
// itself (speculatively, while the key is confirmed and the tenant charged); the handler
// releases its output only once every check has passed, and a refused request aborts it.
import { type Request, type Response } from 'express';
import { type Principal } from '../../lib/permissions';
import { type LlmCallStatus } from '../../db/llm-usage';
import { type AppContext } from '../context';
import { sessionMessageBudget } from '../sessions/message-budget';
import { isKnownOverLimit, tenantRateLimitKey } from '../middleware/rate-limit';
import { runningCalls } from '../../core/running-calls';
import { type CallLookups, elapsedSince, type LlmStreamEvent, lookUpCall, type PreparedCall, prepareCall, sessionRateLimitKey, toLlmRequest } from '../../core/completions/call';
import { abortOnDisconnect } from './disconnect';
import { toFinishReason } from '../../core/completions/finish-reason';
import { watchKeyWhileStreaming } from './key-watch';
import { isProviderError, logProviderFailure, providerFailureEvent } from '../../core/completions/provider-failure';
import { type TChatRequest } from './schemas';
import { type ServerEnd, SHUTTING_DOWN } from './server-end';
import { SseWriter } from '../http/sse';
import { record } from '../../core/completions/usage-ledger';

/**
 * The stream endpoint's upstream call, started by its preload while the API key is still being
 * confirmed (read again, when what this process knows of it has aged out) and the tenant charged,
 * so the provider's time to first token overlaps those round trips. The first event is requested at once and held: nothing reaches the client until the
 * handler takes the stream, which it does only after every check has passed. A request refused
 * before that aborts it and records it as `aborted` (no tokens, no cost), never as `ok`.
 */
interface SpeculativeStream {
  call: PreparedCall;
  controller: AbortController;
  /** performance.now() when the upstream request was started. */
  started: number;
  iterator: AsyncIterator<LlmStreamEvent>;
  /** The first event, already requested; never an unhandled rejection. */
  first: Promise<IteratorResult<LlmStreamEvent>>;
  state: 'pending' | 'taken' | 'cancelled';
}

export interface StreamLookups extends CallLookups {
  speculative: SpeculativeStream | null;
}

/**
 * The stream route's preload: the lookups, then the upstream call when every check known in
 * this process will pass: the project is visible, the model and credentials resolve, and neither
 * the tenant nor the session is in a window this process already saw refused. `refused` fires
 * when the pipeline refuses the request (revoked key, 429, …): nothing is started after that,
 * and a started call is aborted.
 */
export async function lookUpStreamCall(ctx: AppContext, principal: Principal, body: TChatRequest, refused: AbortSignal): Promise<StreamLookups> {
  const lookups = await lookUpCall(ctx, principal, body);
  const { project, resolved } = lookups;
  if (refused.aborted || !project || !resolved.ok) return { ...lookups, speculative: null };
  if (isKnownOverLimit(ctx.rateLimiter, tenantRateLimitKey(principal.tenantId))) return { ...lookups, speculative: null };
  if (body.sessionId && isKnownOverLimit(ctx.sessionMessageLimiter, sessionRateLimitKey(principal.tenantId, body.sessionId))) {
    return { ...lookups, speculative: null };
  }
  const call: PreparedCall = { target: resolved.target, llm: resolved.llm, projectId: project._id };
  const controller = new AbortController();
  const started = performance.now();
  const iterator = call.llm.stream(toLlmRequest(body, call.target.modelId, controller.signal))[Symbol.asyncIterator]();
  const first = iterator.next();
  first.catch(() => undefined);
  const speculative: SpeculativeStream = { call, controller, started, iterator, first, state: 'pending' };
  refused.addEventListener('abort', () => cancelSpeculative(ctx, principal, body, speculative), { once: true });
  return { ...lookups, speculative };
}

/** Aborts a speculative call the handler never took, and records it once as `aborted`. */
function cancelSpeculative(ctx: AppContext, principal: Principal, body: TChatRequest, speculative: SpeculativeStream): void {
  if (speculative.state !== 'pending') return;
  speculative.state = 'cancelled';
  speculative.controller.abort(new Error('request refused before the stream opened'));
  const latencyMs = elapsedSince(speculative.started);
  void record(ctx, { principal, body, call: speculative.call, servedModel: null, usage: null, latencyMs, status: 'aborted' });
}

/** The speculative call's events, starting with the first one it already requested. */
function resumeSpeculative(speculative: SpeculativeStream): AsyncIterable<LlmStreamEvent> {
  const { iterator } = speculative;
  let first: Promise<IteratorResult<LlmStreamEvent>> | null = speculative.first;
  return {
    [Symbol.asyncIterator]: () => ({
      next: () => {
        const next = first ?? iterator.next();
        first = null;
        return next;
      },
      return: (value?: unknown) => iterator.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined }),
    }),
  };
}

function streamEventData(event: Exclude<LlmStreamEvent, { type: 'finish' }>): Record<string, unknown> {
  const { type: _type, ...data } = event;
  return data;
}

/**
 * Streams one completion as SSE. Errors before the stream opens (404, 429, 503) are thrown and
 * become JSON envelopes; once it is open, a failure is an `error` event and the end of the stream.
 */
export async function streamChat(ctx: AppContext, principal: Principal, body: TChatRequest, req: Request, res: Response, lookups: StreamLookups): Promise<void> {
  const { speculative } = lookups;
  let call: PreparedCall;
  try {
    call = await prepareCall(ctx, principal, body, sessionMessageBudget(ctx, res), lookups);
  } catch (err) {
    // Refused here (the session's rate limit): the speculative call never reaches the client.
    if (speculative) cancelSpeculative(ctx, principal, body, speculative);
    throw err;
  }
  if (req.socket.destroyed) {
    if (speculative) cancelSpeculative(ctx, principal, body, speculative);
    return;
  }
  if (speculative) speculative.state = 'taken';
  const controller = speculative?.controller ?? new AbortController();
  const { signal, clientGone } = abortOnDisconnect(res, controller);
  const sse = new SseWriter(res, ctx.config.SSE_HEARTBEAT_MS);
  sse.open();
  const started = speculative?.started ?? performance.now();
  await sse.send('metadata', { modelId: call.target.modelId, provider: call.target.provider.provider, source: call.target.source });
  const events = speculative ? resumeSpeculative(speculative) : call.llm.stream(toLlmRequest(body, call.target.modelId, signal));

  let usage: { inputTokens: number; outputTokens: number } | null = null;
  let finish: { finishReason: string; model: string } | null = null;
  let status: LlmCallStatus = 'ok';
  // The server may end the stream itself: its key revoked, or the process stopping.
  let endedBy: ServerEnd | null = null;
  const endStream = (reason: ServerEnd) => {
    if (endedBy) return;
    endedBy = reason;
    controller.abort(new Error(reason.error));
  };
  const keyWatch = watchKeyWhileStreaming(ctx, principal, req, (refusal) => endStream({ error: refusal, code: 'UNAUTHORIZED', retryable: false }));
  const untrack = runningCalls(ctx).add(() => endStream(SHUTTING_DOWN));
  try {
    for await (const event of events) {
      if (clientGone() || endedBy) break;
      if (event.type === 'finish') {
        finish = { finishReason: event.finishReason, model: event.model };
        continue;
      }
      if (event.type === 'usage') usage = { inputTokens: event.inputTokens, outputTokens: event.outputTokens };
      await sse.send(event.type, streamEventData(event));
    }
    if (clientGone()) status = 'aborted';
    else if (endedBy) {
      status = 'aborted';
      await sse.send('error', endedBy);
    }
  } catch (err) {
    status = clientGone() || endedBy ? 'aborted' : 'error';
    if (endedBy && !clientGone()) {
      await sse.send('error', endedBy);
    } else if (status === 'error') {
      if (isProviderError(err)) {
        logProviderFailure(ctx, res.locals.requestId, err);
        await sse.send('error', providerFailureEvent(err));
      } else {
        ctx.logger.error({ err, requestId: res.locals.requestId }, 'chat stream failed');
        await sse.send('error', { error: 'Internal error', code: 'INTERNAL_ERROR', retryable: false });
      }
    }
  } finally {
    keyWatch.stop();
  }
  try {
    const latencyMs = elapsedSince(started);
    const estimatedCost = await record(ctx, { principal, body, call, servedModel: finish?.model ?? null, usage, latencyMs, status });
    if (status === 'ok') {
      const inputTokens = usage?.inputTokens ?? 0;
      const outputTokens = usage?.outputTokens ?? 0;
      await sse.send('complete', {
        inputTokens,
        outputTokens,
        totalTokens: inputTokens + outputTokens,
        estimatedCost,
        latencyMs,
        finishReason: finish ? toFinishReason(finish.finishReason) : null,
        providerFinishReason: finish?.finishReason ?? null,
        model: finish?.model || call.target.modelId,
      });
    }
    sse.end();
  } finally {
    untrack();
  }
}
