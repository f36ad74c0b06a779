// Reads one tenant-owned document by id. The query filter is the lone `_id`: the one filter
// FerretDB (the dev and test store) answers from its primary key, where any other filter scans
// the whole collection. Ownership is compared here, so another tenant's document, or one outside
// the expected scope (a project, a session's project), reads as missing, exactly as if the
// filter had held it. It reads through the driver: these reads sit on every request's path, and
// mongoose's query building costs more CPU than the round trip.
import { type Model, type mongo } from 'mongoose';
import { driverCollection } from './driver-collection';

type Owned = { _id: string; tenantId: string };

export async function findOwned<T extends Owned>(
  model: Model<T>,
  id: string,
  scope: { tenantId: string } & Partial<Record<Exclude<keyof T, '_id' | 'tenantId'>, unknown>>,
): Promise<T | null> {
  const doc = (await driverCollection(model).findOne({ _id: id } as mongo.Filter<T>)) as T | null;
  if (!doc) return null;
  for (const [field, expected] of Object.entries(scope)) {
    if ((doc as Record<string, unknown>)[field] !== expected) return null;
  }
  return doc;
}
