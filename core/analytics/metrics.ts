// The analytics reads (docs/observability.md, "Analytics queries"): grouped metrics, an agent's
// summary, LLM cost by model and provider, session metrics, all computed from the cells an
// AnalyticsStore returns, and event pages. Rounding: durations to 0.001 ms, rates and costs to
// 1e-6, so a rollup and a raw scan of the same events print the same numbers.
import { type AnalyticsCategory } from '../../db/analytics-event';
import { type AnalyticsCell, type HourCell, mergeCell } from './cells';
import { sketchQuantile } from './sketch';
import { type ProjectScope } from './rollups';
import { type AnalyticsStore, type EventFilter, type EventPage, type TimeRange } from './store';

export const GROUP_DIMENSIONS = ['category', 'event_type', 'agent_name', 'channel', 'hour', 'day'] as const;
export type GroupDimension = (typeof GROUP_DIMENSIONS)[number];
export const METRICS = ['count', 'avg_duration', 'error_rate', 'p95_duration', 'sum_tokens', 'sum_cost'] as const;
export type Metric = (typeof METRICS)[number];

/** Longest range any analytics read takes: 92 days (a quarter), so a read is bounded. */
export const MAX_RANGE_DAYS = 92;
export const MAX_RANGE_MS = MAX_RANGE_DAYS * 86_400_000;
export const DEFAULT_RANGE_MS = 86_400_000;

const round = (x: number, digits: number): number => Number(x.toFixed(digits));

function dimension(c: HourCell, d: GroupDimension): string | null {
  switch (d) {
    case 'category':
      return c.category;
    case 'event_type':
      return c.eventType;
    case 'agent_name':
      return c.agentName;
    case 'channel':
      return c.channel;
    case 'hour':
      return c.hour.toISOString();
    case 'day':
      return c.hour.toISOString().slice(0, 10);
  }
}

const emptyCell = (): AnalyticsCell => ({
  category: '',
  eventType: '',
  agentName: null,
  channel: null,
  model: null,
  provider: null,
  count: 0,
  errors: 0,
  durationCount: 0,
  durationSum: 0,
  tokens: 0,
  tokensIn: 0,
  tokensOut: 0,
  cost: 0,
  hist: {},
});

export function sumCells(cells: readonly AnalyticsCell[]): AnalyticsCell {
  const total = emptyCell();
  for (const c of cells) mergeCell(total, c);
  return total;
}

export function metricValue(total: AnalyticsCell, m: Metric): number | null {
  switch (m) {
    case 'count':
      return total.count;
    case 'avg_duration':
      return total.durationCount ? round(total.durationSum / total.durationCount, 3) : null;
    case 'error_rate':
      return total.count ? round(total.errors / total.count, 6) : 0;
    case 'p95_duration': {
      const p = sketchQuantile(total.hist, 0.95);
      return p === null ? null : round(p, 3);
    }
    case 'sum_tokens':
      return total.tokens;
    case 'sum_cost':
      return round(total.cost, 6);
  }
}

export type Bucket = Record<string, string | number | null>;

const compareKeys = (a: (string | null)[], b: (string | null)[]): number => {
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    if (a[i] === null) return -1;
    if (b[i] === null) return 1;
    return a[i]! < b[i]! ? -1 : 1;
  }
  return 0;
};

/** One bucket per group of the cells: the group's keys (named as in groupBy) and the metrics asked for, ordered by the keys. */
export function bucketsOf(cells: readonly HourCell[], groupBy: readonly GroupDimension[], metrics: readonly Metric[]): Bucket[] {
  const groups = new Map<string, { keys: (string | null)[]; total: AnalyticsCell }>();
  for (const c of cells) {
    const keys = groupBy.map((d) => dimension(c, d));
    const id = JSON.stringify(keys);
    let g = groups.get(id);
    if (!g) groups.set(id, (g = { keys, total: emptyCell() }));
    mergeCell(g.total, c);
  }
  return [...groups.values()]
    .sort((a, b) => compareKeys(a.keys, b.keys))
    .map(({ keys, total }) => ({
      ...Object.fromEntries(groupBy.map((d, i) => [d, keys[i]!])),
      ...Object.fromEntries(metrics.map((m) => [m, metricValue(total, m)])),
    }));
}

export interface MetricsQuery {
  range: TimeRange;
  groupBy: GroupDimension[];
  metrics: Metric[];
  category?: AnalyticsCategory;
  eventTypes?: string[];
}

export async function analyticsMetrics(store: AnalyticsStore, scope: ProjectScope, q: MetricsQuery): Promise<Bucket[]> {
  const cells = await store.cells(scope, q.range, { category: q.category, eventTypes: q.eventTypes });
  return bucketsOf(cells, q.groupBy, q.metrics);
}

