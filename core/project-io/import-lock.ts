// One import per project at a time: a lock document keyed by the project, taken with an insert
// (the unique `_id` makes a second holder impossible), renewed while the import runs, deleted
// when it ends. A holder that crashed stops renewing; its lock is taken over once expired.
// A dry run takes a slot of its own (any number per project). Imports and dry runs together
// hold at most IMPORT_LIMITS.importsPerTenant slots per tenant: each is taken before the
// request's body (up to 60 MB) is read.
import { randomBytes } from 'node:crypto';
import { type Models } from '../../db/models';
import { ApiError } from '../../lib/errors';
import { type ProjectScope } from '../agents/compile';
import { IMPORT_LIMITS } from './limits';
import { isDuplicateKey } from '../../db/duplicate-key';

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

/** Takes the project's import lock, or throws 409 CONFLICT while another import holds it (or the tenant's slots are taken). */
export async function acquireImportLock(models: Models, scope: ProjectScope, options: ImportLockOptions = {}): Promise<ImportLock> {
  const ttlMs = options.ttlMs ?? IMPORT_LIMITS.lockTtlMs;
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
  return holdSlot(models, scope, _id, holder, options);
}

/** Takes a dry run's slot (any number per project), or throws 409 CONFLICT when the tenant's slots are taken. */
export async function acquirePreviewSlot(models: Models, scope: ProjectScope, options: ImportLockOptions = {}): Promise<ImportLock> {
  const ttlMs = options.ttlMs ?? IMPORT_LIMITS.lockTtlMs;
  const holder = randomBytes(12).toString('hex');
  const _id = `preview:${scope.projectId}:${holder}`;
  const now = new Date();
  // A dry run's slot left by a process that died is not taken over by anyone: drop the expired ones.
  await models.ImportLock.deleteMany({ tenantId: scope.tenantId, _id: { $regex: /^preview:/ }, expiresAt: { $lte: now } });
  await models.ImportLock.create({ _id, ...scope, holder, acquiredAt: now, expiresAt: new Date(now.getTime() + ttlMs) });
  return holdSlot(models, scope, _id, holder, options);
}

/**
 * Keeps a slot just inserted, if the tenant's live slots (its own included) are within the
 * limit; otherwise gives it back and throws 409. Two slots taken at once may both be given back:
 * never more than the limit are held.
 */
async function holdSlot(models: Models, scope: ProjectScope, _id: string, holder: string, options: ImportLockOptions): Promise<ImportLock> {
  const ttlMs = options.ttlMs ?? IMPORT_LIMITS.lockTtlMs;
  const renewMs = options.renewMs ?? IMPORT_LIMITS.lockRenewMs;
  const live = await models.ImportLock.countDocuments({ tenantId: scope.tenantId, expiresAt: { $gt: new Date() } });
  if (live > IMPORT_LIMITS.importsPerTenant) {
    await models.ImportLock.deleteOne({ _id, ...scope, holder }).catch(() => undefined);
    throw new ApiError('CONFLICT', `This tenant already runs ${IMPORT_LIMITS.importsPerTenant} imports or import previews; retry when one has finished`);
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
