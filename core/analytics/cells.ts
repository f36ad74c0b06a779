// Cells: the sums of one group of analytics events in one hour, the unit both the hourly rollups
// and a raw scan produce, and every metric is computed from (core/analytics/metrics.ts).
import { type AnalyticsCell } from '../../db/analytics-rollup';
import { type AnalyticsEventDoc } from '../../db/analytics-event';
import { addToSketch, mergeSketch } from './sketch';

export type { AnalyticsCell };
/** A cell and the UTC hour it belongs to. */
export type HourCell = AnalyticsCell & { hour: Date };

/** The fields of an event a cell reads. */
export const CELL_FIELDS = {
  category: 1,
  eventType: 1,
  agentName: 1,
  channel: 1,
  timestamp: 1,
  durationMs: 1,
  error: 1,
  tokens: 1,
  cost: 1,
  'metadata.model': 1,
  'metadata.provider': 1,
  'metadata.tokens_in': 1,
  'metadata.tokens_out': 1,
} as const;

export type CellEvent = Pick<AnalyticsEventDoc, 'category' | 'eventType' | 'agentName' | 'channel' | 'durationMs' | 'error' | 'tokens' | 'cost'> & {
  metadata?: Record<string, unknown> | null;
};

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

const cellKey = (c: Pick<AnalyticsCell, 'category' | 'eventType' | 'agentName' | 'channel' | 'model' | 'provider'>): string =>
  JSON.stringify([c.category, c.eventType, c.agentName, c.channel, c.model, c.provider]);

/** Folds events into cells, one per (category, event type, agent, channel, model, provider). */
export class CellBuilder {
  private readonly cells = new Map<string, AnalyticsCell>();

  add(e: CellEvent): void {
    const llm = e.category === 'llm';
    const id = {
      category: e.category,
      eventType: e.eventType,
      agentName: e.agentName ?? null,
      channel: e.channel ?? null,
      model: llm ? str(e.metadata?.model) : null,
      provider: llm ? str(e.metadata?.provider) : null,
    };
    const key = cellKey(id);
    let cell = this.cells.get(key);
    if (!cell) {
      cell = { ...id, count: 0, errors: 0, durationCount: 0, durationSum: 0, tokens: 0, tokensIn: 0, tokensOut: 0, cost: 0, hist: {} };
      this.cells.set(key, cell);
    }
    cell.count += 1;
    if (e.error != null) cell.errors += 1;
    if (typeof e.durationMs === 'number' && Number.isFinite(e.durationMs)) {
      cell.durationCount += 1;
      cell.durationSum += e.durationMs;
      addToSketch(cell.hist, e.durationMs);
    }
    cell.tokens += num(e.tokens);
    cell.cost += num(e.cost);
    if (llm) {
      cell.tokensIn += num(e.metadata?.tokens_in);
      cell.tokensOut += num(e.metadata?.tokens_out);
    }
  }

  result(): AnalyticsCell[] {
    return [...this.cells.values()];
  }
}

/** Adds `from` into `into` (same group). */
export function mergeCell(into: AnalyticsCell, from: AnalyticsCell): void {
  into.count += from.count;
  into.errors += from.errors;
  into.durationCount += from.durationCount;
  into.durationSum += from.durationSum;
  into.tokens += from.tokens;
  into.tokensIn += from.tokensIn;
  into.tokensOut += from.tokensOut;
  into.cost += from.cost;
  mergeSketch(into.hist, from.hist);
}

/** What a cell-level filter may fix (the event dimensions a rollup keeps). */
export interface CellFilter {
  category?: string;
  eventTypes?: string[];
  agentName?: string;
}

export function cellMatches(c: Pick<AnalyticsCell, 'category' | 'eventType' | 'agentName'>, f: CellFilter): boolean {
  if (f.category !== undefined && c.category !== f.category) return false;
  if (f.eventTypes?.length && !f.eventTypes.includes(c.eventType)) return false;
  if (f.agentName !== undefined && c.agentName !== f.agentName) return false;
  return true;
}
