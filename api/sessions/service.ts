// Sessions: creating one (summary record + AgentSession workflow), listing and reading them from
// MongoDB, the live state from the workflow's query, reset and delete through the workflow, and
// the transcript, trace and metrics reads. Every query carries tenantId (+ projectId); ids from
// the URL never widen the scope. The chat route reuses `startSessionWorkflow` and the builders.
import { forgetRunningSession } from './running-sessions';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { type DeploymentDoc } from '../../db/deployment';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { acquireSessionSlot, releaseSessionSlot } from '../../db/session-capacity';
import { type SessionDoc } from '../../db/session';
import { type TraceEventDoc } from '../../db/trace-event';
import { type Config } from '../../lib/config';
import { ApiError } from '../../lib/errors';
import { type Principal } from '../../lib/permissions';
import {
  endSignal,
  flushUpdate,
  resetUpdate,
  stateQuery,
  type SessionChannel,
  type SessionStartInput,
  type SessionStateView,
} from '../../workflows/definitions';
import { type AppContext } from '../context';
import { cancelSessionTasks } from '../human-tasks/service';
import { resolveDeploymentAgent, resolveSessionDeployment } from '../deployments/service';
import { type LiveUnavailableReason } from './present';
import { silentRuntime } from './silent-runtime';
import { type TListSessionsQuery, type TTracesQuery } from './schemas';
import {
  AGENT_SESSION_WORKFLOW_TYPE,
  type AgentSessionWorkflow,
  isTemporalUnavailable,
  isWorkflowAlreadyStarted,
  isNamespaceMissing,
  isWorkflowNotFound,
  sessionStartOptions,
  sessionWorkflowId,
  STATE_QUERY_TIMEOUT_MS,
  TEMPORAL_CALL_TIMEOUT_MS,
  temporalClient,
  sendUpdateResendingDropped,
  temporalErrorToApiError,
  withDeadline,
} from './workflow-client';

export interface SessionScope {
  tenantId: string;
  projectId: string;
}

/** How long DELETE waits for the workflow to honour the end signal before terminating it. */
export const END_GRACE_MS = 3_000;
/** Bound on the reset update (the workflow answers it without an activity). */
export const RESET_TIMEOUT_MS = 10_000;
/** Metrics read at most this many trace events and transcript messages of one session. */
export const MAX_METRIC_EVENTS = 10_000;
/** How long a read waits for a running session to write the turns it holds. */
export const FLUSH_TIMEOUT_MS = 5_000;

const sessionNotFound = () => new ApiError('NOT_FOUND', 'Session not found');

// ---------------------------------------------------------------- agents

export interface ResolvedAgent {
  agentId: string;
  agentName: string;
}

/**
 * Resolves the agent a new session starts with. `agentRef` is an agent id, an agent path
 * `<domain>/<agent-name>` or a plain name; without it, the project's entry agent (its first
 * supervisor, else its oldest agent). Only agents with at least one version can run. A project
 * with no such agent is 404 "Project not found or has no agents".
 */
export async function resolveSessionAgent(models: Models, scope: SessionScope, agentRef?: string): Promise<ResolvedAgent> {
  const [versionedIds, allAgents] = await Promise.all([
    models.AgentVersion.distinct('agentId', scope),
    models.Agent.find(scope).select({ _id: 1, name: 1, domain: 1, dslContent: 1 }).sort({ createdAt: 1 }).lean(),
  ]);
  const versioned = new Set(versionedIds);
  const agents = allAgents.filter((a) => versioned.has(a._id));
  if (agents.length === 0) throw new ApiError('NOT_FOUND', 'Project not found or has no agents');
  const agent = agentRef
    ? agents.find((a) => a._id === agentRef || a.name === agentRef || `${a.domain}/${a.name}` === agentRef)
    : (agents.find((a) => /^\s*SUPERVISOR\s*:/m.test(a.dslContent)) ?? agents[0]);
  if (!agent) throw new ApiError('NOT_FOUND', `Agent "${agentRef}" not found in this project, or it has no version`);
  return { agentId: agent._id, agentName: agent.name };
}

