// Guardrails and constraints: the checks that stand between the agent and what it is about to
// do. Replies go out through the output guardrails and `BEFORE returning results`; tool calls,
// tool results and handoffs through their guardrails; operations through the constraints.

import { evaluateCondition } from '../expr/evaluate';
import type { AgentIR, GuardrailIR, GuardrailProviderIR, Json, ToolIR, VoiceOutputIR } from '../ir';
import { moderationDecision } from '../moderation';
import { guardrailActionsOn, moderationGuardrailsOn } from './options';
import { editJson, filterEdit, fixEdit, type TextEdit } from './guard-edits';
import { guardrailJudge } from './gather-llm';
import { guardText, redactJson } from './checkpoints';
import type { RuntimeEvent, ThreadState } from './contract';
import type { SafeRegex } from '../regex';
import { redactionPatterns } from './values';
import type { ToolOutcome, TurnContext } from './turn-context';
import { syntheticHandoff } from './handoff';

/** Guardrail `check` is a pass predicate (fires when false). Flip here if the polarity changes. */
export const GUARDRAIL_CHECK_IS_PASS = true;

/** What a guardrail run did to a text (`Guards.guardrails`). */
export interface GuardResult {
  text: string;
  blocked: string | null;
  patterns: SafeRegex[];
  edits: TextEdit[];
  /** An `escalate` guardrail fired: the content waits for a person. */
  held: { guardrail: string; reason: string } | null;
  /** `opts.json` with the edits applied. */
  value?: Json;
}

const HELD_WHAT: Record<GuardrailIR['kind'], string> = {
  input: 'a message', output: 'a reply', tool_input: 'a tool call', tool_output: 'a tool result', handoff: 'a handoff',
};

export class Guards {
  /** True while held content is being escalated (its notice is not held again). */
  private holding = false;

  constructor(private readonly t: TurnContext) {}

  /**
   * Sends a reply (through the output guardrails) and records it. `voice` is its voice form
   * (VOICE ssml / plain_text), kept only when the guardrails left the text as it was and pass its
   * voice strings unchanged too: a call never says what the guardrails kept from the text.
   */
  respond(th: ThreadState, text: string, guard = true, voice: VoiceOutputIR | null = null): void {
    if (guard && !this.resultsMayReturn(th)) return;
    let out = text;
    if (guard) {
      const g = this.guardrails(th, this.t.agent(th), 'output', text);
      if (g.held && !this.hold(th, g.held, g.text)) return;
      out = g.blocked ?? g.text;
    }
    if (!out.trim()) return;
    this.t.voices.push(voice && out === text && this.voicePasses(th, voice) ? voice : null);
    this.t.responses.push(out);
    this.t.trace.push({ type: 'response', data: { agent: th.agent, text: out } });
    th.lastReply = out;
    this.t.pushHistory(th, { role: 'assistant', content: out });
  }

  /**
   * The output guardrails that need no provider (checks, patterns) leave each voice string as it
   * is. Their trace events are dropped: the text's own evaluation is the one recorded.
   */
  private voicePasses(th: ThreadState, voice: VoiceOutputIR): boolean {
    const agent = this.t.agent(th);
    if (!agent.guardrails.some((g) => g.kind === 'output')) return true;
    const mark = this.t.trace.length;
    try {
      for (const s of [voice.ssml, voice.plain_text]) {
        if (s === undefined) continue;
        const g = this.guardrails(th, agent, 'output', s, {}, { effects: false });
        if (g.blocked !== null || g.text !== s) return false;
      }
      return true;
    } finally {
      this.t.trace.length = mark;
    }
  }

  /** A refusal (constraint ON_FAIL, guardrail block): a reply, but no result to hold back. */
  private refuse(th: ThreadState, text: string): void {
    const was = this.t.returning;
    this.t.returning = true;
    try {
      this.respond(th, text);
    } finally {
      this.t.returning = was;
    }
  }

