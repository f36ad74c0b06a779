// Claims that make the per-scope key rules hold under concurrent creation: one document per key
// name in a scope and one per occupied slot of the scope's key limit, each addressed by `_id`, so
// the store's primary key (unique on MongoDB and FerretDB alike) refuses a second claim. A key's
// claims are deleted with it.
import { Schema, type Connection, type Model } from 'mongoose';

export interface ApiKeyClaimDoc {
  /** `name:<scopeId>:<key name>` or `slot:<scopeId>:<n>`. */
  _id: string;
  tenantId: string;
  scopeId: string;
  /** The key holding the claim. */
  keyId: string;
  createdAt: Date;
}

const ApiKeyClaimSchema = new Schema<ApiKeyClaimDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    scopeId: { type: String, required: true },
    keyId: { type: String, required: true },
    createdAt: { type: Date, default: () => new Date() },
  },
  { versionKey: false },
);
ApiKeyClaimSchema.index({ scopeId: 1 });
ApiKeyClaimSchema.index({ keyId: 1 });

export type ApiKeyClaimModel = Model<ApiKeyClaimDoc>;
export const apiKeyClaimModel = (c: Connection): ApiKeyClaimModel => c.model<ApiKeyClaimDoc>('ApiKeyClaim', ApiKeyClaimSchema, 'api_key_claims');
