// The stale-claim sweep: a callback (or resume) claims its suspension with the result before it
// signals the session; if that API process dies in between, the claim stays `claimed` and every
// later duplicate is answered `already_processed`. Every CALLBACK_CLAIM_SWEEP_MS each API process
// takes over claims older than STALE_CLAIM_MS (one atomic update per claim, so one process wins)
// and hands their kept result to the session. A session that had the result already ignores it.
import { CALLBACK_PAYLOAD_PURPOSE, type SuspensionDoc } from '../../db/suspension';
import { isDomainError } from '../../lib/errors';
import { requireEncryptor } from '../llm/runtime';
import { runPeriodically } from '../../lib/periodic';
import { type CoreContext } from '../context';
import { TEMPORAL_CALL_TIMEOUT_MS } from '../sessions/workflow-client';
import { deliver } from './delivery';

/** A claim this old was not handed over by its process: the signal's own deadline is far shorter. */
export const STALE_CLAIM_MS = 6 * TEMPORAL_CALL_TIMEOUT_MS;
/** Claims taken over per round; the rest wait for the next. */
const PER_ROUND = 100;

/**
 * Delivers the stale claims of every tenant (a system sweep: each claim is then read and written
 * with its own tenant). Returns how many were handed to their session.
 */
export async function redeliverStaleClaims(ctx: CoreContext, now = new Date()): Promise<number> {
  const stale = await ctx.models.Suspension.find({ status: 'claimed', claimedAt: { $lt: new Date(now.getTime() - STALE_CLAIM_MS) } })
    .limit(PER_ROUND)
    .lean();
  let delivered = 0;
  for (const doc of stale) {
    // Taken over by moving its claim time: another process sweeping at once matches nothing.
    const taken = await ctx.models.Suspension.findOneAndUpdate(
      { _id: doc._id, tenantId: doc.tenantId, status: 'claimed', claimedAt: doc.claimedAt },
      { $set: { claimedAt: now } },
      { new: true },
    ).lean();
    if (!taken) continue;
    if (await redeliver(ctx, taken)) delivered++;
  }
  return delivered;
}

async function redeliver(ctx: CoreContext, doc: SuspensionDoc): Promise<boolean> {
  if (!doc.claimedPayload) {
    // Claimed by a version that did not keep the result: nothing to deliver; the session's wait
    // ends at its expiry, as before.
    ctx.logger.warn({ suspensionId: doc._id, tenantId: doc.tenantId }, 'a stale callback claim has no kept result; the session resumes at the suspension expiry');
    return false;
  }
  try {
    const payload: unknown = JSON.parse(requireEncryptor(ctx).decrypt(doc.tenantId, CALLBACK_PAYLOAD_PURPOSE, doc.claimedPayload));
    await deliver(ctx, doc, payload, doc.resumedVia ?? 'callback', 'keep_claimed');
    ctx.logger.info({ suspensionId: doc._id, tenantId: doc.tenantId }, 'delivered a callback whose claiming process stopped before handing it over');
    return true;
  } catch (err) {
    // Temporal unavailable: kept claimed for the next round. Session ended: closed by deliver().
    if (!(isDomainError(err) && err.code === 'GONE')) ctx.logger.warn({ err, suspensionId: doc._id }, 'could not deliver a stale callback claim; the next round tries again');
    return false;
  }
}

export function startStaleClaimSweep(ctx: CoreContext): () => void {
  const every = ctx.config.CALLBACK_CLAIM_SWEEP_MS;
  return runPeriodically(every, every, () => redeliverStaleClaims(ctx), (err) =>
    ctx.logger.warn({ err }, 'the stale callback claim sweep failed; it runs again at the next interval'),
  );
}
