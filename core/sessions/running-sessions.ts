// What this API process knows about sessions it has seen running: their project, which never
// changes. A continuing chat turn for a remembered session skips the session read and goes
// straight to its workflow; the workflow is the judge of whether the session still runs, and a
// turn it refuses (closed, ended) falls back to the record for the answer (404 or 409).
// Only facts that cannot change are kept, so a stale entry can cost a round trip, never a wrong
// answer. Keyed by tenant and session, so another tenant's id never matches. Bounded; the
// oldest entries go first.
import { type CoreContext } from '../context';
import { rememberedPerProcess } from '../remembered';

export interface RunningSession {
  projectId: string;
}

const running = rememberedPerProcess<RunningSession>(10_000);

export function recallRunningSession(ctx: CoreContext, tenantId: string, sessionId: string): RunningSession | null {
  return running.recall(ctx, tenantId, sessionId);
}

export function rememberRunningSession(ctx: CoreContext, tenantId: string, sessionId: string, session: RunningSession): void {
  running.remember(ctx, tenantId, sessionId, { projectId: session.projectId });
}

export function forgetRunningSession(ctx: CoreContext, tenantId: string, sessionId: string): void {
  running.forget(ctx, tenantId, sessionId);
}