/**
 * What a new session runs: the deployment named by `deploymentId`, else the active one of
 * `environment` (api/deployments/service.ts), and its agent (`agentId`, else the deployment's
 * entry agent); with no deployment, the latest versions and `resolveSessionAgent`.
 */
export async function resolveNewSessionTarget(
  models: Models,
  scope: SessionScope,
  target: { deploymentId?: string; environment?: string; agentId?: string },
): Promise<{ agent: ResolvedAgent; deployment: DeploymentDoc | null }> {
  const deployment = await resolveSessionDeployment(models, scope, target);
  const agent = deployment ? await resolveDeploymentAgent(models, scope, deployment, target.agentId) : await resolveSessionAgent(models, scope, target.agentId);
  return { agent, deployment };
}

// ---------------------------------------------------------------- creating sessions

export interface NewSessionInput {
  tenantId: string;
  projectId: string;
  agentId: string | null;
  agentName: string;
  channel: SessionChannel;
  /** @default 'dev' */
  environment?: string;
  /** @default null */
  deploymentId?: string | null;
  /** @default a fresh UUID */
  sessionId?: string;
}

/** The AgentSession's start input: a new session id, idle timeout from config, bundle by deployment or latest versions. */
export function buildSessionStartInput(config: Pick<Config, 'SESSION_IDLE_TIMEOUT_MS' | 'SESSION_MAX_HISTORY_EVENTS' | 'SESSION_PROJECTION_FLUSH_MS'>, input: NewSessionInput): SessionStartInput {
  const deploymentId = input.deploymentId ?? null;
  return {
    sessionId: input.sessionId ?? randomUUID(),
    tenantId: input.tenantId,
    projectId: input.projectId,
    agentName: input.agentName,
    agentId: input.agentId,
    channel: input.channel,
    environment: input.environment ?? 'dev',
    deploymentId,
    bundleRef: deploymentId ? { kind: 'deployment', deploymentId } : { kind: 'latest_versions' },
    idleTimeoutMs: config.SESSION_IDLE_TIMEOUT_MS,
    maxHistoryEvents: config.SESSION_MAX_HISTORY_EVENTS,
    projectionFlushMs: config.SESSION_PROJECTION_FLUSH_MS,
  };
}

/**
 * Writes the session's summary document (status `active`, zero counters). It must exist before
 * the workflow's first turn: the turn activity updates it and never upserts.
 */
export async function createSessionRecord(models: Models, start: SessionStartInput, now: Date = new Date()): Promise<SessionDoc> {
  const doc = await models.Session.create({
    _id: start.sessionId,
    tenantId: start.tenantId,
    projectId: start.projectId,
    agentId: start.agentId,
    agentName: start.agentName,
    currentAgent: start.agentName,
    status: 'active',
    runtimeStatus: 'active',
    channel: start.channel,
    environment: start.environment,
    deploymentId: start.deploymentId,
    runtimeSessionId: sessionWorkflowId(start.sessionId),
    createdAt: now,
    lastActivityAt: now,
  });
  return doc.toObject();
}

/**
 * Removes a session record written for a workflow that never started, and gives its place in the
 * tenant's active-session count back.
 */
