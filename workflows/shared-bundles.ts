// One copy of each compiled session bundle per workflow context, shared by every session of the
// worker that runs it. The worker preloads this module (workers/workflow-bundle.ts,
// WORKFLOW_PRELOAD_MODULES), so its map lives once in the SDK's reusable V8 context instead of once
// per workflow; a session that loads a bundle another session already holds keeps that copy and
// drops its own. A bundle's hash names its tenant, project and exact agent versions
// (activities/persistence/session-bundles.ts), so two loads with one hash have the same content:
// which copy a session holds changes nothing it does, and the commands it issues are the same.
// Shared bundles are frozen, so no session can change what another one reads.
import type { CompilationOutput } from '../abl/ir';

/** Bundles kept for sessions that load them later; sessions holding an evicted one keep it. */
const KEPT = 16;
const kept = new Map<string, CompilationOutput>();

function deepFreeze(value: unknown): void {
  if (value === null || typeof value !== 'object' || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
}

/**
 * The context's copy of `loaded` (by its `bundleHash`), frozen; `loaded` itself, frozen, when it is
 * the first. A bundle without a hash (runs recorded before bundles had one) is returned as it is.
 */
export function sharedBundle<T extends CompilationOutput>(loaded: T): T {
  const hash = (loaded as { bundleHash?: unknown }).bundleHash;
  if (typeof hash !== 'string') return loaded;
  const held = kept.get(hash);
  if (held) {
    // Most recently used last.
    kept.delete(hash);
    kept.set(hash, held);
    return held as T;
  }
  deepFreeze(loaded);
  kept.set(hash, loaded);
  while (kept.size > KEPT) kept.delete(kept.keys().next().value!);
  return loaded;
}
