// Each tenant's count of active sessions, checked against MAX_CONCURRENT_SESSIONS on every start:
// a constant number of primary-key operations whatever the count, and exact under concurrency on
// MongoDB and on FerretDB alike (docs/runtime.md, "Session capacity").
//
// Why not one counter document changed with `findOneAndUpdate({ active: { $lt: cap } }, { $inc })`:
// FerretDB (the dev and test store) applies a filter and an update as a read followed by a write,
// so two concurrent starts can both read `cap - 1` and both pass. What both stores do atomically is
// insert a document whose `_id` may exist (one insert wins, the others get a duplicate key) and
// delete one (one delete reports it). So:
// - the count is a chain of immutable revisions `<tenantId>/<rev>`; a change reads the last
//   revision and inserts the next one, which only one concurrent change can do: a loser reads
//   again and retries, a start that would pass the cap writes nothing. A head document remembers
//   the last revision seen (a hint: readers follow the revisions forward from it);
// - a session that is counted holds a slot `<tenantId>/<sessionId>`. Giving the place back
//   deletes the slot first, so however many paths see a session end (its workflow's last
//   projection write, DELETE, a failed start, the reconciliation), one decrement follows.
// A start increments and then writes its slot; an end deletes its slot and then decrements. A
// process dying between the two steps therefore leaves the count too high, never too low: a
// tenant may be refused a session early, never let past its cap.
import { type Models } from './models';
import { driverCollection } from './driver-collection';
import { type SessionCapacityRevisionDoc } from './session-capacity-revision';

type CapacityModels = Pick<Models, 'Session' | 'SessionCapacityHead' | 'SessionCapacityRevision' | 'SessionSlot'>;

export interface CapacityState {
  rev: number;
  active: number;
  /** When the revision was written; null before the tenant's first change. */
  at: Date | null;
}

interface Change {
  delta: number;
  reason: SessionCapacityRevisionDoc['reason'];
  sessionId: string | null;
  /** Refuse an increment that would take the count past this. */
  cap?: number;
}

/** Lost races after which a change gives up (each loss means another change went through). */
const MAX_ATTEMPTS = 200;
/**
 * What the reconciliation leaves alone: slots younger than this whose session is not (yet) active,
 * and a count that changed more recently than this. It must exceed the longest gap between the two
 * steps of a start or an end (two consecutive writes of one request).
 */
export const CAPACITY_SETTLE_MS = 60_000;
/** Revisions kept behind the last one; older ones (and only if older than an hour) are deleted. */
const REVISIONS_KEPT = 1000;
const REVISION_MAX_AGE_MS = 60 * 60 * 1000;

const revisionId = (tenantId: string, rev: number) => `${tenantId}/${rev}`;
const slotId = (tenantId: string, sessionId: string) => `${tenantId}/${sessionId}`;
const isDuplicateKey = (err: unknown) => typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The tenant's count: the head's revision, then any revisions written after it. */
export async function readCapacity(models: CapacityModels, tenantId: string): Promise<CapacityState> {
  const head = await driverCollection(models.SessionCapacityHead).findOne({ _id: tenantId });
  let state: CapacityState = head ? { rev: head.rev, active: head.active, at: head.at } : { rev: 0, active: 0, at: null };
  for (;;) {
    const next = await driverCollection(models.SessionCapacityRevision).findOne({ _id: revisionId(tenantId, state.rev + 1) });
    if (!next) return state;
    state = { rev: next.rev, active: next.active, at: next.at };
  }
}

/**
 * Writes revision `next.rev`; false when another change wrote it first. Then moves the head
 * forward. The head's filter keeps a late write from moving it back on MongoDB; on FerretDB it
 * may land behind a later one, which costs readers one more revision read, never a wrong count.
 */
