// Where each tenant's active-session count was last seen (db/session-capacity.ts): `_id` is the
// tenant id. A hint only: it may lag behind the revisions, which readers follow forward from it.
import { Schema, type Connection, type Model } from 'mongoose';

export interface SessionCapacityHeadDoc {
  /** The tenant id. */
  _id: string;
  rev: number;
  active: number;
  /** When revision `rev` was written. */
  at: Date;
}

const SessionCapacityHeadSchema = new Schema<SessionCapacityHeadDoc>(
  {
    _id: { type: String, required: true },
    rev: { type: Number, required: true },
    active: { type: Number, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);

export type SessionCapacityHeadModel = Model<SessionCapacityHeadDoc>;
export const sessionCapacityHeadModel = (c: Connection): SessionCapacityHeadModel =>
  c.model<SessionCapacityHeadDoc>('SessionCapacityHead', SessionCapacityHeadSchema, 'session_capacity_heads');
