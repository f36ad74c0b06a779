// Hourly rollups of analytics events (analytics_rollups, db/analytics-rollup.ts). A closed hour of
// a project is summed once, on the first read that needs it, from the raw events of that hour, and
// kept; reads of a long range then fetch a few small documents instead of scanning every event.
// Freshness: an hour is served from its rollup only once it ended ROLLUP_DELAY_MS ago; the open
// hour and the minutes after it are always read raw. An event written into an hour that has
// already ended (a retried or late batch) marks that hour's rollup stale, and the next read
// rebuilds it: the rollups never lose an event, they only move work from reads to the first read.
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { type AnalyticsRollupDoc } from '../../db/analytics-rollup';
import { type AnalyticsEventDoc } from '../../db/analytics-event';
import { CELL_FIELDS, CellBuilder, type AnalyticsCell, type CellEvent } from './cells';

export const HOUR_MS = 3_600_000;
/** How long after its end an hour is still read raw (events of a turn that spans the hour land late). */
export const ROLLUP_DELAY_MS = 5 * 60_000;
/** Hours built at once by one read. */
const BUILD_CONCURRENCY = 4;

export const hourOf = (t: Date): Date => new Date(Math.floor(t.getTime() / HOUR_MS) * HOUR_MS);
export const dayOf = (hour: Date): string => hour.toISOString().slice(0, 10);
const rollupId = (tenantId: string, projectId: string, hour: Date): string => `${tenantId}:${projectId}:${hour.toISOString()}`;

export interface ProjectScope {
  tenantId: string;
  projectId: string;
}

/** Marks the rollups of the ended hours these events fall in as stale (after the events are written). */
export async function invalidateRollups(models: Models, events: readonly Pick<AnalyticsEventDoc, 'tenantId' | 'projectId' | 'hour'>[], now = new Date()): Promise<void> {
  const stale = new Map<string, Pick<AnalyticsEventDoc, 'tenantId' | 'projectId' | 'hour'>>();
  for (const e of events) {
    if (e.hour.getTime() + HOUR_MS > now.getTime()) continue;
    stale.set(rollupId(e.tenantId, e.projectId, e.hour), e);
  }
  if (stale.size === 0) return;
  await driverCollection(models.AnalyticsRollup).bulkWrite(
    [...stale].map(([_id, e]) => ({
      updateOne: {
        filter: { _id },
        update: { $set: { invalidatedAt: now }, $setOnInsert: { tenantId: e.tenantId, projectId: e.projectId, hour: e.hour, day: dayOf(e.hour) } },
        upsert: true,
      },
    })),
    { ordered: false },
  );
}

const isCurrent = (doc: AnalyticsRollupDoc | undefined): doc is AnalyticsRollupDoc & { cells: AnalyticsCell[]; builtAt: Date } =>
  !!doc?.cells && !!doc.builtAt && (!doc.invalidatedAt || doc.invalidatedAt.getTime() < doc.builtAt.getTime());

/** Whether an hour is old enough to be served from a rollup. */
export const isRollupHour = (hour: Date, now: Date): boolean => hour.getTime() + HOUR_MS + ROLLUP_DELAY_MS <= now.getTime();

/** Sums one hour of a project's events into cells (a scan of that hour, by the hour's equality). */
export async function scanHourCells(models: Models, scope: ProjectScope, hour: Date): Promise<AnalyticsCell[]> {
  const builder = new CellBuilder();
  const cursor = driverCollection(models.AnalyticsEvent).find({ tenantId: scope.tenantId, projectId: scope.projectId, hour }, { projection: CELL_FIELDS, batchSize: 5000 });
  for await (const e of cursor) builder.add(e as unknown as CellEvent);
  return builder.result();
}

async function buildRollup(models: Models, scope: ProjectScope, hour: Date): Promise<AnalyticsCell[]> {
  const builtAt = new Date();
  const cells = await scanHourCells(models, scope, hour);
  await driverCollection(models.AnalyticsRollup).updateOne(
    { _id: rollupId(scope.tenantId, scope.projectId, hour) },
    { $set: { tenantId: scope.tenantId, projectId: scope.projectId, hour, day: dayOf(hour), cells, builtAt } },
    { upsert: true },
  );
  return cells;
}

/** The cells of closed hours (each ended ROLLUP_DELAY_MS ago), from their rollups, built first where missing or stale. */
export async function rollupCells(models: Models, scope: ProjectScope, hours: readonly Date[]): Promise<Map<number, AnalyticsCell[]>> {
  const days = [...new Set(hours.map(dayOf))];
  const found = new Map<string, AnalyticsRollupDoc>();
  const rollups = driverCollection(models.AnalyticsRollup);
  await Promise.all(
    days.map(async (day) => {
      for (const doc of await rollups.find({ tenantId: scope.tenantId, projectId: scope.projectId, day }).toArray()) found.set(doc._id, doc);
    }),
  );
  const out = new Map<number, AnalyticsCell[]>();
  const missing: Date[] = [];
  for (const hour of hours) {
    const doc = found.get(rollupId(scope.tenantId, scope.projectId, hour));
    if (isCurrent(doc)) out.set(hour.getTime(), doc.cells);
    else missing.push(hour);
  }
  for (let i = 0; i < missing.length; i += BUILD_CONCURRENCY) {
    await Promise.all(missing.slice(i, i + BUILD_CONCURRENCY).map(async (hour) => out.set(hour.getTime(), await buildRollup(models, scope, hour))));
  }
  return out;
}
