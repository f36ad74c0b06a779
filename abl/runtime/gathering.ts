// GATHER in a turn: the agent's top-level fields (extracted from every message, asked for by
// reasoning agents) and a flow step's GATHER (extract, then complete or ask and wait), with the
// field rules, defaults, `infer` confirmations and retries.

import { type FieldActive, allFieldsGathered, extractGatherValues, fieldActivity, fieldsForRules, fieldsWithTypedRanges, hasTypedRange, nextFieldToAsk, pendingDefaults, stepGatherFields, usesFieldRules } from '../gather';
import type { AgentIR, FlowStepIR, GatherFieldIR } from '../ir';
import type { ThreadState } from './contract';
import { type ExtractionCall, type ExtractionHost, type InferenceInput, gatherFromMessage, inferTopLevel, judgeValues } from './gather-llm';
import { type InferenceHooks, answerInferred, applyInferred, confirmationPrompt, conversationLines, inferenceSkip } from './gather-infer';
import { agentErrorTransitionsOn, gatherFieldRulesOn, gatherInferOn, gatherRangesOn, startGatherHoldOn } from './options';
import { isSetValue } from './values';
import { type StepResult, type TurnContext, WAIT } from './turn-context';

export class Gathering {
  constructor(private readonly t: TurnContext) {}

  extractTopGather(th: ThreadState, agent: AgentIR, input: string): void {
    if (agent.gather.length === 0) return;
    const llmOn = this.t.options.gatherLlm !== false;
    let asked = agent.gather.some((f) => f.name === th.askedField) ? th.askedField ?? null : null;
    // A yes or no to "Just to confirm…" (GATHER infer) is not a value of the field.
    const confirmation = asked ? answerInferred(th, input, this.inferHooks(th)) : 'none';
    if (confirmation === 'confirmed' || confirmation === 'rejected') th.askedField = asked = null;
    const fields = this.gatherFields(th, agent.gather).fields;
    // STRATEGY llm|hybrid on the agent's GATHER: the step GATHER's extraction (one model call, judged values).
    if (llmOn && agent.gather_strategy && agent.gather_strategy !== 'pattern') {
      const g = { fields: [...fields], strategy: agent.gather_strategy, strategy_authored: true, corrections: false, complete_when: null };
      const got = gatherFromMessage(this.gatherHost(th), agent, g, input, th.vars, asked, true, this.inference(th));
      for (const bad of got.invalid) this.t.invalidFields.add(bad);
      for (const [k, v] of Object.entries(got.values)) this.t.setVar(th, k, v, 'gather');
      applyInferred(th, agent.gather, got.inferred, this.inferHooks(th));
      if (asked && Object.hasOwn(got.values, asked)) th.askedField = null;
      return;
    }
    const ex = extractGatherValues(fields, input, { existing: th.vars, expecting: asked });
    for (const bad of ex.invalid) this.t.invalidFields.add(bad.field);
    const modelRead = llmOn ? inferTopLevel(this.gatherHost(th), fields === agent.gather ? agent : { ...agent, gather: [...fields] }, input, ex.values, th.vars, asked, this.inference(th)) : null;
    for (const bad of modelRead?.invalid ?? []) this.t.invalidFields.add(bad.field);
    const values = { ...modelRead?.values, ...ex.values };
    // LLM-judged validate rules, as in a step GATHER: a value judged invalid is a failed validation.
    const judged = llmOn ? judgeValues(this.gatherHost(th), agent, agent.gather, values) : { values, invalid: [] };
    for (const bad of judged.invalid) this.t.invalidFields.add(bad);
    for (const [k, v] of Object.entries(judged.values)) this.t.setVar(th, k, v, 'gather');
    applyInferred(th, agent.gather, modelRead?.inferred ?? [], this.inferHooks(th));
    if (asked && Object.hasOwn(judged.values, asked)) th.askedField = null;
  }

  /**
   * GATHER field rules (`depends_on`, `activation`, `default`; ABL.md §6) for `fields`: which are
   * active now, or null when none uses them or the run predates them (patch gather-field-rules-v1,
   * asked only here).
   */
  fieldRules(th: ThreadState, fields: readonly GatherFieldIR[]): FieldActive | null {
    if (!fields.some(usesFieldRules) || !gatherFieldRulesOn(this.t.options)) return null;
    return fieldActivity(fields, th.vars, (when) => this.t.cond(th, when));
  }

