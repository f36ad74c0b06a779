// Data-lifecycle activities: the steps of a project's or tenant's deletion (workflows/data-deletion.ts)
// and of the retention sweep (workflows/retention-sweep.ts). Each is idempotent and heartbeats its
// running counts, so a retry after a crash resumes the work and still reports what the earlier
// attempt did.
import { Context } from '@temporalio/activity';
import { type ActivityDeps } from '..';
import { deleteProjectData, deleteProjectRecord, deleteTenantData, type DeletedCounts } from '../../core/lifecycle/cascade';
import { terminateScopeWorkflows } from '../../core/lifecycle/workflows';
import { closeScopeVoiceRooms } from '../../core/voice/rooms';
import { enforceRetention, listRetentionPolicies, recordRetentionRun, zeroCounts } from '../../core/lifecycle/retention';
import type { DataDeletionInput, DataDeletionResult, RetentionProjectOutcome } from '../../workflows/definitions';
import { driverCollection } from '../../db/driver-collection';
import { type RetentionCounts } from '../../db/retention-policy';

/** What an earlier attempt of this activity heartbeated, if any. */
function earlier<T>(): T | undefined {
  return Context.current().info.heartbeatDetails as T | undefined;
}

export function createLifecycleActivities(deps: ActivityDeps) {
  const { models, logger } = deps;
  return {
    /** Closes the scope's open voice rooms, then terminates its running workflows; the count includes an earlier attempt's. */
    async endScopeWorkflows(input: DataDeletionInput): Promise<number> {
      if (!deps.temporalClient) throw new Error('endScopeWorkflows needs the worker\'s Temporal client');
      const before = earlier<number>() ?? 0;
      let ended = before;
      const reason = input.projectId ? `project ${input.projectId} deleted` : `tenant ${input.tenantId} deleted`;
      // Open voice rooms first: closed on LiveKit and their places given back, which a terminated room workflow would not do.
      await closeScopeVoiceRooms({ config: deps.config, models, temporalClient: deps.temporalClient }, input);
      ended += await terminateScopeWorkflows(deps.temporalClient, input, reason, () => Context.current().heartbeat(ended));
      return ended;
    },

    /** Deletes every collection's documents of the scope but the project or tenant record (core/lifecycle/cascade.ts). */
    async deleteScopeData(input: DataDeletionInput): Promise<DeletedCounts> {
      const counts = { ...(earlier<DeletedCounts>() ?? {}) };
      const beat = (c: DeletedCounts) => Context.current().heartbeat(c);
      if (input.projectId) return deleteProjectData(models, { tenantId: input.tenantId, projectId: input.projectId }, counts, beat);
      return deleteTenantData(models, input.tenantId, counts, beat);
    },

    /** Deletes the project record (a tenant's went with its data), marks the deletion completed and logs it. */
    async finishDataDeletion(result: DataDeletionResult & Pick<DataDeletionInput, 'tenantId' | 'projectId'>): Promise<void> {
      const deleted = { ...result.deleted };
      if (result.projectId) {
        const n = await deleteProjectRecord(models, { tenantId: result.tenantId, projectId: result.projectId });
        if (n > 0) deleted.projects = (deleted.projects ?? 0) + n;
      }
      // The first completion's counts stand: a run again (nothing left) does not overwrite them.
      await driverCollection(models.DeletionJob).updateOne(
        { _id: result.deletionId, tenantId: result.tenantId, status: 'running' },
        { $set: { status: 'completed', workflowsEnded: result.workflowsEnded, deleted, completedAt: new Date() } },
      );
      logger.info(
        { deletionId: result.deletionId, tenantId: result.tenantId, projectId: result.projectId, workflowsEnded: result.workflowsEnded, deleted },
        result.projectId ? 'project deleted' : 'tenant deleted',
      );
    },

    /** One page of every tenant's retention policies. */
    async listRetentionPage(input: { after: string | null; limit: number }): Promise<{ tenantId: string; projectId: string }[]> {
      return listRetentionPolicies(models, input.after, input.limit);
    },

    /** Enforces one project's retention at the sweep's clock, records the run on the policy and logs it. */
    async enforceProjectRetention(input: { tenantId: string; projectId: string; nowMs: number; startedMs: number }): Promise<RetentionProjectOutcome> {
      const scope = { tenantId: input.tenantId, projectId: input.projectId };
      const policy = await driverCollection(models.RetentionPolicy).findOne({ _id: input.projectId, tenantId: input.tenantId });
      if (!policy) return { ...scope, deleted: zeroCounts() };
      const counts = { ...zeroCounts(), ...(earlier<RetentionCounts>() ?? {}) };
      const { cutoffs, deleted } = await enforceRetention(models, policy, input.nowMs, counts, (c) => Context.current().heartbeat(c));
      await recordRetentionRun(models, scope, { startedAt: new Date(input.startedMs), finishedAt: new Date(), cutoffs, deleted });
      logger.info({ ...scope, deleted, cutoffs }, 'retention enforced');
      return { ...scope, deleted };
    },
  };
}
