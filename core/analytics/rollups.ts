// Rollups of analytics events (db/analytics-rollup.ts). A closed hour of a project is summed once,
// on the first read that needs it, from that hour's raw events, and kept; so is a closed minute,
// for the hours a read covers only in part (the edges of its range, the open hour). A read of a
// long range then fetches a few small documents and scans raw only the minutes not yet closed.
// Freshness: an hour is served from its rollup once it ended HOUR_GRAIN.delayMs (5 minutes) ago,
// a minute once it ended a minute ago; what is younger is read raw, so a read includes every event
// written so far. An event written into a unit whose rollup may already be built (a late or
// retried batch) marks that rollup stale (for minutes: every minute rollup of that hour) and the
// next read rebuilds it: rollups never lose an event, they move work from reads to the first read.
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { type AnalyticsRollupDoc, type AnalyticsRollupModel } from '../../db/analytics-rollup';
import { type AnalyticsEventDoc } from '../../db/analytics-event';
import { CELL_FIELDS, CellBuilder, type AnalyticsCell, type CellEvent } from './cells';

export const HOUR_MS = 3_600_000;
export const MINUTE_MS = 60_000;
/** A write this much before a unit may be rolled up already invalidates it (clocks of the writer and the builder may differ). */
export const CLOCK_MARGIN_MS = 30_000;
/** Units built at once by one read. */
const BUILD_CONCURRENCY = 4;

/** A rollup unit: hours, or minutes. `field`: the event field that names the unit (read by equality). */
export interface Grain {
  name: 'hour' | 'minute';
  ms: number;
  /** How long after its end a unit is still read raw (a turn's events are written when it ends). */
  delayMs: number;
  field: 'hour' | 'minute';
  model(models: Models): AnalyticsRollupModel;
}
export const HOUR_GRAIN: Grain = { name: 'hour', ms: HOUR_MS, delayMs: 5 * MINUTE_MS, field: 'hour', model: (m) => m.AnalyticsRollup };
export const MINUTE_GRAIN: Grain = { name: 'minute', ms: MINUTE_MS, delayMs: MINUTE_MS, field: 'minute', model: (m) => m.AnalyticsMinuteRollup };

const floorTo = (t: Date, ms: number): Date => new Date(Math.floor(t.getTime() / ms) * ms);
export const hourOf = (t: Date): Date => floorTo(t, HOUR_MS);
export const minuteOf = (t: Date): Date => floorTo(t, MINUTE_MS);
export const dayOf = (hour: Date): string => hour.toISOString().slice(0, 10);
const rollupId = (tenantId: string, projectId: string, start: Date): string => `${tenantId}:${projectId}:${start.toISOString()}`;

export interface ProjectScope {
  tenantId: string;
  projectId: string;
}

/** Whether a unit is old enough to be served from a rollup. */
export const isRollupUnit = (grain: Grain, start: Date, now: Date): boolean => start.getTime() + grain.ms + grain.delayMs <= now.getTime();

/** The minute rollups of an hour are stale together: a marker per hour, in the minute collection. */
const minuteMarkerId = (tenantId: string, projectId: string, hour: Date): string => `${rollupId(tenantId, projectId, hour)}:minutes`;

/**
 * Marks stale the rollups that may already hold these events (after the events are written): the
 * hour's own, and the hour's minute rollups (all of them, by the hour's marker). One upsert per
 * project and hour, and none at all for events younger than the units' delay (the usual case).
 */
export async function invalidateRollups(models: Models, events: readonly Pick<AnalyticsEventDoc, 'tenantId' | 'projectId' | 'hour' | 'minute'>[], now = new Date()): Promise<void> {
  const mayBeBuilt = (grain: Grain, start: Date) => start.getTime() + grain.ms + grain.delayMs - CLOCK_MARGIN_MS <= now.getTime();
  const hours = new Map<string, Pick<AnalyticsEventDoc, 'tenantId' | 'projectId' | 'hour'>>();
  const minuteHours = new Map<string, Pick<AnalyticsEventDoc, 'tenantId' | 'projectId' | 'hour'>>();
  for (const e of events) {
    if (mayBeBuilt(HOUR_GRAIN, e.hour)) hours.set(rollupId(e.tenantId, e.projectId, e.hour), e);
    if (mayBeBuilt(MINUTE_GRAIN, e.minute)) minuteHours.set(minuteMarkerId(e.tenantId, e.projectId, e.hour), e);
  }
  // One write by `_id` each, one at a time: the embedded store's write gate (docs/architecture.md)
  // then takes only that document's gate; a multi-statement update took the collection's and, with
  // two such writers, stalled.
  const upsert = async (model: AnalyticsRollupModel, stale: Map<string, Pick<AnalyticsEventDoc, 'tenantId' | 'projectId' | 'hour'>>) => {
    for (const [_id, e] of stale) {
      await driverCollection(model).updateOne(
        { _id },
        { $set: { invalidatedAt: now }, $setOnInsert: { tenantId: e.tenantId, projectId: e.projectId, hour: e.hour, day: dayOf(e.hour) } },
        { upsert: true },
      );
    }
  };
  await upsert(models.AnalyticsRollup, hours);
  await upsert(models.AnalyticsMinuteRollup, minuteHours);
}

