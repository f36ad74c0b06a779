// Sessions whose workflow closed without recording it: terminated from the Temporal Web UI or CLI,
// failed, timed out or cancelled. A session records its own end as its workflow finishes; these
// never ran that step, so the summary would say active for good and the session would keep its
// place in the tenant's session count. Every SESSION_RECONCILE_MS each API process asks Temporal's
// visibility for session workflows closed that way since shortly before its last look, and records
// each one's end (recordSessionTerminated: only a summary still active changes, so processes
// looking together, and the platform's own terminations, which record theirs, change nothing twice).
import { type Client } from '@temporalio/client';
import { type Models } from '../../db/models';
import { runPeriodically } from '../../lib/periodic';
import { type CoreContext } from '../context';
import { TenantIdKey } from '../../workflows/search-attributes';
import { recordSessionTerminated } from './end';
import { AGENT_SESSION_WORKFLOW_TYPE } from './workflow-client';

/** Delay of the first run after the process starts. */
const FIRST_RUN_MS = 20_000;
/** How far before the last look a run looks again: visibility records a close a moment after it. */
export const RECONCILE_OVERLAP_MS = 2 * 60 * 1000;
/** A process's first look goes this far back (a close while no API process ran is found then). */
export const FIRST_LOOK_BACK_MS = 24 * 60 * 60 * 1000;
/** At most this many closed sessions recorded in one run; the rest the next run finds. */
const MAX_PER_RUN = 1_000;

/** Close statuses that did not run the session's own end (Completed ran it; ContinuedAsNew goes on). */
const UNRECORDED_CLOSES = ['Terminated', 'Failed', 'TimedOut', 'Canceled'] as const;
const REASONS: Record<string, string> = { TERMINATED: 'workflow_terminated', FAILED: 'workflow_failed', TIMED_OUT: 'workflow_timed_out', CANCELLED: 'workflow_canceled' };

export interface ClosedSessionReconciliation {
  /** Session workflows visibility listed as closed that way since `since`. */
  closedWorkflows: number;
  /** Of them, summaries that still said active and now say ended. */
  recorded: number;
}

/** The visibility query: session workflows closed without their own end since `since`. */
export function unrecordedClosesQuery(since: Date): string {
  const statuses = UNRECORDED_CLOSES.map((s) => `'${s}'`).join(', ');
  return `WorkflowType = '${AGENT_SESSION_WORKFLOW_TYPE}' AND ExecutionStatus IN (${statuses}) AND CloseTime >= '${since.toISOString()}'`;
}

export async function reconcileClosedSessions(deps: { models: Models; temporalClient: Client }, since: Date): Promise<ClosedSessionReconciliation> {
  let closedWorkflows = 0;
  let recorded = 0;
  for await (const execution of deps.temporalClient.workflow.list({ query: unrecordedClosesQuery(since), pageSize: 200 })) {
    if (closedWorkflows >= MAX_PER_RUN) break;
    closedWorkflows++;
    const sessionId = execution.workflowId.startsWith('session/') ? execution.workflowId.slice('session/'.length) : null;
    const tenantId = execution.typedSearchAttributes.get(TenantIdKey);
    if (!sessionId || !tenantId) continue;
    // A session already ended (or deleted) is left as it is.
    const before = await deps.models.Session.findOne({ _id: sessionId, tenantId, status: 'active' }, { _id: 1 }).lean();
    if (!before) continue;
    await recordSessionTerminated({ models: deps.models }, { tenantId, sessionId }, REASONS[execution.status.name] ?? 'workflow_closed');
    recorded++;
  }
  return { closedWorkflows, recorded };
}

export function startClosedSessionReconciler(ctx: CoreContext): () => void {
  const every = ctx.config.SESSION_RECONCILE_MS;
  let lastLookAt = Date.now() - FIRST_LOOK_BACK_MS;
  return runPeriodically(
    every,
    Math.min(every, FIRST_RUN_MS),
    async () => {
      const startedAt = Date.now();
      const result = await reconcileClosedSessions({ models: ctx.models, temporalClient: await ctx.temporal.client() }, new Date(lastLookAt - RECONCILE_OVERLAP_MS));
      lastLookAt = startedAt;
      if (result.recorded > 0) ctx.logger.warn(result, 'sessions whose workflow was terminated, failed or timed out outside the platform were recorded as ended');
    },
    (err) => ctx.logger.warn({ err }, 'closed-session reconciliation failed; it runs again at the next interval'),
  );
}
