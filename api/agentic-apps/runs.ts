// Runs of agentic-app sessions (POST …/runs/execute): one turn of the session's AgentSession
// workflow, answered synchronously, as Server-Sent Events, or (isAsync) with 202 while an AppRun
// workflow runs the turn and delivers the result to the caller's signed callback.
import { type Response } from 'express';
import { APP_RUN_CALLBACK_TOKEN_PURPOSE, finishAppRun, markAppRunStarted, type AppRunDoc } from '../../db/app-run';
import { type AppSessionDoc } from '../../db/app-session';
import { newId } from '../../lib/ids';
import { ApiError, isDomainError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { appRunCallbackDestinationPolicy } from '../../lib/net/destination';
import { checkCallbackUrlRules } from '../../lib/net/callback-url';
import { ChannelKey, EnvironmentKey, ProjectIdKey, SessionIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { type AppRunInput } from '../../workflows/definitions';
import { TypedSearchAttributes } from '@temporalio/common';
import { type AppContext } from '../context';
import { requireEncryptor } from '../../core/llm/runtime';
import { SseWriter } from '../completions/sse';
import { runChatTurn, startExistingSessionTurn, validateMetadata } from '../../core/chat/turns';
import { sessionMessageBudget } from '../chat-agent/message-budget';
import { temporalClient, temporalErrorToDomainError, TEMPORAL_CALL_TIMEOUT_MS, withDeadline } from '../../core/sessions/workflow-client';
import { consumeRateLimit, refundRateLimit } from '../middleware/rate-limit';
import { type TExecuteRunBody } from './schemas';
import { findOrCreateAppSession, parseIdentity, readAppSession, sessionInfo, type AppScope } from './sessions';

/** Started by name: the worker registers `appRun` from workflows/index.ts. */
const APP_RUN_WORKFLOW_TYPE = 'appRun';

/** The turn's message: every input item's content (none is blank) in order, separated by blank lines. */
export function runMessage(body: Pick<TExecuteRunBody, 'input' | 'metadata'>): { message: string; metadata: Record<string, unknown> | undefined } {
  return { message: body.input.map((i) => i.content).join('\n\n'), metadata: body.metadata };
}

export interface ExecuteRunOptions {
  principal: Principal;
  scope: AppScope;
  body: TExecuteRunBody;
  res: Response;
}

async function newRun(ctx: AppContext, session: AppSessionDoc, message: string, metadata: Record<string, unknown> | undefined, extra: Partial<AppRunDoc> = {}): Promise<AppRunDoc> {
  const run: AppRunDoc = {
    _id: `r-${newId()}`,
    tenantId: session.tenantId,
    projectId: session.projectId,
    sessionId: session._id,
    messageId: `msg-${newId()}`,
    status: 'pending',
    message,
    metadataJson: metadata ? JSON.stringify(metadata) : null,
    output: [],
    spanIds: [],
    error: null,
    isAsync: false,
    callbackUrl: null,
    callbackToken: null,
    deliveryAttempts: 0,
    deliveredAt: null,
    createdAt: new Date(),
    finishedAt: null,
    ...extra,
  };
  await ctx.models.AppRun.create(run);
  return run;
}

const errorOf = (err: unknown) => (isDomainError(err) ? { code: err.code, message: err.message } : { code: 'INTERNAL_ERROR', message: 'The run failed' });

/** Runs the turn in this request; the run and the session's status follow it. */
async function runTurnNow(ctx: AppContext, options: ExecuteRunOptions, session: AppSessionDoc, run: AppRunDoc, existing: Awaited<ReturnType<typeof startExistingSessionTurn>>) {
  await markAppRunStarted(ctx.models, run);
  try {
    const result = await runChatTurn(ctx, {
      principal: options.principal,
      project: { _id: session.projectId, tenantId: session.tenantId },
      body: { projectId: session.projectId, sessionId: session._id, message: run.message, ...(run.metadataJson ? { metadata: JSON.parse(run.metadataJson) as Record<string, unknown> } : {}) },
      idempotencyKey: run._id,
      budget: sessionMessageBudget(ctx, options.res),
      existing,
    });
    const output = [{ type: 'text', content: result.response }];
    await finishAppRun(ctx.models, run, { ok: true, output, spanIds: result.traceEvents.map((e) => e.spanId) });
    return { result, output };
  } catch (err) {
    await finishAppRun(ctx.models, run, { ok: false, error: errorOf(err) });
    throw err;
  }
}

export type ExecuteOutcome = { status: 200 | 202; body: Record<string, unknown> } | { streamed: true };

export async function executeRun(ctx: AppContext, options: ExecuteRunOptions): Promise<ExecuteOutcome> {
  const { body, scope } = options;
  validateMetadata(body.metadata);
  const { message, metadata } = runMessage(body);
  const streaming = body.stream?.enable === true;
  const async = !streaming && body.isAsync;
  if (async && body.callbackUrl) {
    if (!body.callbackToken) throw new ApiError('VALIDATION_ERROR', 'body.callbackToken: is required with callbackUrl (it signs the callback)');
    // The rules of HTTP-async receivers: https in production, a public address by resolution; as
    // there, 422 (the body is schema-valid, the URL unusable here).
    const checked = await checkCallbackUrlRules(body.callbackUrl, { production: ctx.config.NODE_ENV === 'production', policy: appRunCallbackDestinationPolicy(ctx.config) });
    if (!checked.ok) throw new ApiError('UNPROCESSABLE_ENTITY', checked.message);
  }
  const { session } = await findOrCreateAppSession(ctx, scope, parseIdentity(body.sessionIdentity), body.source ?? 'AP');
  if (session.terminatedAt) throw new ApiError('CONFLICT', 'Session has been terminated; start a new session');

  if (async) return startAsyncRun(ctx, session, message, metadata, body, options.res);

  // The message charge and the session read happen before any byte of a stream is written.
  const existing = await startExistingSessionTurn(ctx, options.principal, session._id, sessionMessageBudget(ctx, options.res));
  // A message refused by the session's rate never became a run: the session's status stays as it was.
  if (existing.chargeError) throw existing.chargeError;
  const run = await newRun(ctx, session, message, metadata);
  if (!streaming) {
    const { output } = await runTurnNow(ctx, options, session, run, existing);
    return { status: 200, body: { messageId: run.messageId, output, sessionInfo: sessionInfo(await readAppSession(ctx, scope, session._id), run._id) } };
  }

  const sse = new SseWriter(options.res, ctx.config.SSE_HEARTBEAT_MS);
  sse.open();
  let index = 0;
  const send = (type: string, data: Record<string, unknown>, last = false) => sse.send(type, { eventIndex: index++, type, ...data, isLastEvent: last });
  await send('run.started', { runId: run._id, messageId: run.messageId });
  try {
    const { result, output } = await runTurnNow(ctx, options, session, run, existing);
    for (const event of result.traceEvents) await send('trace', { event });
    await send('run.completed', { messageId: run.messageId, output, sessionInfo: sessionInfo(await readAppSession(ctx, scope, session._id), run._id) }, true);
  } catch (err) {
    const info = sessionInfo(await readAppSession(ctx, scope, session._id).catch(() => session), run._id);
    await send('run.failed', { messageId: run.messageId, error: errorOf(err), sessionInfo: info }, true);
  } finally {
    sse.end();
  }
  return { streamed: true };
}

/** What a session refuses a run with while it holds its limit of runs in flight. */
const queueFull = (max: number) =>
  new ApiError('QUEUE_FULL', {
    message: `The session has ${max} runs in flight (the limit); send the run again when one has finished`,
    extraBody: { retryAfterMs: 1000 },
    headers: { 'Retry-After': '1' },
  });

/**
 * Charges the run to the session's message rate (as a synchronous run is), then takes a place
 * among the session's runs in flight by one conditional increment, so concurrent requests cannot
 * pass the limit; a refusal hands the charge back. The run's end (finishAppRun) gives the place back.
 */
async function startAsyncRun(ctx: AppContext, session: AppSessionDoc, message: string, metadata: Record<string, unknown> | undefined, body: TExecuteRunBody, res: Response): Promise<ExecuteOutcome> {
  const callback = body.callbackUrl
    ? { callbackUrl: body.callbackUrl, callbackToken: requireEncryptor(ctx).encrypt(session.tenantId, APP_RUN_CALLBACK_TOKEN_PURPOSE, body.callbackToken!) }
    : {};
  const limiterKey = `session:${session._id}`;
  await consumeRateLimit(ctx.sessionMessageLimiter, limiterKey, res, 'Session message rate limit exceeded');
  const max = ctx.config.APP_RUN_MAX_IN_FLIGHT_PER_SESSION;
  let run: AppRunDoc;
  let client: Awaited<ReturnType<typeof temporalClient>>;
  try {
    client = await temporalClient(ctx);
    const place = await ctx.models.AppSession.updateOne(
      { _id: session._id, tenantId: session.tenantId, $or: [{ activeRuns: { $lt: max } }, { activeRuns: { $exists: false } }] },
      { $inc: { activeRuns: 1 } },
    );
    if (place.modifiedCount === 0) throw queueFull(max);
    // Created running: its place is taken above, and finishAppRun gives it back.
    run = await newRun(ctx, session, message, metadata, { isAsync: true, status: 'running', ...callback }).catch(async (err: unknown) => {
      await ctx.models.AppSession.updateOne({ _id: session._id, tenantId: session.tenantId }, { $inc: { activeRuns: -1 } });
      throw err;
    });
  } catch (err) {
    void refundRateLimit(ctx.sessionMessageLimiter, limiterKey).catch(() => undefined);
    throw err;
  }
  const input: AppRunInput = { tenantId: run.tenantId, projectId: run.projectId, runId: run._id };
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start(APP_RUN_WORKFLOW_TYPE, {
        workflowId: `app-run/${run._id}`,
        taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
        args: [input],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TenantIdKey, value: run.tenantId },
          { key: ProjectIdKey, value: run.projectId },
          { key: SessionIdKey, value: run.sessionId },
          { key: ChannelKey, value: 'api' },
          { key: EnvironmentKey, value: session.environment },
        ]),
        staticSummary: `app run ${run._id}`,
      }),
    );
  } catch (err) {
    const error = temporalErrorToDomainError(err, 'The run runtime');
    await finishAppRun(ctx.models, run, { ok: false, error: { code: error.code, message: error.message } });
    void refundRateLimit(ctx.sessionMessageLimiter, limiterKey).catch(() => undefined);
    throw error;
  }
  const current = await readAppSession(ctx, session, session._id);
  return {
    status: 202,
    body: {
      messageId: run.messageId,
      output: [],
      status: 'processing',
      runId: run._id,
      message: body.callbackUrl ? 'The run is processing; its result will be POSTed to callbackUrl' : 'The run is processing; poll runs/{runId}/status',
      sessionInfo: sessionInfo(current, run._id),
    },
  };
}

/** A run of this app and environment, or 404. */
export async function runStatus(ctx: AppContext, scope: AppScope, runId: string) {
  const run = await ctx.models.AppRun.findOne({ _id: runId, tenantId: scope.tenantId, projectId: scope.projectId }).lean();
  const session = run ? await ctx.models.AppSession.findOne({ _id: run.sessionId, tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment }).lean() : null;
  if (!run || !session) throw new ApiError('NOT_FOUND', 'Run not found');
  return {
    run: {
      runId: run._id,
      messageId: run.messageId,
      status: run.status,
      output: run.output,
      error: run.error,
      createdAt: new Date(run.createdAt).toISOString(),
      finishedAt: run.finishedAt ? new Date(run.finishedAt).toISOString() : null,
      callback: run.callbackUrl ? { attempts: run.deliveryAttempts, deliveredAt: run.deliveredAt ? new Date(run.deliveredAt).toISOString() : null } : null,
    },
    sessionInfo: sessionInfo(session, run._id),
  };
}
