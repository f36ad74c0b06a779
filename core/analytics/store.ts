// AnalyticsStore: the small interface every analytics read goes through (and the one write), so
// the event store can move from MongoDB to a column store without touching the routes
// (docs/observability.md, "When one MongoDB is not enough"). Two reads: the per-hour cells of a
// range (every metric is computed from them) and a page of raw events. The MongoDB store serves
// closed hours from hour rollups, the closed minutes of the other hours from minute rollups, and
// scans raw only the minutes left (open, or cut by the range), each by its unit's equality (the
// embedded store indexes equalities, not ranges).
import { type mongo } from 'mongoose';
import { type Models } from '../../db/models';
import { driverCollection } from '../../db/driver-collection';
import { type AnalyticsEventDoc } from '../../db/analytics-event';
import { recordAnalyticsEvents, type NewAnalyticsEvent } from './ingest';
import { type AnalyticsCell, CELL_FIELDS, CellBuilder, cellMatches, type CellEvent, type CellFilter, type HourCell } from './cells';
import { type Grain, HOUR_GRAIN, hourOf, isRollupUnit, MINUTE_GRAIN, rollupCells, type ProjectScope } from './rollups';

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

/** A piece of a range: a unit served by its rollup, or a part of one read raw. */
interface Unit {
  grain: Grain;
  start: Date;
  from: Date;
  to: Date;
  whole: boolean;
  rolled: boolean;
}

/** The units of one grain the span [from, to) touches, newest first, and the part of each it covers. */
function unitsOf(grain: Grain, from: Date, to: Date): Omit<Unit, 'rolled'>[] {
  const out = [];
  if (to.getTime() <= from.getTime()) return [];
  for (let t = Math.floor((to.getTime() - 1) / grain.ms) * grain.ms; t >= Math.floor(from.getTime() / grain.ms) * grain.ms; t -= grain.ms) {
    const f = new Date(Math.max(t, from.getTime()));
    const e = new Date(Math.min(t + grain.ms, to.getTime()));
    out.push({ grain, start: new Date(t), from: f, to: e, whole: f.getTime() === t && e.getTime() === t + grain.ms });
  }
  return out;
}

/**
 * How a range is read, newest first: whole closed hours from their rollups; in the other hours,
 * whole closed minutes from theirs; the rest (the open minutes, partial minutes at the edges) raw.
 * Without rollups: every hour raw.
 */
function planOf(range: TimeRange, now: Date, useRollups: boolean): Unit[] {
  const units: Unit[] = [];
  for (const h of unitsOf(HOUR_GRAIN, range.from, range.to)) {
    if (!useRollups) units.push({ ...h, rolled: false });
    else if (h.whole && isRollupUnit(HOUR_GRAIN, h.start, now)) units.push({ ...h, rolled: true });
    else for (const m of unitsOf(MINUTE_GRAIN, h.from, h.to)) units.push({ ...m, rolled: m.whole && isRollupUnit(MINUTE_GRAIN, m.start, now) });
  }
  return units;
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

  const unitFilter = (scope: ProjectScope, filter: EventFilter, u: Unit) => ({
    ...eventFilter(scope, filter),
    [u.grain.field]: u.start,
    ...(u.whole ? {} : { timestamp: { $gte: u.from, $lt: u.to } }),
  });

  async function rawCells(scope: ProjectScope, u: Unit, filter: CellFilter): Promise<HourCell[]> {
    const builder = new CellBuilder();
    for await (const e of events().find(unitFilter(scope, filter, u), { projection: CELL_FIELDS, batchSize: 5000 })) builder.add(e as unknown as CellEvent);
    return builder.result().map((c) => ({ ...c, hour: hourOf(u.start) }));
  }

  /** The rollups of the plan's rolled units, by grain and start. */
  async function rolledCells(scope: ProjectScope, units: Unit[]): Promise<Map<string, AnalyticsCell[]>> {
    const out = new Map<string, AnalyticsCell[]>();
    await Promise.all(
      [HOUR_GRAIN, MINUTE_GRAIN].map(async (grain) => {
        const starts = units.filter((u) => u.rolled && u.grain === grain).map((u) => u.start);
        if (starts.length === 0) return;
        for (const [t, cells] of await rollupCells(models, scope, grain, starts)) out.set(`${grain.name}:${t}`, cells);
      }),
    );
    return out;
  }
  const keyOf = (u: Unit) => `${u.grain.name}:${u.start.getTime()}`;

  return {
    record: (batch) => recordAnalyticsEvents(models, batch),

    async cells(scope, range, filter) {
      const units = planOf(range, now(), useRollups);
      const [rolled, scanned] = await Promise.all([rolledCells(scope, units), Promise.all(units.filter((u) => !u.rolled).map((u) => rawCells(scope, u, filter)))]);
      const out: HourCell[] = scanned.flat();
      for (const u of units) {
        if (!u.rolled) continue;
        for (const c of rolled.get(keyOf(u)) ?? []) if (cellMatches(c, filter)) out.push({ ...c, hour: hourOf(u.start) });
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
      // Otherwise count each unit (closed ones from their rollups), then read only the units the page falls in.
      const units = planOf(range, now(), useRollups);
      const rolled = await rolledCells(scope, units);
      const counts = await Promise.all(
        units.map(async (u) => {
          if (!u.rolled) return events().countDocuments(unitFilter(scope, filter, u));
          return (rolled.get(keyOf(u)) ?? [])
            .filter((c) => cellMatches(c, filter))
            .reduce((n, c) => n + (filter.hasError === true ? c.errors : filter.hasError === false ? c.count - c.errors : c.count), 0);
        }),
      );
      const total = counts.reduce((a, b) => a + b, 0);
      const list: AnalyticsEventDoc[] = [];
      let skip = page.offset;
      for (let i = 0; i < units.length && list.length < page.limit; i++) {
        if (skip >= counts[i]!) {
          skip -= counts[i]!;
          continue;
        }
        list.push(...(await events().find(unitFilter(scope, filter, units[i]!)).sort(NEWEST_FIRST).skip(skip).limit(page.limit - list.length).toArray()));
        skip = 0;
      }
      return { events: list, total };
    },
  };
}