export async function discardSessionRecord(models: Models, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<void> {
  await models.Session.deleteOne({ _id: start.sessionId, tenantId: start.tenantId });
  await releaseSessionSlot(models, start, 'give_back');
}

export interface StartedSession {
  session: SessionDoc;
  start: SessionStartInput;
  runId: string;
}

/**
 * Counts a new session against the tenant's MAX_CONCURRENT_SESSIONS (db/session-capacity.ts):
 * 429 "Concurrent session limit exceeded" when that many are active. Every way of starting a
 * session claims its place before writing the session record; a start that fails afterwards
 * gives it back. 'already_held': a concurrent start of the same session id claimed it.
 */
export async function claimSessionCapacity(ctx: AppContext, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<'acquired' | 'already_held'> {
  const outcome = await acquireSessionSlot(ctx.models, { ...start, cap: ctx.config.MAX_CONCURRENT_SESSIONS });
  if (outcome === 'full') {
    throw new ApiError('RATE_LIMIT_EXCEEDED', {
      message: 'Concurrent session limit exceeded',
      extraBody: { retryAfterMs: 60_000 },
      headers: { 'Retry-After': '60' },
    });
  }
  return outcome;
}

/** Gives a claimed place back after a start failed before writing its record. */
export async function releaseSessionCapacity(ctx: AppContext, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<void> {
  await releaseSessionSlot(ctx.models, start, 'give_back').catch((err: unknown) =>
    ctx.logger.warn({ err, sessionId: start.sessionId }, 'could not give back the capacity of an unstarted session; the reconciliation will'),
  );
}

/**
 * After a failed first turn: a session whose workflow never started gives its record and its
 * place back. One whose workflow did start keeps both, and gives its place back when it ends.
 * When Temporal cannot say, both stay (the record remains listed as active).
 */
export async function giveBackUnstartedSession(ctx: AppContext, start: Pick<SessionStartInput, 'tenantId' | 'sessionId'>): Promise<void> {
  try {
    const client = await ctx.temporal.client();
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => client.workflow.getHandle(sessionWorkflowId(start.sessionId)).describe());
  } catch (err) {
    // No such workflow, or no such namespace: nothing was started either way.
    if (!isWorkflowNotFound(err) && !isNamespaceMissing(err)) {
      ctx.logger.warn({ err, sessionId: start.sessionId }, 'could not tell whether a failed first turn started its session; it stays counted');
      return;
    }
    await discardSessionRecord(ctx.models, start).catch((cleanupErr: unknown) =>
      ctx.logger.warn({ err: cleanupErr, sessionId: start.sessionId }, 'could not remove the record of an unstarted session'),
    );
  }
}

/**
 * Creates a session: its place in the tenant's count, the summary record, then the AgentSession
 * workflow (`session/<id>`, conflict policy FAIL, search attributes). When the start fails the
 * record is removed again and the place given back, so no session is listed without a workflow;
 * Temporal down or silent → 503.
 */
export async function startSessionWorkflow(ctx: AppContext, input: NewSessionInput): Promise<StartedSession> {
  const start = buildSessionStartInput(ctx.config, input);
  await claimSessionCapacity(ctx, start);
  let client: Awaited<ReturnType<typeof temporalClient>>;
  let session: SessionDoc;
  try {
    client = await temporalClient(ctx);
    session = await createSessionRecord(ctx.models, start);
  } catch (err) {
    await releaseSessionCapacity(ctx, start);
    throw err;
  }
  try {
    const handle = await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start<AgentSessionWorkflow>(AGENT_SESSION_WORKFLOW_TYPE, sessionStartOptions(ctx.config, start)),
    );
    return { session, start, runId: handle.firstExecutionRunId };
  } catch (err) {
    await discardSessionRecord(ctx.models, start).catch((cleanupErr: unknown) =>
      ctx.logger.warn({ err: cleanupErr, sessionId: start.sessionId }, 'could not remove the record of an unstarted session'),
    );
    if (isWorkflowAlreadyStarted(err)) throw new ApiError('CONFLICT', { message: 'A session with this id already exists', cause: err });
    throw temporalErrorToApiError(err);
  }
}

// ---------------------------------------------------------------- reading sessions

/** The session of this tenant and project, or 404 "Session not found". */
export async function findSession(models: Models, scope: SessionScope, sessionId: string): Promise<SessionDoc> {
  const session = await findOwned(models.Session, sessionId, scope);
  if (!session) throw sessionNotFound();
  return session;
}

/** The session by id for tenant-wide routes (transcripts); a project-bound key sees its project only. */
export async function findTenantSession(models: Models, principal: Principal, sessionId: string): Promise<SessionDoc> {
  const session = await findOwned(models.Session, sessionId, {
    tenantId: principal.tenantId,
    ...(principal.projectId ? { projectId: principal.projectId } : {}),
  });
  if (!session) throw sessionNotFound();
  return session;
}

/**
 * Asks a running session to write the projection rows it still holds (turns answered within
 * SESSION_PROJECTION_FLUSH_MS), so a read right after a reply sees that turn. Says whether
 * anything was written, nothing was held (or the workflow is closed), or the session did not
 * answer (no worker, Temporal unavailable): the read then goes on with what MongoDB has (logged),
 * never failing because of it.
 */
export type FlushOutcome = 'written' | 'nothing_held' | 'unanswered';

export async function flushSessionProjection(ctx: AppContext, session: SessionDoc): Promise<FlushOutcome> {
  if (session.status === 'ended') return 'nothing_held';
  const silence = silentRuntime(ctx);
  try {
    const client = await ctx.temporal.client();
    const handle = client.workflow.getHandle<AgentSessionWorkflow>(session.runtimeSessionId);
    await withDeadline(client, silence.deadline(FLUSH_TIMEOUT_MS), () => handle.executeUpdate(flushUpdate));
    silence.noteAnswered();
    return 'written';
  } catch (err) {
    const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === 'NOTHING_PENDING') {
      // The session's validator answered: a worker runs it.
      silence.noteAnswered();
      return 'nothing_held';
    }
    if (isWorkflowNotFound(err)) return 'nothing_held';
    if (isTemporalUnavailable(err)) silence.noteUnanswered();
    ctx.logger.warn({ err, sessionId: session._id }, 'session did not write its held turns; reading what MongoDB has');
    return 'unanswered';
  }
}

