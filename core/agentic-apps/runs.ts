// Runs of agentic-app sessions (POST …/runs/execute): one turn of the session's AgentSession
// workflow, run in the request (the API answers it synchronously or as Server-Sent Events,
// api/agentic-apps/runs.ts), or (isAsync) by an AppRun workflow that delivers the result to the
// caller's signed callback. The session's message budget comes from the caller (a MessageBudget).
import { APP_RUN_CALLBACK_TOKEN_PURPOSE, finishAppRun, markAppRunStarted, type AppRunDoc } from '../../db/app-run';
import { type AppSessionDoc, type AppSessionSource } from '../../db/app-session';
import { newId } from '../../lib/ids';
import { ApiError, isDomainError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import { appRunCallbackDestinationPolicy } from '../../lib/net/destination';
import { checkCallbackUrlRules } from '../../lib/net/callback-url';
import { ChannelKey, EnvironmentKey, ProjectIdKey, SessionIdKey, TenantIdKey } from '../../workflows/search-attributes';
import { type AppRunInput } from '../../workflows/definitions';
import { TypedSearchAttributes } from '@temporalio/common';
import { type CoreContext } from '../context';
import { requireEncryptor } from '../llm/runtime';
import { runChatTurn, startExistingSessionTurn, validateMetadata, type ExistingSessionTurn } from '../chat/turns';
import { type MessageBudget } from '../sessions/message-budget';
import { temporalClient, temporalErrorToDomainError, TEMPORAL_CALL_TIMEOUT_MS, withDeadline } from '../sessions/workflow-client';
import { findOrCreateAppSession, parseIdentity, readAppSession, type AppScope } from './sessions';
import { type AttachmentDoc } from '../../db/attachment';
import { findSessionAttachments, listSessionAttachments, type AttachmentView } from '../attachments/store';
import { composeAttachmentMessage, MESSAGE_MAX_ATTACHMENTS } from '../attachments/message';

/** Started by name: the worker registers `appRun` from workflows/index.ts. */
const APP_RUN_WORKFLOW_TYPE = 'appRun';

/** A run as the caller asks for it: the body of runs/execute (api/agentic-apps/schemas.ts). */
export interface RunRequest {
  sessionIdentity: readonly { type: string; value: string }[];
  input: readonly { content: string }[];
  stream?: { enable: boolean };
  isAsync: boolean;
  callbackUrl?: string;
  callbackToken?: string;
  metadata?: Record<string, unknown>;
  /** Files of the session (uploaded through …/sessions/{sessionId}/attachments) the run carries. */
  attachments?: { enable: boolean; includeFiles?: readonly string[]; excludeFiles?: readonly string[] };
  source?: AppSessionSource;
}

/** The turn's message: every input item's content (none is blank) in order, separated by blank lines. */
export function runMessage(body: Pick<RunRequest, 'input' | 'metadata'>): { message: string; metadata: Record<string, unknown> | undefined } {
  return { message: body.input.map((i) => i.content).join('\n\n'), metadata: body.metadata };
}

async function newRun(ctx: CoreContext, session: AppSessionDoc, message: string, metadata: Record<string, unknown> | undefined, extra: Partial<AppRunDoc> = {}): Promise<AppRunDoc> {
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

/** A run request checked, with the session it runs in found or created. */
export interface PreparedRun {
  session: AppSessionDoc;
  message: string;
  metadata: Record<string, unknown> | undefined;
  /** Answered as Server-Sent Events (wins over isAsync). */
  streaming: boolean;
  /** Run by an AppRun workflow, answered with 202. */
  async: boolean;
  /** The files the run's message carries (none unless `attachments.enable`). */
  attachments: AttachmentView[];
}

/** Checks a run request (metadata, callback) and finds or creates its session; a terminated one is 409. */
export async function prepareRun(ctx: CoreContext, scope: AppScope, body: RunRequest): Promise<PreparedRun> {
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
  if (!body.attachments?.enable) return { session, message, metadata, streaming, async, attachments: [] };
  const files = await runFiles(ctx, session, body.attachments);
  const carried = await composeAttachmentMessage(ctx.models, message, files);
  return {
    session,
    message: carried.message,
    metadata: files.length > 0 ? { ...metadata, attachments: carried.attachments } : metadata,
    streaming,
    async,
    attachments: carried.attachments,
  };
}

/**
 * The session's files a run carries: `includeFiles` in that order (404 for one that is not the
 * session's), else every file of the session but `excludeFiles`, oldest first; at most MESSAGE_MAX_ATTACHMENTS.
 */
async function runFiles(ctx: CoreContext, session: AppSessionDoc, spec: NonNullable<RunRequest['attachments']>): Promise<AttachmentDoc[]> {
  const owner = { tenantId: session.tenantId, sessionId: session._id };
  if (spec.includeFiles?.length) return findSessionAttachments(ctx.models, owner, spec.includeFiles.filter((id) => !spec.excludeFiles?.includes(id)));
  const all = (await listSessionAttachments(ctx.models, owner)).filter((a) => !spec.excludeFiles?.includes(a._id));
  if (all.length > MESSAGE_MAX_ATTACHMENTS) {
    throw new ApiError('VALIDATION_ERROR', `body.attachments: the session holds ${all.length} files; name at most ${MESSAGE_MAX_ATTACHMENTS} in includeFiles`);
  }
  return all;
}

/**
 * Charges a run in the request to the session's message rate and reads the session, then records
 * the run. A message refused by the session's rate never becomes a run: the session's status stays as it was.
 */
export async function startRunTurn(ctx: CoreContext, principal: Principal, prepared: PreparedRun, budget: MessageBudget): Promise<{ run: AppRunDoc; existing: ExistingSessionTurn }> {
  const existing = await startExistingSessionTurn(ctx, principal, prepared.session._id, budget);
  if (existing.chargeError) throw existing.chargeError;
  const run = await newRun(ctx, prepared.session, prepared.message, prepared.metadata);
  return { run, existing };
}

/** Runs the turn in this request; the run and the session's status follow it. */
export async function runTurnNow(ctx: CoreContext, principal: Principal, session: AppSessionDoc, run: AppRunDoc, existing: ExistingSessionTurn, budget: MessageBudget) {
  await markAppRunStarted(ctx.models, run);
  try {
    const result = await runChatTurn(ctx, {
      principal,
      project: { _id: session.projectId, tenantId: session.tenantId },
      body: { projectId: session.projectId, sessionId: session._id, message: run.message, ...(run.metadataJson ? { metadata: JSON.parse(run.metadataJson) as Record<string, unknown> } : {}) },
      idempotencyKey: run._id,
      budget,
      existing,
    });
    const output = [{ type: 'text', content: result.response }];
    await finishAppRun(ctx.models, run, { ok: true, output, spanIds: result.traceEvents.map((e) => e.spanId) });
    return { result, output };
  } catch (err) {
    await finishAppRun(ctx.models, run, { ok: false, error: runError(err) });
    throw err;
  }
}

/** A failed run's error as its record and its answer show it. */
export const runError = (err: unknown) => (isDomainError(err) ? { code: err.code, message: err.message } : { code: 'INTERNAL_ERROR', message: 'The run failed' });

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
 * Returns the run and its session as it now is.
 */
export async function startAsyncRun(ctx: CoreContext, prepared: PreparedRun, body: Pick<RunRequest, 'callbackUrl' | 'callbackToken'>, budget: MessageBudget): Promise<{ run: AppRunDoc; session: AppSessionDoc }> {
  const { session, message, metadata } = prepared;
  const callback = body.callbackUrl
    ? { callbackUrl: body.callbackUrl, callbackToken: requireEncryptor(ctx).encrypt(session.tenantId, APP_RUN_CALLBACK_TOKEN_PURPOSE, body.callbackToken!) }
    : {};
  const limiterKey = `session:${session._id}`;
  await budget.charge(limiterKey);
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
    void budget.refund(limiterKey).catch(() => undefined);
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
    void budget.refund(limiterKey).catch(() => undefined);
    throw error;
  }
  return { run, session: await readAppSession(ctx, session, session._id) };
}

/** A run of this app and environment with its session, or 404. */
export async function findRun(ctx: CoreContext, scope: AppScope, runId: string): Promise<{ run: AppRunDoc; session: AppSessionDoc }> {
  const run = await ctx.models.AppRun.findOne({ _id: runId, tenantId: scope.tenantId, projectId: scope.projectId }).lean();
  const session = run ? await ctx.models.AppSession.findOne({ _id: run.sessionId, tenantId: scope.tenantId, projectId: scope.projectId, environment: scope.environment }).lean() : null;
  if (!run || !session) throw new ApiError('NOT_FOUND', 'Run not found');
  return { run, session };
}