  /**
   * Runs the agent's guardrails of one kind on `text` (bound as `input` and `output`, plus
   * `extra`). `patterns` are the redactions applied, for callers that redact JSON values too;
   * `edits` the fix and filter edits applied, which `opts.json` (the value `text` shows, for tool
   * guardrails) gets too, as `value`. `held`: an `escalate` guardrail fired, and the content waits
   * for a person (`hold`).
   */
  guardrails(
    th: ThreadState, agent: AgentIR, kind: GuardrailIR['kind'], text: string, extra: Record<string, unknown> = {},
    opts: { effects?: boolean; json?: Json } = {},
  ): GuardResult {
    let current = text;
    let value = opts.json;
    const patterns: SafeRegex[] = [];
    const edits: TextEdit[] = [];
    const result = (blocked: string | null, held: GuardResult['held'] = null): GuardResult => ({
      text: current, blocked, patterns, edits, held, ...(value !== undefined ? { value } : {}),
    });
    const fired = (g: GuardrailIR, t: string): boolean => {
      if (!g.check?.ast) return false;
      const passed = evaluateCondition(g.check.ast, this.t.scope(th, { ...extra, input: t, output: t }), this.t.ctx);
      return GUARDRAIL_CHECK_IS_PASS ? !passed : passed;
    };
    const apply = (edit: TextEdit): void => {
      edits.push(edit);
      if (value !== undefined) {
        value = editJson(value, edit);
        current = guardText(value);
      } else current = edit(current);
    };
    for (const g of agent.guardrails) {
      if (g.kind !== kind) continue;
      let fires: boolean;
      if (g.provider) {
        // A holding reply (opts.effects false) cannot wait for a provider: the message reaches no agent.
        if (opts.effects === false || !moderationGuardrailsOn(this.t.options)) continue;
        fires = this.moderated(th, agent, g, g.provider, current);
      } else if (g.llm_check && !g.check) {
        // An LLM judge: one `validation` call; runs recorded before it never judged (patch guardrail-actions-v1).
        if (opts.effects === false || !guardrailActionsOn(this.t.options)) continue;
        const verdict = this.judged(th, agent, g, g.llm_check, current);
        fires = verdict !== null && !verdict.valid;
        this.t.trace.push({ type: 'guardrail_eval', data: { guardrail: g.name, kind, passed: !fires, action: g.action, agent: agent.metadata.name } });
      } else {
        if (!g.check?.ast) continue;
        fires = fired(g, current);
        this.t.trace.push({ type: 'guardrail_eval', data: { guardrail: g.name, kind, passed: !fires, action: g.action, agent: agent.metadata.name } });
      }
      if (!fires) {
        // A message that passes ends a reask guardrail's run of re-prompts.
        if (g.action === 'reask' && opts.effects !== false && th.reasks?.[g.name] !== undefined) delete th.reasks[g.name];
        continue;
      }
      if (g.action === 'block') return result(g.message ?? "Sorry, I can't help with that.");
      if (g.action === 'redact') {
        // A provider judges the whole text, so the whole text goes (the compiler allows this on input and output only).
        if (g.provider) current = '[REDACTED]';
        else {
          for (const re of g.check?.ast ? redactionPatterns(g.check.ast) : []) {
            patterns.push(re);
            current = re.replaceAll(current, '[REDACTED]');
          }
        }
        continue;
      }
      // warn only logs; so did fix, reask, filter and escalate in runs recorded before patch guardrail-actions-v1.
      if (g.action === 'warn' || !guardrailActionsOn(this.t.options)) continue;
      if (g.action === 'fix' && g.fix) {
        const fix = g.fix;
        apply(fixEdit(fix, (t) => this.t.eval(th, fix.expression, { ...extra, input: t, output: t })));
        // The corrected text must pass the check; if it still fails, the guardrail blocks (fails closed).
        const still = !g.provider && fired(g, current);
        this.t.decision(th, 'guardrail_fix', `${g.name}: ${fix.strategy}${still ? ' (still failing: blocked)' : ''}`);
        if (still) return result(g.message ?? "Sorry, I can't help with that.");
      } else if (g.action === 'filter') {
        if (g.check?.ast) apply(filterEdit(redactionPatterns(g.check.ast)));
      } else if (g.action === 'reask') {
        const max = g.max_reasks ?? 2;
        if (opts.effects === false) return result(g.message ?? 'Could you say that another way?');
        const count = (th.reasks?.[g.name] ?? 0) + 1;
        th.reasks = { ...th.reasks, [g.name]: count };
        this.t.decision(th, 'guardrail_reask', `${g.name}: ${count} of ${max}${count > max ? ' (blocked)' : ''}`);
        return result(count > max ? "Sorry, I can't help with that." : g.message ?? 'Could you say that another way?');
      } else if (g.action === 'escalate') {
        // A holding reply has no turn to hold; and while content is held, the escalation's own notice is not held again.
        if (opts.effects === false || this.holding) continue;
        return result(null, { guardrail: g.name, reason: g.message ? this.t.render(th, g.message) : `Guardrail ${g.name} held ${HELD_WHAT[kind]} for review` });
      }
    }
    return result(null);
  }

