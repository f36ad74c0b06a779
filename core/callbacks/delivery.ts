// Delivering an async tool's result to the session that waits on it, exactly once: the delivery
// claims the suspension (pending → claimed, one atomic update, so one of any number of concurrent
// duplicates wins) together with the result, signals the session's workflow, then marks the claim
// delivered. When the signal cannot be sent the claim is handed back, so a retry can deliver it
// (503); when the process dies in between, the stale-claim sweep delivers the kept result.
import { createHmac } from 'node:crypto';
import { type CoreContext } from '../context';
import { ApiError } from '../../lib/errors';
import { safeEqual } from '../../lib/crypto';
import { CALLBACK_PAYLOAD_PURPOSE, CALLBACK_SECRET_PURPOSE, type SuspensionDoc } from '../../db/suspension';
import { callbackSignal } from '../../workflows/definitions';
import { isWorkflowNotFound, sessionWorkflowId, temporalClient, withDeadline, TEMPORAL_CALL_TIMEOUT_MS } from '../sessions/workflow-client';
import { requireEncryptor } from '../llm/runtime';
import { capToolResult } from '../../lib/result-cap';
import { linkToTraceparent, withSpan } from '../../lib/tracing';
import type { Json } from '../../abl/ir';

export type DeliveryOutcome = { status: 'delivered' } | { status: 'already_processed' };

/** `sha256=<hex>` of the raw body under the suspension's secret, as the caller must send it. */
export function callbackSignature(secret: string, rawBody: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

/**
 * An async call's result as the session keeps it: cut to TOOL_RESULT_HISTORY_MAX_BYTES with the
 * markers a synchronous tool's result gets (lib/result-cap.ts), before it is claimed, kept or sent.
 */
function sessionResult(ctx: CoreContext, suspension: { _id: string; tenantId: string }, payload: unknown): Json {
  const maxBytes = ctx.config.TOOL_RESULT_HISTORY_MAX_BYTES;
  const capped = capToolResult((payload ?? null) as Json, maxBytes);
  if (capped.truncated) {
    ctx.logger.warn({ tenantId: suspension.tenantId, callbackId: suspension._id, resultBytes: capped.originalBytes, maxBytes }, 'async tool result truncated to TOOL_RESULT_HISTORY_MAX_BYTES');
  }
  return capped.value;
}

/** Why a suspension that was not claimed now cannot be: already done, expired, or never sent. */
function notClaimable(doc: SuspensionDoc | null, now: Date): ApiError | DeliveryOutcome {
  if (!doc) return new ApiError('NOT_FOUND', 'Unknown callback id');
  if (doc.status === 'claimed' || doc.status === 'delivered') return { status: 'already_processed' };
  if (doc.status === 'cancelled') return new ApiError('GONE', 'This async tool call failed before it was sent; the session does not wait for it');
  if (doc.expiresAt <= now) return new ApiError('GONE', 'The suspension expired; the session resumed with a tool_timeout');
  return new ApiError('CONFLICT', 'The suspension is being delivered; retry shortly');
}

/**
 * Claims a pending, unexpired suspension, already read by the caller, with its result (kept
 * encrypted until delivered, so a claim whose process dies before the signal is still delivered:
 * stale-claims.ts). The claim is a plain conditional update: the caller's read has everything the
 * delivery needs, so the suspension is read once. The loser of a race learns why it lost.
 */
async function claim(ctx: CoreContext, suspension: SuspensionDoc, via: 'callback' | 'resume', payload: unknown): Promise<SuspensionDoc | DeliveryOutcome> {
  const now = new Date();
  const filter = { _id: suspension._id, tenantId: suspension.tenantId };
  const claimedPayload = requireEncryptor(ctx).encrypt(filter.tenantId, CALLBACK_PAYLOAD_PURPOSE, JSON.stringify(payload ?? null));
  const fields = { status: 'claimed' as const, claimedAt: now, resumedVia: via, claimedPayload };
  const { matchedCount } = await ctx.models.Suspension.updateOne({ ...filter, status: 'pending', expiresAt: { $gt: now } }, { $set: fields });
  if (matchedCount === 1) return { ...suspension, ...fields };
  const outcome = notClaimable(await ctx.models.Suspension.findOne(filter).lean(), now);
  if (outcome instanceof ApiError) throw outcome;
  return outcome;
}

/**
 * Signals the session, then marks the claim delivered. When the signal cannot be sent the claim is
 * handed back (a retry can deliver it), or, for the stale-claim sweep, kept for its next round; a
 * session that has ended closes it.
 */
export async function deliver(
  ctx: CoreContext,
  suspension: SuspensionDoc,
  payload: unknown,
  via: 'callback' | 'resume',
  onFailure: 'hand_back' | 'keep_claimed' = 'hand_back',
): Promise<DeliveryOutcome> {
  const owned = { _id: suspension._id, tenantId: suspension.tenantId };
  try {
    const client = await temporalClient(ctx);
    // In a span linked to the trace of the turn that suspended (tracing on only): the signal's own
    // span, and the session's handling of it, nest under it.
    await withSpan(
      'session.resume',
      { attributes: { 'switchboard.session.id': suspension.sessionId, 'switchboard.tool.name': suspension.tool, 'switchboard.resume.via': via }, links: linkToTraceparent(suspension.traceparent) },
      () =>
        withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
          client.workflow.getHandle(sessionWorkflowId(suspension.sessionId)).signal(callbackSignal, { callbackId: suspension._id, payload, via }),
        ),
    );
  } catch (err) {
    if (isWorkflowNotFound(err)) {
      await ctx.models.Suspension.updateOne({ ...owned, status: 'claimed' }, { $set: { status: 'cancelled' }, $unset: { claimedPayload: 1 } });
      throw new ApiError('GONE', 'The session that made this call has ended');
    }
    if (onFailure === 'hand_back') {
      await ctx.models.Suspension.updateOne({ ...owned, status: 'claimed' }, { $set: { status: 'pending' }, $unset: { claimedAt: 1, resumedVia: 1, claimedPayload: 1 } });
    }
    throw new ApiError('SERVICE_UNAVAILABLE', { message: 'The result could not be handed to the session; retry shortly (the callback was not used)', cause: err });
  }
  await ctx.models.Suspension.updateOne({ ...owned, status: 'claimed' }, { $set: { status: 'delivered', deliveredAt: new Date() }, $unset: { claimedPayload: 1 } });
  return { status: 'delivered' };
}

