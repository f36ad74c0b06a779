// A bounded memory an API process keeps of facts about a tenant's things (which session a
// conversation's lane runs in, which project a running session is in), one per core context.
// Keyed by tenant and id, so another tenant's id never matches; the oldest entries go first.
// What is kept must be checked where it is used: a stale entry may cost a round trip, never a
// wrong answer (core/sessions/running-sessions.ts, core/http-async/lane-sessions.ts).
import { type CoreContext } from './context';

export interface Remembered<T> {
  recall(ctx: CoreContext, tenantId: string, id: string): T | null;
  remember(ctx: CoreContext, tenantId: string, id: string, value: T): void;
  forget(ctx: CoreContext, tenantId: string, id: string): void;
}

export function rememberedPerProcess<T>(max: number): Remembered<T> {
  const memories = new WeakMap<CoreContext, Map<string, T>>();
  const memoryOf = (ctx: CoreContext) => {
    let memory = memories.get(ctx);
    if (!memory) memories.set(ctx, (memory = new Map()));
    return memory;
  };
  const keyOf = (tenantId: string, id: string) => `${tenantId}\u0000${id}`;
  return {
    recall: (ctx, tenantId, id) => memoryOf(ctx).get(keyOf(tenantId, id)) ?? null,
    remember(ctx, tenantId, id, value) {
      const memory = memoryOf(ctx);
      const key = keyOf(tenantId, id);
      memory.delete(key);
      memory.set(key, value);
      if (memory.size > max) memory.delete(memory.keys().next().value!);
    },
    forget: (ctx, tenantId, id) => void memoryOf(ctx).delete(keyOf(tenantId, id)),
  };
}
