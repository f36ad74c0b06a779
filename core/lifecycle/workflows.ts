// The Temporal side of the data lifecycle: ending every running workflow of a project or a tenant
// (found by the TenantId / ProjectId search attributes, docs/operations.md), starting the
// DataDeletion workflow, and the `data-retention/<task queue>` schedule that runs the retention sweep.
import { type Client, ScheduleAlreadyRunning, WorkflowNotFoundError } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { ProjectIdKey, TenantIdKey } from '../../workflows/search-attributes';
import type { DataDeletionInput, DataDeletionWorkflow, RetentionSweepWorkflow } from '../../workflows/definitions';

export const DATA_DELETION_WORKFLOW_TYPE = 'dataDeletion';
export const RETENTION_SWEEP_WORKFLOW_TYPE = 'retentionSweep';
/**
 * The retention schedule of a deployment, named after its task queue: deployments that share a
 * namespace (staging beside production, or the test suite's stacks) each sweep their own store.
 */
export const retentionScheduleId = (taskQueue: string) => `data-retention/${taskQueue}`;

export const dataDeletionWorkflowId = (scope: { tenantId: string; projectId: string | null }): string =>
  scope.projectId ? `data-deletion/${scope.tenantId}/${scope.projectId}` : `data-deletion/${scope.tenantId}`;

/** Ids go into a visibility query: only the characters ids are made of (CUIDs, `t_…`). */
const SAFE_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The visibility query of a scope's running workflows, the deletions themselves left out. */
export function runningWorkflowsQuery(scope: { tenantId: string; projectId: string | null }): string {
  for (const id of [scope.tenantId, scope.projectId]) if (id !== null && !SAFE_ID.test(id)) throw new Error('an id that cannot go into a visibility query');
  return [
    `TenantId = '${scope.tenantId}'`,
    ...(scope.projectId ? [`ProjectId = '${scope.projectId}'`] : []),
    `ExecutionStatus = 'Running'`,
    `WorkflowType != '${DATA_DELETION_WORKFLOW_TYPE}'`,
  ].join(' AND ');
}

/**
 * Terminates every running workflow of the scope (sessions, human tasks, HTTP-async conversations,
 * outbound calls, app runs, drains, agent-assist conversations...); a session's delegations are
 * its children and close with it. Lists again until a pass finds none it could end (visibility
 * lags a little behind a terminate), so it is idempotent. Returns how many it ended.
 */
export async function terminateScopeWorkflows(client: Client, scope: { tenantId: string; projectId: string | null }, reason: string, progress: () => void = () => {}): Promise<number> {
  const query = runningWorkflowsQuery(scope);
  let ended = 0;
  for (let pass = 0; pass < 100; pass++) {
    let endedThisPass = 0;
    for await (const execution of client.workflow.list({ query, pageSize: 200 })) {
      try {
        await client.workflow.getHandle(execution.workflowId, execution.runId).terminate(reason);
        endedThisPass++;
      } catch (err) {
        // Closed meanwhile (or already terminated by an earlier pass): nothing to end.
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
      progress();
    }
    ended += endedThisPass;
    if (endedThisPass === 0) return ended;
  }
  return ended;
}

/** Starts (or finds running) the deletion of a project or tenant; the deletion record is created first. */
export async function startDataDeletion(client: Client, taskQueue: string, input: DataDeletionInput): Promise<void> {
  await client.workflow.start<DataDeletionWorkflow>(DATA_DELETION_WORKFLOW_TYPE, {
    workflowId: dataDeletionWorkflowId(input),
    taskQueue,
    args: [input],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // Found beside the tenant's other work; left out of the cascade's own query by its type.
    typedSearchAttributes: new TypedSearchAttributes([
      { key: TenantIdKey, value: input.tenantId },
      ...(input.projectId ? [{ key: ProjectIdKey, value: input.projectId }] : []),
    ]),
    staticSummary: input.projectId ? `delete project ${input.projectId}` : `delete tenant ${input.tenantId}`,
  });
}

/**
 * Creates the `data-retention/<task queue>` schedule, or brings an existing one to this interval and task
 * queue: safe to run from every worker at every start. Overlaps are skipped (a sweep still
 * running when the next is due lets that one go).
 */
export async function ensureRetentionSchedule(client: Client, options: { taskQueue: string; everyHours: number }): Promise<'created' | 'updated'> {
  const spec = { intervals: [{ every: `${options.everyHours} hours` as const }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: RETENTION_SWEEP_WORKFLOW_TYPE,
    workflowId: `retention-sweep/${options.taskQueue}`,
    taskQueue: options.taskQueue,
    args: [{}] as Parameters<RetentionSweepWorkflow>,
    staticSummary: 'enforce every project retention',
  };
  try {
    await client.schedule.create({ scheduleId: retentionScheduleId(options.taskQueue), spec, action, policies: { overlap: 'SKIP' } });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(retentionScheduleId(options.taskQueue)).update((previous) => ({ ...previous, spec, action, policies: { ...previous.policies, overlap: 'SKIP' } }));
    return 'updated';
  }
}
