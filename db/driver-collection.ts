// The MongoDB driver's collection behind a mongoose model, typed with the model's document. For
// hot paths that write already-typed data or read by `_id`: it skips mongoose's document
// building, casting and validation, which cost more CPU than the round trip itself.
import { type Model, type mongo } from 'mongoose';

export function driverCollection<T extends { _id: string }>(model: Model<T>): mongo.Collection<T> {
  return model.collection as unknown as mongo.Collection<T>;
}
