// ON_ERROR: which handler takes an error (step, then agent, then MESSAGES.error_default) and
// where the agent or flow goes afterwards.

import type { ErrorHandlerIR, FlowStepIR } from '../ir';
import type { RuntimeError, ThreadState } from './contract';
import { agentErrorTransitionsOn } from './options';
import { STOP, type StepResult, type TurnContext, go } from './turn-context';
import { syntheticHandoff } from './handoff';

export const DEFAULT_ERROR = 'Sorry, something went wrong. Please try again.';

export class OnError {
  constructor(private readonly t: TurnContext) {}

  errorHandler(th: ThreadState, step: FlowStepIR | null, type: string): ErrorHandlerIR | undefined {
    const pick = (hs: ErrorHandlerIR[]): ErrorHandlerIR | undefined =>
      hs.find((h) => h.type === type) ?? (type === 'tool_timeout' ? hs.find((h) => h.type === 'tool_error' || h.type === 'timeout') : undefined);
    return pick(step?.on_error ?? []) ?? pick(this.t.agent(th).error_handlers);
  }

  /**
   * ON_ERROR for an error outside a flow step (agent → MESSAGES.error_default), with its THEN
   * carried out: COMPLETE ends the agent, ESCALATE escalates, HANDOFF hands off. 'continue' when
   * the agent carries on (THEN: CONTINUE, or a BACKTRACK, which needs a flow).
   */
  agentLevelError(th: ThreadState, type: string): 'continue' | 'stop' {
    const saidFrom = this.t.responses.length;
    const r = this.handleError(th, null, type);
    if (r.kind !== 'go' || !this.t.isActive(th)) return 'stop';
    const t = r.to;
    if (t?.kind !== 'complete' && t?.kind !== 'escalate') return 'continue';
    // Runs recorded before patch agent-error-transitions-v1 only responded here.
    if (!agentErrorTransitionsOn(this.t.options)) return 'stop';
    this.t.decision(th, 'on_error', `${type} -> ${t.kind === 'complete' ? 'COMPLETE' : 'ESCALATE'}`);
    // The handler's RESPOND is its own message for the escalation.
    const saidOwn = this.t.responses.length > saidFrom;
    if (t.kind === 'escalate' && this.t.escalation.escalate(th, t.reason ? this.t.render(th, t.reason) : `Escalation after ${type}`, undefined, undefined, undefined, saidOwn) === 'stop') return 'stop';
    if (this.t.isActive(th)) this.t.handoffs.completeAgent(th, null);
    return 'stop';
  }

  /** ON_ERROR: step → agent → MESSAGES.error_default. */
  handleError(th: ThreadState, step: FlowStepIR | null, type: string): StepResult {
    const h = this.errorHandler(th, step, type);
    if (!h) {
      this.t.guards.respond(th, this.t.message(th, 'error_default', DEFAULT_ERROR));
      return STOP;
    }
    if (step && h.then?.kind === 'escalate') this.t.flow.escalating();
    if (h.respond) this.t.guards.respond(th, this.t.render(th, h.respond));
    const t = h.then;
    if (!t) return h.respond ? STOP : (this.t.guards.respond(th, this.t.message(th, 'error_default', DEFAULT_ERROR)), STOP);
    switch (t.kind) {
      case 'continue': return go(step?.then ?? null);
      case 'complete': return go({ kind: 'complete' });
      case 'escalate': return go({ kind: 'escalate', reason: t.reason });
      case 'handoff':
        this.t.handoffs.handoff(th, syntheticHandoff(t.agent), this.t.input, `${type} handler`);
        return STOP;
      case 'backtrack': return t.step ? go({ kind: 'goto', step: t.step }) : STOP;
    }
  }
}

/** The ON_ERROR type a runtime error is handled as. */
export function errorType(e: RuntimeError): string {
  if (e.kind === 'timeout' || e.kind === 'tool_timeout') return 'tool_timeout';
  if (e.kind === 'llm_error' || e.kind === 'validation_error') return e.kind;
  return 'tool_error';
}
