// Each tenant's count of active sessions (db/session-capacity.ts): `_id` is the tenant id. Every
// change is one conditional update of this document; `rev` goes up by one with each, so the
// reconciliation can set the count only if nothing changed it meanwhile. The collection keeps the
// name it had when the count was a chain of revisions and this document their last-seen head: the
// heads carry on as the counts.
import { Schema, type Connection, type Model } from 'mongoose';

export interface SessionCapacityCountDoc {
  /** The tenant id. */
  _id: string;
  /** Changes applied so far. */
  rev: number;
  active: number;
  /** When the last change was applied. */
  at: Date;
}

const SessionCapacityCountSchema = new Schema<SessionCapacityCountDoc>(
  {
    _id: { type: String, required: true },
    rev: { type: Number, required: true },
    active: { type: Number, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);

export type SessionCapacityCountModel = Model<SessionCapacityCountDoc>;
export const sessionCapacityCountModel = (c: Connection): SessionCapacityCountModel =>
  c.model<SessionCapacityCountDoc>('SessionCapacityCount', SessionCapacityCountSchema, 'session_capacity_heads');
