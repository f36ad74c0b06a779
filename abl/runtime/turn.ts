// One turn of the session interpreter. A Turn runs the per-turn order of ABL.md §9 against a
// working copy of the session state. Effects (LLM, tools, delegation, escalation, callbacks) go
// through `effect()`: it answers from the turn's journal when the workflow already returned the
// result, and otherwise records the command and unwinds with `Suspend`. The caller (interpreter.ts)
// replays the turn from its snapshot each time a result arrives, so this code reads top to bottom
// with no explicit continuations. Everything here is pure and deterministic.
//
// This module builds a turn: the context (turn-context.ts) and its sections, one job each (see
// docs/runtime-interpreter.md, "How a turn runs"), and offers interpreter.ts what it reads back.

import type { EvalContext } from '../expr/context';
import type { AgentIR, CompilationOutput, GuardrailIR, VoiceOutputIR } from '../ir';
import type { SafeRegex } from '../regex';
import type { RuntimeCommand, RuntimeEvent, RuntimeOptions, SessionRuntimeState, ThreadState, TraceDraft, TurnExecution } from './contract';
import { Delegation } from './delegation';
import { Escalation } from './escalation';
import { Flow } from './flow';
import { Gathering } from './gathering';
import { Guards } from './guards';
import { Handoffs } from './handoff';
import { Lifecycle } from './lifecycle';
import { Memory } from './memory';
import { Nlu } from './nlu';
import { OnError } from './on-error';
import { Reasoning } from './reasoning';
import { ToolCalls } from './tool-calls';
import { TurnContext } from './turn-context';
import { TurnOrder } from './turn-order';

export { EndTurn, MAX_HISTORY, newThread, Suspend } from './turn-context';
export { GUARDRAIL_CHECK_IS_PASS } from './guards';

export class Turn {
  private readonly t: TurnContext;

  constructor(compiled: CompilationOutput, options: RuntimeOptions, s: SessionRuntimeState, exec: TurnExecution, ctx: EvalContext) {
    const t = new TurnContext(compiled, options, s, exec, ctx);
    t.order = new TurnOrder(t);
    t.guards = new Guards(t);
    t.gathering = new Gathering(t);
    t.escalation = new Escalation(t);
    t.handoffs = new Handoffs(t);
    t.delegation = new Delegation(t);
    t.tools = new ToolCalls(t);
    t.errors = new OnError(t);
    t.lifecycle = new Lifecycle(t);
    t.flow = new Flow(t);
    t.reasoning = new Reasoning(t);
    t.nlu = new Nlu(t);
    t.memory = new Memory(t);
    this.t = t;
  }

  /** Runs the turn for a start or a user message; throws `Suspend` when an effect has no result yet. */
  run(event: RuntimeEvent): void {
    this.t.order.run(event);
  }

  get s(): SessionRuntimeState {
    return this.t.s;
  }
  get commands(): RuntimeCommand[] {
    return this.t.commands;
  }
  get responses(): string[] {
    return this.t.responses;
  }
  get voices(): Array<VoiceOutputIR | null> {
    return this.t.voices;
  }
  get trace(): TraceDraft[] {
    return this.t.trace;
  }
  get outstanding(): string[] {
    return this.t.outstanding;
  }
  get kinds(): TurnExecution['kinds'] {
    return this.t.kinds;
  }
  /** The user's message as the agents saw it, after input guardrails (null when none ran). */
  get userText(): string | null {
    return this.t.input;
  }

  agent(th: ThreadState): AgentIR {
    return this.t.agent(th);
  }

  active(): ThreadState | undefined {
    return this.t.active();
  }

  /**
   * The agent's guardrails of one kind on `text`, for a holding reply while the session is suspended
   * (interpreter.ts): no effect can run there, so provider guardrails are left out.
   */
  guardrails(th: ThreadState, agent: AgentIR, kind: GuardrailIR['kind'], text: string): { text: string; blocked: string | null; patterns: SafeRegex[] } {
    return this.t.guards.guardrails(th, agent, kind, text, {}, { effects: false });
  }
}
