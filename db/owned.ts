// Reads one tenant-owned document by id. The filter carries the tenant and the expected scope (a
// project, a session's project) next to the id, so another tenant's document, or one outside the
// scope, is never returned by the store: ownership does not rest on a comparison after the read.
// MongoDB serves `{ _id, tenantId, ... }` from the `_id` index and checks the other fields on the
// one document it finds. FerretDB (the dev and test store) hands PostgreSQL the equalities as JSONB
// containments, served by the GIN indexes the store's bootstrap creates (docs/store.md).
// It reads through the driver: these reads sit on every request's path, and mongoose's query
// building costs more CPU than the round trip.
import { type Model, type mongo } from 'mongoose';
import { driverCollection } from './driver-collection';

type Owned = { _id: string; tenantId: string };

export async function findOwned<T extends Owned>(
  model: Model<T>,
  id: string,
  scope: { tenantId: string } & Partial<Record<Exclude<keyof T, '_id' | 'tenantId'>, unknown>>,
): Promise<T | null> {
  return (await driverCollection(model).findOne({ ...scope, _id: id } as mongo.Filter<T>)) as T | null;
}
