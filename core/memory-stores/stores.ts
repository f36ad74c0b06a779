// Memory stores of a session (db/memory-store.ts): read, write and delete one by name for the
// session a sandbox token names, and delete them all when the session ends. Every query carries
// the tenant. A store is there only while its session is active: a write checks the session
// after writing, and the session's end deletes its stores after recording the end, so a write
// racing the end can never leave a store behind (setStore, deleteSessionStores).
import { isDuplicateKey } from '../../db/duplicate-key';
import { type Models } from '../../db/models';
import { DomainError } from '../../lib/errors';
import { newId } from '../../lib/ids';

export const MEMORY_STORE_LIMITS = {
  /** A store's content, serialised as JSON (UTF-8 bytes). */
  contentBytes: 64 * 1024,
  /** Stores one session may hold at once. */
  storesPerSession: 100,
  /** Characters of a store name. */
  nameChars: 128,
} as const;

/** A store name: letters, digits, `_`, `-`, `.` and `:`, starting with a letter, digit or `_`. */
export const MEMORY_STORE_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/;

/** The session a sandbox token acts for (core/memory-stores/sandbox-token.ts). */
export interface StoreOwner {
  tenantId: string;
  projectId: string;
  sessionId: string;
}

export type StoreContent = Record<string, unknown>;

const sessionGone = () => new DomainError('NOT_FOUND', 'Session not found');

/** Whether the session is an active session of the owner's tenant and project. */
async function isActive(models: Models, owner: StoreOwner): Promise<boolean> {
  const found = await models.Session.exists({ _id: owner.sessionId, tenantId: owner.tenantId, projectId: owner.projectId, status: 'active' });
  return found !== null;
}

/**
 * 404 "Session not found" unless the session is an active session of the owner's tenant and
 * project: ended, terminated, deleted, unknown or another tenant's, it has no memory stores.
 */
export async function requireActiveSession(models: Models, owner: StoreOwner): Promise<void> {
  if (owner.sessionId.includes('\u0000') || !(await isActive(models, owner))) throw sessionGone();
}

const inSession = (owner: StoreOwner) => ({ tenantId: owner.tenantId, sessionId: owner.sessionId });

/** The stored object, or null for a store never set (or deleted). */
export async function getStore(models: Models, owner: StoreOwner, name: string): Promise<StoreContent | null> {
  await requireActiveSession(models, owner);
  const doc = await models.MemoryStore.findOne({ ...inSession(owner), name }, { content: 1 }).lean();
  return doc ? (JSON.parse(doc.content) as StoreContent) : null;
}

/**
 * Sets a store's content (creating the store). 413 MEMORY_STORE_CONTENT_TOO_LARGE past
 * `contentBytes`; 404 when the session is not active; 413 MEMORY_STORE_LIMIT_REACHED for a new
 * store past `storesPerSession` (counted after the insert, so concurrent creates cannot pass the
 * limit together).
 *
 * The session is checked after the write, not before: the session's end records its status, then
 * deletes its stores. A write that lands before that deletion is deleted by it; one that lands
 * after it finds the session ended here and deletes what it wrote. So no store outlives its
 * session, however a write and the end interleave.
 */
export async function setStore(models: Models, owner: StoreOwner, name: string, content: StoreContent): Promise<void> {
  const serialised = JSON.stringify(content);
  const bytes = Buffer.byteLength(serialised, 'utf8');
  if (bytes > MEMORY_STORE_LIMITS.contentBytes) {
    throw new DomainError('MEMORY_STORE_CONTENT_TOO_LARGE', `Memory store content is ${bytes} bytes as JSON; the limit is ${MEMORY_STORE_LIMITS.contentBytes}`);
  }
  if (owner.sessionId.includes('\u0000')) throw sessionGone();
  const now = new Date();
  const filter = { ...inSession(owner), name };
  const write = () =>
    models.MemoryStore.updateOne(
      filter,
      { $set: { content: serialised, bytes, updatedAt: now }, $setOnInsert: { _id: newId(), projectId: owner.projectId, createdAt: now } },
      { upsert: true },
    );
  let created: string | null;
  try {
    const result = await write();
    created = result.upsertedId ? String(result.upsertedId) : null;
  } catch (err) {
    // A concurrent set created the same store first: this one updates it.
    if (!isDuplicateKey(err)) throw err;
    await write();
    created = null;
  }
  if (!(await isActive(models, owner))) {
    // Ended (or never this tenant's and project's): nothing of the session's may stay.
    await deleteSessionStores(models, owner);
    throw sessionGone();
  }
  if (created) {
    const held = await models.MemoryStore.countDocuments(inSession(owner));
    if (held > MEMORY_STORE_LIMITS.storesPerSession) {
      await models.MemoryStore.deleteOne({ _id: created, ...inSession(owner) });
      throw new DomainError('MEMORY_STORE_LIMIT_REACHED', `A session holds at most ${MEMORY_STORE_LIMITS.storesPerSession} memory stores; delete one first`);
    }
  }
}

/** Deletes a store; whether there was one. */
export async function deleteStore(models: Models, owner: StoreOwner, name: string): Promise<boolean> {
  await requireActiveSession(models, owner);
  const result = await models.MemoryStore.deleteOne({ ...inSession(owner), name });
  return result.deletedCount > 0;
}

/**
 * Deletes every store of a session: called once its end is recorded (status `ended`), so a write
 * that saw the session active before that is deleted here, and one after it finds the session
 * ended. Idempotent.
 */
export async function deleteSessionStores(models: Pick<Models, 'MemoryStore'>, session: { tenantId: string; sessionId: string }): Promise<number> {
  const result = await models.MemoryStore.deleteMany({ tenantId: session.tenantId, sessionId: session.sessionId });
  return result.deletedCount;
}
