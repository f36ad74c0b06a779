// Memory stores: named JSON objects that sandboxed tool code keeps for the length of one session
// (POST /api/v1/memory). One document per tenant + session + name, held by a unique index; the
// content is kept as its JSON text, so any keys the code chose (with `.` or `$`) are stored as sent.
// Deleted with their session (core/memory-stores/stores.ts, deleteSessionStores).
import { Schema, type Connection, type Model } from 'mongoose';

export interface MemoryStoreDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  name: string;
  /** The stored object, serialised (JSON). */
  content: string;
  /** Bytes of `content` (UTF-8). */
  bytes: number;
  createdAt: Date;
  updatedAt: Date;
}

const MemoryStoreSchema = new Schema<MemoryStoreDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    name: { type: String, required: true },
    content: { type: String, required: true },
    bytes: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { versionKey: false },
);
// One store per name in a session; also the index every read, count and sweep of a session uses.
MemoryStoreSchema.index({ tenantId: 1, sessionId: 1, name: 1 }, { unique: true });

export type MemoryStoreModel = Model<MemoryStoreDoc>;
export const memoryStoreModel = (c: Connection): MemoryStoreModel => c.model<MemoryStoreDoc>('MemoryStore', MemoryStoreSchema, 'memory_stores');
