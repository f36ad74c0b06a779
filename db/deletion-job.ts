// Deletions of a project (DELETE /api/projects/:projectId) or a tenant (DELETE
// /api/admin/tenants/:tenantId): one record per request, which the route answers with and the
// DataDeletion workflow (workflows/data-deletion.ts) completes. It holds ids and counts only, and
// outlives what it deleted so the caller can poll it (docs/data-lifecycle.md).
import { Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';

export const DELETION_ID_PREFIX = 'del_';
export const newDeletionId = (): string => DELETION_ID_PREFIX + createId();

export type DeletionTarget = 'project' | 'tenant';
export type DeletionStatus = 'running' | 'completed';

export interface DeletionJobDoc {
  _id: string;
  tenantId: string;
  /** The project deleted; null for a tenant's deletion. */
  projectId: string | null;
  target: DeletionTarget;
  status: DeletionStatus;
  /** Running workflows of the project or tenant that the deletion terminated. */
  workflowsEnded: number;
  /** Documents deleted, by collection. */
  deleted: Record<string, number>;
  requestedAt: Date;
  completedAt: Date | null;
}

const DeletionJobSchema = new Schema<DeletionJobDoc>(
  {
    _id: { type: String, default: newDeletionId },
    tenantId: { type: String, required: true },
    projectId: { type: String, default: null },
    target: { type: String, required: true, enum: ['project', 'tenant'] },
    status: { type: String, required: true, enum: ['running', 'completed'] },
    workflowsEnded: { type: Number, default: 0 },
    deleted: { type: Schema.Types.Mixed, default: () => ({}) },
    requestedAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
  },
  { versionKey: false, minimize: false },
);
// A project's or tenant's deletion, found again by a repeated request.
DeletionJobSchema.index({ tenantId: 1, projectId: 1 });

export type DeletionJobModel = Model<DeletionJobDoc>;
export const deletionJobModel = (c: Connection): DeletionJobModel => c.model<DeletionJobDoc>('DeletionJob', DeletionJobSchema, 'deletion_jobs');
