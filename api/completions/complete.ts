// POST /chat/complete: one completion in one payload, recorded in the usage ledger whatever its
// outcome; a call still running when the process stops is answered 503.
import { type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { type LlmCallStatus } from '../../db/llm-usage';
import { type AppContext } from '../context';
import { sessionMessageBudget } from '../sessions/message-budget';
import { runningCalls } from '../../core/running-calls';
import { type CallLookups, elapsedSince, prepareCall, toLlmRequest } from '../../core/completions/call';
import { abortOnDisconnect } from './disconnect';
import { toFinishReason } from '../../core/completions/finish-reason';
import { isProviderError, logProviderFailure, providerFailure } from '../../core/completions/provider-failure';
import { type TChatCompleteResponse, type TChatRequest } from './schemas';
import { SHUTTING_DOWN } from './server-end';
import { record } from '../../core/completions/usage-ledger';

export async function completeChat(ctx: AppContext, principal: Principal, body: TChatRequest, res: Response, lookups: CallLookups): Promise<TChatCompleteResponse> {
  const call = await prepareCall(ctx, principal, body, sessionMessageBudget(ctx, res), lookups);
  const controller = new AbortController();
  const { signal, clientGone } = abortOnDisconnect(res, controller);
  let stopped = false;
  const untrack = runningCalls(ctx).add(() => {
    stopped = true;
    controller.abort(new Error(SHUTTING_DOWN.error));
  });
  const started = performance.now();
  try {
    const result = await call.llm.complete(toLlmRequest(body, call.target.modelId, signal));
    const latencyMs = elapsedSince(started);
    const estimatedCost = await record(ctx, { principal, body, call, servedModel: result.model, usage: result.usage, latencyMs, status: 'ok' });
    return {
      success: true,
      content: result.content,
      ...(result.toolCalls.length > 0 ? { toolCalls: result.toolCalls } : {}),
      model: result.model || call.target.modelId,
      finishReason: toFinishReason(result.finishReason),
      providerFinishReason: result.finishReason,
      usage: { ...result.usage, estimatedCost },
      latencyMs,
    };
  } catch (err) {
    const status: LlmCallStatus = clientGone() || stopped ? 'aborted' : 'error';
    await record(ctx, { principal, body, call, servedModel: null, usage: null, latencyMs: elapsedSince(started), status });
    if (stopped) throw new ApiError('SERVICE_UNAVAILABLE', SHUTTING_DOWN.error);
    if (isProviderError(err)) {
      logProviderFailure(ctx, res.locals.requestId, err);
      throw providerFailure(err);
    }
    throw err;
  } finally {
    untrack();
  }
}
