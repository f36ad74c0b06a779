// The turn context: what one turn of the session interpreter works on and produces. It holds the
// session state being advanced, the turn's outputs (commands, replies, trace), the per-turn
// bookkeeping the sections share, and the primitives every section uses: `effect()` (the journal
// or a recorded command and `Suspend`), expression scope and evaluation, variables, trace and
// history. The sections (guards, gathering, flow, reasoning…) hang off it, so one section reaches
// another as `t.<section>`; turn.ts builds and wires them.

import { evaluate, evaluateCondition, type Scope } from '../expr/evaluate';
import type { EvalContext } from '../expr/context';
import type { Expr } from '../expr/ast';
import { renderTemplate } from '../template';
import { allFieldsGathered, SENSITIVE_MASK, sensitiveFields } from '../gather';
import type { AgentIR, CompilationOutput, ExprIR, Json, TransitionIR, VoiceOutputIR } from '../ir';
import type { SafeRegex } from '../regex';
import type {
  ChatTurn, PendingWait, RuntimeCommand, RuntimeError, RuntimeEvent, RuntimeOptions, SessionRuntimeState, ThreadState, TraceDraft, TurnExecution,
} from './contract';
import { Issued } from './parallel-tools';
import { preview, setPath, toJson } from './values';
import type { Delegation } from './delegation';
import type { Escalation } from './escalation';
import type { Flow } from './flow';
import type { Gathering } from './gathering';
import type { Guards } from './guards';
import type { Handoffs } from './handoff';
import type { Lifecycle } from './lifecycle';
import { type Memory, startingVars } from './memory';
import type { Nlu } from './nlu';
import type { OnError } from './on-error';
import type { Reasoning } from './reasoning';
import type { ToolCalls } from './tool-calls';
import type { TurnOrder } from './turn-order';

/** Unwinds the turn: an effect has no result yet. */
export class Suspend {
  readonly suspend = true;
}
/** Ends the turn early (a delegated child that cannot go on). */
export class EndTurn {
  readonly endTurn = true;
}

export const MAX_HISTORY = 40;
/** How much of a tool result or task text the LLM's history keeps. */
export const TOOL_RESULT_CHARS = 2000;

export type CommandDraft = RuntimeCommand extends infer C ? (C extends RuntimeCommand ? Omit<C, 'id'> : never) : never;
export type PendingDraft = PendingWait extends infer P ? (P extends PendingWait ? Omit<P, 'commandId'> : never) : never;
export type ToolOutcome = { ok: true; value: Json } | { ok: false; error: RuntimeError; blocked?: boolean };
/** Where a flow step leaves the flow: waiting for the user, stopped for this turn, or on to a transition. */
export type StepResult = { kind: 'wait' } | { kind: 'stop' } | { kind: 'go'; to: TransitionIR | null };
export const WAIT: StepResult = { kind: 'wait' };
export const STOP: StepResult = { kind: 'stop' };
export const go = (to: TransitionIR | null): StepResult => ({ kind: 'go', to });

/** A new thread (an agent's part of the session) with its session memory's initial values and `vars`. */
export function newThread(state: SessionRuntimeState, agent: AgentIR, vars: Record<string, Json>): ThreadState {
  const own = startingVars(state, agent);
  for (const p of agent.memory.persistent) {
    if (p.default !== undefined && state.memory[p.path] === undefined) state.memory[p.path] = toJson(p.default);
  }
  return {
    id: `t${state.seq++}`,
    agent: agent.metadata.name,
    status: 'active',
    vars: { ...own, ...vars },
    history: [],
    flow: null,
    returnTo: null,
    firedDelegates: [],
    startedOnce: false,
    askedField: null,
    lastReply: null,
  };
}

export class TurnContext {
  // The turn's outputs.
  readonly commands: RuntimeCommand[] = [];
  readonly responses: string[] = [];
  /** The voice form of each of `responses` (same index), null for one without. */
  readonly voices: Array<VoiceOutputIR | null> = [];
  readonly trace: TraceDraft[] = [];
  readonly outstanding: string[];
  readonly kinds: TurnExecution['kinds'];

  // The sections, wired by turn.ts.
  order!: TurnOrder;
  guards!: Guards;
  gathering!: Gathering;
  escalation!: Escalation;
  handoffs!: Handoffs;
  delegation!: Delegation;
  tools!: ToolCalls;
  errors!: OnError;
  lifecycle!: Lifecycle;
  flow!: Flow;
  reasoning!: Reasoning;
  nlu!: Nlu;
  memory!: Memory;

