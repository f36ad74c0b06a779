// FLOW: the step loop (enter, GATHER, reasoning, DELEGATE, CALL, SET, TRANSFORM, CHECK, branches,
// ON_INPUT, THEN), transitions with their checks, and digressions while a step waits.

import type { ActionsIR, AgentIR, BranchIR, DigressionIR, FlowIR, FlowStepIR, VoiceOutputIR } from '../ir';
import type { ThreadState } from './contract';
import { actionText, type DigressionMatch, findDigression, findIntentDigression } from './digressions';
import { agentErrorTransitionsOn, branchGatherOn, codeUnitSortOn, digressionIntentsOn, startBlockHoldOn } from './options';
import { type BranchGatherRef, branchOf, locateBranch } from './branch-gather';
import { compareCodeUnits, identifiers, lowerInputComparisons } from './values';
import { STOP, type StepResult, type ToolOutcome, type TurnContext, WAIT, go } from './turn-context';
import { adHocDelegate } from './delegation';
import { DEFAULT_ERROR, errorType } from './on-error';

/** Flow phases in which the step waits for the user, so a message may digress. */
const WAITING_PHASES = new Set(['gather', 'input', 'reasoning']);

export class Flow {
  /** Replies said before the branch or handler whose THEN is ESCALATE ran (what it says is its own message for the escalation). */
  private escalatingSaidFrom: number | null = null;

  constructor(private readonly t: TurnContext) {}

  runFlow(th: ThreadState, input: string | null): void {
    const agent = this.t.agent(th);
    const flow = agent.flow;
    if (!flow) return;
    th.flow ??= { step: flow.entry, phase: 'enter', attempts: {} };
    let pending = input;
    let iterations = 0;
    for (;;) {
      if (!this.t.isActive(th)) return;
      const f: ThreadState['flow'] = th.flow;
      if (!f || f.phase === 'done') return;
      if (++iterations > agent.execution.max_flow_iterations) {
        this.t.error(th, 'max_flow_iterations', `Flow exceeded ${agent.execution.max_flow_iterations} iterations at step ${f.step}`);
        this.t.guards.respond(th, this.t.message(th, 'error_default', DEFAULT_ERROR));
        f.phase = 'enter';
        return;
      }
      const step = flow.steps[f.step];
      if (!step) {
        this.t.error(th, 'unknown_step', `Step ${f.step} does not exist`);
        this.t.handoffs.completeAgent(th, null);
        return;
      }
      if (f.blockedAtTurn !== undefined && pending !== null) {
        // The session's first message shares the API turn with the start, which already ran this
        // step and sent its block message: the step runs again at the next message.
        const sameTurn = f.blockedAtTurn === this.t.s.turn - 1;
        delete f.blockedAtTurn;
        if (sameTurn && startBlockHoldOn(this.t.options)) {
          this.t.decision(th, 'step_held', f.step, 'blocked at session start; runs again at the next message');
          return;
        }
      }
      let r: StepResult;
      const saidFrom = this.t.responses.length;
      this.escalatingSaidFrom = null;
      if (f.phase === 'gather' || f.phase === 'input' || f.phase === 'reasoning') {
        if (pending === null) return;
        r = this.runStep(th, step, f.phase, pending);
      } else {
        r = this.runStep(th, step, 'enter', pending);
      }
      pending = null;
      if (r.kind !== 'go') return;
      if (!this.t.isActive(th)) return;
      const t = r.to;
      if (!t || t.kind === 'complete') {
        this.t.decision(th, 'flow_transition', `${step.name} -> COMPLETE`);
        this.t.handoffs.completeAgent(th, null);
        return;
      }
      if (t.kind === 'escalate') {
        this.t.decision(th, 'flow_transition', `${step.name} -> ESCALATE`);
        // Said its own message: the branch that chose ESCALATE, else the step, said something.
        const saidOwn = this.t.responses.length > (this.escalatingSaidFrom ?? saidFrom);
        const reason = t.reason ? this.t.render(th, t.reason) : `Escalated from step ${step.name}`;
        if (this.t.escalation.escalate(th, reason, undefined, undefined, undefined, saidOwn) === 'stop') return;
        if (this.t.isActive(th)) this.t.handoffs.completeAgent(th, null);
        return;
      }
      this.t.decision(th, 'flow_transition', `${step.name} -> ${t.step}`);
      this.t.gathering.forgetTransient(th, step);
      th.flow = { step: t.step, phase: 'enter', attempts: f.attempts };
      if (!this.transitionChecks(th)) return;
    }
  }

