// When each API key was last used, kept apart from the key document itself. Only management
// operations (revoke, change) write a key; request traffic writes here. On a store whose updates
// read and rewrite the whole document (FerretDB: two concurrent updates of one document lose one
// of them), a usage write racing a revocation could otherwise put back a revoked key.
import { Schema, type Connection, type Model } from 'mongoose';

export interface ApiKeyUsageDoc {
  /** The API key's id. */
  _id: string;
  tenantId: string;
  lastUsedAt: Date;
}

const ApiKeyUsageSchema = new Schema<ApiKeyUsageDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    lastUsedAt: { type: Date, required: true },
  },
  { versionKey: false },
);

export type ApiKeyUsageModel = Model<ApiKeyUsageDoc>;
export const apiKeyUsageModel = (c: Connection): ApiKeyUsageModel => c.model<ApiKeyUsageDoc>('ApiKeyUsage', ApiKeyUsageSchema, 'api_key_usage');

/** Last-used times of `keyIds`, by key id. */
export async function lastUsedTimes(model: ApiKeyUsageModel, tenantId: string, keyIds: string[]): Promise<Map<string, Date>> {
  if (keyIds.length === 0) return new Map();
  const docs = await model.find({ _id: { $in: keyIds }, tenantId }).lean();
  return new Map(docs.map((d) => [d._id, d.lastUsedAt]));
}
