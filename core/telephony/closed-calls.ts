// Outbound calls whose OutboundCall workflow closed without running its own end: terminated from
// the Temporal Web UI or CLI, failed or timed out. The workflow tells the provider, writes the
// terminal row and ends the call's session as its last steps; this does the same from what the
// row holds (core/sessions/closed-reconciler.ts finds such closes): the provider's call cancelled
// or hung up, the row terminal, the session ended. A row already terminal is left as it is. A call
// closed while its submit was out (no provider sid yet) is looked for at the provider first, as
// the workflow looks for one whose submit got no answer, so a call it placed does not ring on.
import { type Client } from '@temporalio/client';
import { type CoreContext } from '../context';
import { endSignal, type OutboundOutcome } from '../../workflows/definitions';
import { isWorkflowNotFound } from '../sessions/workflow-client';
import { endProviderCall, findPlacedProviderCall } from './provider-calls';

/**
 * The revision a row ended this way is written with: past any the closed workflow reached, so a
 * projection write of it still in flight (a revision below this) changes nothing afterwards.
 */
export const CLOSED_OUTSIDE_REVISION = 1_000_000_000;

export type ClosedCallDeps = Pick<CoreContext, 'models' | 'config' | 'logger'> & { temporalClient: Client };

/** Ends a call whose workflow closed (`how`: `terminated`, `failed`, `timed out`…); true when its row changed. */
export async function endCallOfClosedWorkflow(deps: ClosedCallDeps, tenantId: string, outboundCallId: string, how: string): Promise<boolean> {
  const call = await deps.models.OutboundCall.findOne({ _id: outboundCallId, tenantId, phase: { $ne: 'terminal' } }).lean();
  if (!call) return false;
  const connected = call.phase === 'in_progress';
  let failureReason = connected ? `hung up: the call's workflow was ${how} in Temporal` : `the call's workflow was ${how} in Temporal before the call connected`;
  let callSid = call.initiationState === 'submitted' ? call.providerCallSid : null;
  if (!callSid && (call.initiationState === 'provider_requesting' || call.initiationState === 'provider_request_unknown')) {
    try {
      callSid = await findPlacedProviderCall(deps, call);
    } catch (err) {
      deps.logger.warn({ tenantId, outboundCallId, err: err instanceof Error ? err.message : String(err) }, "the provider could not be asked whether a call whose workflow closed in Temporal during its submit was placed; look for it in the provider's console");
      failureReason += '; the provider could not be asked whether it was placed';
    }
  }
  if (callSid) {
    try {
      await endProviderCall(deps, { tenantId, projectId: call.projectId, channelConnectionId: call.channelConnectionId, callSid, status: connected ? 'completed' : 'canceled' });
    } catch (err) {
      // Recorded all the same: nothing else would ever end the row. The operator is told (the
      // provider's status and code only: its messages may quote the number).
      const { status, code } = err as { status?: unknown; code?: unknown };
      deps.logger.warn({ tenantId, outboundCallId, providerStatus: status ?? null, providerCode: code ?? null }, "the provider could not be told to end a call whose workflow closed in Temporal; end it in the provider's console");
      failureReason += '; the provider could not be told to end it';
    }
  }
  const outcome: OutboundOutcome = connected ? 'completed' : 'canceled';
  const at = new Date();
  const version = call.version + 1;
  const changed = await deps.models.OutboundCall.updateOne(
    { _id: outboundCallId, tenantId, phase: { $ne: 'terminal' }, revision: call.revision },
    {
      $set: { phase: 'terminal', outcome, failureReason, version, revision: Math.max(call.revision + 1, CLOSED_OUTSIDE_REVISION), updatedAt: at, ...(callSid && callSid !== call.providerCallSid ? { providerCallSid: callSid, initiationState: 'submitted' } : {}) },
      $push: { statusHistory: { phase: 'terminal', outcome, providerEventAt: null, ingestedAt: at.toISOString(), version } },
    },
  );
  if (changed.modifiedCount !== 1) return false;
  if (call.sessionId) {
    try {
      await deps.temporalClient.workflow.getHandle(`session/${call.sessionId}`).signal(endSignal, { reason: 'call_ended' });
    } catch (err) {
      // The session has ended already (or was deleted).
      if (!isWorkflowNotFound(err)) throw err;
    }
  }
  return true;
}