/**
 * Reads a session record (which decides the 404), asks the session to write what it holds, and
 * reads the record again whenever the running session answered, even that it held nothing: its
 * own timer-driven write (or, after a silence, a flush sent by an earlier read and delivered
 * late) may have landed between the first read and the flush. The rows read afterwards are then
 * never ahead of the record's counters. One primary-key read; an ended session is read once.
 */
async function readAfterFlush(ctx: AppContext, read: () => Promise<SessionDoc>): Promise<{ session: SessionDoc; flushed: FlushOutcome }> {
  const session = await read();
  const flushed = await flushSessionProjection(ctx, session);
  const answered = flushed === 'written' || (flushed === 'nothing_held' && session.status !== 'ended');
  return { session: answered ? await read() : session, flushed };
}

/** findSession, after the session wrote what it held: for reads of transcripts and traces. */
export async function findCurrentSession(ctx: AppContext, scope: SessionScope, sessionId: string): Promise<SessionDoc> {
  return (await readAfterFlush(ctx, () => findSession(ctx.models, scope, sessionId))).session;
}

/** findTenantSession, after the session wrote what it held. */
export async function findCurrentTenantSession(ctx: AppContext, principal: Principal, sessionId: string): Promise<SessionDoc> {
  return (await readAfterFlush(ctx, () => findTenantSession(ctx.models, principal, sessionId))).session;
}

/** `environments`: an environment-bound key's, whose list shows only sessions of those. */
export async function listSessions(models: Models, scope: SessionScope, query: TListSessionsQuery, environments?: readonly string[] | null) {
  const filter = {
    ...scope,
    ...(environments?.length ? { environment: { $in: [...environments] } } : {}),
    // `suspended` is the finer runtime status of an active session.
    ...(query.status === 'suspended' ? { status: 'active', runtimeStatus: 'suspended' } : query.status ? { status: query.status } : {}),
    ...(query.channel ? { channel: query.channel } : {}),
  };
  const [total, sessions] = await Promise.all([
    models.Session.countDocuments(filter),
    models.Session.find(filter).sort({ createdAt: -1, _id: -1 }).skip(query.offset).limit(query.limit).lean(),
  ]);
  return { total, sessions };
}

export interface SessionDetail {
  session: SessionDoc;
  live: SessionStateView | null;
  liveUnavailableReason: LiveUnavailableReason | null;
}

/**
 * The stored summary plus, for an active session, the workflow's `state` query answered within
 * STATE_QUERY_TIMEOUT_MS. Temporal down, a silent worker or a closed workflow never fail the
 * read: the detail then says `live: false` and why. When the query is answered after the flush
 * was not (a worker just came back), the session is asked to write again, so the stored counters
 * match the live state.
 */
