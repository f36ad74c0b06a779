// Digression matching (ABL.md §8): which DIGRESSIONS / SUB_INTENTS / global_digressions entry a
// user message takes while a flow waits in a step. Keywords and phrases first (cheap, no model);
// then, for an agent with an NLU section, the turn's classification (the model as a classifier,
// PATTERNS when it fails) takes a digression whose INTENT is the intent it named. The Turn applies
// the match (flow.ts `digress`).

import type { DigressionIR, FlowIR, FlowStepIR } from '../ir';

export interface DigressionMatch {
  digression: DigressionIR;
  /** Where it was declared: the step's DIGRESSIONS, its SUB_INTENTS, or the FLOW's global_digressions. */
  source: 'step' | 'sub_intent' | 'global';
  /** The phrase (a KEYWORD or the INTENT) found in the message, or the NLU intent that named it. */
  phrase: string;
  /** `nlu`: matched by the turn's classification, not by a phrase. */
  via?: 'nlu';
}

/** Lower case, punctuation and `_`/`-` as spaces, single spaces: the form phrases are compared in. */
export function normalizePhrase(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}\s]/gu, ' ').replace(/\s+/g, ' ').trim();
}

/**
 * The phrase of `d` that occurs in the normalised message as whole words, or null. The phrases are
 * the KEYWORDS and the INTENT itself (`"talk_to_human"` matches "talk to human").
 */
export function matchedPhrase(d: DigressionIR, normalizedText: string): string | null {
  const padded = ` ${normalizedText} `;
  for (const raw of [...d.keywords, d.intent]) {
    const phrase = normalizePhrase(raw);
    if (phrase && padded.includes(` ${phrase} `)) return raw;
  }
  return null;
}

/**
 * The first digression the message takes: the step's DIGRESSIONS, then its SUB_INTENTS, then the
 * FLOW's global_digressions, each in file order. `holds` evaluates a CONDITION (only asked for
 * entries whose phrases match); an entry with a false CONDITION is skipped.
 */
export function findDigression(
  flow: FlowIR, step: FlowStepIR, text: string, holds: (d: DigressionIR) => boolean,
): DigressionMatch | null {
  const norm = normalizePhrase(text);
  if (!norm) return null;
  const candidates: [DigressionIR[], DigressionMatch['source']][] = [
    [step.digressions, 'step'], [step.sub_intents, 'sub_intent'], [flow.global_digressions, 'global'],
  ];
  for (const [list, source] of candidates) {
    for (const digression of list) {
      const phrase = matchedPhrase(digression, norm);
      if (phrase === null) continue;
      if (digression.condition?.ast && !holds(digression)) continue;
      return { digression, source, phrase };
    }
  }
  return null;
}

/**
 * The first digression (same order as `findDigression`) whose INTENT is `intent`, compared in the
 * normalised phrase form (`talk_to_human` = `talk to human`). `holds` as for `findDigression`.
 */
export function findIntentDigression(
  flow: FlowIR, step: FlowStepIR, intent: string, holds: (d: DigressionIR) => boolean,
): DigressionMatch | null {
  const wanted = normalizePhrase(intent);
  if (!wanted) return null;
  const candidates: [DigressionIR[], DigressionMatch['source']][] = [
    [step.digressions, 'step'], [step.sub_intents, 'sub_intent'], [flow.global_digressions, 'global'],
  ];
  for (const [list, source] of candidates) {
    for (const digression of list) {
      if (normalizePhrase(digression.intent) !== wanted) continue;
      if (digression.condition?.ast && !holds(digression)) continue;
      return { digression, source, phrase: intent, via: 'nlu' };
    }
  }
  return null;
}

/** The action as trace text: `GOTO step`, `RESUME`, `DELEGATE Agent`, `COMPLETE`, `RESPOND`. */
export function actionText(d: DigressionIR): string {
  switch (d.action.kind) {
    case 'goto': return `GOTO ${d.action.step}`;
    case 'resume': return 'RESUME';
    case 'delegate': return `DELEGATE ${d.action.agent}`;
    case 'complete': return 'COMPLETE';
    default: return 'RESPOND';
  }
}
