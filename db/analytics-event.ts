// Analytics events of a project: one row per thing that happened (a session started, an LLM call,
// a tool call, a deployment, a feedback rating, ...), in the spec's fifteen categories, for the
// analytics routes to filter and aggregate. `_id` is deterministic where the source has an id of
// its own (`<sessionId>:t<seq>` for an event derived from a trace event), so a retried write
// inserts nothing twice. The numeric fields aggregations sum sit at the top level.
import { Schema, type Connection, type Model } from 'mongoose';

export const ANALYTICS_CATEGORIES = [
  'session',
  'message',
  'llm',
  'tool',
  'agent',
  'gather',
  'flow',
  'channel',
  'deployment',
  'search',
  'voice',
  'audit',
  'evaluation',
  'feedback',
  'system',
] as const;
export type AnalyticsCategory = (typeof ANALYTICS_CATEGORIES)[number];

export interface AnalyticsEventDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  category: AnalyticsCategory;
  eventType: string;
  agentName: string | null;
  sessionId: string | null;
  /** The session's channel (`api`, `web_debug`, `voice`, ...), null when the event has none. */
  channel: string | null;
  timestamp: Date;
  /**
   * The start of the UTC hour of `timestamp`, set by the write path: reads select an hour by
   * equality, which the embedded store pushes down to an index (a time range it does not).
   */
  hour: Date;
  /** The start of the UTC minute of `timestamp`, for the same reason (the open hour is read by the minute). */
  minute: Date;
  durationMs: number | null;
  /** Present on error events: what went wrong, never a secret. */
  error: string | null;
  /** LLM events: tokens_in + tokens_out; 0 otherwise. */
  tokens: number;
  /** LLM events: estimated cost in US dollars; 0 otherwise. */
  cost: number;
  /** Free detail (LLM events: model, provider, tokens_in, tokens_out, cost). */
  metadata: Record<string, unknown>;
}

const AnalyticsEventSchema = new Schema<AnalyticsEventDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    category: { type: String, required: true, enum: ANALYTICS_CATEGORIES },
    eventType: { type: String, required: true },
    agentName: { type: String, default: null },
    sessionId: { type: String, default: null },
    channel: { type: String, default: null },
    timestamp: { type: Date, required: true },
    hour: { type: Date, required: true },
    minute: { type: Date, required: true },
    durationMs: { type: Number, default: null },
    error: { type: String, default: null },
    tokens: { type: Number, default: 0 },
    cost: { type: Number, default: 0 },
    metadata: { type: Schema.Types.Mixed, default: {} },
  },
  { versionKey: false, minimize: false },
);
AnalyticsEventSchema.index({ tenantId: 1, projectId: 1, timestamp: -1 });
AnalyticsEventSchema.index({ tenantId: 1, projectId: 1, category: 1, timestamp: -1 });
AnalyticsEventSchema.index({ tenantId: 1, projectId: 1, agentName: 1, timestamp: -1 });
// The analytics reads: a project's events of one hour or one minute (rollup builds, event pages).
AnalyticsEventSchema.index({ tenantId: 1, projectId: 1, hour: 1, timestamp: -1 });
AnalyticsEventSchema.index({ tenantId: 1, projectId: 1, minute: 1, timestamp: -1 });
// A session's events.
AnalyticsEventSchema.index({ tenantId: 1, sessionId: 1, timestamp: 1 });

export type AnalyticsEventModel = Model<AnalyticsEventDoc>;
export const analyticsEventModel = (c: Connection): AnalyticsEventModel =>
  c.model<AnalyticsEventDoc>('AnalyticsEvent', AnalyticsEventSchema, 'analytics_events');
