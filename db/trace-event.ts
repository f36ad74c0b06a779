// Trace events of sessions (llm_call, tool_call, tool_result, decision, handoff, delegate,
// guardrail_eval, state_change, error, response), written after each turn. `_id` is
// `<sessionId>:<seq>` so a retried write inserts nothing twice; `historyLength` says which attempt
// of the session's workflow task wrote it (activities/persistence/record-turn.ts).
import { Schema, type Connection, type Model } from 'mongoose';

export interface TraceEventDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  seq: number;
  turn: number;
  type: string;
  spanId: string;
  parentSpanId: string | null;
  timestamp: Date;
  data: Record<string, unknown>;
  /** The session history's length when the event was written: a later attempt's event replaces it. */
  historyLength?: number;
}

const TraceEventSchema = new Schema<TraceEventDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    seq: { type: Number, required: true },
    turn: { type: Number, required: true },
    type: { type: String, required: true },
    spanId: { type: String, required: true },
    parentSpanId: { type: String, default: null },
    timestamp: { type: Date, required: true },
    data: { type: Schema.Types.Mixed, default: {} },
    historyLength: { type: Number },
  },
  { versionKey: false, minimize: false },
);
TraceEventSchema.index({ tenantId: 1, sessionId: 1, seq: 1 });
TraceEventSchema.index({ tenantId: 1, projectId: 1, type: 1, timestamp: -1 });
// A project's events older than its retention (core/lifecycle/retention.ts).
TraceEventSchema.index({ tenantId: 1, projectId: 1, timestamp: 1 });

export type TraceEventModel = Model<TraceEventDoc>;
export const traceEventModel = (c: Connection): TraceEventModel =>
  c.model<TraceEventDoc>('TraceEvent', TraceEventSchema, 'trace_events');
