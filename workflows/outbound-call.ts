// OutboundCall (`outbound-call/<outboundCallId>`): the one owner of an outbound call's state
// (docs/telephony/outbound.md). It submits the call to the provider (initiationState), follows the
// provider's status callbacks (signals) through the phases, never backwards, the first terminal
// status final; a terminate update cancels or hangs up; timers expire a call the provider went
// silent on. Every change is written to the MongoDB projection that lists and searches read, and
// a call that ends with a session ends that session too.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  endSignal,
  outboundCallSessionSignal,
  outboundCallStateQuery,
  outboundProviderStatusSignal,
  terminateOutboundCallUpdate,
  waitOutboundCallUpdate,
  type OutboundCallView,
  type OutboundCallWorkflow,
  type OutboundOutcome,
  type OutboundPhase,
  type OutboundProviderStatusInput,
} from './definitions';
import { isMachine, movesForward, providerTransition } from './outbound-call-rules';
import { CallStatusKey } from './search-attributes';
import { finishingOnCancellation, onCancellationRequest, type CancellationRequest } from './cancellation';
import { OUTBOUND_CALL_CANCEL_REQUEST_PATCH } from './patches';

const PROJECTION_RETRY = { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20 } as const;
const { recordOutboundCall } = wf.proxyActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: PROJECTION_RETRY });
// One attempt only: a submit whose answer did not come may have placed the call, so it is never
// simply sent again; it is reconciled instead (findOutboundCall).
const { submitOutboundCall } = wf.proxyActivities<Activities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 1 } });
const { findOutboundCall, updateOutboundProviderCall } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
});

/** Status callbacks past this many are ignored: a call has a handful; the bound keeps history small. */
export const MAX_PROVIDER_EVENTS = 50;
/** SSE long-polls are refused past this history length (the stream then reads the projection). */
const WAIT_HISTORY_LIMIT = 5_000;
/** How often a submit whose answer never came is looked for at the provider, within the reconcile window. */
const RECONCILE_EVERY_MS = 2_000;

export const outboundCall: OutboundCallWorkflow = async (input) => {
  if (!wf.patched(OUTBOUND_CALL_CANCEL_REQUEST_PATCH)) return runOutboundCall(input, null);
  return finishingOnCancellation((cancellation) => runOutboundCall(input, cancellation));
};

