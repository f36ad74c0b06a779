// Ending a session: the end signal (terminating a workflow that does not close in time), deleting
// a session with everything it recorded, and resetting its conversation through the workflow.
import { randomUUID } from 'node:crypto';
import { releaseSessionSlot } from '../../db/session-capacity';
import { DomainError } from '../../lib/errors';
import { endSignal, resetUpdate } from '../../workflows/definitions';
import { type CoreContext } from '../context';
import { cancelSessionTasks } from '../human-tasks/tasks';
import { findSession } from './read';
import { forgetRunningSession } from './running-sessions';
import { type SessionScope } from './scope';
import { deleteSessionAttachments } from '../attachments/store';
import { deleteSessionStores } from '../memory-stores/stores';
import { signalVoiceRoomEnd } from '../voice/room-signal';
import {
  type AgentSessionWorkflow,
  isTemporalUnavailable,
  isWorkflowNotFound,
  sendUpdateResendingDropped,
  sessionWorkflowId,
  TEMPORAL_CALL_TIMEOUT_MS,
  temporalClient,
  temporalErrorToDomainError,
  withDeadline,
} from './workflow-client';

/** How long DELETE waits for the workflow to honour the end signal before terminating it. */
export const END_GRACE_MS = 3_000;
/** Bound on the reset update (the workflow answers it without an activity). */
export const RESET_TIMEOUT_MS = 10_000;

export type WorkflowClosedBy = 'ended' | 'terminated' | 'not_running';

/**
 * Ends a session's workflow: the `end` signal, then up to `graceMs` for it to close; a workflow
 * that does not close in time is terminated, and its end recorded here (recordSessionTerminated),
 * as it had no chance to record it. A missing or closed workflow is fine.
 */
export async function endSessionWorkflow(ctx: CoreContext, session: { tenantId: string; sessionId: string }, reason: string, graceMs = END_GRACE_MS): Promise<WorkflowClosedBy> {
  const { sessionId } = session;
  const client = await temporalClient(ctx);
  const handle = client.workflow.getHandle<AgentSessionWorkflow>(sessionWorkflowId(sessionId));
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => handle.signal(endSignal, { reason }));
  } catch (err) {
    if (isWorkflowNotFound(err)) return 'not_running';
    throw temporalErrorToDomainError(err);
  }
  try {
    await withDeadline(client, graceMs, () => handle.result());
    return 'ended';
  } catch (err) {
    // Failed, terminated or timed out: closed all the same, maybe without its last write. Only "still running" goes on.
    if (!isTemporalUnavailable(err)) {
      await recordSessionTerminated(ctx, session, reason);
      return 'ended';
    }
  }
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => handle.terminate(`session deleted: ${reason}`));
  } catch (err) {
    if (isWorkflowNotFound(err)) return 'ended';
    throw temporalErrorToDomainError(err);
  }
  await recordSessionTerminated(ctx, session, reason);
  return 'terminated';
}

/**
 * What the workflow's last write would have recorded, for one terminated before it could: the
 * summary says ended (if it still said active), the session's capacity slot goes back, and its
 * memory stores are deleted after the status changed (as the workflow's own end does). Idempotent.
 */
export async function recordSessionTerminated(ctx: Pick<CoreContext, 'models'>, session: { tenantId: string; sessionId: string }, reason: string): Promise<void> {
  const { tenantId, sessionId } = session;
  await ctx.models.Session.updateOne(
    { _id: sessionId, tenantId, status: 'active' },
    { $set: { status: 'ended', runtimeStatus: 'ended', endedAt: new Date(), endReason: reason } },
  );
  await releaseSessionSlot(ctx.models, { tenantId, sessionId });
  await deleteSessionStores(ctx.models, { tenantId, sessionId });
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
export async function deleteSession(ctx: CoreContext, scope: SessionScope, sessionId: string): Promise<DeletedSession> {
  const session = await findSession(ctx.models, scope, sessionId);
  forgetRunningSession(ctx, scope.tenantId, sessionId);
  const workflow = await endSessionWorkflow(ctx, { tenantId: scope.tenantId, sessionId }, 'deleted');
  // A voice session's room closes with it (its workflow told it too, unless it was terminated); a
  // phone call's session has one when its connection bridges calls into rooms (a call without one is fine).
  if (session.channel === 'voice_realtime' || session.channel === 'voice') await signalVoiceRoomEnd(await temporalClient(ctx), sessionId, 'deleted');
  // Its open human tasks wait for nobody now.
  await cancelSessionTasks(ctx, scope, sessionId, 'session deleted');
  const owned = { tenantId: scope.tenantId, projectId: scope.projectId, sessionId };
  // A phone call's voice metrics events go with its session.
  const [traces, messages] = await Promise.all([
    ctx.models.TraceEvent.deleteMany(owned),
    ctx.models.TranscriptMessage.deleteMany(owned),
    ctx.models.VoiceEvent.deleteMany(owned),
    // Its attachments (GridFS files and chunks) too.
    deleteSessionAttachments(ctx.models, owned),
    // And its place in its contact's sessions (the contact stays).
    ctx.models.ContactSession.deleteMany({ tenantId: scope.tenantId, sessionId }),
  ]);
  await ctx.models.Session.deleteOne({ _id: sessionId, ...scope });
  // After the record is gone, so a store write that still saw it is deleted here (core/memory-stores/stores.ts).
  await deleteSessionStores(ctx.models, { tenantId: scope.tenantId, sessionId });
  // A session still active when deleted (its workflow terminated) gives its place back here; one
  // that ended gave it back already, and this finds no slot.
  await releaseSessionSlot(ctx.models, { tenantId: scope.tenantId, sessionId });
  return { sessionId, traceEvents: traces.deletedCount, messages: messages.deletedCount, workflow };
}

const sessionEnded = (cause?: unknown) =>
  new DomainError('CONFLICT', { message: 'Session has ended and cannot be reset; start a new session', cause });

/**
 * Restarts the conversation through the workflow's `reset` update (history stays in traces and
 * transcripts). An ended session, or one whose workflow is closed, is 409 CONFLICT.
 */
export async function resetSession(ctx: CoreContext, scope: SessionScope, sessionId: string): Promise<{ resetAt: string }> {
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
    throw temporalErrorToDomainError(err);
  }
}