  /** The user's message as the agents see it, after input guardrails (null when none ran). */
  input: string | null = null;
  /** The message's metadata (`session.messageMetadata`). */
  meta: Record<string, Json> = {};
  /** The message's structured action (a button press), matched by ON_ACTION; null for typed text. */
  action: { id: string; value?: Json } | null = null;
  /** Handoffs so far this turn (bounded, against loops). */
  handoffsThisTurn = 0;
  /** Agents that returned this turn under ON_RETURN `resume_intent`: the replayed message is not handed back to them. */
  resumedFrom: string[] = [];
  /** Set by a constraint's ON_FAIL {GOTO}: the flow goes there instead of running the operation. */
  recoverGoto: string | null = null;
  /** Gather fields whose last answer was invalid (for retry prompts). */
  invalidFields = new Set<string>();
  /** A batch of parallel tool calls being issued, or bound with the ids issued (toolBatch). */
  batch: { mode: 'issue' | 'bind'; ids: string[] } | null = null;
  /** Operations blocked by a tool or handoff guardrail this turn (the reasoning loop stops on one). */
  guardBlocks = 0;
  /** Patterns `tool_input` guardrails redacted from tool arguments this turn (applied to the LLM's history too). */
  inputRedactions: SafeRegex[] = [];
  /** ON_ERROR's outcome for an llm_error in a flow's reasoning step, for the step to carry out. */
  reasoningFailure: StepResult | null = null;
  /** Moderation verdicts of this turn by provider and text, so guardrails on the same text share one call. */
  readonly moderations = new Map<string, RuntimeEvent>();
  /** True while a reply must not be held to `BEFORE returning results` (a check or a refusal runs). */
  returning = false;

  constructor(
    readonly compiled: CompilationOutput,
    readonly options: RuntimeOptions,
    readonly s: SessionRuntimeState,
    readonly exec: TurnExecution,
    readonly ctx: EvalContext,
  ) {
    this.outstanding = [...exec.outstanding];
    this.kinds = { ...exec.kinds };
  }

  /** Rule checkpoints (tool and handoff guardrails, `BEFORE returning results`) are on unless replaying older runs. */
  get checkpointsOn(): boolean {
    return this.options.ruleCheckpoints !== false;
  }

  effect(draft: CommandDraft, wait: PendingDraft | null): RuntimeEvent {
    const batch = this.batch;
    const id = (batch?.mode === 'bind' ? batch.ids.shift() : undefined) ?? `c${this.s.seq++}`;
    const got = this.exec.journal[id];
    // Issuing a batch: record the command (unless answered) and go on with the next call.
    if (batch?.mode === 'issue') batch.ids.push(id);
    else if (got) return got;
    if (!got) {
      const cmd = { ...draft, id } as RuntimeCommand;
      this.kinds[id] = cmd.type;
      if (!this.outstanding.includes(id)) {
        this.outstanding.push(id);
        this.commands.push(cmd);
      }
    }
    if (wait) {
      // A confirmation waits for the user's next message, not for something outside: the session stays active.
      if (wait.kind !== 'confirmation') this.s.status = 'suspended';
      this.s.pending = { ...wait, commandId: id } as PendingWait;
    }
    throw batch?.mode === 'issue' ? new Issued() : new Suspend();
  }

  agent(th: ThreadState): AgentIR {
    const a = this.compiled.agents[th.agent];
    if (!a) throw new Error(`Unknown agent ${th.agent}`);
    return a;
  }

  active(): ThreadState | undefined {
    for (let i = this.s.threads.length - 1; i >= 0; i--) {
      const t = this.s.threads[i] as ThreadState;
      if (t.status === 'active' || t.status === 'suspended' || t.status === 'escalated') return t;
    }
    return undefined;
  }

  isActive(th: ThreadState): boolean {
    return th.status === 'active' && this.active() === th && this.s.status !== 'completed';
  }

  scope(th: ThreadState, extra: Record<string, unknown> = {}): Scope {
    const agent = this.compiled.agents[th.agent];
    return (name: string): unknown => {
      if (Object.hasOwn(extra, name)) return extra[name];
      if (name === 'input') return this.input ?? '';
      // Per-turn metadata: `session.messageMetadata.x` in prompts and expressions, `message_metadata.x`
      // as tools see it, and bare keys for backwards compatibility.
      if (name === 'session') {
        const own = th.vars.session;
        return { ...(own && typeof own === 'object' && !Array.isArray(own) ? own : {}), messageMetadata: this.meta };
      }
      if (name === 'message_metadata') return this.meta;
      if (Object.hasOwn(this.meta, name)) return this.meta[name];
      // This turn's NLU classification for the thread (`intent.category`, …), over a variable of that name.
      if (name === 'intent') {
        const classified = this.nlu.intentOf(th);
        if (classified) return classified;
      }
      if (Object.hasOwn(th.vars, name)) return th.vars[name];
      // The turn's button press (`action.id`, `action.value`), unless a variable has that name.
      if (name === 'action' && this.action) return this.action;
      if (name === 'all_fields_gathered') {
        const stepFields = agent?.flow && th.flow ? agent.flow.steps[th.flow.step]?.gather?.fields ?? [] : [];
        const fields = [...(agent?.gather ?? []), ...stepFields];
        return allFieldsGathered(fields, th.vars, this.gathering.fieldRules(th, fields) ?? undefined);
      }
      return this.memoryRoot(name, th);
    };
  }

