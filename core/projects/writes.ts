// Listeners told when a request through the API changed something under a project (any
// successful non-GET on a `:projectId` route, api/http/route.ts), so per-process caches of
// project data (the LLM resolution in core/llm/runtime.ts) drop it at once instead of waiting
// for their TTL.
import { type CoreContext } from '../context';

type ProjectWriteListener = (tenantId: string, projectId: string) => void;
const projectWriteListeners = new WeakMap<CoreContext, Set<ProjectWriteListener>>();

export function onProjectWrite(ctx: CoreContext, listener: ProjectWriteListener): void {
  const listeners = projectWriteListeners.get(ctx) ?? new Set<ProjectWriteListener>();
  listeners.add(listener);
  projectWriteListeners.set(ctx, listeners);
}

/** Tells this process's listeners that the project was written. */
export function notifyProjectWrite(ctx: CoreContext, project: { tenantId: string; _id: string }): void {
  for (const listener of projectWriteListeners.get(ctx) ?? []) listener(project.tenantId, project._id);
}