/**
 * `POST /api/v1/callbacks/:callbackId`: the id is the capability, the signature proves the
 * caller holds the suspension's secret (checked before anything changes).
 */
export async function acceptCallback(ctx: CoreContext, callbackId: string, rawBody: Buffer, signature: string | undefined, payload: unknown): Promise<DeliveryOutcome> {
  const suspension = await ctx.models.Suspension.findOne({ _id: callbackId }).lean();
  if (!suspension) throw new ApiError('NOT_FOUND', 'Unknown callback id');
  if (suspension.secret) {
    const secret = requireEncryptor(ctx).decrypt(suspension.tenantId, CALLBACK_SECRET_PURPOSE, suspension.secret);
    if (!signature) throw new ApiError('UNAUTHORIZED', 'Missing x-callback-signature: send sha256=<hex HMAC-SHA256 of the raw body with the callback secret>');
    if (!safeEqual(signature.trim().toLowerCase(), callbackSignature(secret, rawBody))) throw new ApiError('UNAUTHORIZED', 'Invalid callback signature');
  }
  const result = sessionResult(ctx, suspension, payload);
  const claimed = await claim(ctx, suspension, 'callback', result);
  if (!('_id' in claimed)) return claimed;
  return deliver(ctx, claimed, result, 'callback');
}

/** `POST /api/v1/sessions/:id/resume`: the polling alternative, for a session of the caller's tenant. */
export async function resumeSession(ctx: CoreContext, scope: { tenantId: string; projectId?: string }, sessionId: string, toolResult: unknown): Promise<DeliveryOutcome & { suspensionId: string }> {
  const session = await ctx.models.Session.findOne({ _id: sessionId, tenantId: scope.tenantId, ...(scope.projectId ? { projectId: scope.projectId } : {}) }, { _id: 1 }).lean();
  if (!session) throw new ApiError('NOT_FOUND', 'Session not found');
  const pending = await ctx.models.Suspension.findOne({ tenantId: scope.tenantId, sessionId, status: 'pending' }).sort({ createdAt: -1 }).lean();
  if (!pending) {
    const latest = await ctx.models.Suspension.findOne({ tenantId: scope.tenantId, sessionId }).sort({ createdAt: -1 }).lean();
    if (latest && (latest.status === 'claimed' || latest.status === 'delivered')) return { status: 'already_processed', suspensionId: latest._id };
    throw new ApiError('CONFLICT', 'The session is not waiting on an async tool call');
  }
  const result = sessionResult(ctx, pending, toolResult);
  const claimed = await claim(ctx, pending, 'resume', result);
  if (!('_id' in claimed)) return { ...claimed, suspensionId: pending._id };
  return { ...(await deliver(ctx, claimed, result, 'resume')), suspensionId: pending._id };
}