  /**
   * The facts under `name` the thread may read (memory.ts), as one value; `user` starts from the
   * session's contact (`user.id`, `user.display_name`, …), a fact of the same path over it.
   */
  memoryRoot(name: string, th?: ThreadState): unknown {
    const readable = th ? this.memory.readable(th) : null;
    let found: Record<string, Json> | undefined;
    for (const [path, v] of Object.entries(this.s.memory)) {
      if (readable && !readable.has(path)) continue;
      if (path === name) return v;
      if (path.startsWith(`${name}.`)) {
        found ??= {};
        setPath(found, path.slice(name.length + 1), v);
      }
    }
    if (name === 'user' && this.s.user) return { ...this.s.user, ...(found ?? {}) };
    return found;
  }

  eval(th: ThreadState, e: ExprIR | Expr | null, extra?: Record<string, unknown>): unknown {
    const ast = e && 'src' in e ? e.ast : e;
    if (!ast) return undefined;
    return evaluate(ast, this.scope(th, extra), this.ctx);
  }

  cond(th: ThreadState, e: ExprIR | Expr | null, extra?: Record<string, unknown>): boolean {
    const ast = e && 'src' in e ? e.ast : e;
    if (!ast) return false;
    return evaluateCondition(ast, this.scope(th, extra), this.ctx);
  }

  render(th: ThreadState, text: string, extra?: Record<string, unknown>, escape?: (text: string) => string): string {
    return renderTemplate(text, this.scope(th, extra), this.ctx, escape);
  }

  /** `source: 'gather'` marks a value a GATHER collected (analytics count those apart). */
  setVar(th: ThreadState, name: string, value: unknown, source?: 'gather'): void {
    const v = toJson(value);
    const agent = this.compiled.agents[th.agent];
    if (this.memory.on(th) && this.memory.access(th, name) !== null) {
      // A declared or granted persistent path: written as a fact, unless the agent may only read it.
      if (!this.memory.write(th, name, v, null, `SET ${name}`)) return;
    } else if (agent?.memory.persistent.some((p) => p.path === name && p.access !== 'read')) this.s.memory[name] = v;
    else if (name.includes('.')) setPath(th.vars, name, v);
    else th.vars[name] = v;
    const shown = agent && sensitiveFields(agent).has(name) && v !== null ? SENSITIVE_MASK : preview(v, 500);
    this.trace.push({ type: 'state_change', data: { agent: th.agent, variable: name, value: shown, ...(source ? { source } : {}) } });
  }

  clearVar(th: ThreadState, name: string): void {
    // CLEAR of a persistent path the agent may write deletes the fact.
    if (Object.hasOwn(this.s.memory, name) && this.s.memory[name] !== null && this.memory.on(th) && this.memory.access(th, name) !== null) {
      if (this.memory.write(th, name, null, null, `CLEAR ${name}`)) this.trace.push({ type: 'state_change', data: { agent: th.agent, variable: name, value: null } });
      return;
    }
    if (!Object.hasOwn(th.vars, name)) return;
    delete th.vars[name];
    this.trace.push({ type: 'state_change', data: { agent: th.agent, variable: name, value: null } });
  }

  decision(th: ThreadState | null, decisionKind: string, decision: string, reasoning?: string): void {
    const data: { decisionKind: string; decision: string; agent: string; reasoning?: string } = { decisionKind, decision, agent: th?.agent ?? '' };
    if (reasoning !== undefined) data.reasoning = reasoning;
    this.trace.push({ type: 'decision', data });
  }

  error(th: ThreadState | null, kind: string, message: string, tool?: string): void {
    this.trace.push({ type: 'error', data: { agent: th?.agent ?? '', kind, message, ...(tool !== undefined ? { tool } : {}) } });
  }

  pushHistory(th: ThreadState, turn: ChatTurn): void {
    th.history.push(turn);
    if (th.history.length > MAX_HISTORY) th.history.splice(0, th.history.length - MAX_HISTORY);
  }

  message(th: ThreadState, key: string, fallback: string): string {
    return this.agent(th).messages[key] ?? fallback;
  }
}