  /** The model's verdict on `text` for an `llm_check` guardrail (null: the judge failed, and the guardrail passes). */
  private judged(th: ThreadState, agent: AgentIR, g: GuardrailIR, check: string, text: string): { valid: boolean; reason: string } | null {
    // Not part of a parallel tool batch being issued or bound: its own command id, its own wait.
    const batch = this.t.batch;
    this.t.batch = null;
    try {
      return guardrailJudge({
        call: (d) => this.t.effect(d, null),
        error: (kind, msg) => this.t.error(th, kind, msg),
        decision: (kind, what, why) => this.t.decision(th, kind, what, why),
      }, agent, g.name, g.kind, check, text);
    } finally {
      this.t.batch = batch;
    }
  }

  /**
   * Content an `escalate` guardrail holds goes to a person: a human task (the escalation path,
   * with the content in its context) suspends the session. True when the person approved it and
   * this thread carries on, so the content goes on as it was; otherwise it is dropped.
   */
  hold(th: ThreadState, held: NonNullable<GuardResult['held']>, content: Json): boolean {
    this.holding = true;
    // Not part of a parallel tool batch being issued or bound: the escalation is its own command and wait.
    const batch = this.t.batch;
    this.t.batch = null;
    let outcome: 'continue' | 'stop';
    try {
      outcome = this.t.escalation.escalate(th, held.reason, 'medium', ['guardrail'], undefined, false, { held_content: content, guardrail: held.guardrail });
    } finally {
      this.holding = false;
      this.t.batch = batch;
    }
    if (outcome === 'stop' || !this.t.isActive(th)) return false;
    const human = th.vars.human;
    const approved = !!human && typeof human === 'object' && !Array.isArray(human) && human.approved === true;
    this.t.decision(th, 'guardrail_hold', `${held.guardrail}: ${approved ? 'released' : 'dropped'}`);
    if (!approved) this.t.guardBlocks++;
    return approved;
  }

  /**
   * A provider guardrail on `text`: a `moderate` effect (one per provider and text in a turn, shared
   * by the guardrails that ask the same), then the decision of abl/moderation.ts. A failed call
   * follows the guardrail's `on_error`. Traces the provider, category and score, never the text.
   */
  private moderated(th: ThreadState, agent: AgentIR, g: GuardrailIR, p: GuardrailProviderIR, text: string): boolean {
    const ev = this.moderation(th, g, p, text);
    const base = { guardrail: g.name, kind: g.kind, action: g.action, agent: agent.metadata.name, threshold: p.threshold };
    if (ev.type !== 'moderation_result' || !ev.ok) {
      const message = ev.type === 'moderation_result' && !ev.ok ? ev.error.message : `Unexpected ${ev.type} for a moderation call`;
      const fires = p.on_error === 'block';
      this.t.error(th, 'moderation_error', `Guardrail ${g.name}: the ${p.name} moderation call failed (${message}); on_error ${p.on_error}`);
      this.t.trace.push({ type: 'guardrail_eval', data: { ...base, passed: !fires, provider: p.name, error: message } });
      return fires;
    }
    const d = moderationDecision(p, ev);
    this.t.trace.push({
      type: 'guardrail_eval',
      data: { ...base, passed: !d.fires, provider: ev.provider, model: ev.model, category: d.category, score: d.score },
    });
    return d.fires;
  }

  /** The moderation verdict for `text`, from this turn's earlier call for the same text or a new `moderate` effect. */
  private moderation(th: ThreadState, g: GuardrailIR, p: GuardrailProviderIR, text: string): RuntimeEvent {
    const key = `${p.name}\u0000${text}`;
    const seen = this.t.moderations.get(key);
    if (seen) return seen;
    // Not part of a parallel tool batch being issued or bound: its own command id, its own wait.
    const batch = this.t.batch;
    this.t.batch = null;
    try {
      const ev = this.t.effect({ type: 'moderate', agent: th.agent, guardrail: g.name, provider: p.name, text }, null);
      this.t.moderations.set(key, ev);
      return ev;
    } finally {
      this.t.batch = batch;
    }
  }