  /** ABL.md §9: ESCALATE, HANDOFF and DELEGATE are checked again at every step transition. False: the flow stops here. */
  private transitionChecks(th: ThreadState): boolean {
    if (this.t.escalation.checkEscalation(th) === 'stop' || !this.t.isActive(th)) return false;
    const h = this.t.handoffs.selectHandoff(th);
    if (h) {
      this.t.handoffs.handoff(th, h, null, `WHEN ${h.when.src}`);
      return false;
    }
    this.t.delegation.autoDelegates(th);
    return true;
  }

  private get digressionsOn(): boolean {
    return this.t.options.digressions !== false;
  }

  /**
   * DIGRESSIONS, SUB_INTENTS and global_digressions (ABL.md §8) while the flow waits for the user
   * in a step. True when one took the message: its CLEAR and RESPOND run, then its action.
   */
  digress(th: ThreadState, agent: AgentIR, input: string): boolean {
    const flow = agent.flow;
    const f = th.flow;
    if (!this.digressionsOn || !flow || !f || !WAITING_PHASES.has(f.phase)) return false;
    const step = flow.steps[f.step];
    if (!step) return false;
    const holds = (d: DigressionIR) => this.t.cond(th, d.condition, { input });
    const m = findDigression(flow, step, input, holds) ?? this.intentDigression(th, agent, flow, step, holds);
    if (!m) return false;
    const d = m.digression;
    this.t.decision(th, 'digression', `${step.name}: ${d.intent} -> ${actionText(d)}`, m.via === 'nlu' ? `${m.source} matched NLU intent "${m.phrase}"` : `${m.source} matched "${m.phrase}"`);
    for (const c of d.clear) this.t.clearVar(th, c);
    const action = d.action;
    if (action.kind === 'delegate') {
      // The delegation runs first so RESPOND can show its RETURNS / USE_RESULT; then the flow resumes.
      // A constraint that blocks it has sent its ON_FAIL message instead, so RESPOND is skipped.
      const entry = agent.coordination.delegates.find((x) => x.agent === action.agent) ?? adHocDelegate(action.agent);
      const ran = this.t.delegation.runDelegates(th, [entry], null) !== null;
      if (!this.t.isActive(th)) return true;
      if (ran && d.respond) this.t.guards.respond(th, this.t.render(th, d.respond));
    } else if (d.respond) this.t.guards.respond(th, this.t.render(th, d.respond));
    switch (action.kind) {
      case 'goto':
        this.t.gathering.forgetTransient(th, step);
        th.flow = { step: action.step, phase: 'enter', attempts: f.attempts };
        if (this.transitionChecks(th)) this.runFlow(th, null);
        break;
      case 'complete':
        this.t.handoffs.completeAgent(th, null);
        break;
      case 'resume':
      case 'delegate':
        // Back to where the step waited: a GATHER (the step's, or the branch's that asked) asks for
        // its missing field again; ON_INPUT and a reasoning step just wait for the next message.
        if (f.phase === 'gather') {
          const branch = f.branchGather ? branchOf(step, f.branchGather) : null;
          if (branch?.gather && branchGatherOn(this.t.options)) this.t.gathering.stepGather(th, { ...step, gather: branch.gather }, null, false);
          else if (step.gather) this.t.gathering.stepGather(th, step, null, false);
        }
        break;
      default:
        break;
    }
    return true;
  }

