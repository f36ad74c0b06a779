// Agent memory activities: a session's persistent facts read at its start and its changed facts
// written after a turn (db/memory-fact.ts). Every query names the tenant and the project; a fact's
// scope key is the session's contact (`user`), the project (`project`) or the root session
// (`execution_tree`). Expired facts are never returned and are deleted as their keys are touched.
import type { Json } from '../../abl/ir';
import { type ActivityDeps } from '..';
import { isDuplicateKey } from '../../db/duplicate-key';
import { ensureMemoryFactTtlIndex, type FactScope } from '../../db/memory-fact';

/** The largest value one fact may hold (JSON, UTF-8); a larger write is refused. */
export const MEMORY_FACT_MAX_BYTES = 16 * 1024;
/** At most this many facts are read or written at once. */
export const MEMORY_FACTS_PER_CALL = 200;

export interface FactOwner {
  tenantId: string;
  projectId: string;
  /** The root session's id (`execution_tree` facts). */
  treeId: string;
  /** The session's contact; null for an anonymous session (its `user` facts are not stored). */
  contactId: string | null;
}

export interface LoadAgentMemoryInput extends FactOwner {
  facts: Array<{ path: string; scope: FactScope }>;
}

export interface SaveAgentMemoryInput extends FactOwner {
  /** `value: null` deletes the fact; `ttlMs` sets its expiry (null: none). */
  writes: Array<{ path: string; scope: FactScope; value: Json; ttlMs: number | null }>;
}

export interface SaveAgentMemoryResult {
  saved: number;
  refused: Array<{ path: string; reason: string }>;
}

/** The row key of a scope for this session, or null when the session has none (anonymous `user`). */
function scopeKey(owner: FactOwner, scope: FactScope): string | null {
  if (scope === 'user') return owner.contactId;
  if (scope === 'project') return '';
  return owner.treeId;
}

export function createAgentMemoryActivities(deps: Pick<ActivityDeps, 'models'>) {
  // Read at call time: the activities are also built without a store (e.g. to list their names).
  const store = () => deps.models.MemoryFact;

  /** Deletes the expired rows of the keys this call touches (the TTL index may be late or absent). */
  async function dropExpired(owner: FactOwner, keys: Array<{ scope: FactScope; scopeKey: string }>, now: Date): Promise<void> {
    if (keys.length === 0) return;
    await store().deleteMany({
      tenantId: owner.tenantId,
      projectId: owner.projectId,
      $or: keys.map((k) => ({ scope: k.scope, scopeKey: k.scopeKey })),
      expiresAt: { $ne: null, $lte: now },
    });
  }

  function keysOf(owner: FactOwner, refs: Array<{ scope: FactScope }>): Array<{ scope: FactScope; scopeKey: string }> {
    const out = new Map<string, { scope: FactScope; scopeKey: string }>();
    for (const r of refs) {
      const key = scopeKey(owner, r.scope);
      if (key !== null) out.set(`${r.scope}\u0000${key}`, { scope: r.scope, scopeKey: key });
    }
    return [...out.values()];
  }

  return {
    /** The session's facts by path (only those stored and not expired). */
    async loadAgentMemory(input: LoadAgentMemoryInput): Promise<{ facts: Record<string, Json> }> {
      await ensureMemoryFactTtlIndex(store());
      const now = new Date();
      const refs = input.facts.slice(0, MEMORY_FACTS_PER_CALL).filter((f) => scopeKey(input, f.scope) !== null);
      const keys = keysOf(input, refs);
      await dropExpired(input, keys, now);
      if (refs.length === 0) return { facts: {} };
      const rows = await store().find({
        tenantId: input.tenantId,
        projectId: input.projectId,
        $or: refs.map((f) => ({ scope: f.scope, scopeKey: scopeKey(input, f.scope) as string, path: f.path })),
      })
        .select({ scope: 1, path: 1, value: 1, expiresAt: 1 })
        .lean();
      const facts: Record<string, Json> = {};
      for (const row of rows) {
        if (row.expiresAt && row.expiresAt.getTime() <= now.getTime()) continue;
        // A path declared with two scopes in one project reads the scope it is asked with.
        if (!refs.some((f) => f.path === row.path && f.scope === row.scope)) continue;
        facts[row.path] = (row.value ?? null) as Json;
      }
      return { facts };
    },

    /** Writes the turn's changed facts: upserts, deletes for null values, expiry from the TTL. */
    async saveAgentMemory(input: SaveAgentMemoryInput): Promise<SaveAgentMemoryResult> {
      await ensureMemoryFactTtlIndex(store());
      const now = new Date();
      const refused: SaveAgentMemoryResult['refused'] = [];
      let saved = 0;
      const writes = input.writes.slice(0, MEMORY_FACTS_PER_CALL);
      for (const w of input.writes.slice(MEMORY_FACTS_PER_CALL)) refused.push({ path: w.path, reason: `more than ${MEMORY_FACTS_PER_CALL} facts in one turn` });
      await dropExpired(input, keysOf(input, writes), now);
      for (const w of writes) {
        const key = scopeKey(input, w.scope);
        if (key === null) continue;
        const filter = { tenantId: input.tenantId, projectId: input.projectId, scope: w.scope, scopeKey: key, path: w.path };
        if (w.value === null) {
          await store().deleteOne(filter);
          saved++;
          continue;
        }
        const bytes = Buffer.byteLength(JSON.stringify(w.value), 'utf8');
        if (bytes > MEMORY_FACT_MAX_BYTES) {
          refused.push({ path: w.path, reason: `the value has ${bytes} bytes, more than ${MEMORY_FACT_MAX_BYTES}` });
          continue;
        }
        const expiresAt = w.ttlMs !== null && w.ttlMs > 0 ? new Date(now.getTime() + w.ttlMs) : null;
        const update = { $set: { value: w.value, expiresAt, updatedAt: now }, $setOnInsert: { createdAt: now } };
        try {
          await store().updateOne(filter, update, { upsert: true, timestamps: false });
        } catch (err) {
          // Two sessions created the same fact at once: the other's row exists now, so update it.
          if (!isDuplicateKey(err)) throw err;
          await store().updateOne(filter, update, { timestamps: false });
        }
        saved++;
      }
      return { saved, refused };
    },
  };
}
