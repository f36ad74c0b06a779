// The revisions of each tenant's active-session count (db/session-capacity.ts): one immutable
// document per change, `_id` `<tenantId>/<rev>`. Inserting revision rev+1 is the compare-and-swap
// that makes the count exact: the primary key lets only one change follow a given revision.
import { Schema, type Connection, type Model } from 'mongoose';

export const CAPACITY_CHANGE_REASONS = ['start', 'end', 'give_back', 'adopt', 'reconcile'] as const;

export interface SessionCapacityRevisionDoc {
  /** `<tenantId>/<rev>`. */
  _id: string;
  tenantId: string;
  rev: number;
  /** Active sessions after this change. */
  active: number;
  delta: number;
  reason: (typeof CAPACITY_CHANGE_REASONS)[number];
  sessionId: string | null;
  at: Date;
}

const SessionCapacityRevisionSchema = new Schema<SessionCapacityRevisionDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    rev: { type: Number, required: true },
    active: { type: Number, required: true },
    delta: { type: Number, required: true },
    reason: { type: String, enum: CAPACITY_CHANGE_REASONS, required: true },
    sessionId: { type: String, default: null },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);
SessionCapacityRevisionSchema.index({ tenantId: 1, rev: 1 });

export type SessionCapacityRevisionModel = Model<SessionCapacityRevisionDoc>;
export const sessionCapacityRevisionModel = (c: Connection): SessionCapacityRevisionModel =>
  c.model<SessionCapacityRevisionDoc>('SessionCapacityRevision', SessionCapacityRevisionSchema, 'session_capacity_revisions');
