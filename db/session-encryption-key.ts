// The platform's own key pair for a project's encrypted session-analytics requests: clients
// encrypt request bodies to its public key (served as a JWKS), and the private key is kept sealed
// under the tenant's data key (db/tenant-data-key.ts, the envelope tool secrets use), never in
// clear at rest, in a log or in an answer. One per project, made on first use.
import { Schema, type Connection, type Model } from 'mongoose';
import { type Sealed } from '../lib/secret-envelope';

export interface SessionEncryptionKeyDoc {
  /** The key id (`kid`): the RFC 7638 thumbprint of the public key. */
  _id: string;
  tenantId: string;
  projectId: string;
  /** The public key as a JWK (`kty`, `n`, `e`). */
  publicJwk: Record<string, string>;
  /** PKCS#8 PEM of the private key, sealed (AES-256-GCM) under the tenant's data key. */
  privateKey: Sealed;
  createdAt: Date;
}

const SealedSchema = new Schema<Sealed>({ iv: { type: String, required: true }, tag: { type: String, required: true }, data: { type: String, required: true } }, { _id: false });

const SessionEncryptionKeySchema = new Schema<SessionEncryptionKeyDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    publicJwk: { type: Schema.Types.Mixed, required: true },
    privateKey: { type: SealedSchema, required: true },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false },
);
// One key pair per project: a concurrent first use keeps the first one written.
SessionEncryptionKeySchema.index({ tenantId: 1, projectId: 1 }, { unique: true });

export type SessionEncryptionKeyModel = Model<SessionEncryptionKeyDoc>;
export const sessionEncryptionKeyModel = (c: Connection): SessionEncryptionKeyModel =>
  c.model<SessionEncryptionKeyDoc>('SessionEncryptionKey', SessionEncryptionKeySchema, 'session_encryption_keys');
