// The NLU classification protocol: the request the interpreter sends as a `call_llm` command
// (purpose `classification`) for an agent with an NLU section, the defensive reading of the model's
// answer into `intent.*`, and the pattern tier used when the call fails. Pure; no LLM here. The
// offline `local` model answers such requests in providers/llm/local-nlu.ts.
//
// Protocol (docs/abl.md, "NLU"): a strict JSON answer, no tools. The system message starts with
// NLU_MARKER and carries the intents and entities as one JSON line; the user message is the user's
// text. The model answers {"intent": name | null, "confidence": 0..1, "entities": {name: value}}.

import type { Json, NluEntityIR, NluIR } from './ir';
import { safeRegex } from './regex';
import { firstJsonObject } from './gather-llm';

export const NLU_MARKER = 'ABL-NLU-CLASSIFICATION/1';
/** How much of the user's message is classified. */
const MAX_TEXT = 4000;

/** What `intent` holds for the rest of the turn. */
export interface IntentResult {
  /** The intent decided, or null when none was (then `fallback_intent`, when declared). */
  category: string | null;
  confidence: number;
  /** Entity name → value, only the entities found and valid. */
  entities: Record<string, Json>;
  /**
   * How `category` was decided: `model` (the model's intent, at or above the threshold), `pattern`
   * (the pattern tier, after a failed call or an unreadable answer), `none` (neither decided one:
   * `category` is the fallback intent or null).
   */
  source: 'model' | 'pattern' | 'none';
}

/** The JSON line the request carries: what the model (or the offline model) classifies with. */
export interface ClassificationSpec {
  intents: Array<{ name: string; description?: string; patterns: string[]; examples: string[]; entities: string[] }>;
  entities: Array<{ name: string; type: string; description?: string; values?: string[]; synonyms?: Record<string, string[]>; pattern?: string }>;
  glossary: string[];
}

export function classificationSpec(nlu: NluIR): ClassificationSpec {
  return {
    intents: nlu.intents.map((i) => ({ name: i.name, ...(i.description ? { description: i.description } : {}), patterns: i.patterns, examples: i.examples, entities: i.entities })),
    entities: nlu.entities.map((e) => ({
      name: e.name,
      type: e.type,
      ...(e.description ? { description: e.description } : {}),
      ...(e.type === 'enum' ? { values: e.values, synonyms: e.synonyms } : {}),
      ...(e.pattern !== null ? { pattern: e.pattern } : {}),
    })),
    glossary: nlu.glossary,
  };
}

/** The system and user messages of a classification request. */
export function classificationMessages(nlu: NluIR, text: string): { system: string; user: string } {
  const system = [
    NLU_MARKER,
    "Classify the user's message into one of the intents below, and extract the entities it states.",
    'Answer with ONE JSON object and nothing else (no prose, no code fence), of the form',
    '  {"intent": "<intent name, or null when none fits>", "confidence": <0 to 1>, "entities": {"<entity name>": <value>}}.',
    'Judge by each intent\'s description, examples and patterns. Leave out every entity the message does not state; never guess.',
    'An enum entity takes one of its values (a synonym means its value); a pattern entity the text that matches its pattern;',
    'a number entity a number; a date entity an ISO date (YYYY-MM-DD) when the message gives one; others the words used.',
    'Intents, entities and glossary (JSON, the last line):',
    JSON.stringify(classificationSpec(nlu)),
  ].join('\n');
  return { system, user: text.slice(0, MAX_TEXT) };
}

/** Reads the spec (the last line) of a classification request, for the offline model; null for other requests. */
export function readClassificationRequest(system: string): ClassificationSpec | null {
  if (!system.startsWith(NLU_MARKER)) return null;
  const line = system.split('\n').at(-1);
  try {
    const spec = JSON.parse(line ?? '') as ClassificationSpec;
    return Array.isArray(spec.intents) && Array.isArray(spec.entities) ? spec : null;
  } catch {
    return null;
  }
}

export type ParsedClassification = { ok: true; intent: string | null; confidence: number; entities: Record<string, Json>; dropped: string[] } | { ok: false; error: string };

