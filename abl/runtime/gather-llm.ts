// GATHER `STRATEGY: llm|hybrid` in the interpreter: one `call_llm` command (purpose `extraction`)
// for the fields still open, its answer parsed defensively and validated like pattern values; and
// LLM-judged validate rules (purpose `validation`).
// The request/answer protocol lives in abl/gather-llm.ts (shared with the offline `local` model).

import { extractGatherValues } from '../gather';
import {
  acceptExtracted, extractionMessages, guardrailJudgeMessages, llmRules, parseExtractionAnswer, parseValidationAnswer, validationMessages, type AcceptedExtraction, type InferredValue,
} from '../gather-llm';
import type { AgentIR, GatherFieldIR, Json, StepGatherIR } from '../ir';
import { isSetValue, llmLimits } from './values';
import type { RuntimeCommand, RuntimeEvent } from './contract';

export type ExtractionCall = Omit<Extract<RuntimeCommand, { type: 'call_llm' }>, 'id'>;

/** What the extraction needs of the turn: its effect (journalled LLM call) and its trace. */
export interface ExtractionHost {
  call(draft: ExtractionCall): RuntimeEvent;
  error(kind: string, message: string): void;
  decision(kind: string, decision: string, reasoning: string): void;
}

/**
 * The strategy a step runs, or null for `pattern`. A `hybrid` in IR compiled before the default
 * became `pattern` (no `strategy_authored`) was most likely not written by anyone: pattern.
 */
export function effectiveStrategy(g: StepGatherIR): 'llm' | 'hybrid' | null {
  if (g.strategy === 'llm') return 'llm';
  if (g.strategy === 'hybrid' && g.strategy_authored === true) return 'hybrid';
  return null;
}

/**
 * GATHER `infer` for one message: `context()` gives the conversation so far (one line per message),
 * or null when inference is off (runs recorded before gather-infer-v1); it is called only when a
 * field could be inferred. `skip`: fields not to infer (a candidate awaits confirmation, or the user
 * rejected one).
 */
export interface InferenceInput {
  context: () => readonly string[] | null;
  skip: ReadonlySet<string>;
}

export interface GatheredFromMessage {
  values: Record<string, unknown>;
  invalid: string[];
  /** Values the model inferred for `infer` fields (the caller applies infer_confidence / infer_confirm). */
  inferred: InferredValue[];
}

/**
 * Values of `fields` from one user message after the deterministic extractor found `ex`: with a
 * strategy (`llm`, `hybrid`) one extraction call for the fields still open; without one, a call
 * only when an `infer` field is open and inference is on (the model may then also read stated
 * values of those fields). Inferable fields are marked in that call.
 */
function extractWithModel(
  host: ExtractionHost,
  agent: AgentIR,
  fields: readonly GatherFieldIR[],
  input: string,
  open: (f: GatherFieldIR) => boolean,
  expecting: string | null,
  strategy: 'llm' | 'hybrid' | null,
  infer: InferenceInput | null,
  unset: (f: GatherFieldIR) => boolean,
): AcceptedExtraction {
  // Only a field nobody filled is inferred (with CORRECTIONS a filled one is still open to the strategy).
  const inferable = (f: GatherFieldIR) => f.infer && open(f) && unset(f) && !infer?.skip.has(f.name);
  const context = infer && fields.some(inferable) ? infer.context() : null;
  const asked = strategy ? fields.filter(open) : context ? fields.filter(inferable) : [];
  if (asked.length === 0) return { values: {}, invalid: [], inferred: [] };
  const got = llmExtract(host, agent, asked, input, expecting, context);
  return { ...got, inferred: got.inferred.filter((x) => !infer?.skip.has(x.field)) };
}

/**
 * A step GATHER's values from one user message. `pattern` (or `llmOn` false: runs recorded before
 * gather-llm-v1): the deterministic extractor only. `llm`: one extraction call for the open fields.
 * `hybrid`: the extractor, then one extraction call for the fields it left open. With `llmOn`, open
 * `infer` fields may be inferred (see extractWithModel), and each value of a field with LLM-judged
 * validate rules is judged (one `validation` call per value); a value judged invalid is dropped and
 * its field reported invalid (its retry prompt follows).
 */
export function gatherFromMessage(
  host: ExtractionHost,
  agent: AgentIR,
  g: StepGatherIR,
  input: string,
  vars: Readonly<Record<string, Json>>,
  expecting: string | null | undefined,
  llmOn: boolean,
  infer: InferenceInput | null = null,
): GatheredFromMessage {
  const llm = llmOn ? effectiveStrategy(g) : null;
  const ex = llm === 'llm' ? { values: {}, invalid: [] } : extractGatherValues(g.fields, input, { existing: vars, corrections: g.corrections, expecting });
  const values: Record<string, unknown> = { ...ex.values };
  const invalid = ex.invalid.map((x) => x.field);
  if (!llmOn) return { values, invalid, inferred: [] };
  // hybrid: the model is asked only for the fields the pattern strategy left open.
  const open = (x: GatherFieldIR) => !Object.hasOwn(values, x.name) && (g.corrections || !isSetValue(vars[x.name]));
  const got = extractWithModel(host, agent, g.fields, input, open, expecting ?? null, llm, infer, (x) => !isSetValue(vars[x.name]));
  Object.assign(values, got.values);
  invalid.push(...got.invalid.map((x) => x.field));
  const judged = judgeValues(host, agent, g.fields, values);
  return { values: judged.values, invalid: [...invalid, ...judged.invalid], inferred: got.inferred };
}

/**
 * An agent's top-level GATHER after the pattern extractor: open `infer` fields may be inferred
 * (one extraction call; see extractWithModel). Only with inference on.
 */