  /**
   * A GATHER's fields as extraction and validation see them (`range` and `list` as the field rules
   * say: on, or off for runs recorded before them), with those rules (null when off or unused).
   */
  private gatherFields(th: ThreadState, stated: readonly GatherFieldIR[]): { fields: readonly GatherFieldIR[]; rules: FieldActive | null } {
    const rules = this.fieldRules(th, stated);
    let fields = stated.some(usesFieldRules) ? fieldsForRules(stated, rules !== null) : stated;
    // A date, datetime or string field's range (patch gather-ranges-v1, asked only for such a field).
    if (fields.some(hasTypedRange) && gatherRangesOn(this.t.options)) fields = fieldsWithTypedRanges(fields);
    return { fields, rules };
  }

  /**
   * The agent's `transient` top-level GATHER fields, when the run has them (patch
   * gather-ranges-v1, asked only for an agent with such a field): they are not kept once the
   * agent completes (not copied up to a waiting parent, cleared from its variables).
   */
  transientTop(agent: AgentIR): ReadonlySet<string> {
    const names = agent.gather.filter((f) => f.transient).map((f) => f.name);
    return names.length > 0 && gatherRangesOn(this.t.options) ? new Set(names) : new Set();
  }

  /** Leaving `step` for another step: the `transient` fields its GATHERs (the branches' too) collected are cleared. */
  forgetTransient(th: ThreadState, step: FlowStepIR): void {
    const fields = stepGatherFields(step);
    if (!fields.some((f) => f.transient) || !this.fieldRules(th, fields)) return;
    for (const f of fields) if (f.transient) this.t.clearVar(th, f.name);
  }

  /** The GATHER is complete: its unset active fields with a `default` take it. */
  private applyDefaults(th: ThreadState, fields: readonly GatherFieldIR[], active: FieldActive): void {
    for (const [name, value] of pendingDefaults(fields, th.vars, active)) this.t.setVar(th, name, value, 'gather');
  }

  /** GATHER `infer` for this message: the conversation, asked for only when a field could be inferred. */
  private inference(th: ThreadState): InferenceInput {
    return { context: () => (gatherInferOn(this.t.options) ? conversationLines(th) : null), skip: inferenceSkip(th) };
  }

  private inferHooks(th: ThreadState): InferenceHooks {
    return { set: (name, value) => this.t.setVar(th, name, value, 'gather'), decision: (decision, reasoning) => this.t.decision(th, 'inference', decision, reasoning) };
  }

  /** What the GATHER LLM calls need of the turn: journalled effects and trace drafts. */
  private gatherHost(th: ThreadState): ExtractionHost {
    return {
      call: (d: ExtractionCall) => this.t.effect(d, null),
      error: (kind: string, msg: string) => this.t.error(th, kind, msg),
      decision: (kind: string, what: string, why: string) => this.t.decision(th, kind, what, why),
    };
  }

  /**
   * Reasoning agents ask for missing top-level GATHER fields deterministically. True when it
   * asked (or answered otherwise). After `max_retries` answers that did not fill the field, it is
   * a `validation_error` handled by the agent's ON_ERROR (else MESSAGES.error_default), and the
   * field is asked afresh at the next message unless that handler ended the agent.
   */
  askTopGather(th: ThreadState, agent: AgentIR): boolean {
    const rules = this.fieldRules(th, agent.gather);
    const missing = rules ? nextFieldToAsk(agent.gather, th.vars, rules, false) : agent.gather.find((f) => f.required && !isSetValue(th.vars[f.name]));
    // Nothing left to ask: the fields nobody gave take their defaults before the agent goes on.
    if (rules && !missing) this.applyDefaults(th, agent.gather, rules);
    const retry = !!missing && th.askedField === missing.name && (this.t.invalidFields.has(missing.name) || this.t.input !== null);
    if (!retry) delete th.askedRetries;
    if (!missing) return false;
    if (retry) {
      const n = (th.askedRetries ?? 0) + 1;
      if (missing.max_retries !== null && n > missing.max_retries && agentErrorTransitionsOn(this.t.options)) {
        delete th.askedRetries;
        th.askedField = null;
        this.t.error(th, 'validation_error', `No valid ${missing.name} after ${missing.max_retries} retries`);
        return this.t.errors.agentLevelError(th, 'validation_error') === 'stop';
      }
      th.askedRetries = n;
    }
    this.t.guards.respond(th, this.t.render(th, this.promptFor(th, missing, retry)));
    th.askedField = missing.name;
    return true;
  }

