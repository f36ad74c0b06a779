// Work whose workflow closed without running its own end: terminated from the Temporal Web UI or
// CLI, failed, timed out or cancelled. Each records its end as its workflow finishes; these never
// ran that step. Every SESSION_RECONCILE_MS each API process asks Temporal's visibility for such
// closes since shortly before its last look, and finishes what each left open:
// - a session: recorded ended (recordSessionTerminated), its place in the tenant's count given back;
// - a human task: cancelled, and its session (which waits on it) told;
// - an outbound call: ended at the provider and in its row (core/telephony/closed-calls.ts), its
//   conversation ended, instead of a live row and a call going on;
// - an async agentic-app run: failed, its place among its session's in-flight runs given back
//   (enough stuck runs and the session refuses every run);
// - a project's or tenant's deletion still running by its record: started again (the project is
//   already 404, so nobody could ask again), and a call recording's fetch whose row still waits for
//   its media: started again. Both go on from where they stopped.
// Only what still says open changes, so processes looking together, and the platform's own
// terminations, change nothing twice.
import { type Client } from '@temporalio/client';
import { type Models } from '../../db/models';
import { runPeriodically } from '../../lib/periodic';
import { type CoreContext } from '../context';
import { TenantIdKey } from '../../workflows/search-attributes';
import { recordSessionTerminated } from './end';
import { AGENT_SESSION_WORKFLOW_TYPE, isWorkflowNotFound } from './workflow-client';
import { humanTaskSignal, OUTBOUND_CALL_WORKFLOW_TYPE, RECORDING_FETCH_WORKFLOW_TYPE, TERMINAL_TASK_STATUSES } from '../../workflows/definitions';
import { endCallOfClosedWorkflow, type ClosedCallDeps } from '../telephony/closed-calls';
import { DATA_DELETION_WORKFLOW_TYPE, startDataDeletion } from '../lifecycle/workflows';
import { finishAppRun } from '../../db/app-run';
import { restartClosedRecordingFetch } from '../telephony/recordings';

/** What the reconciliation reads and writes with: the store, Temporal, configuration and the logger. */
export type ClosedWorkflowDeps = ClosedCallDeps;

const HUMAN_TASK_WORKFLOW_TYPE = 'humanTaskWorkflow';
const APP_RUN_WORKFLOW_TYPE = 'appRun';

/** Delay of the first run after the process starts. */
const FIRST_RUN_MS = 20_000;
/** How far before the last look a run looks again: visibility records a close a moment after it. */
export const RECONCILE_OVERLAP_MS = 2 * 60 * 1000;
/** A process's first look goes this far back (a close while no API process ran is found then). */
export const FIRST_LOOK_BACK_MS = 24 * 60 * 60 * 1000;
/** At most this many closes of each type looked at in one run; the next run looks from the same point again. */
const MAX_PER_RUN = 1_000;

/** Close statuses that did not run the session's own end (Completed ran it; ContinuedAsNew goes on). */
const UNRECORDED_CLOSES = ['Terminated', 'Failed', 'TimedOut', 'Canceled'] as const;
const REASONS: Record<string, string> = { TERMINATED: 'workflow_terminated', FAILED: 'workflow_failed', TIMED_OUT: 'workflow_timed_out', CANCELLED: 'workflow_canceled' };

export interface ClosedWorkflowReconciliation {
  /** Workflows of the looked-at types visibility listed as closed that way since `since`. */
  closedWorkflows: number;
  /** Of them, session summaries that still said active and now say ended. */
  recorded: number;
  /** Of them, tasks that were still open and are now cancelled. */
  tasksCancelled: number;
  /** Of them, outbound calls that were still live and are now ended. */
  callsEnded: number;
  /** Of them, async agentic-app runs still running by their record, now failed. */
  runsFailed: number;
  /** Of them, deletions still running by their record, started again. */
  deletionsRestarted: number;
  /** Of them, recording fetches whose recording still waits for its media, started again. */
  fetchesRestarted: number;
  /** A type had more closes than one run looks at: the next run must not move its window on. */
  capped: boolean;
}

/** The visibility query: workflows of `type` closed without their own end since `since`. */
export function unrecordedClosesQuery(since: Date, type = AGENT_SESSION_WORKFLOW_TYPE): string {
  const statuses = UNRECORDED_CLOSES.map((s) => `'${s}'`).join(', ');
  return `WorkflowType = '${type}' AND ExecutionStatus IN (${statuses}) AND CloseTime >= '${since.toISOString()}'`;
}

