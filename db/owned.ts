// Reads one tenant-owned document by id. The query filter is the lone `_id`: the one filter
// FerretDB (the dev and test store) answers from its primary key, where any other filter scans
// the whole collection. Ownership is compared here, so another tenant's document, or one outside
// the expected scope (a project, a session's project), reads as missing, exactly as if the
// filter had held it.
import { type Model } from 'mongoose';

type Owned = { _id: string; tenantId: string };

export async function findOwned<T extends Owned>(
  model: Model<T>,
  id: string,
  scope: { tenantId: string } & Partial<Record<Exclude<keyof T, '_id' | 'tenantId'>, unknown>>,
): Promise<T | null> {
  const doc = (await model.findById(id).lean()) as T | null;
  if (!doc) return null;
  for (const [field, expected] of Object.entries(scope)) {
    if ((doc as Record<string, unknown>)[field] !== expected) return null;
  }
  return doc;
}
