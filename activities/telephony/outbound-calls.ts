// The OutboundCall workflow's side effects: placing the call at the provider (the Twilio SDK, for
// the connection's account), finding a call whose placing request got no answer, cancelling or
// hanging up a call, and writing the call's projection. The destination is opened here from its
// sealed copy and goes to the provider only: never into a result, an error or a log line.
import { type ActivityDeps } from '..';
import { openDestination, outboundCallProjection, type OutboundCallDoc } from '../../db/outbound-call';
import { connectionAuthToken } from '../../core/telephony/connections';
import { twilioClient, type TwilioClient } from '../../providers/telephony/twilio-client';
import { requireMasterKeys } from '../../core/tool-secrets/secrets';
import { outboundCallRef } from '../../core/telephony/call-refs';
import { endProviderCall, findPlacedProviderCall, scrubNumbers, type ProviderCallEnd } from '../../core/telephony/provider-calls';
import type { CoreContext } from '../../core/context';
import type { OutboundCallView } from '../../workflows/definitions';
import { emitOperationEvents } from '../../core/analytics/operations';

export type SubmitOutcome =
  | { result: 'submitted'; callSid: string }
  /** Refused or failed before the provider placed anything; `code` is the API's error code. */
  | { result: 'failed'; code: string; reason: string }
  /** The request went out and no answer came: the call may exist (reconciled by findOutboundCall). */
  | { result: 'unknown'; reason: string };

interface CallRef {
  outboundCallId: string;
  tenantId: string;
  projectId: string;
}

/** Twilio's status callback events the call reports, as Twilio names them. */
export const STATUS_CALLBACK_EVENTS = ['initiated', 'ringing', 'answered', 'completed'];

function webhookUrl(base: string, connectionId: string, name: string, query: Record<string, string>): string {
  return `${base.replace(/\/+$/, '')}/api/telephony/twilio/${encodeURIComponent(connectionId)}/${name}?${new URLSearchParams(query).toString()}`;
}