export function inferTopLevel(
  host: ExtractionHost,
  agent: AgentIR,
  input: string,
  values: Readonly<Record<string, unknown>>,
  vars: Readonly<Record<string, Json>>,
  expecting: string | null,
  infer: InferenceInput,
): AcceptedExtraction {
  const open = (x: GatherFieldIR) => !Object.hasOwn(values, x.name) && !isSetValue(vars[x.name]);
  return extractWithModel(host, agent, agent.gather, input, open, expecting, null, infer, open);
}

/**
 * Judges each of `values` whose field has LLM-judged validate rules (one `validation` call per
 * value, a `validation` decision per verdict). A value judged invalid is dropped and its field
 * listed in `invalid`; a broken judge accepts the value (see llmJudge). Used by step GATHER and by
 * an agent's top-level GATHER.
 */
export function judgeValues(
  host: ExtractionHost,
  agent: AgentIR,
  fields: readonly GatherFieldIR[],
  values: Readonly<Record<string, unknown>>,
): { values: Record<string, unknown>; invalid: string[] } {
  const kept: Record<string, unknown> = { ...values };
  const invalid: string[] = [];
  for (const f of fields) {
    if (!Object.hasOwn(kept, f.name) || llmRules(f).length === 0) continue;
    const verdict = llmJudge(host, agent, f, kept[f.name]);
    if (!verdict) continue;
    host.decision('validation', `${f.name}: ${verdict.valid ? 'valid' : 'invalid'}`, verdict.reason);
    if (verdict.valid) continue;
    delete kept[f.name];
    invalid.push(f.name);
  }
  return { values: kept, invalid };
}

/**
 * Asks the model for `fields` in `text`. A failed call or an unreadable answer extracts nothing and
 * records an `extraction_error` trace event; the step then asks again as after any empty answer.
 */
export function llmExtract(
  host: ExtractionHost,
  agent: AgentIR,
  fields: readonly GatherFieldIR[],
  text: string,
  expecting: string | null,
  context: readonly string[] | null = null,
): AcceptedExtraction {
  const { system, user } = extractionMessages(fields, text, expecting && fields.some((f) => f.name === expecting) ? expecting : null, context);
  const ev = askModel(host, agent, 'extraction', system, user);
  const none = { values: {}, invalid: [], inferred: [] };
  if (ev.type !== 'llm_result' || !ev.ok) {
    host.error('extraction_error', `Extraction call failed: ${ev.type === 'llm_result' && !ev.ok ? ev.error.message : `unexpected ${ev.type}`}`);
    return none;
  }
  const parsed = parseExtractionAnswer(ev.content, ev.toolCalls);
  if (!parsed.ok) {
    host.error('extraction_error', `Unreadable extraction answer (${parsed.error}); nothing extracted`);
    return none;
  }
  return acceptExtracted(fields, parsed.values, context !== null);
}

/** One deterministic (temperature 0, no tools) call of the agent's model for GATHER's own purposes. */
function askModel(host: ExtractionHost, agent: AgentIR, purpose: 'extraction' | 'validation', system: string, user: string) {
  return host.call({
    type: 'call_llm',
    agent: agent.metadata.name,
    purpose,
    request: {
      model: agent.execution.model,
      tier: 'fast',
      temperature: 0,
      ...llmLimits(agent),
      messages: [{ role: 'system', content: system }, { role: 'user', content: user }],
      tools: [],
    },
  });
}

/**
 * A guardrail's `llm_check`: asks the model (purpose `validation`) whether `text` satisfies the
 * rule. Null when the call failed or its answer was unreadable (an `llm_check_error` trace event).
 */
export function guardrailJudge(host: ExtractionHost, agent: AgentIR, name: string, kind: string, check: string, text: string): { valid: boolean; reason: string } | null {
  const { system, user } = guardrailJudgeMessages(name, kind, check, text);
  const ev = askModel(host, agent, 'validation', system, user);
  if (ev.type !== 'llm_result' || !ev.ok) {
    host.error('llm_check_error', `Guardrail ${name}: the judge call failed (${ev.type === 'llm_result' && !ev.ok ? ev.error.message : `unexpected ${ev.type}`})`);
    return null;
  }
  const verdict = parseValidationAnswer(ev.content, ev.toolCalls);
  if (!verdict.ok) {
    host.error('llm_check_error', `Guardrail ${name}: unreadable judge answer (${verdict.error})`);
    return null;
  }
  return { valid: verdict.valid, reason: verdict.reason };
}

/**
 * Asks the model whether `value` satisfies the field's LLM-judged validate rules. Null when the
 * call failed or its answer was unreadable (an `llm_validation_error` trace event): the value is
 * then accepted, since a broken judge must not make the field impossible to fill.
 */
export function llmJudge(host: ExtractionHost, agent: AgentIR, field: GatherFieldIR, value: unknown): { valid: boolean; reason: string } | null {
  const { system, user } = validationMessages(field, value);
  const ev = askModel(host, agent, 'validation', system, user);
  if (ev.type !== 'llm_result' || !ev.ok) {
    host.error('llm_validation_error', `Validation call for ${field.name} failed: ${ev.type === 'llm_result' && !ev.ok ? ev.error.message : `unexpected ${ev.type}`}; value accepted`);
    return null;
  }
  const verdict = parseValidationAnswer(ev.content, ev.toolCalls);
  if (!verdict.ok) {
    host.error('llm_validation_error', `Unreadable validation answer for ${field.name} (${verdict.error}); value accepted`);
    return null;
  }
  return { valid: verdict.valid, reason: verdict.reason };
}
