// A small per-project cache of async loads with a time to live, for data that may be a few
// seconds stale by design (a project's LLM settings and credentials).

/**
 * Loads per project, reused for `ttlMs`: settings and credentials change rarely, and a turn or
 * a completion should not pay two reads for them. Concurrent callers share one load; a failed
 * load is not kept. Bounded (the oldest entry goes first).
 */
export function memoizePerProject<T>(ttlMs: number, load: (tenantId: string, projectId: string) => Promise<T>, maxEntries = 1000) {
  const entries = new Map<string, { expiresAt: number; value: Promise<T> }>();
  return {
    get(tenantId: string, projectId: string): Promise<T> {
      const key = `${tenantId}\u0000${projectId}`;
      const hit = entries.get(key);
      if (hit && hit.expiresAt > Date.now()) return hit.value;
      const value = load(tenantId, projectId);
      entries.delete(key);
      entries.set(key, { expiresAt: Date.now() + ttlMs, value });
      value.catch(() => entries.get(key)?.value === value && entries.delete(key));
      if (entries.size > maxEntries) entries.delete(entries.keys().next().value!);
      return value;
    },
    forget(tenantId: string, projectId: string): void {
      entries.delete(`${tenantId}\u0000${projectId}`);
    },
  };
}
