// Reading sessions: one by id (404 outside the caller's scope), lists, and the detail with the
// workflow's live state. A read first asks a running session to write the turns it still holds,
// so it never trails what the session answered; a silent session never fails the read.
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { type SessionDoc } from '../../db/session';
import { DomainError } from '../../lib/errors';
import { sdkChannelUId, type Principal } from '../../lib/permissions';
import { flushUpdate, stateQuery, type SessionStateView } from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { type SessionScope } from './scope';
import { silentRuntime } from './silent-runtime';
import {
  type AgentSessionWorkflow,
  isTemporalUnavailable,
  isWorkflowNotFound,
  sessionWorkflowId,
  STATE_QUERY_TIMEOUT_MS,
  withDeadline,
} from './workflow-client';

/** How long a read waits for a running session to write the turns it holds. */
export const FLUSH_TIMEOUT_MS = 5_000;

/** Why a detail carries no live state. */
export type LiveUnavailableReason = 'ended' | 'not_running' | 'unreachable';

/** A list's filters and page. */
export interface SessionListQuery {
  limit: number;
  offset: number;
  /** `suspended`: active sessions waiting on an async tool call. */
  status?: SessionDoc['status'] | 'suspended';
  channel?: SessionDoc['channel'];
}

export const sessionNotFound = () => new DomainError('NOT_FOUND', 'Session not found');

/** The session of this tenant and project, or 404 "Session not found". */
export async function findSession(models: Models, scope: SessionScope, sessionId: string): Promise<SessionDoc> {
  const session = await findOwned(models.Session, sessionId, scope);
  if (!session) throw sessionNotFound();
  return session;
}

/**
 * What narrows a session lookup to an SDK end user's own sessions (those it started, whose
 * `channelUId` names it); nothing for other credentials. Part of the filter, so another end
 * user's session is simply not found.
 */
export function sdkSessionScope(principal: Principal): { channelUId?: string } {
  return principal.sdk ? { channelUId: sdkChannelUId(principal.sdk) } : {};
}

/**
 * The session by id for tenant-wide routes (transcripts); a project-bound key sees its project
 * only, an SDK end user its own sessions only.
 */
export async function findTenantSession(models: Models, principal: Principal, sessionId: string): Promise<SessionDoc> {
  const session = await findOwned(models.Session, sessionId, {
    tenantId: principal.tenantId,
    ...(principal.projectId ? { projectId: principal.projectId } : {}),
    ...sdkSessionScope(principal),
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

export async function flushSessionProjection(ctx: CoreContext, session: SessionDoc): Promise<FlushOutcome> {
  if (session.status === 'ended') return 'nothing_held';
  return coalesced(session.runtimeSessionId, () => sendFlush(ctx, session));
}

/**
 * Flushes of one session asked for at once share updates: at most one in flight and one waiting
 * per session in this process. A read that comes while a flush is in flight waits for the next
 * one (the one in flight may have been taken before the turn the reader was answered), which
 * every read arriving meanwhile shares. Without it, each read of a session whose worker is gone
 * was one more update waiting on the workflow, and Temporal admits ten at a time per workflow:
 * reads could take the places of turns.
 */
const flushes = new Map<string, { current: Promise<FlushOutcome>; next: Promise<FlushOutcome> | null }>();

export function coalesced(workflowId: string, send: () => Promise<FlushOutcome>): Promise<FlushOutcome> {
  const entry = flushes.get(workflowId);
  if (!entry) {
    const current = send();
    flushes.set(workflowId, { current, next: null });
    void current.finally(() => advance(workflowId));
    return current;
  }
  entry.next ??= entry.current.then(send, send);
  return entry.next;
}

function advance(workflowId: string): void {
  const entry = flushes.get(workflowId);
  if (!entry) return;
  if (!entry.next) {
    flushes.delete(workflowId);
    return;
  }
  entry.current = entry.next;
  entry.next = null;
  void entry.current.finally(() => advance(workflowId));
}

async function sendFlush(ctx: CoreContext, session: SessionDoc): Promise<FlushOutcome> {
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
async function readAfterFlush(ctx: CoreContext, read: () => Promise<SessionDoc>): Promise<{ session: SessionDoc; flushed: FlushOutcome }> {
  const session = await read();
  const flushed = await flushSessionProjection(ctx, session);
  const answered = flushed === 'written' || (flushed === 'nothing_held' && session.status !== 'ended');
  return { session: answered ? await read() : session, flushed };
}

/** findSession, after the session wrote what it held: for reads of transcripts and traces. */
export async function findCurrentSession(ctx: CoreContext, scope: SessionScope, sessionId: string): Promise<SessionDoc> {
  return (await readAfterFlush(ctx, () => findSession(ctx.models, scope, sessionId))).session;
}

/** findTenantSession, after the session wrote what it held. */
export async function findCurrentTenantSession(ctx: CoreContext, principal: Principal, sessionId: string): Promise<SessionDoc> {
  return (await readAfterFlush(ctx, () => findTenantSession(ctx.models, principal, sessionId))).session;
}

/** `environments`: an environment-bound key's, whose list shows only sessions of those. */
export async function listSessions(models: Models, scope: SessionScope, query: SessionListQuery, environments?: readonly string[] | null) {
  const filter = {
    ...scope,
    ...(environments?.length ? { environment: { $in: [...environments] } } : {}),
    // `suspended` is the finer runtime status of an active session.
    ...(query.status === 'suspended' ? { status: 'active', runtimeStatus: 'suspended' } : query.status ? { status: query.status } : {}),
    // `voice` is the voice family: phone calls and real-time voice rooms (as the analytics group them).
    ...(query.channel === 'voice' ? { channel: { $in: ['voice', 'voice_realtime'] } } : query.channel ? { channel: query.channel } : {}),
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
export async function getSessionDetail(ctx: CoreContext, scope: SessionScope, sessionId: string): Promise<SessionDetail> {
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