export async function getSessionDetail(ctx: AppContext, scope: SessionScope, sessionId: string): Promise<SessionDetail> {
  const read = () => findSession(ctx.models, scope, sessionId);
  const first = await readAfterFlush(ctx, read);
  let session = first.session;
  const flushed = first.flushed;
  if (session.status === 'ended') return { session, live: null, liveUnavailableReason: 'ended' };
  let client;
  try {
    client = await ctx.temporal.client();
  } catch (err) {
    ctx.logger.warn({ err, sessionId }, 'Temporal unreachable; answering the session detail from MongoDB');
    return { session, live: null, liveUnavailableReason: 'unreachable' };
  }
  const silence = silentRuntime(ctx);
  try {
    const handle = client.workflow.getHandle<AgentSessionWorkflow>(sessionWorkflowId(sessionId));
    const live = await withDeadline(client, silence.deadline(STATE_QUERY_TIMEOUT_MS), () => handle.query(stateQuery));
    silence.noteAnswered();
    // Answered after its flush was not: the first flush may have been delivered since, so the
    // record is read again once a second one is answered.
    if (flushed === 'unanswered') ({ session } = await readAfterFlush(ctx, read));
    return { session, live, liveUnavailableReason: null };
  } catch (err) {
    if (isWorkflowNotFound(err)) return { session, live: null, liveUnavailableReason: 'not_running' };
    if (isTemporalUnavailable(err)) silence.noteUnanswered();
    ctx.logger.warn({ err, sessionId }, 'session state query failed; answering from MongoDB');
    return { session, live: null, liveUnavailableReason: isTemporalUnavailable(err) ? 'unreachable' : 'not_running' };
  }
}

// ---------------------------------------------------------------- ending, deleting, resetting

export type WorkflowClosedBy = 'ended' | 'terminated' | 'not_running';

/**
 * Ends a session's workflow: the `end` signal, then up to `graceMs` for it to close; a workflow
 * that does not close in time is terminated. A missing or closed workflow is fine.
 */
export async function endSessionWorkflow(ctx: AppContext, sessionId: string, reason: string, graceMs = END_GRACE_MS): Promise<WorkflowClosedBy> {
  const client = await temporalClient(ctx);
  const handle = client.workflow.getHandle<AgentSessionWorkflow>(sessionWorkflowId(sessionId));
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => handle.signal(endSignal, { reason }));
  } catch (err) {
    if (isWorkflowNotFound(err)) return 'not_running';
    throw temporalErrorToApiError(err);
  }
  try {
    await withDeadline(client, graceMs, () => handle.result());
    return 'ended';
  } catch (err) {
    // Failed, terminated or timed out: closed all the same. Only "still running" goes on.
    if (!isTemporalUnavailable(err)) return 'ended';
  }
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => handle.terminate(`session deleted: ${reason}`));
    return 'terminated';
  } catch (err) {
    if (isWorkflowNotFound(err)) return 'ended';
    throw temporalErrorToApiError(err);
  }
}

export interface DeletedSession {
  sessionId: string;
  traceEvents: number;
  messages: number;
  workflow: WorkflowClosedBy;
}

/**
 * Deletes a session: closes the workflow first (so no turn writes after the sweep), then its
 * trace events, transcript messages and summary. Temporal unavailable → 503, nothing deleted.
 */
export async function deleteSession(ctx: AppContext, scope: SessionScope, sessionId: string): Promise<DeletedSession> {
  await findSession(ctx.models, scope, sessionId);
  forgetRunningSession(ctx, scope.tenantId, sessionId);
  const workflow = await endSessionWorkflow(ctx, sessionId, 'deleted');
  // Its open human tasks wait for nobody now.
  await cancelSessionTasks(ctx, scope, sessionId, 'session deleted');
  const owned = { tenantId: scope.tenantId, projectId: scope.projectId, sessionId };
  const [traces, messages] = await Promise.all([ctx.models.TraceEvent.deleteMany(owned), ctx.models.TranscriptMessage.deleteMany(owned)]);
  await ctx.models.Session.deleteOne({ _id: sessionId, ...scope });
  // A session still active when deleted (its workflow terminated) gives its place back here; one
  // that ended gave it back already, and this finds no slot.
  await releaseSessionSlot(ctx.models, { tenantId: scope.tenantId, sessionId });
  return { sessionId, traceEvents: traces.deletedCount, messages: messages.deletedCount, workflow };
}

