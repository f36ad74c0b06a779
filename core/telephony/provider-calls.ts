// The provider's side of an outbound call outside its submit: finding the call a request that got
// no answer placed, and ending a call (cancelled before it is answered, hung up after). Used by the
// OutboundCall workflow's activities (the unanswered submit, terminate, timers, AMD hang-up), by the
// reconciliation of call workflows that closed without running their own end
// (core/telephony/closed-calls.ts) and by the status webhook of a call that had already ended.
import { type CoreContext } from '../context';
import { openDestination, type OutboundCallDoc } from '../../db/outbound-call';
import { maskPhoneNumber } from '../../lib/phone';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { connectionTwilioClient } from './connections';

/** A provider message with anything that looks like a number masked (Twilio's messages quote the To number). */
export function scrubNumbers(message: string, destination?: string): string {
  let out = destination ? message.split(destination).join(destination.startsWith('+') ? maskPhoneNumber(destination) : '***') : message;
  out = out.replace(/\+?\d{6,}/g, (m) => (m.startsWith('+') ? maskPhoneNumber(m) : maskPhoneNumber('+' + m).slice(1)));
  return out.slice(0, 300);
}

/**
 * The provider's call placed for `call` by a request that got no answer: the calls from the
 * connection's number to the destination created since the call was accepted (queued or started),
 * the earliest that no other outbound call of the tenant claims. Null when none is found (yet), or
 * the connection is gone.
 * @throws when the provider cannot list its calls (the message scrubbed of the number).
 */
export async function findPlacedProviderCall(ctx: Pick<CoreContext, 'models' | 'config'>, call: OutboundCallDoc): Promise<string | null> {
  if (call.providerCallSid) return call.providerCallSid;
  const conn = await ctx.models.ChannelConnection.findOne({ _id: call.channelConnectionId, tenantId: call.tenantId, projectId: call.projectId }).lean();
  if (!conn) return null;
  const client = await connectionTwilioClient(ctx, conn);
  const destination = await openDestination(ctx.models.TenantDataKey, requireMasterKeys(ctx), call);
  const since = new Date(call.createdAt.getTime() - 60_000);
  let found: Awaited<ReturnType<typeof client.calls.list>>;
  try {
    // A call still queued has no start time, so the start-time filter leaves it out: it is listed by its status.
    const [started, queued] = await Promise.all([
      client.calls.list({ to: destination, from: conn.callerNumber, startTimeAfter: since, limit: 20 }),
      client.calls.list({ to: destination, from: conn.callerNumber, status: 'queued', limit: 20 }),
    ]);
    found = [...new Map([...started, ...queued].map((c) => [c.sid, c])).values()];
  } catch (err) {
    throw new Error(`listing the provider's calls failed: ${scrubNumbers(String((err as Error)?.message ?? err), destination)}`);
  }
  const candidates = found
    .filter((c) => !c.dateCreated || c.dateCreated.getTime() >= call.createdAt.getTime() - 5_000)
    .sort((a, b) => (a.dateCreated?.getTime() ?? 0) - (b.dateCreated?.getTime() ?? 0));
  for (const c of candidates) {
    const claimed = await ctx.models.OutboundCall.exists({ tenantId: call.tenantId, providerCallSid: c.sid, _id: { $ne: call._id } });
    if (!claimed) return c.sid;
  }
  return null;
}

export interface ProviderCallEnd {
  tenantId: string;
  projectId: string;
  channelConnectionId: string;
  callSid: string;
  /** `canceled`: the call may not have been answered (a cancel that finds it answered hangs up); `completed`: hang up. */
  status: 'canceled' | 'completed';
}

/** Cancels or hangs up the provider's call; a call already over is left as it is (`done: false`). */
export async function endProviderCall(ctx: Pick<CoreContext, 'models' | 'config'>, input: ProviderCallEnd): Promise<{ done: boolean }> {
  const conn = await ctx.models.ChannelConnection.findOne({ _id: input.channelConnectionId, tenantId: input.tenantId, projectId: input.projectId }).lean();
  if (!conn) return { done: false };
  const client = await connectionTwilioClient(ctx, conn);
  const order: ProviderCallEnd['status'][] = input.status === 'canceled' ? ['canceled', 'completed'] : ['completed'];
  for (const status of order) {
    try {
      const updated = await client.calls(input.callSid).update({ status });
      // A cancel of a call that was answered meanwhile changes nothing at Twilio: hang it up.
      if (status === 'canceled' && updated.status === 'in-progress') continue;
      return { done: true };
    } catch (err) {
      const e = err as { status?: number };
      // Twilio answered that the call cannot take this status (over, or already answered): try the next.
      if (typeof e.status !== 'number' || e.status >= 500) throw err;
    }
  }
  return { done: false };
}
