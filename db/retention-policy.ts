// Per-project retention (PUT /api/projects/:projectId/retention): how many days transcripts, trace
// events and analytics events are kept (null: kept), and what the last enforcement run deleted.
// One document per project, `_id` the project id. The retention sweep (workflows/retention-sweep.ts)
// reads every policy across tenants: it is one of the store's cross-tenant sweeps.
import { Schema, type Connection, type Model } from 'mongoose';

export const RETENTION_KINDS = ['transcripts', 'traces', 'analytics'] as const;
export type RetentionKind = (typeof RETENTION_KINDS)[number];
export type RetentionCounts = Record<RetentionKind, number>;
export type RetentionDays = Record<RetentionKind, number | null>;

export interface RetentionRun {
  startedAt: Date;
  finishedAt: Date;
  /** What was older than these was deleted (null: that kind is kept). */
  cutoffs: Record<RetentionKind, Date | null>;
  deleted: RetentionCounts;
}

export interface RetentionPolicyDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  days: RetentionDays;
  lastRun: RetentionRun | null;
  createdAt: Date;
  updatedAt: Date;
}

const RetentionPolicySchema = new Schema<RetentionPolicyDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    days: {
      transcripts: { type: Number, default: null },
      traces: { type: Number, default: null },
      analytics: { type: Number, default: null },
    },
    lastRun: { type: Schema.Types.Mixed, default: null },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
RetentionPolicySchema.index({ tenantId: 1, projectId: 1 }, { unique: true });

export type RetentionPolicyModel = Model<RetentionPolicyDoc>;
export const retentionPolicyModel = (c: Connection): RetentionPolicyModel =>
  c.model<RetentionPolicyDoc>('RetentionPolicy', RetentionPolicySchema, 'retention_policies');