async function runOutboundCall(input: Parameters<OutboundCallWorkflow>[0], cancellation: CancellationRequest | null): Promise<OutboundCallView> {
  const at = () => new Date().toISOString();
  const view: OutboundCallView = {
    outboundCallId: input.outboundCallId,
    tenantId: input.tenantId,
    projectId: input.projectId,
    phase: 'accepted',
    outcome: null,
    initiationState: 'created',
    failureReason: null,
    providerCallSid: null,
    sessionId: null,
    answeredBy: null,
    statusHistory: [{ phase: 'accepted', outcome: null, providerEventAt: null, ingestedAt: new Date(input.acceptedAtMs).toISOString(), version: 1 }],
    version: 1,
    revision: 1,
    updatedAt: at(),
  };
  const seenSequence = new Set<number>();
  let providerEvents = 0;
  let lastProviderEventMs = Date.now();
  let connectedAtMs: number | null = null;
  // What the provider must still be told: cancel (before answer) or hang up (after).
  let providerAction: 'canceled' | 'completed' | null = null;
  let sessionEnded = false;

  const changed = () => {
    view.revision++;
    view.updatedAt = at();
    void persist();
  };
  let writes: Promise<void> = Promise.resolve();
  let written = 0;
  // Writes go one after another; a write takes the view as it is when it starts, so a burst of
  // changes costs one write for all that came while the previous one ran.
  const persist = (): Promise<void> => {
    writes = writes.catch(() => undefined).then(async () => {
      if (written >= view.revision) return;
      const snapshot = JSON.parse(JSON.stringify(view)) as OutboundCallView;
      await recordOutboundCall(snapshot);
      written = snapshot.revision;
    });
    return writes;
  };

  const searchStatus = () => wf.upsertSearchAttributes([{ key: CallStatusKey, value: view.outcome ? [view.phase, view.outcome] : [view.phase] }]);

  function transition(phase: OutboundPhase, outcome: OutboundOutcome | null, failureReason: string | null, providerEventAt: string | null, ingestedAt: string): void {
    view.phase = phase;
    if (phase === 'in_progress') connectedAtMs = Date.now();
    if (phase === 'terminal') {
      view.outcome = outcome;
      view.failureReason = failureReason;
    }
    view.version++;
    view.statusHistory.push({ phase, outcome: phase === 'terminal' ? outcome : null, providerEventAt, ingestedAt, version: view.version });
    searchStatus();
    changed();
  }

  /** Ends the call on our side (terminate, timers, AMD hang-up): terminal now, the provider told after. */
  function endHere(outcome: OutboundOutcome, failureReason: string | null): void {
    const connected = view.phase === 'in_progress';
    transition('terminal', outcome, failureReason, null, at());
    providerAction = connected ? 'completed' : 'canceled';
  }

  // Read through functions: handlers change these between awaits, which narrowing does not see.
  const initiation = () => view.initiationState;
  const phaseNow = () => view.phase;
  wf.setHandler(outboundCallStateQuery, () => view);

  wf.setHandler(outboundProviderStatusSignal, (status: OutboundProviderStatusInput) => {
    if (providerEvents >= MAX_PROVIDER_EVENTS || status.channelConnectionId !== input.channelConnectionId) return;
    if (status.sequenceNumber !== null) {
      if (seenSequence.has(status.sequenceNumber)) return;
      seenSequence.add(status.sequenceNumber);
    }
    providerEvents++;
    lastProviderEventMs = Date.now();
    // A status callback names the call: the submit's answer may not have come (reconciliation).
    if (status.callSid && !view.providerCallSid) {
      view.providerCallSid = status.callSid;
      if (view.initiationState !== 'submitted') {
        // An unanswered submit settled by the callback: its reason goes with it, in the same
        // write (the row never shows the call submitted with the submit's failure).
        if (view.initiationState === 'provider_request_unknown' && view.phase !== 'terminal') view.failureReason = null;
        view.initiationState = 'submitted';
      }
      changed();
    }
    if (status.answeredBy && !view.answeredBy) {
      view.answeredBy = status.answeredBy;
      changed();
    }
    const next = providerTransition(status, input.amdMode, isMachine(view.answeredBy) ? view.answeredBy : null);
    if (!next || !movesForward(view, next.phase)) return;
    transition(next.phase, next.outcome, next.failureReason, status.timestamp, status.ingestedAt);
    // Disconnect mode: a machine is hung up on as soon as it is known (the voice webhook also
    // answers it with <Hangup/>; this covers an answer that came before the webhook's).
    if (view.phase === 'in_progress' && input.amdMode === 'disconnect' && isMachine(view.answeredBy)) {
      endHere('machine', `answered_by_${view.answeredBy}`);
      providerAction = 'completed';
    }
  });

  wf.setHandler(outboundCallSessionSignal, ({ sessionId }) => {
    if (view.sessionId) return;
    view.sessionId = sessionId;
    changed();
  });

  wf.setHandler(terminateOutboundCallUpdate, async () => {
    if (view.phase !== 'terminal') {
      if (view.phase === 'in_progress') endHere('completed', 'hung up by a terminate request');
      else endHere('canceled', 'terminated before it connected');
    }
    return { outboundCallId: view.outboundCallId, phase: view.phase, outcome: view.outcome };
  });
  // A cancellation request from Temporal (the Web UI, the CLI) ends the call as a terminate does.
  if (cancellation) {
    onCancellationRequest(cancellation, () => {
      if (view.phase === 'terminal') return;
      if (view.phase === 'in_progress') endHere('completed', 'hung up: workflow cancellation requested in Temporal');
      else endHere('canceled', 'workflow cancellation requested in Temporal before it connected');
    });
  }

  wf.setHandler(
    waitOutboundCallUpdate,
    async ({ afterVersion, waitMs }) => {
      await wf.condition(() => view.version > afterVersion || view.phase === 'terminal', Math.max(1, Math.min(waitMs, 60_000)));
      return view;
    },
    {
      validator: (_wait) => {
        if (wf.workflowInfo().historyLength > WAIT_HISTORY_LIMIT) throw new Error('the call\'s history is long: read the projection');
      },
    },
  );

  wf.upsertSearchAttributes([{ key: CallStatusKey, value: [view.phase] }]);

  // Submit. The row says `created`; `provider_requesting` is recorded before the request goes out.
  view.initiationState = 'provider_requesting';
  changed();
  await persist();
  const submitted = await submitOutboundCall({ outboundCallId: input.outboundCallId, tenantId: input.tenantId, projectId: input.projectId }).catch(
    (err: unknown) => ({ result: 'unknown' as const, reason: `submit did not complete: ${String((err as Error)?.message ?? err).slice(0, 200)}` }),
  );
  if (submitted.result === 'submitted') {
    if (!view.providerCallSid) view.providerCallSid = submitted.callSid;
    view.initiationState = 'submitted';
    changed();
  } else if (submitted.result === 'failed') {
    if (initiation() !== 'submitted') {
      view.initiationState = 'failed_to_submit';
      if (view.phase !== 'terminal') transition('terminal', 'failed', `${submitted.code}: ${submitted.reason}`, null, at());
      else changed();
    }
  } else if (initiation() !== 'submitted') {
    // The request may or may not have placed the call: look for it (a status callback naming it
    // settles this too), and never submit it again.
    view.initiationState = 'provider_request_unknown';
    view.failureReason = submitted.reason;
    changed();
    const until = Date.now() + input.reconcileWindowMs;
    while (view.initiationState === 'provider_request_unknown' && Date.now() < until) {
      const found = await findOutboundCall({ outboundCallId: input.outboundCallId, tenantId: input.tenantId, projectId: input.projectId }).catch(() => null);
      if (found?.callSid && view.initiationState === 'provider_request_unknown') {
        view.providerCallSid = found.callSid;
        view.initiationState = 'submitted';
        changed();
        break;
      }
      await wf.condition(() => view.initiationState !== 'provider_request_unknown', RECONCILE_EVERY_MS);
    }
    if (initiation() === 'submitted') {
      if (phaseNow() !== 'terminal') view.failureReason = null;
      changed();
    } else {
      view.initiationState = 'failed_to_submit';
      if (view.phase !== 'terminal') transition('terminal', 'failed', 'OUTBOUND_PROVIDER_REQUEST_UNKNOWN: the provider never confirmed the call', null, at());
      else changed();
    }
  }

  // Follow the call: callbacks move it; silence before it connects, or a call that outlives its
  // bound, expires it.
  while (view.phase !== 'terminal') {
    const deadlineMs = connectedAtMs !== null ? connectedAtMs + input.maxDurationMs : lastProviderEventMs + input.abandonAfterMs;
    const waitMs = deadlineMs - Date.now();
    const seen = providerEvents;
    const wasConnected = connectedAtMs;
    if (waitMs <= 0 || !(await wf.condition(() => view.phase === 'terminal' || providerEvents !== seen || connectedAtMs !== wasConnected, waitMs))) {
      if (phaseNow() !== 'terminal') {
        endHere('expired', connectedAtMs !== null ? `still connected after ${input.maxDurationMs} ms` : `no provider outcome within ${input.abandonAfterMs} ms of its last event`);
      }
    }
  }

  // Tell the provider what ended here (a cancel, or a hang-up), once its call is known.
  if (providerAction && view.providerCallSid && view.initiationState === 'submitted') {
    await updateOutboundProviderCall({
      tenantId: input.tenantId,
      projectId: input.projectId,
      channelConnectionId: input.channelConnectionId,
      callSid: view.providerCallSid,
      status: providerAction,
    }).catch(() => undefined);
  }

  // The call's conversation ends with the call (a session id that comes late is ended too).
  const endSession = async () => {
    if (!view.sessionId || sessionEnded) return;
    sessionEnded = true;
    await wf
      .getExternalWorkflowHandle(`session/${view.sessionId}`)
      .signal(endSignal, { reason: 'call_ended' })
      .catch(() => undefined);
  };
  await endSession();
  await persist();
  // A session signal racing the end is still honoured for a short while.
  if (!view.sessionId && connectedAtMs !== null) await wf.condition(() => view.sessionId !== null, '5 seconds');
  await endSession();
  await wf.condition(wf.allHandlersFinished);
  await persist();
  return view;
}
