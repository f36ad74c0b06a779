// Transcript messages (user and agent turns) of sessions. `_id` is the message id,
// `<sessionId>:m<seq>`, so a retried write inserts nothing twice; `historyLength` says which
// attempt of the session's workflow task wrote it (activities/persistence/record-turn.ts). Kept
// across a reset.
import { Schema, type Connection, type Model } from 'mongoose';

export interface TranscriptMessageDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  seq: number;
  turn: number;
  role: 'user' | 'assistant' | 'system';
  agent: string | null;
  content: string;
  timestamp: Date;
  /** The session history's length when the row was written: a later attempt's row replaces it. */
  historyLength?: number;
}

const TranscriptMessageSchema = new Schema<TranscriptMessageDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    seq: { type: Number, required: true },
    turn: { type: Number, required: true },
    role: { type: String, required: true },
    agent: { type: String, default: null },
    content: { type: String, required: true },
    timestamp: { type: Date, required: true },
    historyLength: { type: Number },
  },
  { versionKey: false },
);
TranscriptMessageSchema.index({ tenantId: 1, sessionId: 1, seq: 1 });
// A project's messages older than its retention (core/lifecycle/retention.ts).
TranscriptMessageSchema.index({ tenantId: 1, projectId: 1, timestamp: 1 });

export type TranscriptMessageModel = Model<TranscriptMessageDoc>;
export const transcriptMessageModel = (c: Connection): TranscriptMessageModel =>
  c.model<TranscriptMessageDoc>('TranscriptMessage', TranscriptMessageSchema, 'transcript_messages');