type CellTuple = [string, string, string | null, string | null, string | null, string | null, number, number, number, number, number, number, number, number, Record<string, number>];

/** Cells as stored: one JSON string of tuples. */
export function encodeCells(cells: readonly AnalyticsCell[]): string {
  return JSON.stringify(
    cells.map((c): CellTuple => [c.category, c.eventType, c.agentName, c.channel, c.model, c.provider, c.count, c.errors, c.durationCount, c.durationSum, c.tokens, c.tokensIn, c.tokensOut, c.cost, c.hist]),
  );
}

export function decodeCells(text: string): AnalyticsCell[] {
  return (JSON.parse(text) as CellTuple[]).map(([category, eventType, agentName, channel, model, provider, count, errors, durationCount, durationSum, tokens, tokensIn, tokensOut, cost, hist]) => ({
    category,
    eventType,
    agentName,
    channel,
    model,
    provider,
    count,
    errors,
    durationCount,
    durationSum,
    tokens,
    tokensIn,
    tokensOut,
    cost,
    hist,
  }));
}

const isCurrent = (doc: AnalyticsRollupDoc | undefined): doc is AnalyticsRollupDoc & { cells: string; builtAt: Date } =>
  !!doc?.cells && !!doc.builtAt && (!doc.invalidatedAt || doc.invalidatedAt.getTime() < doc.builtAt.getTime());

/** Sums one unit of a project's events into cells (a scan of that unit, by its equality). */
export async function scanUnitCells(models: Models, scope: ProjectScope, grain: Grain, start: Date): Promise<AnalyticsCell[]> {
  const builder = new CellBuilder();
  const cursor = driverCollection(models.AnalyticsEvent).find({ tenantId: scope.tenantId, projectId: scope.projectId, [grain.field]: start }, { projection: CELL_FIELDS, batchSize: 5000 });
  for await (const e of cursor) builder.add(e as unknown as CellEvent);
  return builder.result();
}

async function buildRollup(models: Models, scope: ProjectScope, grain: Grain, start: Date): Promise<AnalyticsCell[]> {
  const builtAt = new Date();
  const cells = await scanUnitCells(models, scope, grain, start);
  const hour = hourOf(start);
  await driverCollection(grain.model(models)).updateOne(
    { _id: rollupId(scope.tenantId, scope.projectId, start) },
    { $set: { tenantId: scope.tenantId, projectId: scope.projectId, hour, day: dayOf(hour), ...(grain.name === 'minute' ? { minute: start } : {}), cells: encodeCells(cells), builtAt } },
    { upsert: true },
  );
  return cells;
}

/**
 * The cells of closed units of one grain (each old enough: isRollupUnit), from their rollups,
 * built first where missing or stale. Hour rollups are fetched a UTC day per query, minute
 * rollups an hour per query.
 */
export async function rollupCells(models: Models, scope: ProjectScope, grain: Grain, starts: readonly Date[]): Promise<Map<number, AnalyticsCell[]>> {
  const groups = grain.name === 'hour' ? [...new Set(starts.map(dayOf))].map((day) => ({ day })) : [...new Set(starts.map((s) => hourOf(s).getTime()))].map((h) => ({ hour: new Date(h) }));
  const found = new Map<string, AnalyticsRollupDoc>();
  const rollups = driverCollection(grain.model(models));
  await Promise.all(
    groups.map(async (g) => {
      for (const doc of await rollups.find({ tenantId: scope.tenantId, projectId: scope.projectId, ...g }).toArray()) found.set(doc._id, doc);
    }),
  );
  const out = new Map<number, AnalyticsCell[]>();
  const missing: Date[] = [];
  for (const start of starts) {
    const doc = found.get(rollupId(scope.tenantId, scope.projectId, start));
    const marker = grain.name === 'minute' ? found.get(minuteMarkerId(scope.tenantId, scope.projectId, hourOf(start))) : undefined;
    const markedStale = !!marker?.invalidatedAt && !!doc?.builtAt && marker.invalidatedAt.getTime() >= doc.builtAt.getTime();
    if (isCurrent(doc) && !markedStale) out.set(start.getTime(), decodeCells(doc.cells));
    else missing.push(start);
  }
  for (let i = 0; i < missing.length; i += BUILD_CONCURRENCY) {
    await Promise.all(missing.slice(i, i + BUILD_CONCURRENCY).map(async (start) => out.set(start.getTime(), await buildRollup(models, scope, grain, start))));
  }
  return out;
}
