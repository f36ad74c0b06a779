// Each tenant's count of active sessions, checked against MAX_CONCURRENT_SESSIONS on every start:
// one conditional update of the tenant's count document and one slot write per start, whatever
// the count, and exact under concurrency (docs/runtime.md, "Session capacity").
//
// - The count is one document per tenant (`session_capacity_heads`, `_id` the tenant). A start
//   increments it only where it is below the cap (`{ active: { $lte: cap - 1 } }` in the update's
//   filter): MongoDB applies such an update atomically, and so does the dev store, whose write
//   gate runs one write at a time per collection (docs/architecture.md, "The local store"). A
//   start that would pass the cap matches nothing and writes nothing.
// - A session that is counted holds a slot `<tenantId>/<sessionId>`. Giving the place back
//   deletes the slot first, so however many paths see a session end (its workflow's last
//   projection write, DELETE, a failed start, the reconciliation), one decrement follows.
// A start increments and then writes its slot; an end deletes its slot and then decrements. A
// process dying between the two steps therefore leaves the count too high, never too low: a
// tenant may be refused a session early, never let past its cap.
import { type Models } from './models';
import { driverCollection } from './driver-collection';

type CapacityModels = Pick<Models, 'Session' | 'SessionCapacityCount' | 'SessionSlot'>;

export interface CapacityState {
  /** Changes applied so far (0 before the tenant's first). */
  rev: number;
  active: number;
  /** When the last change was applied; null before the tenant's first change. */
  at: Date | null;
}

/**
 * What the reconciliation leaves alone: slots younger than this whose session is not (yet) active,
 * and a count that changed more recently than this. It must exceed the longest gap between the two
 * steps of a start or an end (two consecutive writes of one request).
 */
export const CAPACITY_SETTLE_MS = 60_000;

