// Agent memory facts (ABL MEMORY persistent, remember, RESET: never): one value per tenant +
// project + scope key + path, read at a session's start and written after its turns by the
// memory activities (activities/memory/facts.ts). The scope key is the session's contact id
// (`user`), empty (`project`) or the root session's id (`execution_tree`). `expiresAt` comes from
// a remember rule's TTL: MongoDB removes expired rows through a TTL index, and every read skips
// them and every write deletes them, since the TTL monitor runs only once a minute and the dev
// store (FerretDB) has no TTL indexes at all.
import { Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';
import { ensureExpiresAtTtlIndex } from './ttl-index';

export const FACT_SCOPES = ['user', 'project', 'execution_tree'] as const;
export type FactScope = (typeof FACT_SCOPES)[number];

export interface MemoryFactDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  scope: FactScope;
  /** The contact id (`user`), '' (`project`) or the root session id (`execution_tree`). */
  scopeKey: string;
  /** The fact's dotted path (`user.tier`), or `session:<Agent>.<name>` for a RESET: never variable. */
  path: string;
  value: unknown;
  /** When the fact expires (a remember rule's TTL); null: never. */
  expiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const MemoryFactSchema = new Schema<MemoryFactDoc>(
  {
    _id: { type: String, default: () => createId() },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    scope: { type: String, required: true, enum: FACT_SCOPES },
    scopeKey: { type: String, default: '' },
    path: { type: String, required: true },
    value: { type: Schema.Types.Mixed, default: null },
    expiresAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false, minimize: false },
);
// One value per fact; a session's facts are read by this key's prefix plus the paths.
MemoryFactSchema.index({ tenantId: 1, projectId: 1, scope: 1, scopeKey: 1, path: 1 }, { unique: true });

export type MemoryFactModel = Model<MemoryFactDoc>;
export const MEMORY_FACTS_COLLECTION = 'memory_facts';
export const memoryFactModel = (c: Connection): MemoryFactModel => c.model<MemoryFactDoc>('MemoryFact', MemoryFactSchema, MEMORY_FACTS_COLLECTION);

/** The TTL index on `expiresAt`, once per connection (db/ttl-index.ts). */
export function ensureMemoryFactTtlIndex(model: MemoryFactModel): Promise<void> {
  return ensureExpiresAtTtlIndex(model);
}
