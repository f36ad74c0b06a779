// AnalyticsStore: the small interface every analytics read goes through (and the one write), so
// the event store can move from MongoDB to a column store without touching the routes
// (docs/observability.md, "When one MongoDB is not enough"). Two reads: the per-hour cells of a
// range (every metric is computed from them) and a page of raw events. The MongoDB store serves
// closed hours from the hourly rollups and scans only the hours at the edges of the range and the
// open hour, one hour at a time by the hour's equality (the embedded store indexes equalities,
// not ranges).
import { type mongo } from 'mongoose';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { type AnalyticsEventDoc } from '../../db/analytics-event';
import { recordAnalyticsEvents, type NewAnalyticsEvent } from './ingest';
import { CELL_FIELDS, CellBuilder, cellMatches, type CellEvent, type CellFilter, type HourCell } from './cells';
import { HOUR_MS, hourOf, isRollupHour, rollupCells, type ProjectScope } from './rollups';

/** Half-open: from ≤ timestamp < to. */
export interface TimeRange {
  from: Date;
  to: Date;
}

export interface EventFilter extends CellFilter {
  sessionId?: string;
  /** true: error events only; false: events without an error. */
  hasError?: boolean;
}

export interface EventPage {
  events: AnalyticsEventDoc[];
  /** Every event that matches, beyond the page too. */
  total: number;
}

export interface AnalyticsStore {
  record(events: readonly NewAnalyticsEvent[]): Promise<void>;
  /** The cells of the events in the range that match the filter, one set per UTC hour. */
  cells(scope: ProjectScope, range: TimeRange, filter: CellFilter): Promise<HourCell[]>;
  /** Matching events newest first (then by id, descending), and how many match. */
  events(scope: ProjectScope, range: TimeRange, filter: EventFilter, page: { limit: number; offset: number }): Promise<EventPage>;
}

export interface MongoAnalyticsStoreOptions {
  /** false: every hour is scanned raw (the rollups' reference answer, in tests and the bench). */
  rollups?: boolean;
  now?: () => Date;
}

/** The hours the range touches, newest first, and the part of each it covers. */
function hoursOf(range: TimeRange): { hour: Date; from: Date; to: Date; whole: boolean }[] {
  const out = [];
  for (let h = hourOf(new Date(range.to.getTime() - 1)).getTime(); h >= hourOf(range.from).getTime(); h -= HOUR_MS) {
    const from = new Date(Math.max(h, range.from.getTime()));
    const to = new Date(Math.min(h + HOUR_MS, range.to.getTime()));
    out.push({ hour: new Date(h), from, to, whole: from.getTime() === h && to.getTime() === h + HOUR_MS });
  }
  return range.to.getTime() > range.from.getTime() ? out : [];
}

function eventFilter(scope: ProjectScope, f: EventFilter): mongo.Filter<AnalyticsEventDoc> {
  const q: mongo.Filter<AnalyticsEventDoc> = { tenantId: scope.tenantId, projectId: scope.projectId };
  if (f.category !== undefined) q.category = f.category as AnalyticsEventDoc['category'];
  if (f.eventTypes?.length) q.eventType = f.eventTypes.length === 1 ? f.eventTypes[0]! : { $in: f.eventTypes };
  if (f.agentName !== undefined) q.agentName = f.agentName;
  if (f.sessionId !== undefined) q.sessionId = f.sessionId;
  if (f.hasError === true) q.error = { $ne: null };
  if (f.hasError === false) q.error = null;
  return q;
}

const NEWEST_FIRST = { timestamp: -1, _id: -1 } as const;

export function mongoAnalyticsStore(models: Models, options: MongoAnalyticsStoreOptions = {}): AnalyticsStore {
  const useRollups = options.rollups ?? true;
  const now = options.now ?? (() => new Date());
  const events = () => driverCollection(models.AnalyticsEvent);

  /** The hours served by a rollup, and the rest (scanned raw). */
  function plan(range: TimeRange) {
    const at = now();
    const hours = hoursOf(range);
    const fromRollups = useRollups ? hours.filter((h) => h.whole && isRollupHour(h.hour, at)) : [];
    const rolled = new Set(fromRollups.map((h) => h.hour.getTime()));
    return { hours, fromRollups, raw: hours.filter((h) => !rolled.has(h.hour.getTime())) };
  }

  async function rawCells(scope: ProjectScope, part: { hour: Date; from: Date; to: Date; whole: boolean }, filter: CellFilter): Promise<HourCell[]> {
    const builder = new CellBuilder();
    const q = { ...eventFilter(scope, filter), hour: part.hour, ...(part.whole ? {} : { timestamp: { $gte: part.from, $lt: part.to } }) };
    for await (const e of events().find(q, { projection: CELL_FIELDS, batchSize: 5000 })) builder.add(e as unknown as CellEvent);
    return builder.result().map((c) => ({ ...c, hour: part.hour }));
  }

  return {
    record: (batch) => recordAnalyticsEvents(models, batch),

    async cells(scope, range, filter) {
      const { fromRollups, raw } = plan(range);
      const [rolled, scanned] = await Promise.all([
        rollupCells(models, scope, fromRollups.map((h) => h.hour)),
        Promise.all(raw.map((part) => rawCells(scope, part, filter))),
      ]);
      const out: HourCell[] = scanned.flat();
      for (const [hour, cells] of rolled) {
        for (const c of cells) if (cellMatches(c, filter)) out.push({ ...c, hist: { ...c.hist }, hour: new Date(hour) });
      }
      return out.sort((a, b) => a.hour.getTime() - b.hour.getTime());
    },

    async events(scope, range, filter, page) {
      // A session's events are few: one query, by the session's index.
      if (filter.sessionId !== undefined) {
        const q = { ...eventFilter(scope, filter), timestamp: { $gte: range.from, $lt: range.to } };
        const [list, total] = await Promise.all([
          events().find(q).sort(NEWEST_FIRST).skip(page.offset).limit(page.limit).toArray(),
          events().countDocuments(q),
        ]);
        return { events: list, total };
      }
      // Otherwise count each hour (closed hours from their rollups), then read only the hours the page falls in.
      const { hours, fromRollups } = plan(range);
      const rolled = await rollupCells(models, scope, fromRollups.map((h) => h.hour));
      const hourFilter = (part: (typeof hours)[number]) => ({ ...eventFilter(scope, filter), hour: part.hour, ...(part.whole ? {} : { timestamp: { $gte: part.from, $lt: part.to } }) });
      const counts = await Promise.all(
        hours.map(async (part) => {
          const cells = rolled.get(part.hour.getTime());
          if (!cells) return events().countDocuments(hourFilter(part));
          return cells
            .filter((c) => cellMatches(c, filter))
            .reduce((n, c) => n + (filter.hasError === true ? c.errors : filter.hasError === false ? c.count - c.errors : c.count), 0);
        }),
      );
      const total = counts.reduce((a, b) => a + b, 0);
      const list: AnalyticsEventDoc[] = [];
      let skip = page.offset;
      for (let i = 0; i < hours.length && list.length < page.limit; i++) {
        if (skip >= counts[i]!) {
          skip -= counts[i]!;
          continue;
        }
        list.push(...(await events().find(hourFilter(hours[i]!)).sort(NEWEST_FIRST).skip(skip).limit(page.limit - list.length).toArray()));
        skip = 0;
      }
      return { events: list, total };
    },
  };
}