  /** The question for a missing field: a confirmation when an inferred value awaits one. */
  private promptFor(th: ThreadState, f: GatherFieldIR, retry: boolean): string {
    return confirmationPrompt(th, f, this.t.agent(th).messages.confirm_inferred ?? null) ?? (retry ? f.retry_prompt : null) ?? f.prompt ?? `Please provide your ${f.name.replace(/_/g, ' ')}.`;
  }

  /** This turn's message came with the session's start, in the same request. */
  private answersStart(): boolean {
    const e = this.t.exec.event;
    return e.type === 'user_message' && e.withStart === true;
  }

  /** Step GATHER: extract, then either done or ask (and wait). */
  stepGather(th: ThreadState, step: FlowStepIR, input: string | null, answering: boolean): 'done' | StepResult {
    const stated = step.gather;
    if (!stated) return 'done';
    const { fields, rules } = this.gatherFields(th, stated.fields);
    const g = fields === stated.fields ? stated : { ...stated, fields: [...fields] };
    const f = th.flow as NonNullable<ThreadState['flow']>;
    const key = `gather:${step.name}`;
    const askedBefore = th.askedField ?? null;
    let extracted = 0;
    const invalid = new Set<string>();
    let confirmation: ReturnType<typeof answerInferred> = 'none';
    if (input !== null) {
      // A yes or no to "Just to confirm…" (GATHER infer) is not a value of the field.
      confirmation = answering ? answerInferred(th, input, this.inferHooks(th)) : 'none';
      if (confirmation === 'confirmed' || confirmation === 'rejected') th.askedField = null;
      const expecting =
        confirmation === 'confirmed' || confirmation === 'rejected' ? null : answering ? (g.fields.some((x) => x.name === th.askedField) ? th.askedField : undefined) : null;
      const ex = gatherFromMessage(this.gatherHost(th), this.t.agent(th), g, input, th.vars, expecting, this.t.options.gatherLlm !== false, this.inference(th));
      for (const [k, v] of Object.entries(ex.values)) this.t.setVar(th, k, v, 'gather');
      for (const bad of ex.invalid) invalid.add(bad);
      extracted = Object.keys(ex.values).length + applyInferred(th, g.fields, ex.inferred, this.inferHooks(th)) + (confirmation === 'confirmed' ? 1 : 0);
    }
    const complete = g.complete_when?.ast ? this.t.cond(th, g.complete_when) : allFieldsGathered(g.fields, th.vars, rules ?? undefined);
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
    if (answering && missing.name === askedBefore && this.answersStart() && startGatherHoldOn(this.t.options)) {
      // The message came with the start, whose reply already asks for this field: its sender has
      // not seen the question, so giving no value for it is not a failed answer, and the question
      // is not said twice in one reply (whatever else the message filled).
      this.t.decision(th, 'gather_held', `${step.name}: ${missing.name}`, 'the first message came with the start, which asked for it');
      this.t.flow.setFlowPhase(th, 'gather');
      return WAIT;
    }
    // After "no" to an inferred value the field is asked afresh, not as a failed answer.
    const retry = answering && extracted === 0 && confirmation !== 'rejected';
    if (retry) {
      const n = (f.attempts[key] ?? 0) + 1;
      f.attempts[key] = n;
      if (missing.max_retries !== null && n > missing.max_retries) {
        delete f.attempts[key];
        this.t.error(th, 'validation_error', `No valid ${missing.name} after ${missing.max_retries} retries`);
        if (step.on_exhausted) return this.t.flow.branchActions(th, step, step.on_exhausted);
        const b = this.t.flow.pick(th, step.on_fail);
        if (b) return this.t.flow.branchActions(th, step, b.actions);
      }
    }
    this.t.guards.respond(th, this.t.render(th, this.promptFor(th, missing, retry || invalid.has(missing.name))));
    th.askedField = missing.name;
    this.t.flow.setFlowPhase(th, 'gather');
    return WAIT;
  }
}