/** Transport failures that mean the request never reached the provider. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET_BEFORE_SEND']);

export function createOutboundCallActivities(deps: Pick<ActivityDeps, 'models' | 'config' | 'logger'> & Partial<Pick<ActivityDeps, 'temporalClient'>>) {
  const ctx: CoreContext = {
    config: deps.config,
    models: deps.models,
    logger: deps.logger,
    temporal: {
      client: async () => {
        if (!deps.temporalClient) throw new Error('no Temporal client in this worker');
        return deps.temporalClient;
      },
    },
  };

  async function loadCall(ref: CallRef): Promise<OutboundCallDoc | null> {
    return deps.models.OutboundCall.findOne({ _id: ref.outboundCallId, tenantId: ref.tenantId, projectId: ref.projectId }).lean();
  }

  async function clientFor(call: { tenantId: string; projectId: string; channelConnectionId: string }, timeoutMs?: number): Promise<{ client: TwilioClient; callerNumber: string; recordingEnabled: boolean; active: boolean } | null> {
    const conn = await deps.models.ChannelConnection.findOne({ _id: call.channelConnectionId, tenantId: call.tenantId, projectId: call.projectId }).lean();
    if (!conn) return null;
    const authToken = await connectionAuthToken(ctx, conn);
    return {
      client: twilioClient({ accountSid: conn.accountSid, authToken }, { apiBaseUrl: deps.config.TWILIO_API_BASE_URL, ...(timeoutMs ? { timeoutMs } : {}) }),
      callerNumber: conn.callerNumber,
      recordingEnabled: conn.recordingEnabled,
      active: conn.status === 'active',
    };
  }

  return {
    /** One projection write: the workflow's view, unless the row already holds a later revision. */
    async recordOutboundCall(view: OutboundCallView): Promise<void> {
      const written = await deps.models.OutboundCall.updateOne(
        { _id: view.outboundCallId, tenantId: view.tenantId, projectId: view.projectId, revision: { $lt: view.revision } },
        { $set: outboundCallProjection(view) },
        { timestamps: false },
      );
      // Each phase the call reached, as a channel event: the id names the transition, so a view
      // written again (a later revision of the same phase, a retry) adds nothing.
      const last = view.statusHistory[view.statusHistory.length - 1];
      if (written.matchedCount > 0 && last) {
        await emitOperationEvents(deps, [{
          id: `outbound_call:${view.outboundCallId}:v${view.version}`,
          tenantId: view.tenantId,
          projectId: view.projectId,
          category: 'channel',
          eventType: `channel.outbound_call_${last.phase}`,
          sessionId: view.sessionId,
          channel: 'voice',
          error: view.failureReason,
          metadata: { outbound_call_id: view.outboundCallId, phase: last.phase, outcome: last.outcome, answered_by: view.answeredBy },
        }]);
      }
    },

    /** Places the call (`calls.create`) once. Never retried by Temporal: an unanswered request is reconciled instead. */
    async submitOutboundCall(ref: CallRef): Promise<SubmitOutcome> {
      const call = await loadCall(ref);
      if (!call) return { result: 'failed', code: 'CHANNEL_NOT_FOUND', reason: 'the call is not recorded' };
      const base = deps.config.PUBLIC_BASE_URL;
      if (!base) return { result: 'failed', code: 'OUTBOUND_WEBHOOK_NOT_CONFIGURED', reason: 'PUBLIC_BASE_URL is not set' };
      const provider = await clientFor(call, deps.config.OUTBOUND_SUBMIT_TIMEOUT_MS);
      if (!provider || !provider.active) return { result: 'failed', code: 'CHANNEL_NOT_FOUND', reason: 'the channel connection is missing or disabled' };
      const destination = await openDestination(deps.models.TenantDataKey, requireMasterKeys(ctx), call);
      const query = { outboundCallId: call._id };
      try {
        const created = await provider.client.calls.create({
          to: destination,
          from: provider.callerNumber,
          url: webhookUrl(base, call.channelConnectionId, 'voice', { ...query, amd: call.amdMode }),
          method: 'POST',
          statusCallback: webhookUrl(base, call.channelConnectionId, 'status', { ...query, ref: outboundCallRef(requireMasterKeys(ctx), call.channelConnectionId, call._id) }),
          statusCallbackMethod: 'POST',
          statusCallbackEvent: STATUS_CALLBACK_EVENTS,
          ...(call.amdMode !== 'off' ? { machineDetection: 'Enable' } : {}),
          ...(provider.recordingEnabled
            ? {
                record: true,
                recordingChannels: 'dual',
                recordingStatusCallback: webhookUrl(base, call.channelConnectionId, 'recording-status', query),
                recordingStatusCallbackMethod: 'POST',
              }
            : {}),
        });
        return { result: 'submitted', callSid: created.sid };
      } catch (err) {
        const e = err as { status?: number; code?: number | string; message?: string };
        if (typeof e.status === 'number') {
          // Twilio answered: nothing was placed (a 4xx refusal, or its own 5xx failure).
          const reason = `provider refused the call (HTTP ${e.status}${typeof e.code === 'number' ? `, Twilio ${e.code}` : ''}): ${scrubNumbers(String(e.message ?? ''), destination)}`;
          return { result: 'failed', code: 'OUTBOUND_PROVIDER_SUBMIT_FAILED', reason };
        }
        if (typeof e.code === 'string' && NOT_SENT.has(e.code)) {
          return { result: 'failed', code: 'OUTBOUND_PROVIDER_SUBMIT_FAILED', reason: `the provider could not be reached (${e.code})` };
        }
        return { result: 'unknown', reason: `no answer from the provider (${typeof e.code === 'string' ? e.code : 'timeout'})` };
      }
    },

    /** The provider's call placed by a request that got no answer (core/telephony/provider-calls.ts); null when none is found (yet). */
    async findOutboundCall(ref: CallRef): Promise<{ callSid: string | null }> {
      const call = await loadCall(ref);
      return { callSid: call ? await findPlacedProviderCall(ctx, call) : null };
    },

    /** Cancels (before answer) or hangs up (after) the provider's call; a call already over is left as it is. */
    updateOutboundProviderCall(input: ProviderCallEnd): Promise<{ done: boolean }> {
      return endProviderCall(ctx, input);
    },
  };
}
