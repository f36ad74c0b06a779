// The bundle reference a session passes on once its agents are loaded. Runs recorded before
// bundles had a hash got none in their load result: they pass on the reference they started with,
// as they did then (the commands they issue are the same either way, so no patch marker is needed).
import type { CompilationOutput } from '../abl/ir';
import type { SessionStartInput } from './definitions';

export function pinnedBundleRef(started: SessionStartInput['bundleRef'], loaded: CompilationOutput & { bundleHash?: unknown }): SessionStartInput['bundleRef'] {
  return typeof loaded.bundleHash === 'string' ? { kind: 'bundle', bundleHash: loaded.bundleHash } : started;
}
