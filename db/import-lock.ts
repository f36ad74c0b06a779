// Project import locks and slots: at most one `import:` document per project while an import
// runs, and one `preview:` document per running dry run; a tenant's live documents are its
// import slots (core/project-io/import-lock.ts). The holder renews `expiresAt`; a holder that
// crashed stops renewing, so the next import may take the lock over once it has expired (no TTL
// index is needed for that, the expiry is compared).
import { Schema, type Connection, type Model } from 'mongoose';

export interface ImportLockDoc {
  /** `import:<projectId>`: the unique key that makes a second holder impossible (`preview:<projectId>:<holder>` for a dry run). */
  _id: string;
  tenantId: string;
  projectId: string;
  /** Random token of the import holding the lock (only it may renew or release). */
  holder: string;
  acquiredAt: Date;
  expiresAt: Date;
}

const ImportLockSchema = new Schema<ImportLockDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    holder: { type: String, required: true },
    acquiredAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { versionKey: false },
);

// A tenant's live import slots (countDocuments by tenant and expiry, on every import and dry run).
ImportLockSchema.index({ tenantId: 1, expiresAt: 1 });

export type ImportLockModel = Model<ImportLockDoc>;
export const importLockModel = (c: Connection): ImportLockModel => c.model<ImportLockDoc>('ImportLock', ImportLockSchema, 'import_locks');
