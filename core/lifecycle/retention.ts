// Per-project retention: the tenant's setting (days per kind; null keeps that kind) and its
// enforcement, which deletes a project's transcript messages, trace events and analytics events
// older than the cutoff, in batches. Enforcement is idempotent (what is older than a fixed cutoff
// is deleted; a retry deletes what is left), run per project by the retention sweep's activity.
import { type Model, type mongo } from 'mongoose';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { RETENTION_KINDS, type RetentionCounts, type RetentionDays, type RetentionKind, type RetentionPolicyDoc, type RetentionRun } from '../../db/retention-policy';
import { DELETE_BATCH } from './cascade';

/** The longest retention a project may set (ten years). */
export const RETENTION_MAX_DAYS = 3650;
const DAY_MS = 24 * 60 * 60 * 1000;

export const NO_RETENTION: RetentionDays = { transcripts: null, traces: null, analytics: null };
export const zeroCounts = (): RetentionCounts => ({ transcripts: 0, traces: 0, analytics: 0 });

export interface RetentionView {
  days: RetentionDays;
  lastRun: RetentionRun | null;
  updatedAt: Date | null;
}

export async function getRetention(models: Models, scope: { tenantId: string; projectId: string }): Promise<RetentionView> {
  const doc = await driverCollection(models.RetentionPolicy).findOne({ _id: scope.projectId, tenantId: scope.tenantId });
  return doc ? { days: { ...NO_RETENTION, ...doc.days }, lastRun: doc.lastRun ?? null, updatedAt: doc.updatedAt ?? null } : { days: NO_RETENTION, lastRun: null, updatedAt: null };
}

/** Replaces the project's retention (a kind left out is kept forever); the last run stays. */
export async function putRetention(models: Models, scope: { tenantId: string; projectId: string }, days: RetentionDays): Promise<RetentionView> {
  await models.RetentionPolicy.updateOne(
    { _id: scope.projectId, tenantId: scope.tenantId },
    { $set: { days, projectId: scope.projectId }, $setOnInsert: { lastRun: null } },
    { upsert: true },
  );
  return getRetention(models, scope);
}

/** What each kind's cutoff is at `nowMs` (null: kept). */
export function cutoffsOf(days: RetentionDays, nowMs: number): Record<RetentionKind, Date | null> {
  const cut = (d: number | null) => (d === null ? null : new Date(nowMs - d * DAY_MS));
  return { transcripts: cut(days.transcripts), traces: cut(days.traces), analytics: cut(days.analytics) };
}

const modelOfKind = (models: Models, kind: RetentionKind): Model<{ _id: string }> =>
  (kind === 'transcripts' ? models.TranscriptMessage : kind === 'traces' ? models.TraceEvent : models.AnalyticsEvent) as unknown as Model<{ _id: string }>;

/**
 * Deletes the project's data older than its cutoffs, a batch of ids at a time, re-checking the
 * tenant, project and age on each delete. `progress` gets the running counts after each batch
 * (the activity heartbeats them, so a retry reports what an earlier attempt deleted too).
 */
export async function enforceRetention(
  models: Models,
  policy: Pick<RetentionPolicyDoc, 'tenantId' | 'projectId' | 'days'>,
  nowMs: number,
  counts: RetentionCounts = zeroCounts(),
  progress: (counts: RetentionCounts) => void = () => {},
): Promise<{ cutoffs: Record<RetentionKind, Date | null>; deleted: RetentionCounts }> {
  const cutoffs = cutoffsOf({ ...NO_RETENTION, ...policy.days }, nowMs);
  for (const kind of RETENTION_KINDS) {
    const cutoff = cutoffs[kind];
    if (!cutoff) continue;
    const collection = driverCollection(modelOfKind(models, kind));
    const filter = { tenantId: policy.tenantId, projectId: policy.projectId, timestamp: { $lt: cutoff } } as mongo.Filter<{ _id: string }>;
    for (;;) {
      const ids = (await collection.find(filter, { projection: { _id: 1 } }).limit(DELETE_BATCH).toArray()).map((d) => d._id);
      if (ids.length === 0) break;
      counts[kind] += (await collection.deleteMany({ $and: [filter, { _id: { $in: ids } }] })).deletedCount;
      progress(counts);
    }
  }
  return { cutoffs, deleted: counts };
}

/** Records a run on the policy, where GET .../retention shows it. */
export async function recordRetentionRun(models: Models, scope: { tenantId: string; projectId: string }, run: RetentionRun): Promise<void> {
  await models.RetentionPolicy.updateOne({ _id: scope.projectId, tenantId: scope.tenantId }, { $set: { lastRun: run } });
}

/** One page of every tenant's policies, by `_id` (the sweep's cross-tenant read). */
export async function listRetentionPolicies(models: Models, after: string | null, limit: number): Promise<{ tenantId: string; projectId: string }[]> {
  const docs = await driverCollection(models.RetentionPolicy)
    .find(after ? { _id: { $gt: after } } : {}, { projection: { _id: 1, tenantId: 1, projectId: 1 } })
    .sort({ _id: 1 })
    .limit(limit)
    .toArray();
  return docs.map((d) => ({ tenantId: d.tenantId, projectId: d.projectId }));
}
