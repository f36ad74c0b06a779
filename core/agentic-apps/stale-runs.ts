// Runs an API process was running in a request (synchronous or streamed) when it stopped: their
// record stays `running` and keeps their session `busy`. Every APP_RUN_SWEEP_MS each API process
// closes such runs, older than any request may last, as failed ("interrupted"), which frees their
// session. Async runs belong to their workflow (workflows/app-run.ts), which finishes them; one
// terminated in Temporal is failed by the closed-workflow reconciliation (core/sessions/closed-reconciler.ts).
import { finishAppRun } from '../../db/app-run';
import { runPeriodically } from '../../lib/periodic';
import { type CoreContext } from '../context';

/** Closed per round; the rest in the next. */
const PER_ROUND = 100;

export const INTERRUPTED_RUN_ERROR = {
  code: 'INTERNAL_ERROR',
  message: 'The run was interrupted (the API process answering it stopped); the turn may still have been answered in the session',
};

/** A request-bound run older than this was not finished by its process: twice the request limit, at least 5 minutes. */
export function staleRunAgeMs(config: { REQUEST_TIMEOUT_MS: number }): number {
  return Math.max(2 * config.REQUEST_TIMEOUT_MS, 5 * 60_000);
}

/** Closes interrupted request-bound runs of every tenant (each then written with its own tenant). */
export async function closeInterruptedRuns(ctx: CoreContext, now = new Date()): Promise<number> {
  const before = new Date(now.getTime() - staleRunAgeMs(ctx.config));
  const stale = await ctx.models.AppRun.find({ isAsync: false, status: 'running', createdAt: { $lt: before } }, { _id: 1, tenantId: 1, sessionId: 1 })
    .limit(PER_ROUND)
    .lean();
  let closed = 0;
  for (const run of stale) {
    // finishAppRun changes a run still `running` only, so two processes close it once.
    if (await finishAppRun(ctx.models, run, { ok: false, error: INTERRUPTED_RUN_ERROR })) closed++;
  }
  // Created, then the process stopped before starting it: failed too (its session never counted it).
  const unstarted = await ctx.models.AppRun.find({ isAsync: false, status: 'pending', createdAt: { $lt: before } }, { _id: 1, tenantId: 1 }).limit(PER_ROUND).lean();
  for (const run of unstarted) {
    const changed = await ctx.models.AppRun.updateOne({ _id: run._id, tenantId: run.tenantId, status: 'pending' }, { $set: { status: 'failed', error: INTERRUPTED_RUN_ERROR, finishedAt: now } });
    closed += changed.modifiedCount;
  }
  return closed;
}

export function startInterruptedRunSweep(ctx: CoreContext): () => void {
  const every = ctx.config.APP_RUN_SWEEP_MS;
  return runPeriodically(every, every, () => closeInterruptedRuns(ctx), (err) =>
    ctx.logger.warn({ err }, 'closing interrupted app runs failed; it runs again at the next interval'),
  );
}
