// API keys: `abl_` + 48 hex, shown once, stored only as a SHA-256 hash; bound to a tenant and
// optionally to one project, with either permissions or a scope (db/api-scope.ts), environments
// and an optional expiry. Keys made since scopes exist have `ak-` ids; older ones keep theirs.
import { Schema, type Connection, type Model } from 'mongoose';
import { newId } from '../lib/ids';

export interface ApiKeyDoc {
  _id: string;
  tenantId: string;
  projectId: string | null;
  name: string;
  keyHash: string;
  /** First characters of the key (`abl_1a2b`), safe to show so people can tell keys apart. */
  keyPrefix: string;
  permissions: string[];
  /** The scope (`as-` id) whose grants the key holds instead of `permissions`, or null. */
  scopeId: string | null;
  /** Environments the key may act in (`dev`, `staging`, `production`); empty means all. */
  environments: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** Written by versions before api_key_usage (db/api-key-usage.ts) took it over; read only. */
  lastUsedAt: Date | null;
  createdBy: string | null;
  /**
   * Encryption of the session-analytics API for this key (docs/session-analytics.md): request
   * bodies must be JWE (`request`), answers are JWE to the client's public key (`response`).
   */
  encryption?: { request: boolean; response: boolean; clientJwk: Record<string, string> | null; clientKid: string | null } | null;
  createdAt: Date;
  updatedAt: Date;
}

const ApiKeySchema = new Schema<ApiKeyDoc>(
  {
    _id: { type: String, default: () => `ak-${newId()}` },
    tenantId: { type: String, required: true },
    projectId: { type: String, default: null },
    name: { type: String, required: true, maxlength: 200 },
    keyHash: { type: String, required: true },
    keyPrefix: { type: String, required: true },
    permissions: { type: [String], default: [] },
    scopeId: { type: String, default: null },
    environments: { type: [String], default: [] },
    expiresAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
    lastUsedAt: { type: Date, default: null },
    createdBy: { type: String, default: null },
    encryption: { type: Schema.Types.Mixed, default: null },
  },
  { timestamps: true, versionKey: false },
);
ApiKeySchema.index({ keyHash: 1 }, { unique: true });
ApiKeySchema.index({ tenantId: 1, createdAt: -1 });
ApiKeySchema.index({ scopeId: 1 });

export type ApiKeyModel = Model<ApiKeyDoc>;
export const apiKeyModel = (c: Connection): ApiKeyModel => c.model<ApiKeyDoc>('ApiKey', ApiKeySchema, 'api_keys');
