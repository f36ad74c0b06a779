// The LLM completion endpoints' work: check the project and the session rate limit, resolve
// the model and credentials, call the provider (one payload or streamed as SSE), and record
// every call in the usage ledger. The lookups run as the routes' preload, during the tenant
// rate-limit charge, so the provider is called one round trip after authentication. The stream
// endpoint goes further: its preload starts the upstream call itself (speculatively), and the
// handler releases its output only once every check has passed.
import { type Request, type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { canSeeProject, type Principal } from '../../lib/permissions';
import { findOwned } from '../../db/owned';
import { type ProjectDoc } from '../../db/project';
import { findVisibleProject } from '../http/route';
import { memoizePerProject } from '../../lib/memoize-per-project';
import { recordLlmUsage, summarizeLlmUsage, type LlmCallStatus, type LlmUsageSummary } from '../../db/llm-usage';
import { ProviderError, type LlmProvider, type LlmRequest, type LlmStreamEvent, type ResolvedProjectLlm, type RuntimeTarget } from '../../providers/llm';
import { providerErrorLogFields, publicProviderMessage } from '../../providers/llm/public-error';
import { type AppContext } from '../context';
import { apiKeyRefusal } from '../middleware/auth';
import { consumeRateLimit, isKnownOverLimit, tenantRateLimitKey } from '../middleware/rate-limit';
import { isCredentialDecryptionError, llmRuntime, PROJECT_LLM_TTL_MS, runtimeNotConfigured } from './llm-runtime';
import { type TChatCompleteResponse, type TChatRequest, type TChatUsageQuery } from './schemas';
import { SseWriter } from './sse';
import { toFinishReason } from './finish-reason';
import { runningCalls } from '../running-calls';

interface PreparedCall {
  target: RuntimeTarget;
  llm: LlmProvider;
  projectId: string;
}


/**
 * The completion endpoints' project reads, reused for PROJECT_LLM_TTL_MS like the project's LLM
 * settings. Only `_id` and `tenantId` are used, and a project is never deleted or moved to
 * another tenant, so a reused answer is the one a read would give; the principal's own project
 * binding is still checked on every request. (Were project deletion added, a deleted project
 * would stay usable here for at most that long, as its settings already do.)
 */
const projectReads = new WeakMap<AppContext, ReturnType<typeof memoizePerProject<ProjectDoc | null>>>();

async function loadVisibleProjectReused(ctx: AppContext, principal: Principal, projectId: string) {
  let reads = projectReads.get(ctx);
  if (!reads) {
    reads = memoizePerProject(PROJECT_LLM_TTL_MS, (tenantId, id) => findOwned(ctx.models.Project, id, { tenantId }), 10_000);
    projectReads.set(ctx, reads);
  }
  const project = await reads.get(principal.tenantId, projectId);
  return project && canSeeProject(principal, project) ? project : null;
}

/** The reads a call needs, as the route's preload: they overlap the tenant rate-limit charge. */
export interface CallLookups {
  project: ProjectDoc | null;
  resolved: ResolvedProjectLlm | { ok: false; error: unknown };
}

/**
 * The project lookup and the model resolution, in parallel (both tenant-scoped, both reads).
 * Never rejects: `prepareCall` judges the outcomes in order, so an invisible project is 404
 * even when the runtime is not configured.
 */
export async function lookUpCall(ctx: AppContext, principal: Principal, body: TChatRequest): Promise<CallLookups> {
  const [project, resolved] = await Promise.all([
    loadVisibleProjectReused(ctx, principal, body.projectId),
    llmRuntime(ctx)
      .resolve({
        tenantId: principal.tenantId,
        projectId: body.projectId,
        ...(body.modelId ? { modelId: body.modelId } : {}),
        ...(body.tier ? { tier: body.tier } : {}),
      })
      .catch((err: unknown) => ({ ok: false as const, error: err })),
  ]);
  return { project, resolved };
}

const sessionRateLimitKey = (tenantId: string, sessionId: string) => `${tenantId}:${sessionId}`;

/** Everything before the provider is called, from the preloaded lookups. */
async function prepareCall(ctx: AppContext, principal: Principal, body: TChatRequest, res: Response, lookups: CallLookups): Promise<PreparedCall> {
  const { project, resolved } = lookups;
  if (!project) throw ApiError.notFound('Project');
  if (body.sessionId) {
    await consumeRateLimit(ctx.sessionMessageLimiter, sessionRateLimitKey(principal.tenantId, body.sessionId), res, 'Session message rate limit exceeded');
  }
  if ('error' in resolved) {
    if (isCredentialDecryptionError(resolved.error)) throw runtimeNotConfigured(resolved.error.message);
    throw resolved.error;
  }
  if (!resolved.ok) throw runtimeNotConfigured(resolved.reason);
  return { target: resolved.target, llm: resolved.llm, projectId: project._id };
}

function toLlmRequest(body: TChatRequest, modelId: string, signal: AbortSignal): LlmRequest {
  return {
    model: modelId,
    messages: body.messages,
    ...(body.tools && body.tools.length > 0 ? { tools: body.tools } : {}),
    ...(body.temperature !== undefined ? { temperature: body.temperature } : {}),
    ...(body.maxTokens !== undefined ? { maxTokens: body.maxTokens } : {}),
    signal,
  };
}

/** Aborts the upstream call when the client closes the connection before the response ends. */
function abortOnDisconnect(res: Response, controller = new AbortController()): { signal: AbortSignal; clientGone: () => boolean } {
  let gone = false;
  res.on('close', () => {
    if (res.writableFinished) return;
    gone = true;
    controller.abort(new Error('client disconnected'));
  });
  return { signal: controller.signal, clientGone: () => gone };
}

/**
 * Logs a provider failure's detail (the provider's own text, its request id) with this request's
 * id: the caller is told only what publicProviderMessage says.
 */
function logProviderFailure(ctx: AppContext, res: Response, err: ProviderError): void {
  ctx.logger.warn({ requestId: res.locals.requestId, ...providerErrorLogFields(err) }, 'LLM provider call failed');
}

/** A provider failure on the non-streamed path, as an API error with a caller-safe message. */
function providerFailure(err: ProviderError): ApiError {
  const message = publicProviderMessage(err);
  switch (err.kind) {
    case 'bad_request':
    case 'not_found':
    case 'content_policy':
      return new ApiError('BAD_REQUEST', message);
    case 'rate_limited': {
      const retryAfterMs = Math.max(1, err.retryAfterMs ?? 1000);
      return new ApiError('RATE_LIMIT_EXCEEDED', {
        message,
        extraBody: { retryAfterMs },
        headers: { 'Retry-After': String(Math.ceil(retryAfterMs / 1000)) },
      });
    }
    case 'timeout':
      return new ApiError('GATEWAY_TIMEOUT', message);
    case 'auth':
    case 'overloaded':
    case 'network':
    case 'aborted':
    case 'unknown':
      return new ApiError('SERVICE_UNAVAILABLE', message);
    default: {
      const unreachable: never = err.kind;
      return new ApiError('SERVICE_UNAVAILABLE', `${message} (${String(unreachable)})`);
    }
  }
}

interface CallRecord {
  principal: Principal;
  body: TChatRequest;
  call: PreparedCall;
  servedModel: string | null;
  usage: { inputTokens: number; outputTokens: number } | null;
  latencyMs: number;
  status: LlmCallStatus;
}

/** Writes the ledger entry; a failed write is logged, never turned into a failed call. */
async function record(ctx: AppContext, entry: CallRecord): Promise<number | null> {
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

const elapsedSince = (started: number): number => Math.round(performance.now() - started);

export async function completeChat(ctx: AppContext, principal: Principal, body: TChatRequest, res: Response, lookups: CallLookups): Promise<TChatCompleteResponse> {
  const call = await prepareCall(ctx, principal, body, res, lookups);
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
    if (err instanceof ProviderError) {
      logProviderFailure(ctx, res, err);
      throw providerFailure(err);
    }
    throw err;
  } finally {
    untrack();
  }
}

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
    call = await prepareCall(ctx, principal, body, res, lookups);
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
      if (err instanceof ProviderError) {
        logProviderFailure(ctx, res, err);
        await sse.send('error', { error: publicProviderMessage(err), code: `LLM_${err.kind.toUpperCase()}`, retryable: err.retryable });
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

/** How the server ends a stream it will not finish: the `error` event's data. */
interface ServerEnd {
  error: string;
  code: 'UNAUTHORIZED' | 'SERVICE_UNAVAILABLE';
  retryable: boolean;
}

/** A graceful stop's end for the calls still running when its grace period is over (a 503 for /complete). */
const SHUTTING_DOWN: ServerEnd = {
  error: 'The API is restarting; send the request again',
  code: 'SERVICE_UNAVAILABLE',
  retryable: true,
};

/**
 * Revocation ends ongoing requests too (public API: "revocation is permanent and immediate, and
 * ongoing requests with the key fail"): while an API key's stream runs, its key is checked every
 * half API_KEY_CACHE_MS (every SSE_HEARTBEAT_MS when that is shorter, or when keys are read on
 * every request), through the same per-process knowledge as requests, so a thousand streams of
 * one key cost no more reads than one. Once the key is revoked, expired or gone, the upstream
 * call is aborted and the stream ends with an `error` event (code UNAUTHORIZED): `onRefused`.
 */
function watchKeyWhileStreaming(ctx: AppContext, principal: Principal, req: Request, onRefused: (refusal: string) => void) {
  const { API_KEY_CACHE_MS: cacheMs, SSE_HEARTBEAT_MS: heartbeatMs } = ctx.config;
  const every = cacheMs > 0 ? Math.min(heartbeatMs, Math.max(1, Math.floor(cacheMs / 2))) : heartbeatMs;
  const timer =
    principal.kind === 'api_key'
      ? setInterval(() => {
          void apiKeyRefusal(ctx, req).then((refusal) => {
            if (refusal) onRefused(refusal);
          });
        }, every)
      : null;
  return {
    stop: () => {
      if (timer) clearInterval(timer);
    },
  };
}

function parseRangeStart(value: string | undefined): Date | undefined {
  return value === undefined ? undefined : new Date(value.length === 10 ? `${value}T00:00:00.000Z` : value);
}

/** Exclusive upper bound: the next day for a date alone, the next millisecond for an instant. */
function parseRangeEnd(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  if (value.length === 10) return new Date(Date.parse(`${value}T00:00:00.000Z`) + 86_400_000);
  return new Date(Date.parse(value) + 1);
}

export async function chatUsage(ctx: AppContext, principal: Principal, query: TChatUsageQuery): Promise<{ success: true } & Partial<LlmUsageSummary>> {
  const from = parseRangeStart(query.startDate);
  const to = parseRangeEnd(query.endDate);
  // An end before the start is an empty period (zero usage), not a malformed request: each date
  // is valid on its own, and the document cannot state a rule between two parameters.
  const project = await findVisibleProject(ctx, principal, query.projectId);
  if (!project) throw ApiError.notFound('Project');
  const result = await summarizeLlmUsage(ctx.models.LlmUsage, {
    tenantId: principal.tenantId,
    projectId: project._id,
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  });
  return query.groupBy === 'model' ? { success: true, summary: result.summary, byModel: result.byModel } : { success: true, summary: result.summary };
}