  /**
   * After no phrase matched: the digression whose INTENT is the intent this turn's NLU classification
   * decided (the model, or PATTERNS after a failed call; a fallback intent does not count), or the
   * one the message's metadata `intent` names (the caller classified it). Only intents the agent's
   * NLU declares; runs recorded before it never match this way (`digressionIntents`).
   */
  private intentDigression(th: ThreadState, agent: AgentIR, flow: FlowIR, step: FlowStepIR, holds: (d: DigressionIR) => boolean): DigressionMatch | null {
    const declared = agent.nlu?.intents ?? [];
    if (declared.length === 0) return null;
    const r = this.t.nlu.intentOf(th);
    const given = this.t.meta.intent;
    const category = r
      ? (r.source === 'none' ? null : r.category)
      : typeof given === 'string' ? given
        : given && typeof given === 'object' && !Array.isArray(given) && typeof given.category === 'string' ? given.category : null;
    if (!category || !declared.some((i) => i.name === category)) return null;
    const m = findIntentDigression(flow, step, category, holds);
    return m && digressionIntentsOn(this.t.options) ? m : null;
  }

  /** A branch or ON_ERROR handler that ends in ESCALATE begins: what it says from here is its own message for the escalation. */
  escalating(): void {
    this.escalatingSaidFrom = this.t.responses.length;
  }

  setFlowPhase(th: ThreadState, phase: string): void {
    if (th.flow) th.flow.phase = phase;
  }

  private runStep(th: ThreadState, step: FlowStepIR, from: string, input: string | null): StepResult {
    const f = th.flow as NonNullable<ThreadState['flow']>;
    const branchRef = f.branchGather;
    delete f.branchGather;
    if (from === 'gather' && branchRef) {
      const a = branchOf(step, branchRef);
      // Runs recorded before branch-gather-v1 gave the answer to the step's own GATHER.
      if (a && branchGatherOn(this.t.options)) return this.answerBranchGather(th, step, a, branchRef, input);
    }
    if (from === 'input') return this.onInput(th, step, input ?? '');
    let phase = from;
    if (phase === 'enter') {
      this.t.memory.resetForStep(th);
      const n = (f.attempts[step.name] ?? 0) + 1;
      f.attempts[step.name] = n;
      if (step.max_attempts !== null && n > step.max_attempts) {
        this.t.decision(th, 'max_attempts', `${step.name} exhausted after ${step.max_attempts}`);
        delete f.attempts[step.name];
        if (step.on_exhausted) return this.branchActions(th, step, step.on_exhausted);
        return go(step.then);
      }
      if (step.when && !this.t.cond(th, step.when)) {
        this.t.decision(th, 'step_skipped', step.name, `WHEN ${step.when.src} is false`);
        return go(step.then);
      }
      if (step.respond) this.t.guards.respond(th, this.t.render(th, step.respond), true, this.voiceOf(th, step));
      if (step.present) this.t.guards.respond(th, this.t.render(th, step.present));
      phase = 'gather_entry';
    }
    if (step.gather && (phase === 'gather_entry' || phase === 'gather')) {
      const g = this.t.gathering.stepGather(th, step, input, phase === 'gather');
      if (g !== 'done') return g;
    }
    if (step.reasoning && step.llm) {
      this.t.reasoningFailure = null;
      const ended = this.t.reasoning.runReasoning(th, phase === 'reasoning' || phase === 'gather_entry' ? input : null, step);
      if (!this.t.isActive(th)) return STOP;
      // The model failed: ON_ERROR's THEN decides where the flow goes (before the patch, the step
      // went on to its DELEGATE, CALL and THEN after the handler's RESPOND).
      const failure = this.t.reasoningFailure as StepResult | null;
      if (failure && agentErrorTransitionsOn(this.t.options)) return failure;
      if (!ended && step.llm.exit_when && !this.t.cond(th, step.llm.exit_when)) {
        this.setFlowPhase(th, 'reasoning');
        return WAIT;
      }
    }
    if (step.delegate.length > 0) {
      const all = this.t.agent(th).coordination.delegates;
      const entries = step.delegate.map((a) => all.find((d) => d.agent === a) ?? adHocDelegate(a));
      this.t.delegation.runDelegates(th, entries, null);
      if (!this.t.isActive(th)) return STOP;
    }
    let call: ToolOutcome | null = null;
    if (step.call) {
      this.t.recoverGoto = null;
      call = this.t.tools.runCall(th, step.call, step);
      if (!this.t.isActive(th)) return STOP;
      if (!call.ok && call.blocked) {
        if (this.t.recoverGoto) return go({ kind: 'goto', step: this.t.recoverGoto });
        this.setFlowPhase(th, 'enter');
        if (this.t.exec.event.type === 'start' && th.flow) th.flow.blockedAtTurn = this.t.s.turn;
        return STOP;
      }
      if (!call.ok && step.on_fail.length === 0) return this.t.errors.handleError(th, step, errorType(call.error));
    }
    for (const set of step.set) this.t.setVar(th, set.target, this.t.eval(th, set.value));
    for (const c of step.clear) this.t.clearVar(th, c);
    if (step.transform) this.transform(th, step.transform);
    if (step.check && !this.t.cond(th, step.check)) {
      this.t.decision(th, 'check_failed', `${step.name}: ${step.check.src}`);
      if (step.gather) for (const v of identifiers(step.check.ast)) if (step.gather.fields.some((x) => x.name === v)) this.t.clearVar(th, v);
      const b = this.pick(th, step.on_fail);
      if (b) return this.branchActions(th, step, b.actions);
      if (step.gather) return this.t.gathering.stepGather(th, step, null, false) === 'done' ? STOP : WAIT;
      this.setFlowPhase(th, 'enter');
      return STOP;
    }
    if (call && !call.ok) {
      const b = this.pick(th, step.on_fail);
      if (b) return this.branchActions(th, step, b.actions);
    } else {
      const b = this.pick(th, step.on_result) ?? this.pick(th, step.on_success);
      if (b) {
        const r = this.branchActions(th, step, b.actions, true);
        if (r.kind !== 'go' || r.to) return r;
      }
    }
    if (step.on_input.length > 0) {
      this.setFlowPhase(th, 'input');
      return WAIT;
    }
    return go(step.then);
  }