  /**
   * `tool_input` / `tool_output` guardrails on a tool's arguments or result (`tool` and `args` or
   * `result` are in scope). A block sends the guardrail's message and drops the operation.
   */
  guardTool(th: ThreadState, kind: 'tool_input' | 'tool_output', tool: ToolIR, value: Json): { value: Json } | { blocked: ToolOutcome } {
    if (!this.t.checkpointsOn) return { value };
    const agent = this.t.agent(th);
    if (!agent.guardrails.some((g) => g.kind === kind)) return { value };
    const g = this.guardrails(th, agent, kind, guardText(value), { tool: tool.name, [kind === 'tool_input' ? 'args' : 'result']: value }, { json: value });
    const what = kind === 'tool_input' ? 'call to' : 'result of';
    if (g.held && !this.hold(th, g.held, value)) {
      return { blocked: { ok: false, blocked: true, error: { kind: 'guardrail', message: `The ${what} ${tool.name} was held by a guardrail and not released.` } } };
    }
    if (g.blocked === null) {
      const redacted = redactJson(g.value ?? value, g.patterns);
      if (kind === 'tool_input' && g.patterns.length > 0 && JSON.stringify(redacted) !== JSON.stringify(value)) this.t.inputRedactions.push(...g.patterns);
      return { value: redacted };
    }
    this.t.guardBlocks++;
    this.refuse(th, this.t.render(th, g.blocked, { tool: tool.name }));
    return { blocked: { ok: false, blocked: true, error: { kind: 'guardrail', message: `The ${what} ${tool.name} was blocked by a guardrail.` } } };
  }

  /**
   * `handoff` guardrails before a switch (the summary is `input`; `target` is in scope). Returns
   * null when one blocks (its message is sent). A redaction is applied to the passed `vars` here;
   * the returned patterns are for the history the target receives.
   */
  guardHandoff(from: ThreadState, to: string, vars: Record<string, Json>): SafeRegex[] | null {
    if (!this.t.checkpointsOn) return [];
    const agent = this.t.agent(from);
    if (!agent.guardrails.some((g) => g.kind === 'handoff')) return [];
    const g = this.guardrails(from, agent, 'handoff', guardText(vars._handoff_summary ?? null), { target: to });
    if (g.held && !this.hold(from, g.held, vars)) return null;
    for (const edit of g.edits) for (const [k, v] of Object.entries(vars)) vars[k] = editJson(v, edit);
    if (g.blocked !== null) {
      this.t.guardBlocks++;
      this.refuse(from, this.t.render(from, g.blocked, { target: to }));
      return null;
    }
    for (const [k, v] of Object.entries(vars)) vars[k] = redactJson(v, g.patterns);
    return g.patterns;
  }

  /** `BEFORE returning results` constraints, before an agent reply is sent; false drops the reply. */
  private resultsMayReturn(th: ThreadState): boolean {
    if (!this.t.checkpointsOn || this.t.returning) return true;
    if (!this.t.agent(th).constraints.some((c) => c.checkpoint.kind === 'before_returning')) return true;
    this.t.returning = true;
    try {
      return this.constraintsOk(th, null, 'return results', true);
    } finally {
      this.t.returning = false;
    }
  }

  /** Runs the constraints for a checkpoint; false when one failed (its ON_FAIL was applied). */
  constraintsOk(th: ThreadState, tool: string | null, operation: string, returning = false): boolean {
    const agent = this.t.agent(th);
    for (const c of agent.constraints) {
      const applies = returning
        ? c.checkpoint.kind === 'before_returning'
        : c.checkpoint.kind === 'default' || (tool !== null && c.checkpoint.kind === 'before_tool' && c.checkpoint.tool === tool);
      if (!applies) continue;
      if (c.when && !this.t.cond(th, c.when)) continue;
      const v = this.t.cond(th, c.condition);
      const failed = c.kind === 'restrict' ? v : !v;
      if (!failed) continue;
      if (c.kind === 'warn') {
        this.t.decision(th, 'constraint_warn', `WARN ${c.condition.src}`, operation);
        continue;
      }
      this.t.decision(th, 'constraint', `blocked ${operation}: ${c.kind.toUpperCase()} ${c.condition.src}`);
      const f = c.on_fail;
      switch (f.kind) {
        case 'message': this.refuse(th, this.t.render(th, f.message)); break;
        case 'block': this.refuse(th, this.t.message(th, 'constraint_blocked', "Sorry, I can't do that.")); break;
        case 'escalate': this.t.escalation.escalate(th, f.reason ?? `Constraint failed: ${c.condition.src}`); break;
        case 'handoff': this.t.handoffs.handoff(th, syntheticHandoff(f.agent), this.t.input, `constraint ${c.condition.src}`); break;
        case 'recover':
          if (f.respond) this.refuse(th, this.t.render(th, f.respond));
          for (const k of f.collect) this.t.clearVar(th, k);
          if (f.goto) this.t.recoverGoto = f.goto;
          break;
      }
      return false;
    }
    return true;
  }
}
