// The offline `local` model's answer to an NLU classification request (abl/nlu.ts): deterministic,
// so a dev-stack agent with NLU works with no API key. An intent whose PATTERNS occur in the
// message wins with confidence 1; otherwise the intent whose examples (or description, or name)
// share the most keywords with the message, its confidence the share of the shorter side's
// keywords the two have in common. Enum, pattern, number and date entities are read from the text.

import { extractGatherValues } from '../../abl/gather';
import { readClassificationRequest, type ClassificationSpec } from '../../abl/nlu';
import { safeRegex } from '../../abl/regex';
import { keywords } from './keywords';

type Spec = ClassificationSpec;

/** The best intent for `text` and its confidence (0 and null when nothing matches). */
export function localIntent(spec: Spec, text: string): { intent: string | null; confidence: number } {
  const lower = text.toLowerCase();
  const hit = spec.intents.find((i) => i.patterns.some((p) => p.trim() !== '' && lower.includes(p.toLowerCase())));
  if (hit) return { intent: hit.name, confidence: 1 };
  const words = new Set(keywords(text));
  let best: { intent: string | null; confidence: number; shared: number } = { intent: null, confidence: 0, shared: 0 };
  if (words.size === 0) return { intent: null, confidence: 0 };
  for (const i of spec.intents) {
    const samples = [...i.examples, ...(i.description ? [i.description] : []), i.name.replace(/_/g, ' ')];
    for (const sample of samples) {
      const own = keywords(sample);
      const shared = own.filter((w) => words.has(w)).length;
      if (shared === 0) continue;
      const confidence = Math.round((shared / Math.min(own.length, words.size)) * 100) / 100;
      if (confidence > best.confidence || (confidence === best.confidence && shared > best.shared)) best = { intent: i.name, confidence, shared };
    }
  }
  return { intent: best.intent, confidence: best.confidence };
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The entities the text states, by their type; location and free text are left to a real model. */
export function localEntities(spec: Spec, text: string): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const e of spec.entities) {
    if (e.type === 'enum') {
      // Every spelling of every value, longest first, as a whole word.
      const spellings = (e.values ?? []).flatMap((v) => [v, ...(e.synonyms?.[v] ?? [])].map((s) => ({ s, v }))).sort((a, b) => b.s.length - a.s.length);
      const found = spellings.find(({ s }) => s.trim() !== '' && new RegExp(`(^|[^\\p{L}\\p{N}])${escape(s)}($|[^\\p{L}\\p{N}])`, 'iu').test(text));
      if (found) out[e.name] = found.v;
    } else if (e.type === 'pattern' && e.pattern) {
      const m = safeRegex(e.pattern)?.exec(text);
      if (m) out[e.name] = m[0];
    } else if (e.type === 'number') {
      const m = /-?\d[\d,]*(?:\.\d+)?/.exec(text);
      if (m) out[e.name] = Number(m[0].replace(/,/g, ''));
    } else if (e.type === 'date') {
      const v = extractGatherValues([{ name: e.name, type: 'date', required: true, validate: [], extraction_hints: [] }], text).values[e.name];
      if (typeof v === 'string') out[e.name] = v;
    }
  }
  return out;
}

/** The `local` model's answer to a classification request; null when `system` is not one. */
export function localClassificationAnswer(system: string, user: string): string | null {
  const spec = readClassificationRequest(system);
  if (!spec) return null;
  const { intent, confidence } = localIntent(spec, user);
  return JSON.stringify({ intent, confidence, entities: localEntities(spec, user) });
}