  /**
   * The voice form of the step's RESPOND, rendered: `plain_text` like RESPOND, `ssml` with each
   * `{{ }}` value escaped as XML text (a variable never adds markup); null without a VOICE form.
   */
  private voiceOf(th: ThreadState, step: FlowStepIR): VoiceOutputIR | null {
    const v = step.voice_output;
    if (!v) return null;
    const out: VoiceOutputIR = {};
    if (v.ssml !== undefined) out.ssml = this.t.render(th, v.ssml, undefined, escapeXmlText);
    if (v.plain_text !== undefined) {
      const text = this.t.render(th, v.plain_text);
      if (text.trim()) out.plain_text = text;
    }
    return out.ssml !== undefined || out.plain_text !== undefined ? out : null;
  }

  private onInput(th: ThreadState, step: FlowStepIR, text: string): StepResult {
    const b = this.pick(th, step.on_input, text);
    if (!b) {
      const action = this.t.action;
      this.t.decision(th, action ? 'on_action' : 'on_input', `${step.name}: no match${action ? ` for action "${action.id}"` : ''}`);
      if (step.respond) this.t.guards.respond(th, this.t.render(th, step.respond), true, this.voiceOf(th, step));
      return WAIT;
    }
    const c = b.condition;
    if (c.kind === 'action') this.t.decision(th, 'on_action', `${step.name}: ${c.id}`);
    else this.t.decision(th, 'on_input', `${step.name}: ${c.kind === 'keyword' ? c.keyword : c.kind === 'expr' ? c.expr.src : 'ELSE'}`);
    this.setFlowPhase(th, 'enter');
    return this.branchActions(th, step, b.actions);
  }

  /** First matching branch; keywords match the user's message (ON_INPUT). */
  pick(th: ThreadState, branches: BranchIR[], text: string | null = null): BranchIR | null {
    const norm = (text ?? this.t.input ?? '').toLowerCase().replace(/[^\p{L}\p{N}\s]/gu, ' ').replace(/\s+/g, ' ').trim();
    for (const b of branches) {
      const c = b.condition;
      if (c.kind === 'else') return b;
      // ON_ACTION: only a structured action with that id, never typed text.
      if (c.kind === 'action') {
        if (text !== null && this.t.action?.id === c.id) return b;
        continue;
      }
      if (c.kind === 'keyword') {
        if (c.words.some((w) => norm === w || norm.startsWith(`${w} `))) return b;
        continue;
      }
      if (!c.expr.ast) continue;
      const ast = text !== null ? lowerInputComparisons(c.expr.ast) : c.expr.ast;
      if (this.t.cond(th, ast, text !== null ? { input: text.trim().toLowerCase() } : undefined)) return b;
    }
    return null;
  }