const slotId = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`;
const isDuplicateKey = (err: unknown) => typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;

/** The tenant's count: one read by primary key. */
export async function readCapacity(models: CapacityModels, tenantId: string): Promise<CapacityState> {
  const doc = await driverCollection(models.SessionCapacityCount).findOne({ _id: tenantId });
  return doc ? { rev: doc.rev, active: doc.active, at: doc.at } : { rev: 0, active: 0, at: null };
}

/**
 * Adds `delta` (> 0) to the count, only where the result stays within `cap`; false when it would
 * pass it. One update in the common case; the tenant's first change creates the document (upsert).
 * An upsert whose filter does not match an existing document fails on the duplicate `_id`: the
 * same update without upsert then tells a count at the cap from a document written meanwhile.
 */
async function increment(models: CapacityModels, tenantId: string, delta: number, cap?: number): Promise<boolean> {
  if (cap !== undefined && delta > cap) return false;
  const counts = driverCollection(models.SessionCapacityCount);
  const filter = cap === undefined ? { _id: tenantId } : { _id: tenantId, active: { $lte: cap - delta } };
  const update = () => ({ $inc: { rev: 1, active: delta }, $set: { at: new Date() } });
  try {
    await counts.updateOne(filter, update(), { upsert: true });
    return true;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
  }
  const { matchedCount } = await counts.updateOne(filter, update());
  return matchedCount === 1;
}

/**
 * Takes `amount` (> 0) off the count, never below 0 (a count already below `amount` is set to 0:
 * only a count set wrong by hand can be, and the reconciliation repairs it from the slots).
 */
async function decrement(models: CapacityModels, tenantId: string, amount: number): Promise<void> {
  const counts = driverCollection(models.SessionCapacityCount);
  const { matchedCount } = await counts.updateOne({ _id: tenantId, active: { $gte: amount } }, { $inc: { rev: 1, active: -amount }, $set: { at: new Date() } });
  if (matchedCount === 0) await counts.updateOne({ _id: tenantId, active: { $lt: amount } }, { $inc: { rev: 1 }, $set: { active: 0, at: new Date() } });
}

/** Sets the count to `active` if no change was applied since revision `rev` was read; true when set. */
async function setCount(models: CapacityModels, tenantId: string, rev: number, active: number): Promise<boolean> {
  const counts = driverCollection(models.SessionCapacityCount);
  if (rev === 0) {
    try {
      await counts.insertOne({ _id: tenantId, rev: 1, active, at: new Date() });
      return true;
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
  }
  const { matchedCount } = await counts.updateOne({ _id: tenantId, rev }, { $inc: { rev: 1 }, $set: { active, at: new Date() } });
  return matchedCount === 1;
}

export type SlotAcquisition = 'acquired' | 'already_held' | 'full';

/**
 * Counts a new session against the tenant's cap: 'full' when `cap` sessions are already active,
 * 'already_held' when the session holds its place already (a concurrent start of the same id).
 */
export async function acquireSessionSlot(models: CapacityModels, input: { tenantId: string; sessionId: string; cap: number }): Promise<SlotAcquisition> {
  const { tenantId, sessionId } = input;
  if (!(await increment(models, tenantId, 1, input.cap))) {
    const held = await driverCollection(models.SessionSlot).findOne({ _id: slotId(tenantId, sessionId) });
    return held ? 'already_held' : 'full';
  }
  try {
    await driverCollection(models.SessionSlot).insertOne({ _id: slotId(tenantId, sessionId), tenantId, sessionId, at: new Date() });
    return 'acquired';
  } catch (err) {
    // Counted twice, or the slot could not be written: this start's increment goes back.
    await decrement(models, tenantId, 1);
    if (isDuplicateKey(err)) return 'already_held';
    throw err;
  }
}

/**
 * Gives a session's place back; true for the one call that found its slot. `_reason` names the
 * path that saw the session end; the count keeps no history of it.
 */
export async function releaseSessionSlot(
  models: CapacityModels,
  input: { tenantId: string; sessionId: string },
  _reason: 'end' | 'give_back' | 'reconcile' = 'end',
): Promise<boolean> {
  const { deletedCount } = await driverCollection(models.SessionSlot).deleteOne({ _id: slotId(input.tenantId, input.sessionId) });
  if (deletedCount !== 1) return false;
  await decrement(models, input.tenantId, 1);
  return true;
}

export interface ReconcileOutcome {
  /** Slots of sessions no longer active, given back. */
  released: number;
  /** Active sessions without a slot (written before the count existed), counted. */
  adopted: number;
  /** Correction applied to the count, or null when none was needed or the count was not quiet. */
  corrected: number | null;
}

/**
 * Repairs a tenant's count from its records, without losing a concurrent start or end:
 * 1. slots of sessions that are not active (and older than `settleMs`: a start writes its slot
 *    just before its session record) are given back through releaseSessionSlot, which decrements
 *    only if this call deleted the slot, so a session ending meanwhile is not counted out twice;
 * 2. active sessions without a slot get one, counted the way a start is (increment, then slot;
 *    a slot that exists by then gives its increment back);
 * 3. a count that differs from the number of slots (a process died between a change and its
 *    slot write) is set to that number only when no change was applied for `settleMs` before the
 *    slot count, and only if none was applied since: the correction's update names the `rev` it
 *    read, so a start or end in between makes it match nothing and wait for the next round. Under
 *    constant traffic step 3 waits for a quiet minute; the error it repairs is a count too high,
 *    never too low.
 */
export async function reconcileSessionCapacity(models: CapacityModels, tenantId: string, settleMs = CAPACITY_SETTLE_MS): Promise<ReconcileOutcome> {
  const slots = await models.SessionSlot.find({ tenantId }).select({ sessionId: 1, at: 1 }).lean();
  // Read after the slots: a session started since has its slot already (written before its record).
  const active = new Set((await models.Session.find({ tenantId, status: 'active' }).select({ _id: 1 }).lean()).map((s) => s._id));
  const settledBefore = Date.now() - settleMs;

  let released = 0;
  for (const slot of slots) {
    if (active.has(slot.sessionId) || slot.at.getTime() > settledBefore) continue;
    if (await releaseSessionSlot(models, { tenantId, sessionId: slot.sessionId }, 'reconcile')) released += 1;
  }

  const held = new Set(slots.map((s) => s.sessionId));
  const orphans = [...active].filter((id) => !held.has(id));
  let adopted = 0;
  if (orphans.length > 0) {
    await increment(models, tenantId, orphans.length);
    const at = new Date();
    try {
      const res = await driverCollection(models.SessionSlot).insertMany(
        orphans.map((sessionId) => ({ _id: slotId(tenantId, sessionId), tenantId, sessionId, at })),
        { ordered: false },
      );
      adopted = res.insertedCount;
    } catch (err) {
      if (!isDuplicateKey(err) && !(err as { writeErrors?: unknown[] }).writeErrors) throw err;
      adopted = (err as { insertedCount?: number; result?: { insertedCount?: number } }).insertedCount ?? (err as { result?: { insertedCount?: number } }).result?.insertedCount ?? 0;
    }
    if (adopted < orphans.length) await decrement(models, tenantId, orphans.length - adopted);
  }

  let corrected: number | null = null;
  const before = await readCapacity(models, tenantId);
  if (before.at === null || before.at.getTime() <= Date.now() - settleMs) {
    const count = await models.SessionSlot.countDocuments({ tenantId });
    if (count !== before.active && (await setCount(models, tenantId, before.rev, count))) corrected = count - before.active;
  }
  return { released, adopted, corrected };
}

/** Reconciles every tenant's count, one tenant after the other. */
export async function reconcileAllSessionCapacity(models: CapacityModels & Pick<Models, 'Tenant'>, settleMs = CAPACITY_SETTLE_MS): Promise<void> {
  const tenants = await models.Tenant.find({}).select({ _id: 1 }).lean();
  for (const tenant of tenants) await reconcileSessionCapacity(models, tenant._id, settleMs);
}
