// What this API process knows about the sessions that run HTTP-async conversations' delivery
// lanes: the conversation's workflow id and the session it last sent a follow-up to. A follow-up
// for a remembered conversation goes straight to that session without reading the conversation's
// record or its project (a project's deletion ends its sessions before it deletes anything, as for
// chat turns: core/sessions/running-sessions.ts). The session is the judge: one that has ended
// refuses the message, which then goes by the record as any other (and the entry is forgotten).
// So a stale entry costs a round trip, never a wrong answer. Keyed by tenant; bounded, the oldest
// entries go first.
import { type CoreContext } from '../context';

const MAX_REMEMBERED = 10_000;

const remembered = new WeakMap<CoreContext, Map<string, string>>();

function memoryOf(ctx: CoreContext): Map<string, string> {
  let memory = remembered.get(ctx);
  if (!memory) remembered.set(ctx, (memory = new Map()));
  return memory;
}

const keyOf = (tenantId: string, conversationId: string) => `${tenantId}\u0000${conversationId}`;

/** The session that ran the conversation's lane when this process last sent it a message, or null. */
export function recallLaneSession(ctx: CoreContext, tenantId: string, conversationId: string): string | null {
  return memoryOf(ctx).get(keyOf(tenantId, conversationId)) ?? null;
}

export function rememberLaneSession(ctx: CoreContext, tenantId: string, conversationId: string, sessionId: string): void {
  const memory = memoryOf(ctx);
  const key = keyOf(tenantId, conversationId);
  memory.delete(key);
  memory.set(key, sessionId);
  if (memory.size > MAX_REMEMBERED) memory.delete(memory.keys().next().value!);
}

export function forgetLaneSession(ctx: CoreContext, tenantId: string, conversationId: string): void {
  memoryOf(ctx).delete(keyOf(tenantId, conversationId));
}