/** How a workflow closed (Temporal's status name), in words: `terminated`, `timed out`… */
function closedHow(status: string): string {
  return (REASONS[status] ?? 'workflow_closed').replace('workflow_', '').replace('_', ' ');
}

/** The reason a task whose workflow closed this way was cancelled with. */
export function taskReasonOf(status: string): string {
  return `task workflow ${closedHow(status)} in Temporal`;
}

export async function reconcileClosedWorkflows(deps: ClosedWorkflowDeps, since: Date): Promise<ClosedWorkflowReconciliation> {
  let closedWorkflows = 0;
  let recorded = 0;
  let tasksCancelled = 0;
  let callsEnded = 0;
  let runsFailed = 0;
  let deletionsRestarted = 0;
  let fetchesRestarted = 0;
  let capped = false;
  const types = [AGENT_SESSION_WORKFLOW_TYPE, HUMAN_TASK_WORKFLOW_TYPE, OUTBOUND_CALL_WORKFLOW_TYPE, APP_RUN_WORKFLOW_TYPE, DATA_DELETION_WORKFLOW_TYPE, RECORDING_FETCH_WORKFLOW_TYPE];
  for (const type of types) {
    let listed = 0;
    for await (const execution of deps.temporalClient.workflow.list({ query: unrecordedClosesQuery(since, type), pageSize: 200 })) {
      if (listed++ >= MAX_PER_RUN) {
        capped = true;
        break;
      }
      closedWorkflows++;
      const tenantId = execution.typedSearchAttributes.get(TenantIdKey);
      if (!tenantId) continue;
      if (type === AGENT_SESSION_WORKFLOW_TYPE) {
        const sessionId = execution.workflowId.startsWith('session/') ? execution.workflowId.slice('session/'.length) : null;
        if (!sessionId) continue;
        // A session already ended (or deleted) is left as it is.
        const before = await deps.models.Session.findOne({ _id: sessionId, tenantId, status: 'active' }, { _id: 1 }).lean();
        if (!before) continue;
        await recordSessionTerminated({ models: deps.models }, { tenantId, sessionId }, REASONS[execution.status.name] ?? 'workflow_closed');
        recorded++;
      } else if (type === HUMAN_TASK_WORKFLOW_TYPE) {
        const taskId = execution.workflowId.startsWith('human-task/') ? execution.workflowId.slice('human-task/'.length) : null;
        if (taskId && (await cancelClosedTask(deps, tenantId, taskId, taskReasonOf(execution.status.name)))) tasksCancelled++;
      } else if (type === OUTBOUND_CALL_WORKFLOW_TYPE) {
        const callId = execution.workflowId.startsWith('outbound-call/') ? execution.workflowId.slice('outbound-call/'.length) : null;
        if (callId && (await endCallOfClosedWorkflow(deps, tenantId, callId, closedHow(execution.status.name)))) callsEnded++;
      } else if (type === APP_RUN_WORKFLOW_TYPE) {
        const runId = execution.workflowId.startsWith('app-run/') ? execution.workflowId.slice('app-run/'.length) : null;
        if (runId && (await failClosedRun(deps, tenantId, runId, execution.status.name))) runsFailed++;
      } else if (type === DATA_DELETION_WORKFLOW_TYPE) {
        if (await restartDeletion(deps, tenantId, execution.workflowId)) deletionsRestarted++;
      } else {
        const recordingId = execution.workflowId.startsWith('recording-fetch/') ? execution.workflowId.slice('recording-fetch/'.length) : null;
        const ctx: CoreContext = { models: deps.models, config: deps.config, logger: deps.logger, temporal: { client: () => Promise.resolve(deps.temporalClient) } };
        if (recordingId && (await restartClosedRecordingFetch(ctx, tenantId, recordingId, () => isRunning(deps.temporalClient, execution.workflowId)))) fetchesRestarted++;
      }
    }
  }
  return { closedWorkflows, recorded, tasksCancelled, callsEnded, runsFailed, deletionsRestarted, fetchesRestarted, capped };
}

/**
 * Cancels a task whose workflow is gone while the row still says open (compare-and-set on its
 * revision), and tells its session, which waits on it, as the workflow would have.
 */
