// The outbound call's state machine as pure functions: what a provider status callback means for
// the phase and outcome, and the rule that a call never goes backwards (callbacks arrive late,
// twice, or out of order) and that the first terminal status is final. The workflow applies them.
import type { OutboundAmdMode, OutboundCallView, OutboundOutcome, OutboundPhase, OutboundProviderStatusInput } from './definitions';

export const PHASE_RANK: Record<OutboundPhase, number> = { accepted: 0, dialing: 1, ringing: 2, in_progress: 3, terminal: 4 };

/** What a status callback asks for: a phase, and an outcome with its reason when terminal. */
export interface ProviderTransition {
  phase: OutboundPhase;
  outcome: OutboundOutcome | null;
  failureReason: string | null;
}

/** Twilio's AnsweredBy values that mean a machine (or a fax) answered. */
export function isMachine(answeredBy: string | null | undefined): boolean {
  return !!answeredBy && (answeredBy.startsWith('machine') || answeredBy === 'fax');
}

/**
 * The transition a provider status asks for, or null for a status that means nothing here.
 * `connected` says whether the call had reached `in_progress` (a `completed` after it is a normal end).
 * A machine answer ends `machine` in both AMD modes: with `disconnect` the call is hung up at once;
 * with `continue` it proceeds and still ends `machine`, so that a call that reached a voicemail is
 * told apart from one a person took.
 */
export function providerTransition(status: OutboundProviderStatusInput, amdMode: OutboundAmdMode, machineSeen: string | null): ProviderTransition | null {
  const sip = status.sipResponseCode;
  switch (status.callStatus) {
    case 'queued':
    case 'initiated':
      return { phase: 'dialing', outcome: null, failureReason: null };
    case 'ringing':
      return { phase: 'ringing', outcome: null, failureReason: null };
    case 'in-progress':
    case 'answered':
      return { phase: 'in_progress', outcome: null, failureReason: null };
    case 'completed': {
      const machine = amdMode !== 'off' ? (isMachine(status.answeredBy) ? status.answeredBy : machineSeen) : null;
      if (machine) return { phase: 'terminal', outcome: 'machine', failureReason: `answered_by_${machine}` };
      return { phase: 'terminal', outcome: 'completed', failureReason: null };
    }
    case 'busy':
      // A carrier's 603 Decline comes back as busy: the callee declined the call.
      if (sip === '603') return { phase: 'terminal', outcome: 'rejected', failureReason: 'declined (SIP 603)' };
      return { phase: 'terminal', outcome: 'busy', failureReason: sip ? `busy (SIP ${sip})` : 'busy' };
    case 'no-answer':
      return { phase: 'terminal', outcome: 'no_answer', failureReason: 'no answer' };
    case 'failed':
      if (sip === '603') return { phase: 'terminal', outcome: 'rejected', failureReason: 'declined (SIP 603)' };
      return { phase: 'terminal', outcome: 'failed', failureReason: sip ? `provider reported failed (SIP ${sip})` : 'provider reported failed' };
    case 'canceled':
      return { phase: 'terminal', outcome: 'canceled', failureReason: 'canceled at the provider' };
    default:
      return null;
  }
}

/** Whether a transition moves the call forward (never back, never out of `terminal`). */
export function movesForward(view: Pick<OutboundCallView, 'phase'>, to: OutboundPhase): boolean {
  return view.phase !== 'terminal' && PHASE_RANK[to] > PHASE_RANK[view.phase];
}
