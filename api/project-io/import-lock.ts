// One import per project at a time: a lock document keyed by the project, taken with an insert
// (the unique `_id` makes a second holder impossible), renewed while the import runs, deleted
// when it ends. A holder that crashed stops renewing; its lock is taken over once expired.
import { randomBytes } from 'node:crypto';
import { type Models } from '../../db/models';
import { ApiError } from '../../lib/errors';
import { type ProjectScope } from '../agents/compile';
import { IMPORT_LIMITS } from './limits';

export interface ImportLock {
  holder: string;
  /** Stops renewing and deletes the lock (only if still ours). Never throws. */
  release(): Promise<void>;
}

export interface ImportLockOptions {
  ttlMs?: number;
  renewMs?: number;
}

const lockId = (projectId: string) => `import:${projectId}`;

function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
}

/** Takes the project's import lock, or throws 409 CONFLICT while another import holds it. */
export async function acquireImportLock(models: Models, scope: ProjectScope, options: ImportLockOptions = {}): Promise<ImportLock> {
  const ttlMs = options.ttlMs ?? IMPORT_LIMITS.lockTtlMs;
  const renewMs = options.renewMs ?? IMPORT_LIMITS.lockRenewMs;
  const holder = randomBytes(12).toString('hex');
  const _id = lockId(scope.projectId);
  const now = new Date();
  const fields = { ...scope, holder, acquiredAt: now, expiresAt: new Date(now.getTime() + ttlMs) };
  let taken = false;
  try {
    await models.ImportLock.create({ _id, ...fields });
    taken = true;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    // Held: take it over only if its holder stopped renewing (crashed) and it has expired.
    const res = await models.ImportLock.updateOne({ _id, ...scope, expiresAt: { $lte: now } }, { $set: fields });
    taken = res.modifiedCount === 1;
  }
  if (!taken) {
    const held = await models.ImportLock.findOne({ _id, ...scope }).select({ expiresAt: 1 }).lean();
    throw new ApiError('CONFLICT', {
      message: 'Another import into this project is in progress; retry when it has finished',
      details: held ? { lockExpiresAt: new Date(held.expiresAt).toISOString() } : undefined,
    });
  }

  const renew = setInterval(() => {
    void models.ImportLock.updateOne({ _id, ...scope, holder }, { $set: { expiresAt: new Date(Date.now() + ttlMs) } }).catch(() => undefined);
  }, renewMs);
  renew.unref();
  let released = false;
  return {
    holder,
    async release() {
      if (released) return;
      released = true;
      clearInterval(renew);
      await models.ImportLock.deleteOne({ _id, ...scope, holder }).catch(() => undefined);
    },
  };
}
