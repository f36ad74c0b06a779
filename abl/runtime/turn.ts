// One turn of the session interpreter. A Turn runs the per-turn order of ABL.md §9 against a
// working copy of the session state. Effects (LLM, tools, delegation, escalation, callbacks) go
// through `effect()`: it answers from the turn's journal when the workflow already returned the
// result, and otherwise records the command and unwinds with `Suspend`. The caller (interpreter.ts)
// replays the turn from its snapshot each time a result arrives, so this code reads top to bottom
// with no explicit continuations. Everything here is pure and deterministic.

import { evaluate, evaluateCondition, type Scope } from '../expr/evaluate';
import type { EvalContext } from '../expr/context';
import type { Expr } from '../expr/ast';
import { renderTemplate } from '../template';
import { allFieldsGathered, extractGatherValues, fieldActivity, nextFieldToAsk, pendingDefaults, SENSITIVE_MASK, sensitiveFields, usesFieldRules, fieldsForRules, stepGatherFields, type FieldActive } from '../gather';
import type {
  ActionsIR, AgentIR, BranchIR, CallIR, CompilationOutput, DelegateIR, ErrorHandlerIR, ExprIR, FlowStepIR, GatherFieldIR,
  GuardrailIR, HandoffIR, Json, LifecycleIR, ToolIR, TransitionIR,
} from '../ir';
import { agentHook, type AgentHookPoint, type AgentHookTrigger } from './agent-hooks';
import { answersFirst, guardText, redactJson, redactToolCalls } from './checkpoints';
import type {
  ChatTurn, DelegateOutcome, PendingWait, RuntimeCommand, RuntimeError, RuntimeEvent, RuntimeOptions, SessionRuntimeState,
  ThreadState, TraceDraft, TurnExecution,
} from './contract';
import { actionText, findDigression } from './digressions';
import { gatherFromMessage, inferTopLevel, judgeValues, type ExtractionCall, type ExtractionHost, type InferenceInput } from './gather-llm';
import { answerInferred, applyInferred, confirmationPrompt, conversationLines, inferenceSkip, type InferenceHooks } from './gather-infer';
import { branchesOf, FAN_OUT_TOOL, fanOutResult, fanOutToolSpec, planFanOut, type FanOutBranch } from './fan-out';
import { batchable, Issued } from './parallel-tools';
import { agentErrorTransitionsOn, branchGatherOn, codeUnitSortOn, gatherFieldRulesOn, gatherInferOn, parallelEnabled } from './options';
import { branchOf, locateBranch, type BranchGatherRef } from './branch-gather';
import type { SafeRegex } from '../regex';
import {
  clone, compareCodeUnits, identifiers, isSetValue, llmLimits, lowerInputComparisons, paramsSchema, preview, redactionPatterns, setPath, toJson, truncate,
} from './values';

/** Unwinds the turn: an effect has no result yet. */
export class Suspend {
  readonly suspend = true;
}
/** Ends the turn early (a delegated child that cannot go on). */
export class EndTurn {
  readonly endTurn = true;
}

/** Guardrail `check` is a pass predicate (fires when false). Flip here if the polarity changes. */
export const GUARDRAIL_CHECK_IS_PASS = true;
export const MAX_HISTORY = 40;
const TOOL_RESULT_CHARS = 2000;
const MAX_HANDOFFS_PER_TURN = 5;
const DEFAULT_ERROR = 'Sorry, something went wrong. Please try again.';
const SKIPPED_AFTER_BLOCK: Json = { error: 'Not run: another call in this answer was blocked by a guardrail.' };
const SKIPPED_IN_BATCH: ToolOutcome = { ok: false, blocked: true, error: { kind: 'guardrail', message: SKIPPED_AFTER_BLOCK.error as string } };

type CommandDraft = RuntimeCommand extends infer C ? (C extends RuntimeCommand ? Omit<C, 'id'> : never) : never;
type PendingDraft = PendingWait extends infer P ? (P extends PendingWait ? Omit<P, 'commandId'> : never) : never;
type ToolOutcome = { ok: true; value: Json } | { ok: false; error: RuntimeError; blocked?: boolean };
type StepResult = { kind: 'wait' } | { kind: 'stop' } | { kind: 'go'; to: TransitionIR | null };

/** Flow phases in which the step waits for the user, so a message may digress. */
const WAITING_PHASES = new Set(['gather', 'input', 'reasoning']);
const WAIT: StepResult = { kind: 'wait' };
const STOP: StepResult = { kind: 'stop' };
const go = (to: TransitionIR | null): StepResult => ({ kind: 'go', to });