const sessionEnded = (cause?: unknown) =>
  new ApiError('CONFLICT', { message: 'Session has ended and cannot be reset; start a new session', cause });

/**
 * Restarts the conversation through the workflow's `reset` update (history stays in traces and
 * transcripts). An ended session, or one whose workflow is closed, is 409 CONFLICT.
 */
export async function resetSession(ctx: AppContext, scope: SessionScope, sessionId: string): Promise<{ resetAt: string }> {
  const session = await findSession(ctx.models, scope, sessionId);
  if (session.status === 'ended') throw sessionEnded();
  const client = await temporalClient(ctx);
  const handle = client.workflow.getHandle<AgentSessionWorkflow>(sessionWorkflowId(sessionId));
  try {
    // One update id for every send: a dropped update (sendUpdateResendingDropped) never ran.
    const updateId = randomUUID();
    const deadline = Date.now() + RESET_TIMEOUT_MS;
    const reset = await sendUpdateResendingDropped(deadline, () => client.withDeadline(deadline, () => handle.executeUpdate(resetUpdate, { updateId })));
    // The conversation that escalated is gone: its open human tasks are cancelled.
    await cancelSessionTasks(ctx, scope, sessionId, 'session reset');
    return reset;
  } catch (err) {
    if (isWorkflowNotFound(err)) throw sessionEnded(err);
    throw temporalErrorToApiError(err);
  }
}

// ---------------------------------------------------------------- transcripts and traces

export async function listTranscript(models: Models, session: SessionDoc, page: { limit: number; offset: number }) {
  const filter = { tenantId: session.tenantId, sessionId: session._id };
  const [total, messages] = await Promise.all([
    models.TranscriptMessage.countDocuments(filter),
    models.TranscriptMessage.find(filter).sort({ seq: 1 }).skip(page.offset).limit(page.limit).lean(),
  ]);
  return { total, messages };
}

export async function listTraceEvents(models: Models, session: SessionDoc, query: TTracesQuery) {
  const filter: Record<string, unknown> = { tenantId: session.tenantId, projectId: session.projectId, sessionId: session._id };
  if (query.eventType) filter.type = query.eventType.length === 1 ? query.eventType[0] : { $in: query.eventType };
  if (query.decisionKind) {
    filter.type = 'decision';
    if (query.eventType && !query.eventType.includes('decision')) return { total: 0, events: [] as TraceEventDoc[] };
    filter['data.decisionKind'] = query.decisionKind;
  }
  if (query.spanId) filter.spanId = query.spanId;
  const [total, events] = await Promise.all([
    models.TraceEvent.countDocuments(filter),
    models.TraceEvent.find(filter).sort({ seq: 1 }).skip(query.offset).limit(query.limit).lean(),
  ]);
  return { total, events };
}

export async function listSpanChildren(models: Models, session: SessionDoc, spanId: string, page: { limit: number; offset: number }) {
  const filter = { tenantId: session.tenantId, projectId: session.projectId, sessionId: session._id, parentSpanId: spanId };
  const [total, events] = await Promise.all([
    models.TraceEvent.countDocuments(filter),
    models.TraceEvent.find(filter).sort({ seq: 1 }).skip(page.offset).limit(page.limit).lean(),
  ]);
  return { total, events };
}

// ---------------------------------------------------------------- metrics

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const record = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

function toolResultFailed(data: Record<string, unknown>): boolean {
  return Boolean(data.error) || data.ok === false || data.success === false || data.status === 'error';
}

