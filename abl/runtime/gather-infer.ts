// GATHER `infer`: what the interpreter does with a value the model inferred for a field nobody
// stated. Below `infer_confidence` it is not used; at or above it, it is stored (`infer_confirm:
// false`) or held as a candidate that the next question asks the user to confirm (yes stores it,
// no rejects it for good, anything else is read as an ordinary answer). The extraction call itself
// is in gather-llm.ts; the request protocol in abl/gather-llm.ts.

import type { InferredValue } from '../gather-llm';
import { yesOrNo } from '../gather';
import type { GatherFieldIR, Json } from '../ir';
import type { ThreadState } from './contract';
import { isSetValue, toJson } from './values';

export interface InferenceHooks {
  set(name: string, value: unknown): void;
  decision(decision: string, reasoning: string): void;
}

/** Fields not to infer again: a candidate awaits confirmation, or the user rejected one. */
export function inferenceSkip(th: ThreadState): Set<string> {
  return new Set([...Object.keys(th.inferred ?? {}), ...(th.inferRejected ?? [])]);
}

/** The thread's conversation so far, one line per user or assistant message, for an inference request. */
export function conversationLines(th: ThreadState): string[] {
  return th.history.filter((t) => t.role === 'user' || (t.role === 'assistant' && t.content)).map((t) => `${t.role}: ${t.content}`);
}

/** Applies `infer_confidence` and `infer_confirm` to what the model inferred. Returns how many values it stored. */
export function applyInferred(th: ThreadState, fields: readonly GatherFieldIR[], inferred: readonly InferredValue[], hooks: InferenceHooks): number {
  let stored = 0;
  for (const inf of inferred) {
    const f = fields.find((x) => x.name === inf.field);
    if (!f || isSetValue(th.vars[f.name])) continue;
    const confidence = `confidence ${inf.confidence.toFixed(2)}, threshold ${f.infer_confidence}`;
    if (inf.confidence < f.infer_confidence) {
      hooks.decision(`${f.name}: not used`, confidence);
    } else if (!f.infer_confirm) {
      hooks.set(f.name, inf.value);
      stored += 1;
      hooks.decision(`${f.name}: accepted`, confidence);
    } else {
      th.inferred = { ...th.inferred, [f.name]: toJson(inf.value) };
      hooks.decision(`${f.name}: to confirm`, confidence);
    }
  }
  return stored;
}

/**
 * The user's answer to a confirmation question about the candidate for `th.askedField`:
 * `confirmed` (the value is stored), `rejected` (never inferred again in this thread), `other`
 * (an ordinary answer, read as such), or `none` when no candidate was asked about. The candidate
 * is gone afterwards in every case.
 */
export function answerInferred(th: ThreadState, input: string, hooks: InferenceHooks): 'confirmed' | 'rejected' | 'other' | 'none' {
  const name = th.askedField;
  if (!name || !th.inferred || !Object.hasOwn(th.inferred, name)) return 'none';
  const { [name]: candidate, ...rest } = th.inferred;
  if (Object.keys(rest).length > 0) th.inferred = rest;
  else delete th.inferred;
  const yes = yesOrNo(input);
  if (yes === true) {
    hooks.set(name, candidate);
    hooks.decision(`${name}: confirmed`, 'the user confirmed the inferred value');
    return 'confirmed';
  }
  if (yes === false) {
    th.inferRejected = [...(th.inferRejected ?? []), name];
    hooks.decision(`${name}: rejected`, 'the user rejected the inferred value');
    return 'rejected';
  }
  return 'other';
}

/**
 * The question that asks the user to confirm a candidate, or null when `f` has none. `template`
 * is the agent's `MESSAGES.confirm_inferred`, where `{{field}}` and `{{value}}` stand for the
 * field (underscores as spaces) and the inferred value.
 */
export function confirmationPrompt(th: ThreadState, f: GatherFieldIR, template: string | null = null): string | null {
  if (!th.inferred || !Object.hasOwn(th.inferred, f.name)) return null;
  const value: Json | undefined = th.inferred[f.name];
  // The question is rendered as a template: a value must not add placeholders to it.
  const shown = (typeof value === 'string' ? value : JSON.stringify(value)).replace(/[{}]/g, '');
  const label = f.name.replace(/_/g, ' ');
  if (template) return template.replaceAll('{{field}}', label).replaceAll('{{value}}', shown);
  return `Just to confirm: your ${label} is ${shown}. Is that right?`;
}