/**
 * Reads and validates the model's answer. The intent must be one of the agent's (case-insensitive;
 * another name is an error); a missing confidence counts as 1, others are clamped to 0–1. Entities
 * that are not declared, or whose value does not fit their type, are dropped and named in `dropped`.
 */
export function parseClassificationAnswer(nlu: NluIR, content: string, toolCalls: readonly { arguments: string }[] = []): ParsedClassification {
  const got = firstJsonObject(content, toolCalls);
  if (!got.ok) return got;
  const answer = got.value;
  const raw = answer.intent ?? answer.category ?? null;
  let intent: string | null = null;
  if (typeof raw === 'string' && raw.trim() !== '' && raw.trim().toLowerCase() !== 'null' && raw.trim().toLowerCase() !== 'none') {
    const found = nlu.intents.find((i) => i.name.toLowerCase() === raw.trim().toLowerCase());
    if (!found) return { ok: false, error: `"${raw.slice(0, 80)}" is not one of the intents` };
    intent = found.name;
  } else if (raw !== null && typeof raw !== 'string') {
    return { ok: false, error: 'the answer\'s "intent" is not a string or null' };
  }
  const c = answer.confidence;
  const confidence = typeof c === 'number' && Number.isFinite(c) ? Math.min(1, Math.max(0, c)) : typeof c === 'string' && Number.isFinite(Number(c)) ? Math.min(1, Math.max(0, Number(c))) : intent === null ? 0 : 1;
  const entities: Record<string, Json> = {};
  const dropped: string[] = [];
  const given = answer.entities;
  if (given && typeof given === 'object' && !Array.isArray(given)) {
    for (const [name, value] of Object.entries(given)) {
      if (value === null || value === undefined || value === '') continue;
      const def = nlu.entities.find((e) => e.name === name);
      const v = def ? entityValue(def, value) : undefined;
      if (v === undefined) dropped.push(name);
      else entities[name] = v;
    }
  }
  return { ok: true, intent, confidence, entities, dropped };
}

/** A value coerced to the entity's type, or undefined when it does not fit. */
export function entityValue(e: NluEntityIR, value: Json): Json | undefined {
  if (typeof value === 'object' && value !== null) return undefined;
  const text = String(value).trim();
  if (text === '') return undefined;
  switch (e.type) {
    case 'enum': {
      const lower = text.toLowerCase();
      const exact = e.values.find((v) => v.toLowerCase() === lower);
      if (exact) return exact;
      const syn = Object.entries(e.synonyms).find(([, others]) => others.some((o) => o.toLowerCase() === lower));
      return syn ? syn[0] : undefined;
    }
    case 'pattern': {
      const re = e.pattern === null ? null : safeRegex(e.pattern);
      const m = re?.exec(text);
      return m ? m[0] : undefined;
    }
    case 'number': {
      if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
      const n = Number(text.replace(/[,\s]/g, ''));
      return Number.isFinite(n) ? n : undefined;
    }
    default:
      return text;
  }
}

/** The intents whose PATTERNS occur in `text` (case-insensitive substrings), in declaration order. */
export function patternMatches(nlu: NluIR, text: string): string[] {
  const lower = text.toLowerCase();
  return nlu.intents.filter((i) => i.patterns.some((p) => lower.includes(p.toLowerCase()))).map((i) => i.name);
}

/**
 * The result when the model gave no usable answer: the one intent whose PATTERNS occur in the
 * message (confidence 1, source `pattern`), else the fallback intent or null (source `none`).
 */
export function patternResult(nlu: NluIR, text: string): IntentResult {
  const hits = patternMatches(nlu, text);
  if (hits.length === 1) return { category: hits[0] as string, confidence: 1, entities: {}, source: 'pattern' };
  return { category: nlu.fallback_intent, confidence: 0, entities: {}, source: 'none' };
}

/** The model's valid answer as `intent`: below the threshold, or with no intent, the fallback intent or null. */
export function modelResult(nlu: NluIR, parsed: Extract<ParsedClassification, { ok: true }>): IntentResult {
  if (parsed.intent === null || parsed.confidence < nlu.threshold) {
    return { category: nlu.fallback_intent, confidence: parsed.confidence, entities: parsed.entities, source: 'none' };
  }
  return { category: parsed.intent, confidence: parsed.confidence, entities: parsed.entities, source: 'model' };
}