export function newThread(state: SessionRuntimeState, agent: AgentIR, vars: Record<string, Json>): ThreadState {
  const own: Record<string, Json> = {};
  for (const m of agent.memory.session) if (m.initial !== undefined) own[m.name] = toJson(m.initial);
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

export class Turn {
  readonly commands: RuntimeCommand[] = [];
  readonly responses: string[] = [];
  readonly trace: TraceDraft[] = [];
  readonly outstanding: string[];
  readonly kinds: TurnExecution['kinds'];
  private readonly ctx: EvalContext;
  private input: string | null = null;

  /** The user's message as the agents saw it, after input guardrails (null when none ran). */
  get userText(): string | null {
    return this.input;
  }
  private meta: Record<string, Json> = {};
  private handoffs = 0;
  /** Set by a constraint's ON_FAIL {GOTO}: the flow goes there instead of running the operation. */
  private recoverGoto: string | null = null;
  /** Gather fields whose last answer was invalid (for retry prompts). */
  private invalidFields = new Set<string>();
  /** A batch of parallel tool calls being issued, or bound with the ids issued (toolBatch). */
  private batch: { mode: 'issue' | 'bind'; ids: string[] } | null = null;
  /** Operations blocked by a tool or handoff guardrail this turn (the reasoning loop stops on one). */
  private guardBlocks = 0;
  /** Patterns `tool_input` guardrails redacted from tool arguments this turn (applied to the LLM's history too). */
  private inputRedactions: SafeRegex[] = [];
  /** ON_ERROR's outcome for an llm_error in a flow's reasoning step, for the step to carry out. */
  private reasoningFailure: StepResult | null = null;
  /** True while a reply must not be held to `BEFORE returning results` (a check or a refusal runs). */
  private returning = false;

  constructor(
    private readonly compiled: CompilationOutput,
    private readonly options: RuntimeOptions,
    readonly s: SessionRuntimeState,
    private readonly exec: TurnExecution,
    ctx: EvalContext,
  ) {
    this.outstanding = [...exec.outstanding];
    this.kinds = { ...exec.kinds };
    this.ctx = ctx;
  }

  // ------------------------------------------------------------------ entry points

  run(event: RuntimeEvent): void {
    if (event.type === 'start') this.runStart(event);
    else if (event.type === 'user_message') this.runMessage(event.text, event.metadata ?? {});
  }

  private runStart(ev: Extract<RuntimeEvent, { type: 'start' }>): void {
    this.s.turn++;
    const th = this.active();
    if (!th) return;
    const agent = this.agent(th);
    for (const [k, v] of Object.entries({ ...(ev.sessionVariables ?? {}), ...(ev.gatherValues ?? {}) })) this.setVar(th, k, v);
    if (ev.startAtStep && agent.flow?.steps[ev.startAtStep]) th.flow = { step: ev.startAtStep, phase: 'enter', attempts: {} };
    this.runAgentHook(th, 'before_agent', this.s.mode === 'delegate' ? 'delegated' : 'session start');
    if (!ev.skipOnStart) this.lifecycle(th, agent.on_start);
    th.startedOnce = true;
    if (this.s.mode === 'delegate') {
      const task = `Task for ${agent.metadata.name}. Input: ${JSON.stringify(th.vars)}`;
      if (!agent.flow) this.pushHistory(th, { role: 'user', content: truncate(task, TOOL_RESULT_CHARS) });
      if (th.status === 'active') this.agentTurn(th, null, true);
      const still = this.s.threads.find((t) => t.id === th.id);
      if (this.s.status !== 'completed' && still && still.status !== 'completed') {
        this.failDelegate({ kind: 'needs_input', message: `${agent.metadata.name} needs user input, which a delegated agent cannot get.` });
      }
      return;
    }
    if (agent.flow && th.status === 'active') {
      this.runFlow(th, null);
      if (th.status === 'active' && this.active() === th) this.checkCompletion(th);
    }
    this.remember();
  }

  private runMessage(text: string, meta: Record<string, Json>): void {
    this.s.turn++;
    const th = this.active();
    if (!th) {
      this.error(null, 'no_active_thread', 'The session has no active agent.');
      return;
    }
    const agent = this.agent(th);
    this.meta = meta;
    const g = this.guardrails(th, agent, 'input', text);
    if (g.blocked !== null) {
      this.respond(th, g.blocked, false);
      return;
    }
    this.input = g.text;
    this.pushHistory(th, { role: 'user', content: truncate(g.text, 4000) });
    this.lifecycle(th, agent.hooks.before_turn ?? null);
    this.agentTurn(th, g.text, false);
    const after = this.active();
    if (after && after.status === 'active') this.lifecycle(after, this.agent(after).hooks.after_turn ?? null);
    this.remember();
  }

  /** Steps 3–7 and 9 of the per-turn order for one thread (re-entered after a handoff). */
  private agentTurn(th: ThreadState, input: string | null, delegated: boolean): void {
    const agent = this.agent(th);
    // Digressions take the message before any gather extraction sees it (ABL.md §8).
    if (input !== null && this.digress(th, agent, input)) {
      if (this.isActive(th)) this.checkCompletion(th);
      return;
    }
    if (input !== null) this.extractTopGather(th, agent, input);
    // A flow waiting inside a step (GATHER, ON_INPUT) checks 4–6 at its next step transition instead,
    // so a trigger on a field being gathered fires once the step completes (ABL.md §15.2).
    const midStep = !!agent.flow && !!th.flow && th.flow.phase !== 'enter' && th.flow.phase !== 'done';
    if (!midStep) {
      if (this.checkEscalation(th) === 'stop' || !this.isActive(th)) return;
      const h = this.selectHandoff(th);
      if (h) {
        this.handoff(th, h, input, `WHEN ${h.when.src}`);
        return;
      }
      this.autoDelegates(th);
      if (!this.isActive(th)) return;
    }
    if (agent.flow) this.runFlow(th, input);
    else if (!this.completionReady(th)) {
      const missing = agent.gather.length > 0 && !delegated ? this.askTopGather(th, agent) : false;
      if (!missing) this.runReasoning(th, input, null);
    }
    if (this.isActive(th)) this.checkCompletion(th);
  }

  // ------------------------------------------------------------------ effects

  private effect(draft: CommandDraft, wait: PendingDraft | null): RuntimeEvent {
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
      this.s.status = 'suspended';
      this.s.pending = { ...wait, commandId: id } as PendingWait;
    }
    throw batch?.mode === 'issue' ? new Issued() : new Suspend();
  }

  // ------------------------------------------------------------------ helpers

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

  private isActive(th: ThreadState): boolean {
    return th.status === 'active' && this.active() === th && this.s.status !== 'completed';
  }

  private scope(th: ThreadState, extra: Record<string, unknown> = {}): Scope {
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
      if (Object.hasOwn(th.vars, name)) return th.vars[name];
      if (name === 'all_fields_gathered') {
        const stepFields = agent?.flow && th.flow ? agent.flow.steps[th.flow.step]?.gather?.fields ?? [] : [];
        const fields = [...(agent?.gather ?? []), ...stepFields];
        return allFieldsGathered(fields, th.vars, this.fieldRules(th, fields) ?? undefined);
      }
      return this.memoryRoot(name);
    };
  }

  private memoryRoot(name: string): unknown {
    let found: Record<string, Json> | undefined;
    for (const [path, v] of Object.entries(this.s.memory)) {
      if (path === name) return v;
      if (path.startsWith(`${name}.`)) {
        found ??= {};
        setPath(found, path.slice(name.length + 1), v);
      }
    }
    return found;
  }

  private eval(th: ThreadState, e: ExprIR | Expr | null, extra?: Record<string, unknown>): unknown {
    const ast = e && 'src' in e ? e.ast : e;
    if (!ast) return undefined;
    return evaluate(ast, this.scope(th, extra), this.ctx);
  }

  private cond(th: ThreadState, e: ExprIR | Expr | null, extra?: Record<string, unknown>): boolean {
    const ast = e && 'src' in e ? e.ast : e;
    if (!ast) return false;
    return evaluateCondition(ast, this.scope(th, extra), this.ctx);
  }

  private render(th: ThreadState, text: string, extra?: Record<string, unknown>): string {
    return renderTemplate(text, this.scope(th, extra), this.ctx);
  }

  setVar(th: ThreadState, name: string, value: unknown): void {
    const v = toJson(value);
    const agent = this.compiled.agents[th.agent];
    const persistent = agent?.memory.persistent.find((p) => p.path === name && p.access !== 'read');
    if (persistent) this.s.memory[name] = v;
    else if (name.includes('.')) setPath(th.vars, name, v);
    else th.vars[name] = v;
    const shown = agent && sensitiveFields(agent).has(name) && v !== null ? SENSITIVE_MASK : preview(v, 500);
    this.trace.push({ type: 'state_change', data: { agent: th.agent, variable: name, value: shown } });
  }

  private clearVar(th: ThreadState, name: string): void {
    if (!Object.hasOwn(th.vars, name)) return;
    delete th.vars[name];
    this.trace.push({ type: 'state_change', data: { agent: th.agent, variable: name, value: null } });
  }

  private decision(th: ThreadState | null, decisionKind: string, decision: string, reasoning?: string): void {
    const data: { decisionKind: string; decision: string; agent: string; reasoning?: string } = { decisionKind, decision, agent: th?.agent ?? '' };
    if (reasoning !== undefined) data.reasoning = reasoning;
    this.trace.push({ type: 'decision', data });
  }

  error(th: ThreadState | null, kind: string, message: string): void {
    this.trace.push({ type: 'error', data: { agent: th?.agent ?? '', kind, message } });
  }

  private pushHistory(th: ThreadState, turn: ChatTurn): void {
    th.history.push(turn);
    if (th.history.length > MAX_HISTORY) th.history.splice(0, th.history.length - MAX_HISTORY);
  }

  /** Sends a reply (through the output guardrails) and records it. */
  private respond(th: ThreadState, text: string, guard = true): void {
    if (guard && !this.resultsMayReturn(th)) return;
    let out = text;
    if (guard) {
      const g = this.guardrails(th, this.agent(th), 'output', text);
      out = g.blocked ?? g.text;
    }
    if (!out.trim()) return;
    this.responses.push(out);
    this.trace.push({ type: 'response', data: { agent: th.agent, text: out } });
    th.lastReply = out;
    this.pushHistory(th, { role: 'assistant', content: out });
  }

  /** A refusal (constraint ON_FAIL, guardrail block): a reply, but no result to hold back. */
  private refuse(th: ThreadState, text: string): void {
    const was = this.returning;
    this.returning = true;
    try {
      this.respond(th, text);
    } finally {
      this.returning = was;
    }
  }

  private message(th: ThreadState, key: string, fallback: string): string {
    return this.agent(th).messages[key] ?? fallback;
  }

  // ------------------------------------------------------------------ guardrails

  /**
   * Runs the agent's guardrails of one kind on `text` (bound as `input` and `output`, plus
   * `extra`). `patterns` are the redactions applied, for callers that redact JSON values too.
   */
  guardrails(
    th: ThreadState, agent: AgentIR, kind: GuardrailIR['kind'], text: string, extra: Record<string, unknown> = {},
  ): { text: string; blocked: string | null; patterns: SafeRegex[] } {
    let current = text;
    const patterns: SafeRegex[] = [];
    for (const g of agent.guardrails) {
      if (g.kind !== kind || !g.check?.ast) continue;
      const passed = evaluateCondition(g.check.ast, this.scope(th, { ...extra, input: current, output: current }), this.ctx);
      const fires = GUARDRAIL_CHECK_IS_PASS ? !passed : passed;
      this.trace.push({ type: 'guardrail_eval', data: { guardrail: g.name, kind, passed: !fires, action: g.action, agent: agent.metadata.name } });
      if (!fires) continue;
      if (g.action === 'block') return { text: current, blocked: g.message ?? "Sorry, I can't help with that.", patterns };
      if (g.action === 'redact') {
        for (const re of redactionPatterns(g.check.ast)) {
          patterns.push(re);
          current = re.replaceAll(current, '[REDACTED]');
        }
      }
      // warn and the phase-2 actions only log.
    }
    return { text: current, blocked: null, patterns };
  }

  // ------------------------------------------------------------------ rule checkpoints

  private get checkpointsOn(): boolean {
    return this.options.ruleCheckpoints !== false;
  }

  /**
   * `tool_input` / `tool_output` guardrails on a tool's arguments or result (`tool` and `args` or
   * `result` are in scope). A block sends the guardrail's message and drops the operation.
   */
  private guardTool(th: ThreadState, kind: 'tool_input' | 'tool_output', tool: ToolIR, value: Json): { value: Json } | { blocked: ToolOutcome } {
    if (!this.checkpointsOn) return { value };
    const agent = this.agent(th);
    if (!agent.guardrails.some((g) => g.kind === kind)) return { value };
    const g = this.guardrails(th, agent, kind, guardText(value), { tool: tool.name, [kind === 'tool_input' ? 'args' : 'result']: value });
    if (g.blocked === null) {
      const redacted = redactJson(value, g.patterns);
      if (kind === 'tool_input' && g.patterns.length > 0 && JSON.stringify(redacted) !== JSON.stringify(value)) this.inputRedactions.push(...g.patterns);
      return { value: redacted };
    }
    this.guardBlocks++;
    this.refuse(th, this.render(th, g.blocked, { tool: tool.name }));
    const what = kind === 'tool_input' ? 'call to' : 'result of';
    return { blocked: { ok: false, blocked: true, error: { kind: 'guardrail', message: `The ${what} ${tool.name} was blocked by a guardrail.` } } };
  }

  /**
   * `handoff` guardrails before a switch (the summary is `input`; `target` is in scope). Returns
   * null when one blocks (its message is sent). A redaction is applied to the passed `vars` here;
   * the returned patterns are for the history the target receives.
   */
  private guardHandoff(from: ThreadState, to: string, vars: Record<string, Json>): SafeRegex[] | null {
    if (!this.checkpointsOn) return [];
    const agent = this.agent(from);
    if (!agent.guardrails.some((g) => g.kind === 'handoff')) return [];
    const g = this.guardrails(from, agent, 'handoff', guardText(vars._handoff_summary ?? null), { target: to });
    if (g.blocked !== null) {
      this.guardBlocks++;
      this.refuse(from, this.render(from, g.blocked, { target: to }));
      return null;
    }
    for (const [k, v] of Object.entries(vars)) vars[k] = redactJson(v, g.patterns);
    return g.patterns;
  }

  /** `BEFORE returning results` constraints, before an agent reply is sent; false drops the reply. */
  private resultsMayReturn(th: ThreadState): boolean {
    if (!this.checkpointsOn || this.returning) return true;
    if (!this.agent(th).constraints.some((c) => c.checkpoint.kind === 'before_returning')) return true;
    this.returning = true;
    try {
      return this.constraintsOk(th, null, 'return results', true);
    } finally {
      this.returning = false;
    }
  }

  // ------------------------------------------------------------------ gather

  private extractTopGather(th: ThreadState, agent: AgentIR, input: string): void {
    if (agent.gather.length === 0) return;
    const llmOn = this.options.gatherLlm !== false;
    let asked = agent.gather.some((f) => f.name === th.askedField) ? th.askedField ?? null : null;
    // A yes or no to "Just to confirm…" (GATHER infer) is not a value of the field.
    const confirmation = asked ? answerInferred(th, input, this.inferHooks(th)) : 'none';
    if (confirmation === 'confirmed' || confirmation === 'rejected') th.askedField = asked = null;
    const fields = this.gatherFields(th, agent.gather).fields;
    const ex = extractGatherValues(fields, input, { existing: th.vars, expecting: asked });
    for (const bad of ex.invalid) this.invalidFields.add(bad.field);
    const modelRead = llmOn ? inferTopLevel(this.gatherHost(th), fields === agent.gather ? agent : { ...agent, gather: [...fields] }, input, ex.values, th.vars, asked, this.inference(th)) : null;
    for (const bad of modelRead?.invalid ?? []) this.invalidFields.add(bad.field);
    const values = { ...modelRead?.values, ...ex.values };
    // LLM-judged validate rules, as in a step GATHER: a value judged invalid is a failed validation.
    const judged = llmOn ? judgeValues(this.gatherHost(th), agent, agent.gather, values) : { values, invalid: [] };
    for (const bad of judged.invalid) this.invalidFields.add(bad);
    for (const [k, v] of Object.entries(judged.values)) this.setVar(th, k, v);
    applyInferred(th, agent.gather, modelRead?.inferred ?? [], this.inferHooks(th));
    if (asked && Object.hasOwn(judged.values, asked)) th.askedField = null;
  }

  /**
   * GATHER field rules (`depends_on`, `activation`, `default`; ABL.md §6) for `fields`: which are
   * active now, or null when none uses them or the run predates them (patch gather-field-rules-v1,
   * asked only here).
   */
  private fieldRules(th: ThreadState, fields: readonly GatherFieldIR[]): FieldActive | null {
    if (!fields.some(usesFieldRules) || !gatherFieldRulesOn(this.options)) return null;
    return fieldActivity(fields, th.vars, (when) => this.cond(th, when));
  }

  /**
   * A GATHER's fields as extraction and validation see them (`range` and `list` as the field rules
   * say: on, or off for runs recorded before them), with those rules (null when off or unused).
   */
  private gatherFields(th: ThreadState, stated: readonly GatherFieldIR[]): { fields: readonly GatherFieldIR[]; rules: FieldActive | null } {
    const rules = this.fieldRules(th, stated);
    return { fields: stated.some(usesFieldRules) ? fieldsForRules(stated, rules !== null) : stated, rules };
  }

  /** Leaving `step` for another step: the `transient` fields its GATHERs (the branches' too) collected are cleared. */
  private forgetTransient(th: ThreadState, step: FlowStepIR): void {
    const fields = stepGatherFields(step);
    if (!fields.some((f) => f.transient) || !this.fieldRules(th, fields)) return;
    for (const f of fields) if (f.transient) this.clearVar(th, f.name);
  }

  /** The GATHER is complete: its unset active fields with a `default` take it. */
  private applyDefaults(th: ThreadState, fields: readonly GatherFieldIR[], active: FieldActive): void {
    for (const [name, value] of pendingDefaults(fields, th.vars, active)) this.setVar(th, name, value);
  }

  /** GATHER `infer` for this message: the conversation, asked for only when a field could be inferred. */
  private inference(th: ThreadState): InferenceInput {
    return { context: () => (gatherInferOn(this.options) ? conversationLines(th) : null), skip: inferenceSkip(th) };
  }

  private inferHooks(th: ThreadState): InferenceHooks {
    return { set: (name, value) => this.setVar(th, name, value), decision: (decision, reasoning) => this.decision(th, 'inference', decision, reasoning) };
  }

  /** What the GATHER LLM calls need of the turn: journalled effects and trace drafts. */
  private gatherHost(th: ThreadState): ExtractionHost {
    return {
      call: (d: ExtractionCall) => this.effect(d, null),
      error: (kind: string, msg: string) => this.error(th, kind, msg),
      decision: (kind: string, what: string, why: string) => this.decision(th, kind, what, why),
    };
  }

  /**
   * Reasoning agents ask for missing top-level GATHER fields deterministically. True when it
   * asked (or answered otherwise). After `max_retries` answers that did not fill the field, it is
   * a `validation_error` handled by the agent's ON_ERROR (else MESSAGES.error_default), and the
   * field is asked afresh at the next message unless that handler ended the agent.
   */
  private askTopGather(th: ThreadState, agent: AgentIR): boolean {
    const rules = this.fieldRules(th, agent.gather);
    const missing = rules ? nextFieldToAsk(agent.gather, th.vars, rules, false) : agent.gather.find((f) => f.required && !isSetValue(th.vars[f.name]));
    // Nothing left to ask: the fields nobody gave take their defaults before the agent goes on.
    if (rules && !missing) this.applyDefaults(th, agent.gather, rules);
    const retry = !!missing && th.askedField === missing.name && (this.invalidFields.has(missing.name) || this.input !== null);
    if (!retry) delete th.askedRetries;
    if (!missing) return false;
    if (retry) {
      const n = (th.askedRetries ?? 0) + 1;
      if (missing.max_retries !== null && n > missing.max_retries && agentErrorTransitionsOn(this.options)) {
        delete th.askedRetries;
        th.askedField = null;
        this.error(th, 'validation_error', `No valid ${missing.name} after ${missing.max_retries} retries`);
        return this.agentLevelError(th, 'validation_error') === 'stop';
      }
      th.askedRetries = n;
    }
    this.respond(th, this.render(th, this.promptFor(th, missing, retry)));
    th.askedField = missing.name;
    return true;
  }

  /** The question for a missing field: a confirmation when an inferred value awaits one. */
  private promptFor(th: ThreadState, f: GatherFieldIR, retry: boolean): string {
    return confirmationPrompt(th, f, this.agent(th).messages.confirm_inferred ?? null) ?? (retry ? f.retry_prompt : null) ?? f.prompt ?? `Please provide your ${f.name.replace(/_/g, ' ')}.`;
  }

  // ------------------------------------------------------------------ escalation

  private checkEscalation(th: ThreadState): 'continue' | 'stop' {
    const esc = this.agent(th).coordination.escalation;
    if (!esc) return 'continue';
    for (const t of esc.triggers) {
      if (t.when.ast && this.cond(th, t.when)) {
        return this.escalate(th, t.reason ? this.render(th, t.reason) : `Escalation: ${t.when.src}`, t.priority, t.tags);
      }
    }
    return 'continue';
  }

  /** Creates a human task, suspends, and applies on_human_complete once it is resolved. */
  private escalate(th: ThreadState, reason: string, priority = 'medium', tags: string[] = []): 'continue' | 'stop' {
    if (this.s.mode === 'delegate') this.failDelegate({ kind: 'escalation', message: `Delegated agent escalated: ${reason}` });
    const agent = this.agent(th);
    const esc = agent.coordination.escalation;
    const context: Record<string, Json> = {};
    for (const k of esc?.context_for_human ?? []) {
      if (k === 'conversation_history') context[k] = th.history.slice(-10).map((t) => `${t.role}: ${truncate(t.content, 300)}`);
      else context[k] = toJson(this.eval(th, { type: 'Ident', name: k, pos: 0 }));
    }
    this.decision(th, 'escalate', reason);
    // The user hears something even when nothing else was said this turn.
    if (this.responses.length === 0) this.respond(th, this.message(th, 'escalated', 'I have passed this to a member of our team. I will continue as soon as they respond.'));
    th.status = 'escalated';
    const ev = this.effect({ type: 'escalate', agent: th.agent, reason, priority, tags, context }, { kind: 'human_task', reason });
    th.status = 'active';
    this.s.status = 'active';
    this.s.pending = null;
    let human: Record<string, Json>;
    if (ev.type === 'human_resolved') {
      const r = ev.resolution;
      const fields = r.fields && typeof r.fields === 'object' && !Array.isArray(r.fields) ? r.fields : {};
      const decision = typeof r.decision === 'string' ? r.decision : null;
      human = {
        ...fields,
        ...r,
        decision,
        notes: r.notes ?? null,
        resolved: true,
        approved: typeof r.approved === 'boolean' ? r.approved : decision === 'approved',
        rejected: typeof r.rejected === 'boolean' ? r.rejected : decision === 'rejected',
      };
    } else {
      human = { resolved: false, expired: true, approved: false, rejected: false, decision: null };
    }
    this.setVar(th, 'human', human);
    for (const rule of esc?.on_human_complete ?? []) {
      if (rule.condition && !this.cond(th, rule.condition)) continue;
      this.decision(th, 'human_complete', rule.action.kind);
      if (rule.action.kind === 'complete') {
        // A COMPLETE rule that now holds supplies the closing message and STORE.
        const c = agent.completion.find((x) => x.when.ast !== null && this.cond(th, x.when));
        this.completeAgent(th, c?.respond ? this.render(th, c.respond) : null, c?.store ?? null);
        return 'stop';
      }
      if (rule.action.kind === 'handoff') {
        this.handoff(th, syntheticHandoff(rule.action.agent), this.input, 'human task resolved');
        return 'stop';
      }
      return 'continue';
    }
    return 'continue';
  }

  // ------------------------------------------------------------------ constraints

  /** Runs the constraints for a checkpoint; false when one failed (its ON_FAIL was applied). */
  private constraintsOk(th: ThreadState, tool: string | null, operation: string, returning = false): boolean {
    const agent = this.agent(th);
    for (const c of agent.constraints) {
      const applies = returning
        ? c.checkpoint.kind === 'before_returning'
        : c.checkpoint.kind === 'default' || (tool !== null && c.checkpoint.kind === 'before_tool' && c.checkpoint.tool === tool);
      if (!applies) continue;
      if (c.when && !this.cond(th, c.when)) continue;
      const v = this.cond(th, c.condition);
      const failed = c.kind === 'restrict' ? v : !v;
      if (!failed) continue;
      if (c.kind === 'warn') {
        this.decision(th, 'constraint_warn', `WARN ${c.condition.src}`, operation);
        continue;
      }
      this.decision(th, 'constraint', `blocked ${operation}: ${c.kind.toUpperCase()} ${c.condition.src}`);
      const f = c.on_fail;
      switch (f.kind) {
        case 'message': this.refuse(th, this.render(th, f.message)); break;
        case 'block': this.refuse(th, this.message(th, 'constraint_blocked', "Sorry, I can't do that.")); break;
        case 'escalate': this.escalate(th, f.reason ?? `Constraint failed: ${c.condition.src}`); break;
        case 'handoff': this.handoff(th, syntheticHandoff(f.agent), this.input, `constraint ${c.condition.src}`); break;
        case 'recover':
          if (f.respond) this.refuse(th, this.render(th, f.respond));
          for (const k of f.collect) this.clearVar(th, k);
          if (f.goto) this.recoverGoto = f.goto;
          break;
      }
      return false;
    }
    return true;
  }

  // ------------------------------------------------------------------ handoff

  private onStack(agent: string): boolean {
    return this.s.threads.some((t) => t.agent === agent && t.status !== 'completed');
  }

  private selectHandoff(th: ThreadState): HandoffIR | null {
    const rules = this.agent(th).coordination.handoffs
      .map((h, i) => ({ h, i }))
      .sort((a, b) => a.h.priority - b.h.priority || a.i - b.i);
    for (const { h } of rules) {
      if (!h.when.ast || h.to === th.agent || this.onStack(h.to)) continue;
      if (this.cond(th, h.when)) return h;
    }
    return null;
  }

  /** Transfers the conversation to `rule.to`; the target handles `input` in this same turn. */
  private handoff(from: ThreadState, rule: HandoffIR, input: string | null, reason: string): boolean {
    const target = this.compiled.agents[rule.to];
    if (!target || rule.to === from.agent || this.onStack(rule.to) || this.handoffs >= MAX_HANDOFFS_PER_TURN) {
      this.error(from, 'routing_failure', `Handoff from ${from.agent} to ${rule.to} refused (${!target ? 'unknown agent' : 'self-handoff, cycle or too many handoffs'}).`);
      return false;
    }
    if (this.s.mode === 'delegate') this.failDelegate({ kind: 'handoff', message: 'A delegated agent cannot hand off.' });
    if (!this.constraintsOk(from, null, `handoff to ${rule.to}`)) return false;
    const vars: Record<string, Json> = {};
    for (const p of rule.context.pass) {
      const v = toJson(this.eval(from, { src: p, ast: pathExpr(p) }));
      if (v !== null) vars[p] = v;
    }
    vars._handoff_summary = rule.context.summary ? this.render(from, rule.context.summary) : reason;
    const redact = this.guardHandoff(from, rule.to, vars);
    if (!redact) return false;
    if (this.runAgentHook(from, 'after_agent', `handoff to ${rule.to}`) && (from.status !== 'active' || !this.s.threads.includes(from))) return false;
    const child = newThread(this.s, target, vars);
    const hist = rule.context.history;
    if (hist === 'full') child.history = clone(from.history);
    else if (typeof hist === 'object') child.history = clone(from.history.slice(-hist.last_n));
    else if (hist === 'summary_only') child.history = [{ role: 'system', content: `Handoff from ${from.agent}: ${String(vars._handoff_summary)}` }];
    child.history = child.history.filter((t) => t.role !== 'tool' && !t.toolCalls);
    for (const t of child.history) t.content = redactJson(t.content, redact) as string;
    if (rule.return) {
      from.status = 'waiting';
      child.returnTo = from.id;
    } else {
      from.status = 'completed';
      child.returnTo = from.returnTo;
      this.s.threads = this.s.threads.filter((t) => t.id !== from.id);
    }
    this.s.threads.push(child);
    this.s.handoffCount++;
    this.handoffs++;
    this.trace.push({ type: 'handoff', data: { fromAgent: from.agent, toAgent: rule.to, reason } });
    this.decision(from, 'handoff', rule.to, reason);
    this.runAgentHook(child, 'before_agent', `handoff from ${from.agent}`);
    this.lifecycle(child, target.on_start);
    child.startedOnce = true;
    if (input !== null && child.history[child.history.length - 1]?.content !== input) this.pushHistory(child, { role: 'user', content: input });
    if (child.status === 'active') this.agentTurn(child, input, false);
    return true;
  }

  // ------------------------------------------------------------------ completion

  private completionReady(th: ThreadState): boolean {
    return this.agent(th).completion.some((c) => c.when.ast !== null && this.cond(th, c.when));
  }

  private checkCompletion(th: ThreadState): void {
    for (const c of this.agent(th).completion) {
      if (!c.when.ast || !this.cond(th, c.when)) continue;
      this.completeAgent(th, c.respond ? this.render(th, c.respond) : null, c.store);
      return;
    }
  }

  private completeAgent(th: ThreadState, respond: string | null, store: AgentIR['completion'][number]['store'] = null): boolean {
    if (!this.constraintsOk(th, null, 'complete')) return false;
    if (respond) this.respond(th, respond);
    let label: string | null = null;
    if (store?.kind === 'fact') this.s.memory[store.path] = toJson(this.eval(th, store.value));
    if (store?.kind === 'label') label = store.label;
    // A hook that ended the agent itself (e.g. a constraint's ON_FAIL HANDOFF on its CALL) already moved on.
    if (this.runAgentHook(th, 'after_agent', 'complete') && (th.status === 'completed' || !this.s.threads.includes(th))) return true;
    th.status = 'completed';
    if (th.flow) th.flow = { ...th.flow, phase: 'done' };
    this.decision(th, 'complete', label ?? 'completed');
    const parent = th.returnTo ? this.s.threads.find((t) => t.id === th.returnTo && t.status === 'waiting') : undefined;
    if (parent && this.s.mode !== 'delegate') {
      this.s.threads = this.s.threads.filter((t) => t.id !== th.id);
      const agent = this.agent(th);
      const rule = this.agent(parent).coordination.handoffs.find((h) => h.to === th.agent && h.return);
      if (rule?.map) {
        for (const [childVar, parentVar] of Object.entries(rule.map)) {
          if (th.vars[childVar] !== undefined) this.setVar(parent, parentVar, th.vars[childVar]);
        }
      } else {
        const fields = [...agent.gather.map((f) => f.name), ...Object.values(agent.flow?.steps ?? {}).flatMap((s) => s.gather?.fields.map((f) => f.name) ?? [])];
        for (const f of fields) if (th.vars[f] !== undefined && th.vars[f] !== null) this.setVar(parent, f, th.vars[f]);
      }
      parent.status = 'active';
      if (th.lastReply) this.pushHistory(parent, { role: 'assistant', content: `[${th.agent}] ${th.lastReply}` });
      this.decision(parent, 'return', `${th.agent} returned to ${parent.agent}`);
      this.runAgentHook(parent, 'before_agent', `returned from ${th.agent}`);
      return true;
    }
    this.s.status = 'completed';
    this.s.pending = null;
    this.s.result = { ok: true, response: th.lastReply ?? null, label, error: null };
    return true;
  }

  failDelegate(error: RuntimeError): never {
    const th = this.active();
    this.error(th ?? null, error.kind, error.message);
    this.s.status = 'completed';
    this.s.pending = null;
    this.s.result = { ok: false, response: th?.lastReply ?? null, label: null, error };
    throw new EndTurn();
  }

  // ------------------------------------------------------------------ delegation

  private autoDelegates(th: ThreadState): void {
    const entries = this.agent(th).coordination.delegates.filter((d, i) => {
      const key = `${i}:${d.agent}`;
      return d.when?.ast && !th.firedDelegates.includes(key) && this.cond(th, d.when);
    });
    if (entries.length > 0) this.runDelegates(th, entries, null);
  }

  /** `branches` (fan-out): per entry, the input merged over its INPUT and the task (the trace's PURPOSE). */
  private runDelegates(th: ThreadState, entries: DelegateIR[], inputOverride: Record<string, Json> | null, branches?: FanOutBranch[]): DelegateOutcome[] | null {
    if (!this.constraintsOk(th, null, `delegate to ${entries.map((d) => d.agent).join(', ')}`)) return null;
    const all = this.agent(th).coordination.delegates;
    for (const d of entries) {
      const key = `${all.indexOf(d)}:${d.agent}`;
      if (!th.firedDelegates.includes(key)) th.firedDelegates.push(key);
    }
    const tasks = entries.map((d, i) => {
      const input: Record<string, Json> = {};
      for (const [k, e] of Object.entries(d.input)) input[k] = toJson(this.eval(th, e));
      const own = branches?.[i] ?? null;
      const override = own ? own.input : inputOverride;
      return { agent: d.agent, input: override ? { ...input, ...override } : input, timeoutMs: d.timeout_ms, purpose: own?.task ?? d.purpose ?? '', returns: Object.keys(d.returns) };
    });
    const ev = this.effect({ type: 'delegate', agent: th.agent, tasks }, null);
    const results = ev.type === 'delegate_result' ? ev.results : [];
    const outcomes: DelegateOutcome[] = [];
    const summary: string[] = [];
    entries.forEach((d, i) => {
      const byIndex = results[i];
      const o: DelegateOutcome = (byIndex && byIndex.agent === d.agent ? byIndex : results.find((r) => r.agent === d.agent))
        ?? { agent: d.agent, status: 'failed', error: { kind: 'agent_unavailable', message: 'No result returned' } };
      outcomes.push(o);
      summary.push(`${d.agent}: ${o.status}`);
      if (o.status === 'completed') {
        for (const [childVar, parentVar] of Object.entries(d.returns)) {
          if (o.returns && o.returns[childVar] !== undefined) this.setVar(th, parentVar, o.returns[childVar]);
        }
        if (d.use_result && /^[A-Za-z_][A-Za-z0-9_]*$/.test(d.use_result)) this.setVar(th, d.use_result, o.response ?? null);
        return;
      }
      this.error(th, 'delegate_failed', `${d.agent} ${o.status}: ${o.error?.message ?? 'no detail'}`);
      if (d.on_failure.type === 'respond') this.respond(th, this.render(th, d.failure_message ?? `${d.agent} is unavailable right now.`));
      else if (d.on_failure.type === 'escalate') this.escalate(th, `Delegation to ${d.agent} failed`);
    });
    this.decision(th, 'delegate', summary.join(', '));
    return outcomes;
  }

  // ------------------------------------------------------------------ tools

  /** Argument names whose value is that of one of the agent's `sensitive` GATHER fields. */
  private sensitiveArgs(th: ThreadState, args: Record<string, Json>): string[] {
    const names = sensitiveFields(this.agent(th));
    if (names.size === 0) return [];
    const secrets = new Set([...names].map((n) => th.vars[n]).filter(isSetValue).map((v) => JSON.stringify(v)));
    return Object.keys(args).filter((k) => secrets.has(JSON.stringify(args[k])));
  }

  private toolOf(th: ThreadState, name: string): ToolIR | undefined {
    return this.agent(th).tools.find((t) => t.name === name);
  }

  /** Executes one tool call (constraints, then a call_tool or suspend_for_callback effect). */
  private invokeTool(th: ThreadState, tool: ToolIR, rawArgs: Record<string, Json>): ToolOutcome {
    // A batch checked the constraints and input guardrails when it issued the call (toolBatch);
    // binding finds the call's result by its issued id, whatever the arguments.
    const binding = this.batch?.mode === 'bind';
    if (!binding && !this.constraintsOk(th, tool.name, `call ${tool.name}`)) {
      return { ok: false, blocked: true, error: { kind: 'constraint', message: `The call to ${tool.name} was blocked by a constraint.` } };
    }
    const guarded: ReturnType<Turn['guardTool']> = binding ? { value: rawArgs } : this.guardTool(th, 'tool_input', tool, rawArgs);
    if ('blocked' in guarded) return guarded.blocked;
    const args = guarded.value as Record<string, Json>;
    const agent = this.agent(th);
    // A mocked tool is answered by the workflow at once, so even an async one is a plain call_tool.
    const async = tool.binding.type === 'http' && !this.options.mockedTools?.has(tool.name) ? tool.binding.async : null;
    let ev: RuntimeEvent;
    if (async) {
      const prev = th.status;
      th.status = 'suspended';
      ev = this.effect(
        { type: 'suspend_for_callback', agent: th.agent, tool: tool.name, args, timeoutMs: async.timeoutMs },
        { kind: 'callback', tool: tool.name, expiresAtMs: this.ctx.now() + async.timeoutMs },
      );
      th.status = prev;
      this.s.status = 'active';
      this.s.pending = null;
    } else {
      const sensitiveArgs = this.sensitiveArgs(th, args);
      ev = this.effect({
        type: 'call_tool',
        agent: th.agent,
        tool: tool.name,
        args,
        timeoutMs: tool.timeout_ms || agent.execution.tool_timeout_ms,
        retries: tool.binding.type === 'http' ? tool.binding.retry : 0,
        ...(sensitiveArgs.length > 0 ? { sensitiveArgs } : {}),
      }, null);
    }
    let out: ToolOutcome;
    if (ev.type === 'callback') {
      const p = ev.payload;
      const status = p && typeof p === 'object' && !Array.isArray(p) ? p.status : undefined;
      out = status === 'failed' || status === 'error'
        ? { ok: false, error: { kind: 'tool_error', message: `${tool.name} reported ${String(status)}` } }
        : { ok: true, value: p };
    } else if (ev.type === 'wait_expired') {
      out = { ok: false, error: { kind: 'tool_timeout', message: `${tool.name} did not call back in time` } };
    } else if (ev.type === 'tool_result') {
      out = ev.ok ? { ok: true, value: ev.value } : { ok: false, error: ev.error };
    } else {
      out = { ok: false, error: { kind: 'tool_error', message: `Unexpected ${ev.type} for ${tool.name}` } };
    }
    if (out.ok && (out.value === null || out.value === '')) out = { ok: false, error: { kind: 'tool_error', message: `${tool.name} returned an empty result` } };
    if (out.ok) {
      const seen = this.guardTool(th, 'tool_output', tool, out.value);
      const changed = 'blocked' in seen || (seen.value !== out.value && JSON.stringify(seen.value) !== JSON.stringify(out.value));
      // The workflow recorded the raw result in its tool_result event: have it keep only this.
      if (changed && ev.type === 'tool_result') {
        this.trace.push({ type: 'tool_output_guarded', data: { commandId: ev.commandId, output: 'blocked' in seen ? null : seen.value, blocked: 'blocked' in seen } });
      }
      out = 'blocked' in seen ? seen.blocked : { ok: true, value: seen.value };
    }
    if (!out.ok && !out.blocked) this.error(th, out.error.kind, out.error.message);
    return out;
  }

  private callArgs(th: ThreadState, tool: ToolIR | undefined, call: CallIR): Record<string, Json> {
    const args: Record<string, Json> = {};
    for (const [k, e] of Object.entries(call.with)) args[k] = toJson(this.eval(th, e));
    const free = (tool?.params ?? []).filter((p) => !Object.hasOwn(args, p.name));
    call.positional.forEach((e, i) => {
      const p = free[i];
      if (p) args[p.name] = toJson(this.eval(th, e));
    });
    for (const p of tool?.params ?? []) if (args[p.name] === undefined && p.default !== undefined) args[p.name] = toJson(p.default);
    return args;
  }

  private bindResult(th: ThreadState, tool: ToolIR, as: string | null, out: ToolOutcome): void {
    if (out.ok) {
      if (tool.store_result) {
        const names = [...new Set([as ?? tool.name, 'result', tool.name, `last_${tool.name}_result`])];
        for (const n of names) {
          if (n === (as ?? tool.name)) this.setVar(th, n, out.value);
          else th.vars[n] = out.value;
        }
      }
      for (const set of tool.on_result) this.setVar(th, set.target, this.eval(th, set.value, { result: out.value }));
    } else {
      for (const set of tool.on_error) this.setVar(th, set.target, this.eval(th, set.value, { error: out.error }));
    }
  }

  /** A flow or lifecycle CALL: arguments, the call (with ON_ERROR retries) and result binding. */
  private runCall(th: ThreadState, call: CallIR, step: FlowStepIR | null): ToolOutcome {
    const tool = this.toolOf(th, call.tool);
    if (!tool) {
      this.error(th, 'tool_error', `Tool ${call.tool} is not available to ${th.agent}`);
      return { ok: false, error: { kind: 'tool_error', message: `Tool ${call.tool} not found` } };
    }
    const args = this.callArgs(th, tool, call);
    let out = this.invokeTool(th, tool, args);
    if (!out.ok && !out.blocked) {
      const h = this.errorHandler(th, step, errorType(out.error));
      for (let i = 0; i < (h?.retry ?? 0) && !out.ok; i++) out = this.invokeTool(th, tool, args);
    }
    this.bindResult(th, tool, call.as, out);
    return out;
  }

  private errorHandler(th: ThreadState, step: FlowStepIR | null, type: string): ErrorHandlerIR | undefined {
    const pick = (hs: ErrorHandlerIR[]): ErrorHandlerIR | undefined =>
      hs.find((h) => h.type === type) ?? (type === 'tool_timeout' ? hs.find((h) => h.type === 'tool_error' || h.type === 'timeout') : undefined);
    return pick(step?.on_error ?? []) ?? pick(this.agent(th).error_handlers);
  }

  /**
   * ON_ERROR for an error outside a flow step (agent → MESSAGES.error_default), with its THEN
   * carried out: COMPLETE ends the agent, ESCALATE escalates, HANDOFF hands off. 'continue' when
   * the agent carries on (THEN: CONTINUE, or a BACKTRACK, which needs a flow).
   */
  private agentLevelError(th: ThreadState, type: string): 'continue' | 'stop' {
    const r = this.handleError(th, null, type);
    if (r.kind !== 'go' || !this.isActive(th)) return 'stop';
    const t = r.to;
    if (t?.kind !== 'complete' && t?.kind !== 'escalate') return 'continue';
    // Runs recorded before patch agent-error-transitions-v1 only responded here.
    if (!agentErrorTransitionsOn(this.options)) return 'stop';
    this.decision(th, 'on_error', `${type} -> ${t.kind === 'complete' ? 'COMPLETE' : 'ESCALATE'}`);
    if (t.kind === 'escalate' && this.escalate(th, t.reason ? this.render(th, t.reason) : `Escalation after ${type}`) === 'stop') return 'stop';
    if (this.isActive(th)) this.completeAgent(th, null);
    return 'stop';
  }

  /** ON_ERROR: step → agent → MESSAGES.error_default. */
  private handleError(th: ThreadState, step: FlowStepIR | null, type: string): StepResult {
    const h = this.errorHandler(th, step, type);
    if (!h) {
      this.respond(th, this.message(th, 'error_default', DEFAULT_ERROR));
      return STOP;
    }
    if (h.respond) this.respond(th, this.render(th, h.respond));
    const t = h.then;
    if (!t) return h.respond ? STOP : (this.respond(th, this.message(th, 'error_default', DEFAULT_ERROR)), STOP);
    switch (t.kind) {
      case 'continue': return go(step?.then ?? null);
      case 'complete': return go({ kind: 'complete' });
      case 'escalate': return go({ kind: 'escalate', reason: t.reason });
      case 'handoff':
        this.handoff(th, syntheticHandoff(t.agent), this.input, `${type} handler`);
        return STOP;
      case 'backtrack': return t.step ? go({ kind: 'goto', step: t.step }) : STOP;
    }
  }

  // ------------------------------------------------------------------ lifecycle

  private lifecycle(th: ThreadState, lc: LifecycleIR | null): void {
    if (!lc) return;
    for (const set of lc.set) this.setVar(th, set.target, this.eval(th, set.value));
    if (lc.call) this.runCall(th, lc.call, null);
    if (lc.delegate.length > 0) {
      const entries = this.agent(th).coordination.delegates.filter((d) => lc.delegate.includes(d.agent));
      if (entries.length > 0) this.runDelegates(th, entries, null);
    }
    if (lc.respond) this.respond(th, this.render(th, lc.respond));
  }

  /** HOOKS before_agent / after_agent (agent-hooks.ts), traced as a `hook` decision. True when a block ran. */
  private runAgentHook(th: ThreadState, point: AgentHookPoint, trigger: AgentHookTrigger): boolean {
    const lc = agentHook(this.options, this.agent(th), point);
    if (!lc) return false;
    this.decision(th, 'hook', point, trigger);
    this.lifecycle(th, lc);
    return true;
  }

  private remember(): void {
    const th = this.active();
    if (!th || this.s.mode === 'delegate') return;
    for (const r of this.agent(th).memory.remember) {
      if (r.when && !this.cond(th, r.when)) continue;
      const v = toJson(this.eval(th, r.from));
      if (v === null) continue;
      this.s.memory[r.to] = v;
    }
  }

  // ------------------------------------------------------------------ flow

  private runFlow(th: ThreadState, input: string | null): void {
    const agent = this.agent(th);
    const flow = agent.flow;
    if (!flow) return;
    th.flow ??= { step: flow.entry, phase: 'enter', attempts: {} };
    let pending = input;
    let iterations = 0;
    for (;;) {
      if (!this.isActive(th)) return;
      const f: ThreadState['flow'] = th.flow;
      if (!f || f.phase === 'done') return;
      if (++iterations > agent.execution.max_flow_iterations) {
        this.error(th, 'max_flow_iterations', `Flow exceeded ${agent.execution.max_flow_iterations} iterations at step ${f.step}`);
        this.respond(th, this.message(th, 'error_default', DEFAULT_ERROR));
        f.phase = 'enter';
        return;
      }
      const step = flow.steps[f.step];
      if (!step) {
        this.error(th, 'unknown_step', `Step ${f.step} does not exist`);
        this.completeAgent(th, null);
        return;
      }
      let r: StepResult;
      if (f.phase === 'gather' || f.phase === 'input' || f.phase === 'reasoning') {
        if (pending === null) return;
        r = this.runStep(th, step, f.phase, pending);
      } else {
        r = this.runStep(th, step, 'enter', pending);
      }
      pending = null;
      if (r.kind !== 'go') return;
      if (!this.isActive(th)) return;
      const t = r.to;
      if (!t || t.kind === 'complete') {
        this.decision(th, 'flow_transition', `${step.name} -> COMPLETE`);
        this.completeAgent(th, null);
        return;
      }
      if (t.kind === 'escalate') {
        this.decision(th, 'flow_transition', `${step.name} -> ESCALATE`);
        if (this.escalate(th, t.reason ? this.render(th, t.reason) : `Escalated from step ${step.name}`) === 'stop') return;
        if (this.isActive(th)) this.completeAgent(th, null);
        return;
      }
      this.decision(th, 'flow_transition', `${step.name} -> ${t.step}`);
      this.forgetTransient(th, step);
      th.flow = { step: t.step, phase: 'enter', attempts: f.attempts };
      if (!this.transitionChecks(th)) return;
    }
  }

  /** ABL.md §9: ESCALATE, HANDOFF and DELEGATE are checked again at every step transition. False: the flow stops here. */
  private transitionChecks(th: ThreadState): boolean {
    if (this.checkEscalation(th) === 'stop' || !this.isActive(th)) return false;
    const h = this.selectHandoff(th);
    if (h) {
      this.handoff(th, h, null, `WHEN ${h.when.src}`);
      return false;
    }
    this.autoDelegates(th);
    return true;
  }

  private get digressionsOn(): boolean {
    return this.options.digressions !== false;
  }

  /**
   * DIGRESSIONS, SUB_INTENTS and global_digressions (ABL.md §8) while the flow waits for the user
   * in a step. True when one took the message: its CLEAR and RESPOND run, then its action.
   */
  private digress(th: ThreadState, agent: AgentIR, input: string): boolean {
    const flow = agent.flow;
    const f = th.flow;
    if (!this.digressionsOn || !flow || !f || !WAITING_PHASES.has(f.phase)) return false;
    const step = flow.steps[f.step];
    if (!step) return false;
    const m = findDigression(flow, step, input, (d) => this.cond(th, d.condition, { input }));
    if (!m) return false;
    const d = m.digression;
    this.decision(th, 'digression', `${step.name}: ${d.intent} -> ${actionText(d)}`, `${m.source} matched "${m.phrase}"`);
    for (const c of d.clear) this.clearVar(th, c);
    const action = d.action;
    if (action.kind === 'delegate') {
      // The delegation runs first so RESPOND can show its RETURNS / USE_RESULT; then the flow resumes.
      // A constraint that blocks it has sent its ON_FAIL message instead, so RESPOND is skipped.
      const entry = agent.coordination.delegates.find((x) => x.agent === action.agent) ?? adHocDelegate(action.agent);
      const ran = this.runDelegates(th, [entry], null) !== null;
      if (!this.isActive(th)) return true;
      if (ran && d.respond) this.respond(th, this.render(th, d.respond));
    } else if (d.respond) this.respond(th, this.render(th, d.respond));
    switch (action.kind) {
      case 'goto':
        this.forgetTransient(th, step);
        th.flow = { step: action.step, phase: 'enter', attempts: f.attempts };
        if (this.transitionChecks(th)) this.runFlow(th, null);
        break;
      case 'complete':
        this.completeAgent(th, null);
        break;
      case 'resume':
      case 'delegate':
        // Back to where the step waited: a GATHER (the step's, or the branch's that asked) asks for
        // its missing field again; ON_INPUT and a reasoning step just wait for the next message.
        if (f.phase === 'gather') {
          const branch = f.branchGather ? branchOf(step, f.branchGather) : null;
          if (branch?.gather && branchGatherOn(this.options)) this.stepGather(th, { ...step, gather: branch.gather }, null, false);
          else if (step.gather) this.stepGather(th, step, null, false);
        }
        break;
      default:
        break;
    }
    return true;
  }

  private setFlowPhase(th: ThreadState, phase: string): void {
    if (th.flow) th.flow.phase = phase;
  }

  private runStep(th: ThreadState, step: FlowStepIR, from: string, input: string | null): StepResult {
    const f = th.flow as NonNullable<ThreadState['flow']>;
    const branchRef = f.branchGather;
    delete f.branchGather;
    if (from === 'gather' && branchRef) {
      const a = branchOf(step, branchRef);
      // Runs recorded before branch-gather-v1 gave the answer to the step's own GATHER.
      if (a && branchGatherOn(this.options)) return this.answerBranchGather(th, step, a, branchRef, input);
    }
    if (from === 'input') return this.onInput(th, step, input ?? '');
    let phase = from;
    if (phase === 'enter') {
      const n = (f.attempts[step.name] ?? 0) + 1;
      f.attempts[step.name] = n;
      if (step.max_attempts !== null && n > step.max_attempts) {
        this.decision(th, 'max_attempts', `${step.name} exhausted after ${step.max_attempts}`);
        delete f.attempts[step.name];
        if (step.on_exhausted) return this.branchActions(th, step, step.on_exhausted);
        return go(step.then);
      }
      if (step.when && !this.cond(th, step.when)) {
        this.decision(th, 'step_skipped', step.name, `WHEN ${step.when.src} is false`);
        return go(step.then);
      }
      if (step.respond) this.respond(th, this.render(th, step.respond));
      if (step.present) this.respond(th, this.render(th, step.present));
      phase = 'gather_entry';
    }
    if (step.gather && (phase === 'gather_entry' || phase === 'gather')) {
      const g = this.stepGather(th, step, input, phase === 'gather');
      if (g !== 'done') return g;
    }
    if (step.reasoning && step.llm) {
      this.reasoningFailure = null;
      const ended = this.runReasoning(th, phase === 'reasoning' || phase === 'gather_entry' ? input : null, step);
      if (!this.isActive(th)) return STOP;
      // The model failed: ON_ERROR's THEN decides where the flow goes (before the patch, the step
      // went on to its DELEGATE, CALL and THEN after the handler's RESPOND).
      const failure = this.reasoningFailure as StepResult | null;
      if (failure && agentErrorTransitionsOn(this.options)) return failure;
      if (!ended && step.llm.exit_when && !this.cond(th, step.llm.exit_when)) {
        this.setFlowPhase(th, 'reasoning');
        return WAIT;
      }
    }
    if (step.delegate.length > 0) {
      const all = this.agent(th).coordination.delegates;
      const entries = step.delegate.map((a) => all.find((d) => d.agent === a) ?? adHocDelegate(a));
      this.runDelegates(th, entries, null);
      if (!this.isActive(th)) return STOP;
    }
    let call: ToolOutcome | null = null;
    if (step.call) {
      this.recoverGoto = null;
      call = this.runCall(th, step.call, step);
      if (!this.isActive(th)) return STOP;
      if (!call.ok && call.blocked) {
        if (this.recoverGoto) return go({ kind: 'goto', step: this.recoverGoto });
        this.setFlowPhase(th, 'enter');
        return STOP;
      }
      if (!call.ok && step.on_fail.length === 0) return this.handleError(th, step, errorType(call.error));
    }
    for (const set of step.set) this.setVar(th, set.target, this.eval(th, set.value));
    for (const c of step.clear) this.clearVar(th, c);
    if (step.transform) this.transform(th, step.transform);
    if (step.check && !this.cond(th, step.check)) {
      this.decision(th, 'check_failed', `${step.name}: ${step.check.src}`);
      if (step.gather) for (const v of identifiers(step.check.ast)) if (step.gather.fields.some((x) => x.name === v)) this.clearVar(th, v);
      const b = this.pick(th, step.on_fail);
      if (b) return this.branchActions(th, step, b.actions);
      if (step.gather) return this.stepGather(th, step, null, false) === 'done' ? STOP : WAIT;
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

  /** Step GATHER: extract, then either done or ask (and wait). */
  private stepGather(th: ThreadState, step: FlowStepIR, input: string | null, answering: boolean): 'done' | StepResult {
    const stated = step.gather;
    if (!stated) return 'done';
    const { fields, rules } = this.gatherFields(th, stated.fields);
    const g = fields === stated.fields ? stated : { ...stated, fields: [...fields] };
    const f = th.flow as NonNullable<ThreadState['flow']>;
    const key = `gather:${step.name}`;
    let extracted = 0;
    const invalid = new Set<string>();
    let confirmation: ReturnType<typeof answerInferred> = 'none';
    if (input !== null) {
      // A yes or no to "Just to confirm…" (GATHER infer) is not a value of the field.
      confirmation = answering ? answerInferred(th, input, this.inferHooks(th)) : 'none';
      if (confirmation === 'confirmed' || confirmation === 'rejected') th.askedField = null;
      const expecting =
        confirmation === 'confirmed' || confirmation === 'rejected' ? null : answering ? (g.fields.some((x) => x.name === th.askedField) ? th.askedField : undefined) : null;
      const ex = gatherFromMessage(this.gatherHost(th), this.agent(th), g, input, th.vars, expecting, this.options.gatherLlm !== false, this.inference(th));
      for (const [k, v] of Object.entries(ex.values)) this.setVar(th, k, v);
      for (const bad of ex.invalid) invalid.add(bad);
      extracted = Object.keys(ex.values).length + applyInferred(th, g.fields, ex.inferred, this.inferHooks(th)) + (confirmation === 'confirmed' ? 1 : 0);
    }
    const complete = g.complete_when?.ast ? this.cond(th, g.complete_when) : allFieldsGathered(g.fields, th.vars, rules ?? undefined);
    if (complete) {
      if (rules) this.applyDefaults(th, g.fields, rules);
      delete f.attempts[key];
      th.askedField = null;
      return 'done';
    }
    const missing = rules
      ? nextFieldToAsk(g.fields, th.vars, rules, true)
      : g.fields.find((x) => x.required && !isSetValue(th.vars[x.name])) ?? g.fields.find((x) => !isSetValue(th.vars[x.name]));
    if (!missing) return 'done';
    // After "no" to an inferred value the field is asked afresh, not as a failed answer.
    const retry = answering && extracted === 0 && confirmation !== 'rejected';
    if (retry) {
      const n = (f.attempts[key] ?? 0) + 1;
      f.attempts[key] = n;
      if (missing.max_retries !== null && n > missing.max_retries) {
        delete f.attempts[key];
        this.error(th, 'validation_error', `No valid ${missing.name} after ${missing.max_retries} retries`);
        if (step.on_exhausted) return this.branchActions(th, step, step.on_exhausted);
        const b = this.pick(th, step.on_fail);
        if (b) return this.branchActions(th, step, b.actions);
      }
    }
    this.respond(th, this.render(th, this.promptFor(th, missing, retry || invalid.has(missing.name))));
    th.askedField = missing.name;
    this.setFlowPhase(th, 'gather');
    return WAIT;
  }

  private onInput(th: ThreadState, step: FlowStepIR, text: string): StepResult {
    const b = this.pick(th, step.on_input, text);
    if (!b) {
      this.decision(th, 'on_input', `${step.name}: no match`);
      if (step.respond) this.respond(th, this.render(th, step.respond));
      return WAIT;
    }
    this.decision(th, 'on_input', `${step.name}: ${b.condition.kind === 'keyword' ? b.condition.keyword : b.condition.kind === 'expr' ? b.condition.expr.src : 'ELSE'}`);
    this.setFlowPhase(th, 'enter');
    return this.branchActions(th, step, b.actions);
  }

  /** First matching branch; keywords match the user's message (ON_INPUT). */
  private pick(th: ThreadState, branches: BranchIR[], text: string | null = null): BranchIR | null {
    const norm = (text ?? this.input ?? '').toLowerCase().replace(/[^\p{L}\p{N}\s]/gu, ' ').replace(/\s+/g, ' ').trim();
    for (const b of branches) {
      const c = b.condition;
      if (c.kind === 'else') return b;
      if (c.kind === 'keyword') {
        if (c.words.some((w) => norm === w || norm.startsWith(`${w} `))) return b;
        continue;
      }
      if (!c.expr.ast) continue;
      const ast = text !== null ? lowerInputComparisons(c.expr.ast) : c.expr.ast;
      if (this.cond(th, ast, text !== null ? { input: text.trim().toLowerCase() } : undefined)) return b;
    }
    return null;
  }

  /** Branch actions: SET, CLEAR, RESPOND, CALL, GATHER, THEN. Without THEN the step's own THEN follows (unless `soft`). */
  private branchActions(th: ThreadState, step: FlowStepIR, a: ActionsIR, soft = false): StepResult {
    for (const set of a.set) this.setVar(th, set.target, this.eval(th, set.value));
    for (const c of a.clear) this.clearVar(th, c);
    if (a.respond) this.respond(th, this.render(th, a.respond));
    if (a.call) {
      this.runCall(th, a.call, step);
      if (!this.isActive(th)) return STOP;
    }
    if (a.gather) {
      const g = this.stepGather(th, { ...step, gather: a.gather }, null, false);
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
    const g = this.stepGather(th, { ...step, gather: a.gather }, input, true);
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
    const src = this.eval(th, t.source);
    let items = Array.isArray(src) ? [...src] : [];
    if (t.filter) items = items.filter((it) => this.cond(th, t.filter, { [t.as]: it }));
    let out: unknown[] = items;
    if (Object.keys(t.map).length > 0) {
      out = items.map((it) => {
        const o: Record<string, unknown> = {};
        for (const [k, e] of Object.entries(t.map)) o[k] = this.eval(th, e, { [t.as]: it });
        return o;
      });
    }
    if (t.sort_by) {
      const { field, order } = t.sort_by;
      const get = (x: unknown): unknown => (x && typeof x === 'object' ? (x as Record<string, unknown>)[field] : undefined);
      let codeUnits: boolean | undefined;
      const text = (x: string, y: string): number => {
        codeUnits ??= codeUnitSortOn(this.options);
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
    this.setVar(th, t.into, out);
  }

  // ------------------------------------------------------------------ reasoning

  private systemPrompt(th: ThreadState, agent: AgentIR, step: FlowStepIR | null): string {
    const id = agent.identity;
    const lines: string[] = [`You are ${agent.metadata.name}${id.role ? `, ${id.role}` : ''}.`, `Goal: ${step?.llm?.goal ?? id.goal}`];
    if (id.persona) lines.push(`Persona: ${id.persona}`);
    if (id.instructions) lines.push(`Instructions: ${id.instructions}`);
    if (id.expertise.length) lines.push(`Expertise: ${id.expertise.join(', ')}`);
    if (id.limitations.length) lines.push('Limitations:', ...id.limitations.map((l) => `- ${l}`));
    const rules = agent.constraints.map((c) => `- ${c.kind.toUpperCase()} ${c.condition.src}${c.checkpoint.kind === 'before_tool' ? ` (before calling ${c.checkpoint.tool})` : ''}`);
    if (rules.length) lines.push('Rules you must respect:', ...rules);
    if (agent.gather.length) {
      lines.push('Information to collect:');
      const sensitive = sensitiveFields(agent);
      for (const f of agent.gather) {
        const v = th.vars[f.name];
        const shown = !isSetValue(v) ? 'missing' : sensitive.has(f.name) ? 'given (sensitive, not shown)' : JSON.stringify(v);
        lines.push(`- ${f.name}${f.required ? '' : ' (optional)'}: ${shown}`);
      }
    }
    if (typeof th.vars._handoff_summary === 'string') lines.push(`Context from the previous agent: ${th.vars._handoff_summary}`);
    const facts = Object.entries(this.s.memory);
    if (facts.length) lines.push('Known facts:', ...facts.slice(0, 30).map(([k, v]) => `- ${k}: ${truncate(JSON.stringify(v), 200)}`));
    lines.push('Call __complete__ when the task is finished.');
    return lines.join('\n');
  }

  private llmTools(th: ThreadState, agent: AgentIR, step: FlowStepIR | null): { name: string; description: string; parameters: Json }[] {
    const allowed = step?.llm?.available_tools.length ? new Set(step.llm.available_tools) : null;
    const tools: { name: string; description: string; parameters: Json }[] = [];
    const seen = new Set<string>();
    const add = (name: string, description: string, parameters: Json): void => {
      if (seen.has(name)) return;
      seen.add(name);
      tools.push({ name, description, parameters });
    };
    for (const t of agent.tools) if (!allowed || allowed.has(t.name)) add(t.name, t.description ?? t.name, paramsSchema(t.params));
    const reasonParam: Json = { type: 'object', properties: { reason: { type: 'string' } }, required: [] };
    for (const h of agent.coordination.handoffs) {
      if (h.when.ast !== null || h.to === th.agent || this.onStack(h.to)) continue;
      add(`handoff_to_${h.to}`, h.when.src, reasonParam);
    }
    for (const d of agent.coordination.delegates) {
      if (d.when?.ast) continue;
      add(`delegate_to_${d.agent}`, d.purpose ?? d.when?.src ?? `Delegate a task to ${d.agent}`, { type: 'object', properties: {}, required: [] });
    }
    const fanOut = fanOutToolSpec(agent);
    if (fanOut) add(fanOut.name, fanOut.description, fanOut.parameters);
    if (agent.coordination.escalation) add('__escalate_to_human__', 'Pass the conversation to a human.', reasonParam);
    if (th.returnTo) add('__return_to_parent__', 'Return to the agent that handed this conversation over.', { type: 'object', properties: { message: { type: 'string' } }, required: [] });
    add('__complete__', 'The task is finished; optionally give a final message.', { type: 'object', properties: { message: { type: 'string' } }, required: [] });
    return tools;
  }

  private llmMessages(th: ThreadState, system: string): ChatTurn[] {
    const hist = answersFirst(th.history);
    while (hist.length && hist[0]?.role === 'tool') hist.shift();
    return [{ role: 'system', content: system }, ...hist];
  }

  /** The LLM loop. Returns true when it ended by a control tool (complete, handoff, escalate). */
  private runReasoning(th: ThreadState, _input: string | null, step: FlowStepIR | null): boolean {
    const agent = this.agent(th);
    const max = step?.llm?.max_turns ?? agent.execution.max_reasoning_iterations;
    const tools = this.llmTools(th, agent, step);
    const blocks = this.guardBlocks;
    for (let i = 0; i < max; i++) {
      const ev = this.effect({
        type: 'call_llm',
        agent: th.agent,
        purpose: 'reasoning',
        request: {
          model: agent.execution.model,
          tier: 'balanced',
          ...(agent.execution.temperature !== null ? { temperature: agent.execution.temperature } : {}),
          ...(agent.execution.max_tokens !== null ? { maxTokens: agent.execution.max_tokens } : {}),
          ...llmLimits(agent),
          messages: this.llmMessages(th, this.systemPrompt(th, agent, step)),
          tools,
        },
      }, null);
      if (ev.type !== 'llm_result' || !ev.ok) {
        const err = ev.type === 'llm_result' && !ev.ok ? ev.error : { kind: 'llm_error', message: `Unexpected ${ev.type}` };
        this.error(th, 'llm_error', err.message);
        if (step) this.reasoningFailure = this.handleError(th, step, 'llm_error');
        else this.agentLevelError(th, 'llm_error');
        return true;
      }
      if (ev.toolCalls.length === 0) {
        if (ev.content) this.respond(th, ev.content);
        return false;
      }
      const asked: ChatTurn = { role: 'assistant', content: ev.content, toolCalls: ev.toolCalls };
      this.pushHistory(th, asked);
      const redactedBefore = this.inputRedactions.length;
      // The option is asked only for answers that qualify (the workflow's patch check).
      const batched = batchable(agent, ev.toolCalls, this.options.mockedTools) && parallelEnabled(this.options) ? this.toolBatch(th, ev.toolCalls) : null;
      for (const [i, call] of ev.toolCalls.entries()) {
        // After a guardrail block the answer's other calls are answered without running.
        const result = batched
          ? (batched[i] as Json)
          : this.guardBlocks !== blocks
            ? SKIPPED_AFTER_BLOCK
            : this.reasoningToolCall(th, agent, call.name, parseArgs(call.arguments), ev.content);
        // What a tool_input guardrail removed from the arguments leaves the LLM's history too.
        if (this.inputRedactions.length > redactedBefore) asked.toolCalls = redactToolCalls(ev.toolCalls, this.inputRedactions.slice(redactedBefore));
        if (result === 'ended') return true;
        this.pushHistory(th, { role: 'tool', toolCallId: call.id, content: truncate(JSON.stringify(result) ?? 'null', TOOL_RESULT_CHARS) });
        if (!this.isActive(th)) return true;
      }
      // A guardrail blocked a call or handoff: its message is the reply.
      if (this.guardBlocks !== blocks) return false;
      if (step?.llm?.exit_when && this.cond(th, step.llm.exit_when)) return false;
    }
    this.error(th, 'max_reasoning_iterations', `Stopped after ${max} LLM iterations`);
    this.respond(th, this.message(th, 'max_iterations', "Sorry, I couldn't finish that. Could you rephrase?"));
    return false;
  }

  private reasoningToolCall(th: ThreadState, agent: AgentIR, name: string, args: Record<string, Json>, content: string): Json | 'ended' {
    const text = (k: string): string | null => (typeof args[k] === 'string' && args[k] ? (args[k] as string) : null);
    if (name.startsWith('handoff_to_')) {
      const to = name.slice('handoff_to_'.length);
      const rule = agent.coordination.handoffs.find((h) => h.to === to && h.when.ast === null) ?? agent.coordination.handoffs.find((h) => h.to === to);
      if (rule && this.handoff(th, rule, this.input, text('reason') ?? rule.when.src)) return 'ended';
      return { error: `Handoff to ${to} is not possible.` };
    }
    if (name === '__complete__' || name === '__return_to_parent__') {
      if (this.completeAgent(th, text('message') ?? (content || null))) return 'ended';
      return { error: 'Completion was blocked.' };
    }
    if (name === '__escalate_to_human__') {
      if (this.escalate(th, text('reason') ?? 'The agent asked for a human') === 'stop') return 'ended';
      return { human: th.vars.human ?? null };
    }
    if (name === FAN_OUT_TOOL) {
      const plan = planFanOut(agent, args);
      const branches = branchesOf(plan);
      const outcomes = branches.length > 0 ? this.runDelegates(th, branches.map((b) => b.entry), null, branches) : [];
      return fanOutResult(plan, outcomes);
    }
    if (name.startsWith('delegate_to_')) {
      const to = name.slice('delegate_to_'.length);
      const entry = agent.coordination.delegates.find((d) => d.agent === to);
      if (!entry) return { error: `Unknown delegate ${to}` };
      const outcomes = this.runDelegates(th, [entry], Object.keys(args).length ? args : null);
      return toJson(outcomes ?? { error: 'Delegation was blocked.' });
    }
    const tool = this.toolOf(th, name);
    if (!tool) {
      this.error(th, 'tool_error', `The LLM called unknown tool ${name}`);
      return { error: `Unknown tool ${name}` };
    }
    const out = this.invokeTool(th, tool, args);
    this.bindResult(th, tool, null, out);
    return out.ok ? preview(out.value, TOOL_RESULT_CHARS) : { error: out.error.message };
  }

  /**
   * Ordinary tool calls of one answer, run in parallel (parallel-tools.ts). Issue: every call goes
   * through invokeTool in order (constraints against the state before any result) and its command
   * is recorded; the turn suspends until all are answered. Bind: with every result journaled,
   * invokeTool runs again per call with the issued ids (no second constraint check) and the results
   * are bound in call order. Both phases are the same on every replay, so ids and trace line up.
   */
  private toolBatch(th: ThreadState, calls: readonly { name: string; arguments: string }[]): Json[] {
    const planned = calls.map((c) => ({ tool: this.toolOf(th, c.name) as ToolIR, args: parseArgs(c.arguments) }));
    const ids: string[] = [];
    const blocked = new Map<number, ToolOutcome>();
    const guardBlocks = this.guardBlocks;
    this.batch = { mode: 'issue', ids };
    try {
      planned.forEach((p, i) => {
        // After a guardrail block the answer's other calls are answered without running.
        if (this.guardBlocks !== guardBlocks) {
          blocked.set(i, SKIPPED_IN_BATCH);
          return;
        }
        try {
          blocked.set(i, this.invokeTool(th, p.tool, p.args));
        } catch (e) {
          if (!(e instanceof Issued)) throw e;
        }
      });
    } finally {
      this.batch = null;
    }
    if (ids.some((id) => !this.exec.journal[id])) throw new Suspend();
    this.batch = { mode: 'bind', ids: [...ids] };
    try {
      return planned.map((p, i) => {
        const out = blocked.get(i) ?? this.invokeTool(th, p.tool, p.args);
        this.bindResult(th, p.tool, null, out);
        return out.ok ? preview(out.value, TOOL_RESULT_CHARS) : { error: out.error.message };
      });
    } finally {
      this.batch = null;
    }
  }
}

function parseArgs(text: string): Record<string, Json> {
  try {
    const v = JSON.parse(text || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (toJson(v) as Record<string, Json>) : {};
  } catch {
    return {};
  }
}

function errorType(e: RuntimeError): string {
  if (e.kind === 'timeout' || e.kind === 'tool_timeout') return 'tool_timeout';
  if (e.kind === 'llm_error' || e.kind === 'validation_error') return e.kind;
  return 'tool_error';
}

function pathExpr(path: string): Expr {
  const parts = path.split('.');
  let e: Expr = { type: 'Ident', name: parts[0] as string, pos: 0 };
  for (const p of parts.slice(1)) e = { type: 'Member', object: e, property: p, pos: 0 };
  return e;
}

const NOLOC = { file: '', line: 0, column: 0 };

function syntheticHandoff(to: string): HandoffIR {
  return {
    to,
    when: { src: '', ast: null },
    priority: 100,
    context: { pass: [], summary: null, history: 'summary_only' },
    return: false,
    on_return: 'continue',
    map: null,
    on_failure: null,
    loc: NOLOC,
  };
}

function adHocDelegate(agent: string): DelegateIR {
  return { agent, when: null, purpose: null, input: {}, returns: {}, use_result: null, timeout_ms: null, on_failure: { type: 'continue', count: 0 }, failure_message: null, loc: NOLOC };
}
