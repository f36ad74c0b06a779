// Ending a call at the provider: cancelled before it is answered, hung up after. Used by the
// OutboundCall workflow's activity (terminate, timers, AMD hang-up) and by the reconciliation of
// call workflows that closed without running their own end (core/telephony/closed-calls.ts).
import { type CoreContext } from '../context';
import { connectionTwilioClient } from './connections';

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