async function cancelClosedTask(deps: { models: Models; temporalClient: Client }, tenantId: string, taskId: string, reason: string): Promise<boolean> {
  const open = await deps.models.HumanTask.findOne({ _id: taskId, tenantId, status: { $nin: [...TERMINAL_TASK_STATUSES] } }, { status: 1, revision: 1, sessionId: 1 }).lean();
  if (!open) return false;
  const at = new Date();
  const changed = await deps.models.HumanTask.updateOne(
    { _id: taskId, tenantId, revision: open.revision },
    {
      $set: { status: 'cancelled', cancelReason: reason, updatedAt: at, revision: open.revision + 1 },
      $push: { history: { action: 'cancelled', from: open.status, to: 'cancelled', by: 'system', at: at.toISOString(), note: reason } },
    },
  );
  if (changed.modifiedCount !== 1) return false;
  if (open.sessionId) {
    try {
      await deps.temporalClient.workflow.getHandle(`session/${open.sessionId}`).signal(humanTaskSignal, { taskId, outcome: 'cancelled', resolution: null });
    } catch (err) {
      // The session has ended or was deleted: nobody waits for the outcome any more.
      if (!isWorkflowNotFound(err)) throw err;
    }
  }
  return true;
}

/** The error an async run whose workflow closed this way ends with. */
export function closedRunError(status: string) {
  return { code: 'INTERNAL_ERROR', message: `The run's workflow was ${closedHow(status)} in Temporal; the turn may still have been answered in the session` };
}

/** Fails an async run whose workflow is gone while its record still says running (its callback is not sent). */
async function failClosedRun(deps: ClosedWorkflowDeps, tenantId: string, runId: string, status: string): Promise<boolean> {
  const run = await deps.models.AppRun.findOne({ _id: runId, tenantId, isAsync: true, status: 'running' }, { _id: 1, tenantId: 1, sessionId: 1 }).lean();
  return run !== null && (await finishAppRun(deps.models, run, { ok: false, error: closedRunError(status) }));
}

/** Whether the latest run of a workflow id runs now (one started again after the close looked at). */
async function isRunning(client: Client, workflowId: string): Promise<boolean> {
  return client.workflow
    .getHandle(workflowId)
    .describe()
    .then((d) => d.status.name === 'RUNNING')
    .catch(() => false);
}

/**
 * Starts again the deletion a closed `data-deletion/<tenant>[/<project>]` run was making, when its
 * record still says running (a run already started again is found running and left as it is).
 */
async function restartDeletion(deps: ClosedWorkflowDeps, tenantId: string, workflowId: string): Promise<boolean> {
  const [kind, workflowTenant, projectId, ...rest] = workflowId.split('/');
  if (kind !== 'data-deletion' || workflowTenant !== tenantId || rest.length > 0) return false;
  const job = await deps.models.DeletionJob.findOne({ tenantId, projectId: projectId ?? null, status: 'running' }, { _id: 1 }).lean();
  if (!job) return false;
  if (await isRunning(deps.temporalClient, workflowId)) return false;
  await startDataDeletion(deps.temporalClient, deps.config.TEMPORAL_TASK_QUEUE, { deletionId: job._id, tenantId, projectId: projectId ?? null });
  return true;
}

export function startClosedWorkflowReconciler(ctx: CoreContext): () => void {
  const every = ctx.config.SESSION_RECONCILE_MS;
  let lastLookAt = Date.now() - FIRST_LOOK_BACK_MS;
  return runPeriodically(
    every,
    Math.min(every, FIRST_RUN_MS),
    async () => {
      const startedAt = Date.now();
      const result = await reconcileClosedWorkflows({ models: ctx.models, config: ctx.config, logger: ctx.logger, temporalClient: await ctx.temporal.client() }, new Date(lastLookAt - RECONCILE_OVERLAP_MS));
      // Past the cap, what was not looked at is found by looking from the same point again.
      if (!result.capped) lastLookAt = startedAt;
      if (result.recorded > 0 || result.tasksCancelled > 0 || result.callsEnded > 0 || result.runsFailed > 0 || result.deletionsRestarted > 0 || result.fetchesRestarted > 0) {
        ctx.logger.warn(result, 'workflows terminated, failed or timed out outside the platform: sessions, human tasks, outbound calls and app runs recorded as ended, deletions and recording fetches started again');
      }
    },
    (err) => ctx.logger.warn({ err }, 'closed-workflow reconciliation failed; it runs again at the next interval'),
  );
}
