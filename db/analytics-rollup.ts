// Rollups of a project's analytics events (core/analytics/rollups.ts): one document per tenant,
// project and closed UTC hour (and, in analytics_minute_rollups, per closed minute), holding one cell per (category, event type, agent, channel,
// model, provider) with the sums the metrics need and a duration sketch for p95. Built from
// analytics_events on first read of a closed hour; a late event of a built hour marks it stale
// (`invalidatedAt` after `builtAt`) and the next read rebuilds it.
import { Schema, type Connection, type Model } from 'mongoose';

/** The sums of one group of events in one hour. `hist`: duration sketch buckets (core/analytics/sketch.ts). */
export interface AnalyticsCell {
  category: string;
  eventType: string;
  agentName: string | null;
  channel: string | null;
  /** LLM events: metadata.model / metadata.provider; null otherwise. */
  model: string | null;
  provider: string | null;
  count: number;
  errors: number;
  durationCount: number;
  durationSum: number;
  tokens: number;
  tokensIn: number;
  tokensOut: number;
  cost: number;
  hist: Record<string, number>;
}

export interface AnalyticsRollupDoc {
  /** `<tenantId>:<projectId>:<start ISO>` */
  _id: string;
  tenantId: string;
  projectId: string;
  /** The hour this rollup is, or (a minute rollup) the hour its minute is in. */
  hour: Date;
  /** Minute rollups: the minute (absent on an hour's marker, `<id of the hour>:minutes`, whose invalidatedAt makes every minute rollup of the hour built before it stale). */
  minute?: Date;
  /** `YYYY-MM-DD` of `hour`: reads fetch a day of rollups by equality. */
  day: string;
  /**
   * The hour's cells, encoded by core/analytics/rollups.ts (a JSON string of tuples: the embedded
   * store decodes one string far faster than thousands of nested fields). Absent on a stub left
   * by an invalidation before any build.
   */
  cells?: string;
  /** When the build that wrote `cells` started reading the events. */
  builtAt?: Date;
  /** Set by a write of an event into this hour after it ended; newer than builtAt = stale. */
  invalidatedAt?: Date;
}

const AnalyticsRollupSchema = new Schema<AnalyticsRollupDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    hour: { type: Date, required: true },
    day: { type: String, required: true },
    cells: { type: String },
    builtAt: { type: Date },
    invalidatedAt: { type: Date },
  },
  { versionKey: false, minimize: false },
);
AnalyticsRollupSchema.index({ tenantId: 1, projectId: 1, day: 1 });

const MinuteRollupSchema = AnalyticsRollupSchema.clone();
MinuteRollupSchema.add({ minute: { type: Date } });
MinuteRollupSchema.index({ tenantId: 1, projectId: 1, hour: 1 });

export type AnalyticsRollupModel = Model<AnalyticsRollupDoc>;
export const analyticsRollupModel = (c: Connection): AnalyticsRollupModel =>
  c.model<AnalyticsRollupDoc>('AnalyticsRollup', AnalyticsRollupSchema, 'analytics_rollups');
/** The same per minute, for the hours a read covers only in part (its edges, the open hour). */
export const analyticsMinuteRollupModel = (c: Connection): AnalyticsRollupModel =>
  c.model<AnalyticsRollupDoc>('AnalyticsMinuteRollup', MinuteRollupSchema, 'analytics_minute_rollups');
