// Helpers of the rule checkpoints (tool_input / tool_output / handoff guardrails): the text a
// guardrail check sees for a JSON value, and redaction applied inside JSON values.
import type { Json } from '../ir';

/** What a guardrail's `input`/`output` is for a JSON value: a string as is, anything else as JSON. */
export function guardText(v: Json): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null');
}

/** Replaces the patterns' matches with `[REDACTED]` in every string inside `v` (keys untouched). */
export function redactJson(v: Json, patterns: readonly RegExp[]): Json {
  if (patterns.length === 0) return v;
  if (typeof v === 'string') {
    let out = v;
    for (const re of patterns) out = out.replace(re, '[REDACTED]');
    return out;
  }
  if (Array.isArray(v)) return v.map((x) => redactJson(x, patterns));
  if (v && typeof v === 'object') {
    const out: { [k: string]: Json } = {};
    for (const [k, x] of Object.entries(v)) out[k] = redactJson(x, patterns);
    return out;
  }
  return v;
}
