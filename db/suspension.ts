// Suspensions: an async tool call a session waits on. The id is the callback id in the URL handed
// to the outside system, and the capability to resume that one call; the per-suspension secret
// (encrypted at rest) signs the callback. A callback or a resume claims the record atomically
// (pending → claimed), so exactly one of any number of deliveries resumes the session.
import { Schema, type Connection, type Model } from 'mongoose';
import { EncryptedValueSchema } from './encrypted-value';
import { type EncryptedValue } from '../lib/encryption';

/** Encryptor purpose for callback secrets: they cannot be opened as another kind of secret. */
export const CALLBACK_SECRET_PURPOSE = 'callback-secret';
/** Encryptor purpose for a claimed callback's payload, kept until it is handed to the session. */
export const CALLBACK_PAYLOAD_PURPOSE = 'callback-payload';

/**
 * `pending`: waiting for its callback; `claimed`: a delivery won and is signalling the session;
 * `delivered`: the session has the result; `cancelled`: the request could not be sent.
 * Expiry is `expiresAt` passing while pending (the session then resumes with a tool_timeout).
 */
export type SuspensionStatus = 'pending' | 'claimed' | 'delivered' | 'cancelled';

export interface SuspensionDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  /** The interpreter command the callback answers. */
  commandId: string;
  agent: string;
  tool: string;
  secret: EncryptedValue;
  status: SuspensionStatus;
  expiresAt: Date;
  /** How it was resumed: by the signed callback or the authenticated resume route. */
  resumedVia?: 'callback' | 'resume';
  claimedAt?: Date;
  /**
   * The claimed result (JSON, encrypted), so a claim whose API process died before handing it to
   * the session is delivered by the stale-claim sweep (core/callbacks/stale-claims.ts).
   */
  claimedPayload?: EncryptedValue;
  deliveredAt?: Date;
  /**
   * The W3C trace context of the turn that suspended, when tracing is on: the span that resumes
   * the session links to it (docs/observability.md, "Traces"). Ids only.
   */
  traceparent?: string;
  createdAt: Date;
  updatedAt: Date;
}

const SuspensionSchema = new Schema<SuspensionDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    commandId: { type: String, required: true },
    agent: { type: String, required: true },
    tool: { type: String, required: true },
    secret: { type: EncryptedValueSchema, required: true },
    status: { type: String, required: true, enum: ['pending', 'claimed', 'delivered', 'cancelled'] },
    expiresAt: { type: Date, required: true },
    resumedVia: { type: String },
    claimedAt: { type: Date },
    claimedPayload: { type: EncryptedValueSchema },
    deliveredAt: { type: Date },
    traceparent: { type: String },
  },
  { timestamps: true, versionKey: false },
);
// The resume route finds a session's pending suspension.
SuspensionSchema.index({ tenantId: 1, sessionId: 1, status: 1 });
// The sweep of claims whose delivery stalled (core/callbacks/stale-claims.ts), across tenants.
SuspensionSchema.index({ status: 1, claimedAt: 1 });

export type SuspensionModel = Model<SuspensionDoc>;
export const suspensionModel = (c: Connection): SuspensionModel => c.model<SuspensionDoc>('Suspension', SuspensionSchema, 'suspensions');
