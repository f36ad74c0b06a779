// One document per session that holds a place in its tenant's active-session count
// (db/session-capacity.ts), `_id` `<tenantId>/<sessionId>`. Deleting it is what lets exactly one
// caller give the place back, however many paths see the session end.
import { Schema, type Connection, type Model } from 'mongoose';

export interface SessionSlotDoc {
  /** `<tenantId>/<sessionId>`. */
  _id: string;
  tenantId: string;
  sessionId: string;
  at: Date;
}

const SessionSlotSchema = new Schema<SessionSlotDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    sessionId: { type: String, required: true },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);
SessionSlotSchema.index({ tenantId: 1 });

export type SessionSlotModel = Model<SessionSlotDoc>;
export const sessionSlotModel = (c: Connection): SessionSlotModel => c.model<SessionSlotDoc>('SessionSlot', SessionSlotSchema, 'session_slots');
