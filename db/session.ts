// Session summaries: the projection people list and search. The AgentSession workflow owns the
// live state; an activity writes this document shortly after each turn (absolute values, so a
// retried write is harmless). Invariant the chat API relies on: a session's project exists as
// long as the session does (nothing deletes projects today; deleting one must delete or end its
// sessions first).
import { Schema, type Connection, type Model } from 'mongoose';

export const SESSION_STATUSES = ['active', 'ended'] as const;
export const SESSION_CHANNELS = ['api', 'web_debug', 'voice', 'http_async', 'voice_realtime'] as const;
export const CONTAINMENT_TYPES = ['contained', 'contained_resolved', 'contained_partial', 'contained_unresolved', 'escalated', 'abandoned'] as const;
export const ANALYTICS_STATUSES = ['active', 'ended', 'completed', 'escalated', 'abandoned', 'failed'] as const;

export interface SessionDoc {
  /** The session id (a UUID); the workflow id is `session/<id>` (runtimeSessionId). */
  _id: string;
  tenantId: string;
  projectId: string;
  agentId: string | null;
  /** Agent the session started with. */
  agentName: string;
  /** Agent active after the last turn. */
  currentAgent: string;
  status: (typeof SESSION_STATUSES)[number];
  /** Finer runtime status: active, suspended, escalated, completed, ended. */
  runtimeStatus: string;
  channel: (typeof SESSION_CHANNELS)[number];
  environment: string;
  deploymentId: string | null;
  runtimeSessionId: string;
  messageCount: number;
  traceEventCount: number;
  tokenCount: number;
  errorCount: number;
  estimatedCost: number;
  durationMs: number;
  handoffCount: number;
  createdAt: Date;
  lastActivityAt: Date;
  endedAt: Date | null;
  endReason: string | null;
  /**
   * What the public session analytics filter and show (docs/session-analytics.md), written with
   * every summary by the runtime (workflows/session-insight.ts); absent on sessions recorded
   * before they existed, which the analytics API then shows as zeros and `contained`.
   */
  containmentType?: (typeof CONTAINMENT_TYPES)[number];
  /** active, ended, completed, escalated, abandoned, failed (`idle` is told at read time). */
  analyticsStatus?: (typeof ANALYTICS_STATUSES)[number];
  messageCounts?: { user: number; agent: number };
  traceEventCounts?: { llm_call: number; decision: number; tool_call: number; error: number };
  tokenUsage?: { inputTokens: number; outputTokens: number };
  /** The agent's `_meta.<name>` values: name → string, number or boolean. */
  traceDimensions?: Record<string, string | number | boolean>;
  /** The end user's identity on the channel (a widget's user id, an HTTP-async conversation's user), when it gives one. */
  channelUId?: string | null;
  /** A call's caller number as a keyed blind index (db/outbound-call.ts `destinationIndex`), never the number itself. */
  callerNumberIndex?: string | null;
}

const SessionSchema = new Schema<SessionDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    agentId: { type: String, default: null },
    agentName: { type: String, required: true },
    currentAgent: { type: String, required: true },
    status: { type: String, enum: SESSION_STATUSES, default: 'active' },
    runtimeStatus: { type: String, default: 'active' },
    channel: { type: String, enum: SESSION_CHANNELS, default: 'api' },
    environment: { type: String, default: 'dev' },
    deploymentId: { type: String, default: null },
    runtimeSessionId: { type: String, required: true },
    messageCount: { type: Number, default: 0 },
    traceEventCount: { type: Number, default: 0 },
    tokenCount: { type: Number, default: 0 },
    errorCount: { type: Number, default: 0 },
    estimatedCost: { type: Number, default: 0 },
    durationMs: { type: Number, default: 0 },
    handoffCount: { type: Number, default: 0 },
    createdAt: { type: Date, required: true },
    lastActivityAt: { type: Date, required: true },
    endedAt: { type: Date, default: null },
    endReason: { type: String, default: null },
    containmentType: { type: String, enum: CONTAINMENT_TYPES },
    analyticsStatus: { type: String, enum: ANALYTICS_STATUSES },
    messageCounts: { type: Schema.Types.Mixed },
    traceEventCounts: { type: Schema.Types.Mixed },
    tokenUsage: { type: Schema.Types.Mixed },
    traceDimensions: { type: Schema.Types.Mixed },
    channelUId: { type: String, default: null },
    callerNumberIndex: { type: String, default: null },
  },
  { versionKey: false },
);
SessionSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
SessionSchema.index({ tenantId: 1, projectId: 1, status: 1, channel: 1 });
// The capacity reconciliation lists a tenant's active sessions across its projects.
SessionSchema.index({ tenantId: 1, status: 1 });
// A deployment's drain and detail count the sessions still on it.
SessionSchema.index({ tenantId: 1, projectId: 1, deploymentId: 1, status: 1 });

export type SessionModel = Model<SessionDoc>;
export const sessionModel = (c: Connection): SessionModel => c.model<SessionDoc>('Session', SessionSchema, 'sessions');
