// GATHER `STRATEGY: llm|hybrid` in the interpreter: one `call_llm` command (purpose `extraction`)
// for the fields still open, its answer parsed defensively and validated like pattern values; and
// LLM-judged validate rules (purpose `validation`).
// The request/answer protocol lives in abl/gather-llm.ts (shared with the offline `local` model).

import { extractGatherValues } from '../gather';
import { acceptExtracted, extractionMessages, llmRules, parseExtractionAnswer, parseValidationAnswer, validationMessages } from '../gather-llm';
import type { AgentIR, GatherFieldIR, Json, StepGatherIR } from '../ir';
import { isSetValue } from './values';
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
 * A step GATHER's values from one user message. `pattern` (or `llmOn` false: runs recorded before
 * gather-llm-v1): the deterministic extractor only. `llm`: one extraction call for the open fields.
 * `hybrid`: the extractor, then one extraction call for the fields it left open. With `llmOn`, each
 * value of a field with LLM-judged validate rules is then judged (one `validation` call per value);
 * a value judged invalid is dropped and its field reported invalid (its retry prompt follows).
 */
export function gatherFromMessage(
  host: ExtractionHost,
  agent: AgentIR,
  g: StepGatherIR,
  input: string,
  vars: Readonly<Record<string, Json>>,
  expecting: string | null | undefined,
  llmOn: boolean,
): { values: Record<string, unknown>; invalid: string[] } {
  const llm = llmOn ? effectiveStrategy(g) : null;
  const ex = llm === 'llm' ? { values: {}, invalid: [] } : extractGatherValues(g.fields, input, { existing: vars, corrections: g.corrections, expecting });
  const values: Record<string, unknown> = { ...ex.values };
  const invalid = ex.invalid.map((x) => x.field);
  if (llm) {
    // hybrid: the model is asked only for the fields the pattern strategy left open.
    const open = g.fields.filter((x) => !Object.hasOwn(values, x.name) && (g.corrections || !isSetValue(vars[x.name])));
    if (open.length > 0) {
      const got = llmExtract(host, agent, open, input, expecting ?? null);
      Object.assign(values, got.values);
      invalid.push(...got.invalid.map((x) => x.field));
    }
  }
  if (!llmOn) return { values, invalid };
  const judged = judgeValues(host, agent, g.fields, values);
  return { values: judged.values, invalid: [...invalid, ...judged.invalid] };
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
): ReturnType<typeof acceptExtracted> {
  const { system, user } = extractionMessages(fields, text, expecting && fields.some((f) => f.name === expecting) ? expecting : null);
  const ev = askModel(host, agent, 'extraction', system, user);
  const none = { values: {}, invalid: [] };
  if (ev.type !== 'llm_result' || !ev.ok) {
    host.error('extraction_error', `Extraction call failed: ${ev.type === 'llm_result' && !ev.ok ? ev.error.message : `unexpected ${ev.type}`}`);
    return none;
  }
  const parsed = parseExtractionAnswer(ev.content, ev.toolCalls);
  if (!parsed.ok) {
    host.error('extraction_error', `Unreadable extraction answer (${parsed.error}); nothing extracted`);
    return none;
  }
  return acceptExtracted(fields, parsed.values);
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
      messages: [{ role: 'system', content: system }, { role: 'user', content: user }],
      tools: [],
    },
  });
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