/**
 * Aggregates computed in TypeScript over one indexed read of the session's events (FerretDB has
 * no $facet). Turn latency spans the first to the last message or event of the turn.
 */
export async function computeSessionMetrics(models: Models, session: SessionDoc) {
  const owned = { tenantId: session.tenantId, sessionId: session._id };
  const [events, messages] = await Promise.all([
    models.TraceEvent.find(owned).select({ type: 1, spanId: 1, turn: 1, timestamp: 1, data: 1 }).sort({ seq: 1 }).limit(MAX_METRIC_EVENTS + 1).lean(),
    models.TranscriptMessage.find(owned).select({ turn: 1, timestamp: 1 }).sort({ seq: 1 }).limit(MAX_METRIC_EVENTS + 1).lean(),
  ]);
  const truncated = events.length > MAX_METRIC_EVENTS || messages.length > MAX_METRIC_EVENTS;
  const turnSpan = new Map<number, { first: number; last: number; llmCalls: number; toolCalls: number }>();
  const touch = (turn: number, at: Date) => {
    const t = new Date(at).getTime();
    const span = turnSpan.get(turn) ?? { first: t, last: t, llmCalls: 0, toolCalls: 0 };
    span.first = Math.min(span.first, t);
    span.last = Math.max(span.last, t);
    turnSpan.set(turn, span);
    return span;
  };
  for (const m of messages.slice(0, MAX_METRIC_EVENTS)) touch(m.turn, m.timestamp);

  const llmCalls: { spanId: string; turn: number; model: string | null; inputTokens: number; outputTokens: number; latencyMs: number | null }[] = [];
  let toolCallCount = 0;
  let toolResults = 0;
  let toolFailures = 0;
  let guardrailEvalCount = 0;
  let guardrailBlocks = 0;
  let handoffCount = 0;
  let delegateCount = 0;
  let errorCount = 0;
  for (const e of events.slice(0, MAX_METRIC_EVENTS)) {
    const span = touch(e.turn, e.timestamp);
    const data = record(e.data);
    switch (e.type) {
      case 'llm_call': {
        span.llmCalls += 1;
        const usage = record(data.usage);
        llmCalls.push({
          spanId: e.spanId,
          turn: e.turn,
          model: typeof data.model === 'string' ? data.model : null,
          inputTokens: num(usage.inputTokens) ?? 0,
          outputTokens: num(usage.outputTokens) ?? 0,
          latencyMs: num(data.latencyMs) ?? num(data.latency_ms) ?? num(data.durationMs) ?? num(data.duration_ms),
        });
        break;
      }
      case 'tool_call':
        span.toolCalls += 1;
        toolCallCount += 1;
        break;
      case 'tool_result':
        toolResults += 1;
        if (toolResultFailed(data)) toolFailures += 1;
        break;
      case 'guardrail_eval':
        guardrailEvalCount += 1;
        if (data.passed === false && data.action === 'block') guardrailBlocks += 1;
        break;
      case 'handoff':
        handoffCount += 1;
        break;
      case 'delegate':
        delegateCount += 1;
        break;
      case 'error':
        errorCount += 1;
        break;
      default:
        break;
    }
  }
  const input = llmCalls.reduce((sum, c) => sum + c.inputTokens, 0);
  const output = llmCalls.reduce((sum, c) => sum + c.outputTokens, 0);
  const turns = [...turnSpan.entries()]
    .sort(([a], [b]) => a - b)
    .map(([turn, s]) => ({ turn, latencyMs: s.last - s.first, llmCalls: s.llmCalls, toolCalls: s.toolCalls }));
  return {
    sessionLatencyMs: session.durationMs,
    turnCount: turns.length,
    turns,
    llmCalls,
    tokens: { input, output, total: input + output },
    toolCallCount,
    toolSuccessRate: toolResults === 0 ? null : (toolResults - toolFailures) / toolResults,
    guardrailEvalCount,
    guardrailBlockRate: guardrailEvalCount === 0 ? null : guardrailBlocks / guardrailEvalCount,
    handoffCount,
    delegateCount,
    errorCount,
    truncated,
  };
}
