// The lifecycle order of an agent-assist conversation (docs/agent-assist.md): which hook events
// each phase accepts, and the state after one. Pure and deterministic, shared by the workflow's
// update validator and handler, so a refused event leaves nothing in history.
import type { AgentAssistEvent, AgentAssistPhase, AgentAssistView } from './definitions';

/** An event the current phase does not accept; `expected` names what it would accept. */
export class AgentAssistOrderRefused extends Error {
  constructor(
    message: string,
    readonly expected: string[],
  ) {
    super(message);
    this.name = 'AgentAssistOrderRefused';
  }
}

export const MESSAGE_EVENT = 'message (USER or AGENT)';
const transfer = (type: string, transition: string) => `INTERNAL_TRANSFER_EVENT (${type}, ${transition})`;

export function initialAgentAssistView(): AgentAssistView {
  return { phase: 'new', activeAgent: null, consultants: [], messages: 0, events: 0, summaryRequested: false };
}

/** What the phase accepts, in the spec's words. */
export function expectedEvents(view: AgentAssistView): string[] {
  switch (view.phase) {
    case 'new':
      return [transfer('NA', 'entry'), transfer('REDIAL', 'entry')];
    case 'active':
      return [MESSAGE_EVENT, transfer('COLD', 'exit'), transfer('WARM', 'entry'), ...(view.consultants.length > 0 ? [transfer('WARM', 'exit')] : []), transfer('NA', 'exit')];
    case 'transferring':
      return [MESSAGE_EVENT, transfer('COLD', 'entry')];
    case 'exited':
      return [transfer('REDIAL', 'entry'), 'TRIGGER_SUMMARY_EVENT', 'END_OF_CONVERSATION'];
    case 'summarized':
      return ['END_OF_CONVERSATION'];
    case 'ended':
      return [];
  }
}

function describe(event: AgentAssistEvent): string {
  if (event.kind === 'message') return `message (${event.author})`;
  if (event.kind === 'transfer') return transfer(event.transferType, event.transition);
  return event.kind === 'summary' ? 'TRIGGER_SUMMARY_EVENT' : 'END_OF_CONVERSATION';
}

/** The view after `event`, or AgentAssistOrderRefused. Never changes `view`. */
export function applyAgentAssistEvent(view: AgentAssistView, event: AgentAssistEvent): AgentAssistView {
  const refuse = (why?: string): never => {
    const expected = expectedEvents(view);
    const wanted = expected.length > 0 ? `expected ${expected.join(' or ')}` : 'the conversation has ended and accepts no more events';
    throw new AgentAssistOrderRefused(`${describe(event)} is out of order in phase "${view.phase}"${why ? ` (${why})` : ''}: ${wanted}`, expected);
  };
  const next = (phase: AgentAssistPhase, change: Partial<AgentAssistView> = {}): AgentAssistView => ({ ...view, ...change, phase, events: view.events + 1 });
  switch (event.kind) {
    case 'message':
      if (view.phase !== 'active' && view.phase !== 'transferring') return refuse();
      return next(view.phase, { messages: view.messages + 1 });
    case 'summary':
      if (view.phase !== 'exited') return refuse();
      return next('summarized', { summaryRequested: true });
    case 'end':
      if (view.phase !== 'exited' && view.phase !== 'summarized') return refuse();
      return next('ended');
    case 'transfer':
      break;
  }
  const { transferType, transition, participant } = event;
  if (transferType === 'NA' && transition === 'entry') {
    if (view.phase !== 'new') return refuse();
    return next('active', { activeAgent: participant });
  }
  if (transferType === 'REDIAL') {
    if (transition !== 'entry' || (view.phase !== 'new' && view.phase !== 'exited')) return refuse();
    return next('active', { activeAgent: participant, consultants: [] });
  }
  if (transferType === 'NA') {
    if (view.phase !== 'active') return refuse();
    return next('exited', { activeAgent: null, consultants: [] });
  }
  if (transferType === 'COLD') {
    if (transition === 'exit') {
      if (view.phase !== 'active') return refuse();
      return next('transferring', { activeAgent: null, consultants: [] });
    }
    if (view.phase !== 'transferring') return refuse();
    return next('active', { activeAgent: participant });
  }
  // WARM: consultants join and leave while the active agent stays.
  if (view.phase !== 'active') return refuse();
  if (transition === 'entry') {
    if (participant === view.activeAgent || view.consultants.includes(participant)) return refuse(`agent "${participant}" is already in the conversation`);
    return next('active', { consultants: [...view.consultants, participant] });
  }
  if (!view.consultants.includes(participant)) return refuse(`agent "${participant}" is not a consultant of the conversation`);
  return next('active', { consultants: view.consultants.filter((c) => c !== participant) });
}

/** The view after every event of one hook call, all or none. */
export function applyAgentAssistEvents(view: AgentAssistView, events: AgentAssistEvent[]): AgentAssistView {
  return events.reduce(applyAgentAssistEvent, view);
}