  /** Branch actions: SET, CLEAR, RESPOND, CALL, GATHER, THEN. Without THEN the step's own THEN follows (unless `soft`). */
  branchActions(th: ThreadState, step: FlowStepIR, a: ActionsIR, soft = false): StepResult {
    if (a.then?.kind === 'escalate') this.escalating();
    for (const set of a.set) this.t.setVar(th, set.target, this.t.eval(th, set.value));
    for (const c of a.clear) this.t.clearVar(th, c);
    if (a.respond) this.t.guards.respond(th, this.t.render(th, a.respond));
    if (a.call) {
      this.t.tools.runCall(th, a.call, step);
      if (!this.t.isActive(th)) return STOP;
    }
    if (a.gather) {
      const g = this.t.gathering.stepGather(th, { ...step, gather: a.gather }, null, false);
      if (g !== 'done') {
        // Waiting for the user: remember which branch asked, so the answer fills its GATHER.
        const ref = g.kind === 'wait' && th.flow?.phase === 'gather' ? locateBranch(step, a, soft) : null;
        if (ref && th.flow) th.flow.branchGather = ref;
        return g;
      }
    }
    if (a.then) return go(a.then);
    return soft ? go(null) : go(step.then);
  }

  /** The user's answer to a branch's GATHER: once it is complete, the branch's THEN (or the step's way on). */
  private answerBranchGather(th: ThreadState, step: FlowStepIR, a: ActionsIR, ref: BranchGatherRef, input: string | null): StepResult {
    const g = this.t.gathering.stepGather(th, { ...step, gather: a.gather }, input, true);
    if (g === 'done') {
      if (a.then) return go(a.then);
      if (ref.soft && step.on_input.length > 0) {
        this.setFlowPhase(th, 'input');
        return WAIT;
      }
      return go(step.then);
    }
    // Still asking (unless running out of retries moved the flow on, or another branch asked).
    if (g.kind === 'wait' && th.flow?.phase === 'gather' && !th.flow.branchGather) th.flow.branchGather = ref;
    return g;
  }

  private transform(th: ThreadState, t: NonNullable<FlowStepIR['transform']>): void {
    const src = this.t.eval(th, t.source);
    let items = Array.isArray(src) ? [...src] : [];
    if (t.filter) items = items.filter((it) => this.t.cond(th, t.filter, { [t.as]: it }));
    let out: unknown[] = items;
    if (Object.keys(t.map).length > 0) {
      out = items.map((it) => {
        const o: Record<string, unknown> = {};
        for (const [k, e] of Object.entries(t.map)) o[k] = this.t.eval(th, e, { [t.as]: it });
        return o;
      });
    }
    if (t.sort_by) {
      const { field, order } = t.sort_by;
      const get = (x: unknown): unknown => (x && typeof x === 'object' ? (x as Record<string, unknown>)[field] : undefined);
      let codeUnits: boolean | undefined;
      const text = (x: string, y: string): number => {
        codeUnits ??= codeUnitSortOn(this.t.options);
        return codeUnits ? compareCodeUnits(x, y) : x.localeCompare(y);
      };
      out = [...out].sort((a, b) => {
        const x = get(a);
        const y = get(b);
        const c = typeof x === 'number' && typeof y === 'number' ? x - y : text(String(x ?? ''), String(y ?? ''));
        return order === 'desc' ? -c : c;
      });
    }
    if (t.limit !== null) out = out.slice(0, t.limit);
    this.t.setVar(th, t.into, out);
  }
}

/** A value as XML character data (and attribute text): & < > " ' as entities. */
function escapeXmlText(text: string): string {
  return text.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&apos;'));
}
