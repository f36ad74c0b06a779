// Runs the session-capacity reconciliation (db/session-capacity.ts) every
// SESSION_CAPACITY_RECONCILE_MS in the API process: first shortly after the process starts (so a
// deployment that predates the count adopts its active sessions), then once per interval after
// the previous run finished. Several API processes may run it at once: each of its changes is one
// the count's revisions admit only once.
import { reconcileAllSessionCapacity } from '../../db/session-capacity';
import { runPeriodically } from '../../lib/periodic';
import { type CoreContext } from '../context';

/** Delay of the first run after the process starts. */
const FIRST_RUN_MS = 10_000;

export function startCapacityReconciler(ctx: CoreContext): () => void {
  const every = ctx.config.SESSION_CAPACITY_RECONCILE_MS;
  return runPeriodically(every, Math.min(every, FIRST_RUN_MS), () => reconcileAllSessionCapacity(ctx.models), (err) =>
    ctx.logger.warn({ err }, 'session capacity reconciliation failed; it runs again at the next interval'),
  );
}