async function writeRevision(models: CapacityModels, tenantId: string, next: CapacityState & { at: Date }, change: Change): Promise<boolean> {
  try {
    await driverCollection(models.SessionCapacityRevision).insertOne({
      _id: revisionId(tenantId, next.rev),
      tenantId,
      rev: next.rev,
      active: next.active,
      delta: change.delta,
      reason: change.reason,
      sessionId: change.sessionId,
      at: next.at,
    });
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
  await driverCollection(models.SessionCapacityHead)
    .updateOne({ _id: tenantId, rev: { $lt: next.rev } }, { $set: { rev: next.rev, active: next.active, at: next.at } }, { upsert: true })
    .catch(() => undefined); // A hint: a newer head (duplicate key on the upsert) or a failed write leave readers correct.
  return true;
}

/** Applies a change on top of the latest revision; null when it would pass `change.cap`. */
async function applyChange(models: CapacityModels, tenantId: string, change: Change): Promise<CapacityState | null> {
  for (let attempt = 1; ; attempt++) {
    const state = await readCapacity(models, tenantId);
    if (change.cap !== undefined && change.delta > 0 && state.active + change.delta > change.cap) return null;
    const next = { rev: state.rev + 1, active: Math.max(0, state.active + change.delta), at: new Date() };
    if (await writeRevision(models, tenantId, next, change)) return next;
    if (attempt >= MAX_ATTEMPTS) throw new Error(`session capacity of tenant ${tenantId}: gave up after ${attempt} concurrent changes`);
    // Another change went through: spread the retries of a burst of starts.
    await pause(Math.random() * Math.min(attempt, 10));
  }
}

export type SlotAcquisition = 'acquired' | 'already_held' | 'full';

/**
 * Counts a new session against the tenant's cap: 'full' when `cap` sessions are already active,
 * 'already_held' when the session holds its place already (a concurrent start of the same id).
 */
export async function acquireSessionSlot(models: CapacityModels, input: { tenantId: string; sessionId: string; cap: number }): Promise<SlotAcquisition> {
  const { tenantId, sessionId } = input;
  const counted = await applyChange(models, tenantId, { delta: 1, reason: 'start', sessionId, cap: input.cap });
  if (!counted) {
    const held = await driverCollection(models.SessionSlot).findOne({ _id: slotId(tenantId, sessionId) });
    return held ? 'already_held' : 'full';
  }
  try {
    await driverCollection(models.SessionSlot).insertOne({ _id: slotId(tenantId, sessionId), tenantId, sessionId, at: new Date() });
    return 'acquired';
  } catch (err) {
    // Counted twice, or the slot could not be written: this start's increment goes back.
    await applyChange(models, tenantId, { delta: -1, reason: 'give_back', sessionId });
    if (isDuplicateKey(err)) return 'already_held';
    throw err;
  }
}

/** Gives a session's place back; true for the one call that found its slot. */
export async function releaseSessionSlot(
  models: CapacityModels,
  input: { tenantId: string; sessionId: string },
  reason: 'end' | 'give_back' | 'reconcile' = 'end',
): Promise<boolean> {
  const { deletedCount } = await driverCollection(models.SessionSlot).deleteOne({ _id: slotId(input.tenantId, input.sessionId) });
  if (deletedCount !== 1) return false;
  await applyChange(models, input.tenantId, { delta: -1, reason, sessionId: input.sessionId });
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
 *    slot write) is set to that number only when no change was written for `settleMs` before and
 *    during the slot count, and as the next revision: if any start or end writes a revision in
 *    between, the correction's insert fails and waits for the next round. Under constant traffic
 *    step 3 waits for a quiet minute; the error it repairs is a count too high, never too low.
 * Old revisions are deleted last.
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
    await applyChange(models, tenantId, { delta: orphans.length, reason: 'adopt', sessionId: null });
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
    if (adopted < orphans.length) await applyChange(models, tenantId, { delta: adopted - orphans.length, reason: 'give_back', sessionId: null });
  }

  let corrected: number | null = null;
  const before = await readCapacity(models, tenantId);
  if (before.at === null || before.at.getTime() <= Date.now() - settleMs) {
    const count = await models.SessionSlot.countDocuments({ tenantId });
    const after = await readCapacity(models, tenantId);
    if (after.rev === before.rev && count !== before.active) {
      const next = { rev: before.rev + 1, active: count, at: new Date() };
      if (await writeRevision(models, tenantId, next, { delta: count - before.active, reason: 'reconcile', sessionId: null })) corrected = count - before.active;
    }
  }

  if (before.rev > REVISIONS_KEPT) {
    await models.SessionCapacityRevision.deleteMany({
      tenantId,
      rev: { $lte: before.rev - REVISIONS_KEPT },
      at: { $lt: new Date(Date.now() - REVISION_MAX_AGE_MS) },
    });
  }
  return { released, adopted, corrected };
}

/** Reconciles every tenant's count, one tenant after the other. */
export async function reconcileAllSessionCapacity(models: CapacityModels & Pick<Models, 'Tenant'>, settleMs = CAPACITY_SETTLE_MS): Promise<void> {
  const tenants = await models.Tenant.find({}).select({ _id: 1 }).lean();
  for (const tenant of tenants) await reconcileSessionCapacity(models, tenant._id, settleMs);
}
