// Requests to delete a project or a tenant: the deletion record first, then the DataDeletion
// workflow (core/lifecycle/workflows.ts), then, for a project, its `deletingAt` mark, from which it
// is 404 to every caller. A request while one is running gets that one. Temporal unavailable:
// 503 and nothing has changed.
import { type CoreContext } from '../context';
import { DomainError } from '../../lib/errors';
import { driverCollection } from '../../db/driver-collection';
import { type DeletionJobDoc, newDeletionId } from '../../db/deletion-job';
import { startDataDeletion } from './workflows';
import { TEMPORAL_CALL_TIMEOUT_MS, withDeadline } from '../sessions/workflow-client';

export async function requestDeletion(ctx: CoreContext, scope: { tenantId: string; projectId: string | null }): Promise<DeletionJobDoc> {
  const jobs = driverCollection(ctx.models.DeletionJob);
  const running = await jobs.findOne({ tenantId: scope.tenantId, projectId: scope.projectId, status: 'running' });
  const job: DeletionJobDoc = running ?? {
    _id: newDeletionId(),
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    target: scope.projectId ? 'project' : 'tenant',
    status: 'running',
    workflowsEnded: 0,
    deleted: {},
    requestedAt: new Date(),
    completedAt: null,
  };
  if (!running) await jobs.insertOne(job);
  try {
    const client = await ctx.temporal.client();
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => startDataDeletion(client, ctx.config.TEMPORAL_TASK_QUEUE, { deletionId: job._id, ...scope }));
  } catch (err) {
    if (!running) await jobs.deleteOne({ _id: job._id, tenantId: scope.tenantId });
    throw new DomainError('SERVICE_UNAVAILABLE', { message: 'The runtime is unavailable; nothing was deleted. Retry', cause: err });
  }
  if (scope.projectId) await driverCollection(ctx.models.Project).updateOne({ _id: scope.projectId, tenantId: scope.tenantId }, { $set: { deletingAt: new Date() } });
  return job;
}

export async function findDeletion(ctx: CoreContext, scope: { tenantId?: string; projectId?: string }, deletionId: string): Promise<DeletionJobDoc> {
  const job = await driverCollection(ctx.models.DeletionJob).findOne({ _id: deletionId, ...scope });
  if (!job) throw DomainError.notFound('Deletion');
  return job;
}

export function presentDeletion(job: DeletionJobDoc) {
  return {
    id: job._id,
    target: job.target,
    tenantId: job.tenantId,
    projectId: job.projectId,
    status: job.status,
    workflowsEnded: job.workflowsEnded,
    deleted: job.deleted,
    requestedAt: new Date(job.requestedAt).toISOString(),
    completedAt: job.completedAt ? new Date(job.completedAt).toISOString() : null,
  };
}
