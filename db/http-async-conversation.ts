// HTTP-async conversations (docs/http-async.md): one per canonical session key, named by its
// workflow id (`http-async/<hash>`), so a caller's own key is taken once and a follow-up must
// send the canonical key. Holds which session currently answers it.
import { Schema, type Connection, type Model } from 'mongoose';

export interface HttpAsyncConversationDoc {
  /** The conversation workflow's id, `http-async/<sha-256 of the canonical key>`. */
  _id: string;
  tenantId: string;
  projectId: string;
  subscriptionId: string;
  sessionKey: string;
  /** The first message's id when it was sent with an Idempotency-Key, so a retry of it is known. */
  firstMessageId: string | null;
  /** The session answering the conversation now; a new one starts when it has ended. */
  sessionId: string | null;
  lastSessionStartedAt: Date | null;
  /** Set while the session answering it runs its delivery lane: the API sends follow-ups straight to it. */
  laneSessionId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const HttpAsyncConversationSchema = new Schema<HttpAsyncConversationDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    subscriptionId: { type: String, required: true },
    sessionKey: { type: String, required: true },
    firstMessageId: { type: String, default: null },
    sessionId: { type: String, default: null },
    lastSessionStartedAt: { type: Date, default: null },
    laneSessionId: { type: String, default: null },
  },
  { timestamps: true, versionKey: false },
);
HttpAsyncConversationSchema.index({ tenantId: 1, projectId: 1, subscriptionId: 1, createdAt: -1 });

export type HttpAsyncConversationModel = Model<HttpAsyncConversationDoc>;
export const httpAsyncConversationModel = (c: Connection): HttpAsyncConversationModel =>
  c.model<HttpAsyncConversationDoc>('HttpAsyncConversation', HttpAsyncConversationSchema, 'http_async_conversations');