export function listAnalyticsEvents(store: AnalyticsStore, scope: ProjectScope, range: TimeRange, filter: EventFilter, page: { limit: number; offset: number }): Promise<EventPage> {
  return store.events(scope, range, filter, page);
}

const ALL_METRICS: Metric[] = [...METRICS];
const summaryOf = (total: AnalyticsCell) => ({
  ...(Object.fromEntries(ALL_METRICS.map((m) => [m, metricValue(total, m)])) as Record<Metric, number | null>),
  error_count: total.errors,
});

/** An agent's events over a range: totals, and the same per category and per event type. */
export async function agentAnalytics(store: AnalyticsStore, scope: ProjectScope, range: TimeRange, agentName: string) {
  const cells = await store.cells(scope, range, { agentName });
  return {
    summary: summaryOf(sumCells(cells)),
    by_category: bucketsOf(cells, ['category'], ALL_METRICS),
    by_event_type: bucketsOf(cells, ['category', 'event_type'], ALL_METRICS),
  };
}

/** LLM cost over a range, by model and provider and by provider, most expensive first. */
export async function costBreakdown(store: AnalyticsStore, scope: ProjectScope, range: TimeRange) {
  const cells = await store.cells(scope, range, { category: 'llm' });
  const group = (keyOf: (c: AnalyticsCell) => (string | null)[]) => {
    const groups = new Map<string, { keys: (string | null)[]; total: AnalyticsCell }>();
    for (const c of cells) {
      const keys = keyOf(c);
      const id = JSON.stringify(keys);
      let g = groups.get(id);
      if (!g) groups.set(id, (g = { keys, total: emptyCell() }));
      mergeCell(g.total, c);
    }
    return [...groups.values()].sort((a, b) => b.total.cost - a.total.cost || compareKeys(a.keys, b.keys));
  };
  const line = (t: AnalyticsCell) => ({ calls: t.count, tokens_in: t.tokensIn, tokens_out: t.tokensOut, tokens: t.tokens, cost: round(t.cost, 6) });
  const total = sumCells(cells);
  return {
    total: line(total),
    by_model: group((c) => [c.model, c.provider]).map(({ keys, total: t }) => ({ model: keys[0]!, provider: keys[1]!, ...line(t) })),
    by_provider: group((c) => [c.provider]).map(({ keys, total: t }) => ({ provider: keys[0]!, ...line(t) })),
  };
}

/** The event types session metrics count (emitted once per session by the runtime). */
export const SESSION_STARTED = 'session.started';
export const SESSION_ENDED = 'session.ended';

/**
 * Sessions over a range: started and ended (their event types), session length (durations of
 * `session.ended` events), the messages, LLM calls, tool calls, errors, tokens and cost of the
 * range, per started session too, and the same counts per channel.
 */
export async function sessionMetrics(store: AnalyticsStore, scope: ProjectScope, range: TimeRange) {
  const cells = await store.cells(scope, range, {});
  const perSession = (n: number, sessions: number) => (sessions ? round(n / sessions, 6) : null);
  const summarise = (cs: readonly AnalyticsCell[]) => {
    const of = (pred: (c: AnalyticsCell) => boolean) => sumCells(cs.filter(pred));
    const started = of((c) => c.category === 'session' && c.eventType === SESSION_STARTED).count;
    const ended = of((c) => c.category === 'session' && c.eventType === SESSION_ENDED);
    const messages = of((c) => c.category === 'message').count;
    const llm = of((c) => c.category === 'llm');
    const tools = of((c) => c.category === 'tool').count;
    const all = sumCells(cs);
    return {
      sessions_started: started,
      sessions_ended: ended.count,
      avg_session_duration: metricValue(ended, 'avg_duration'),
      p95_session_duration: metricValue(ended, 'p95_duration'),
      messages,
      llm_calls: llm.count,
      tool_events: tools,
      events: all.count,
      errors: all.errors,
      error_rate: metricValue(all, 'error_rate'),
      tokens: all.tokens,
      cost: round(all.cost, 6),
      messages_per_session: perSession(messages, started),
      tokens_per_session: perSession(all.tokens, started),
      cost_per_session: perSession(all.cost, started),
    };
  };
  const channels = new Map<string | null, AnalyticsCell[]>();
  for (const c of cells) channels.set(c.channel, [...(channels.get(c.channel) ?? []), c]);
  return {
    summary: summarise(cells),
    by_channel: [...channels]
      .sort(([a], [b]) => compareKeys([a], [b]))
      .map(([channel, cs]) => ({ channel, ...summarise(cs) })),
  };
}
