// What this API process knows about sessions it has seen running: their project, which never
// changes. A continuing chat turn for a remembered session skips the session read and goes
// straight to its workflow; the workflow is the judge of whether the session still runs, and a
// turn it refuses (closed, ended) falls back to the record for the answer (404 or 409).
// Only facts that cannot change are kept, so a stale entry can cost a round trip, never a wrong
// answer. Keyed by tenant and session, so another tenant's id never matches. Bounded; the
// oldest entries go first.
import { type CoreContext } from '../context';

const MAX_REMEMBERED = 10_000;

export interface RunningSession {
  projectId: string;
}

const remembered = new WeakMap<CoreContext, Map<string, RunningSession>>();

function memoryOf(ctx: CoreContext): Map<string, RunningSession> {
  let memory = remembered.get(ctx);
  if (!memory) remembered.set(ctx, (memory = new Map()));
  return memory;
}

const keyOf = (tenantId: string, sessionId: string) => `${tenantId}\u0000${sessionId}`;

export function recallRunningSession(ctx: CoreContext, tenantId: string, sessionId: string): RunningSession | null {
  return memoryOf(ctx).get(keyOf(tenantId, sessionId)) ?? null;
}

export function rememberRunningSession(ctx: CoreContext, tenantId: string, sessionId: string, session: RunningSession): void {
  const memory = memoryOf(ctx);
  const key = keyOf(tenantId, sessionId);
  memory.delete(key);
  memory.set(key, { projectId: session.projectId });
  if (memory.size > MAX_REMEMBERED) memory.delete(memory.keys().next().value!);
}

export function forgetRunningSession(ctx: CoreContext, tenantId: string, sessionId: string): void {
  memoryOf(ctx).delete(keyOf(tenantId, sessionId));
}
