// Deterministic gather extraction (the `pattern` strategy): pulls typed values for several
// fields out of one free-text message, coerces and validates them. Pure; no LLM.

import { toRegExp } from './expr/values';
import type { SafeRegex } from './regex';
import type { AgentIR, ExprIR, FlowStepIR, GatherFieldIR, GatherType, ValidationIR } from './ir';

/** What extraction reads of a field. */
export type ExtractableField = Pick<GatherFieldIR, 'name' | 'type' | 'required' | 'validate' | 'extraction_hints'> & { list?: boolean };

export interface GatherValidation {
  ok: boolean;
  value: unknown;
  /** Why the value was rejected (for retry prompts). */
  error: string | null;
}

export interface GatherExtraction {
  /** Accepted values by field name. */
  values: Record<string, unknown>;
  /** Values found but rejected by type or validation. */
  invalid: Array<{ field: string; raw: string; error: string }>;
}

export interface ExtractOptions {
  /** Values already gathered. */
  existing?: Readonly<Record<string, unknown>>;
  /** Allow overwriting existing values (flow `CORRECTIONS: true`). @default false */
  corrections?: boolean;
  /** The field the agent just asked for: a plain string field takes the whole message. @default the first missing required field */
  expecting?: string | null;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;
const PHONE = /\+?\d[\d\s().-]{6,}\d/;
const NUMBER = /-?\$?\s?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\$?\s?\d+(?:\.\d+)?/;
const ISO_DATETIME = /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/;
const DATE_PATTERNS = [
  /\b(\d{4})-(\d{1,2})-(\d{1,2})\b/,
  /\b(\d{1,2})\/(\d{1,2})\/(\d{4})\b/,
  /\b(\d{1,2})(?:st|nd|rd|th)?\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+(\d{4})\b/i,
  /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b/i,
];
const YES = /^(yes|y|yeah|yep|sure|ok|okay|true|confirm|correct)$/i;
const NO = /^(no|n|nope|nah|false|wrong|incorrect)$/i;

/** A reply to a yes/no question: true, false, or null when it is neither ("yes, that's right" is yes). */
export function yesOrNo(text: string): boolean | null {
  const first = /^\s*([a-z']+)/i.exec(text)?.[1] ?? '';
  if (YES.test(first) || /^(right|exactly|yup)$/i.test(first)) return true;
  if (NO.test(first) || /^not$/i.test(first)) return false;
  return null;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

function validDate(y: number, m: number, d: number): string | null {
  if (m < 1 || m > 12 || d < 1 || d > 31) return null;
  const t = Date.UTC(y, m - 1, d);
  const check = new Date(t);
  if (check.getUTCMonth() !== m - 1) return null;
  return `${y}-${pad(m)}-${pad(d)}`;
}

/** Finds a date in text and returns it as YYYY-MM-DD. */
function findDate(text: string): { raw: string; value: string } | null {
  for (let i = 0; i < DATE_PATTERNS.length; i++) {
    const m = (DATE_PATTERNS[i] as RegExp).exec(text);
    if (!m) continue;
    let value: string | null = null;
    if (i === 0) value = validDate(Number(m[1]), Number(m[2]), Number(m[3]));
    else if (i === 1) value = validDate(Number(m[3]), Number(m[1]), Number(m[2])); // M/D/YYYY
    else if (i === 2) value = validDate(Number(m[3]), MONTHS.indexOf((m[2] as string).slice(0, 3).toLowerCase()) + 1, Number(m[1]));
    else value = validDate(Number(m[3]), MONTHS.indexOf((m[1] as string).slice(0, 3).toLowerCase()) + 1, Number(m[2]));
    if (value) return { raw: m[0], value };
  }
  return null;
}

function parseNumber(raw: string): number | null {
  const n = Number(raw.replace(/[$,\s]/g, ''));
  return Number.isFinite(n) ? n : null;
}

function searchPattern(pattern: string): SafeRegex | null {
  // Anchors make sense for a whole value, not for a search inside a sentence.
  return toRegExp(pattern.replace(/^\^/, '').replace(/\$$/, ''));
}

/** Splits a list answer: commas, semicolons, new lines and a final "and". */
function listItems(raw: unknown): unknown[] {
  if (Array.isArray(raw)) return raw;
  return String(raw ?? '')
    .split(/\s*(?:[,;\n]|\band\b)\s*/i)
    .map((x) => x.trim())
    .filter(Boolean);
}

/**
 * Coerces a raw value to the field type and runs its validation rules. A `list` field takes
 * several values (an array, or text split on commas, semicolons, new lines and "and"), each
 * coerced and validated like a single one; its value is the array.
 */
export function validateGatherValue(field: Pick<GatherFieldIR, 'type' | 'validate'> & { list?: boolean }, raw: unknown): GatherValidation {
  if (field.list) {
    const items = listItems(raw);
    if (items.length === 0) return { ok: false, value: raw, error: 'expected at least one value' };
    const values: unknown[] = [];
    for (const item of items) {
      const v = validateGatherValue({ type: field.type, validate: field.validate }, item);
      if (!v.ok) return { ok: false, value: raw, error: `${String(item)}: ${v.error ?? 'invalid'}` };
      values.push(v.value);
    }
    return { ok: true, value: values, error: null };
  }
  let value: unknown = raw;
  const text = typeof raw === 'string' ? raw.trim() : raw;
  switch (field.type as GatherType) {
    case 'number': {
      const n = typeof text === 'number' ? text : typeof text === 'string' ? parseNumber(text) : null;
      if (n === null) return { ok: false, value: raw, error: 'expected a number' };
      value = n;
      break;
    }
    case 'boolean':
      if (typeof text === 'boolean') value = text;
      else if (typeof text === 'string' && YES.test(text)) value = true;
      else if (typeof text === 'string' && NO.test(text)) value = false;
      else return { ok: false, value: raw, error: 'expected yes or no' };
      break;
    case 'date': {
      const d = typeof text === 'string' ? findDate(text) : null;
      if (!d) return { ok: false, value: raw, error: 'expected a date such as 2025-03-14' };
      value = d.value;
      break;
    }
    case 'datetime': {
      const m = typeof text === 'string' ? ISO_DATETIME.exec(text) : null;
      if (!m) return { ok: false, value: raw, error: 'expected a date and time such as 2025-03-14T09:30' };
      value = m[0];
      break;
    }
    case 'email': {
      const m = typeof text === 'string' ? EMAIL.exec(text) : null;
      if (!m || m[0] !== text) return { ok: false, value: raw, error: 'expected an email address' };
      value = m[0].toLowerCase();
      break;
    }
    case 'phone': {
      const digits = typeof text === 'string' ? text.replace(/[^\d+]/g, '') : '';
      if (!/^\+?\d{7,15}$/.test(digits)) return { ok: false, value: raw, error: 'expected a phone number' };
      value = digits;
      break;
    }
    default:
      value = typeof text === 'string' ? text : String(text ?? '');
  }
  for (const rule of field.validate) {
    const err = checkRule(rule, value);
    if (err) return { ok: false, value, error: err };
  }
  return { ok: true, value, error: null };
}

function checkRule(rule: ValidationIR, value: unknown): string | null {
  const size = typeof value === 'number' ? value : String(value).length;
  switch (rule.kind) {
    case 'min': return size < rule.value ? `must be at least ${rule.value}` : null;
    case 'max': return size > rule.value ? `must be at most ${rule.value}` : null;
    case 'enum': return rule.values.some((v) => v.toLowerCase() === String(value).toLowerCase()) ? null : `must be one of ${rule.values.join(', ')}`;
    case 'email': return EMAIL.test(String(value)) ? null : 'must be an email address';
    case 'pattern': {
      const re = toRegExp(rule.pattern);
      return re && re.test(String(value)) ? null : 'has the wrong format';
    }
    case 'between': {
      const v = String(value);
      if (rule.min !== null && v < rule.min) return `must be on or after ${rule.min}`;
      // A date-only upper bound takes the whole day (a datetime on it is inside the range).
      if (rule.max !== null && v > rule.max && !(rule.max.length === 10 && v.startsWith(rule.max))) return `must be on or before ${rule.max}`;
      return null;
    }
    case 'llm': return null;
  }
}

const TYPE_RANK: Record<GatherType, number> = { email: 1, phone: 2, datetime: 3, date: 4, number: 5, boolean: 6, string: 7 };

function labelRegex(field: ExtractableField): RegExp | null {
  const labels = [field.name.replace(/[_.]/g, ' '), ...field.extraction_hints].map((l) => l.trim()).filter(Boolean);
  if (labels.length === 0) return null;
  const esc = labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '[\\s_-]*'));
  return new RegExp(`\\b(?:${esc.join('|')})\\b\\s*(?:is|=|:|of)?\\s*`, 'i');
}

/** Finds a candidate value for a field in `text` (already stripped of consumed parts). */
function candidate(field: ExtractableField, text: string): { raw: string; value?: unknown } | null {
  const pattern = field.validate.find((v): v is Extract<ValidationIR, { kind: 'pattern' }> => v.kind === 'pattern');
  if (pattern) {
    const m = searchPattern(pattern.pattern)?.exec(text);
    return m ? { raw: m[0] } : null;
  }
  const en = field.validate.find((v): v is Extract<ValidationIR, { kind: 'enum' }> => v.kind === 'enum');
  if (en) {
    for (const v of en.values) {
      const m = new RegExp(`\\b${v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'i').exec(text);
      if (m) return { raw: m[0], value: v };
    }
    return null;
  }
  switch (field.type) {
    case 'email': { const m = EMAIL.exec(text); return m ? { raw: m[0] } : null; }
    case 'phone': { const m = PHONE.exec(text); return m ? { raw: m[0] } : null; }
    case 'date': { const d = findDate(text); return d ? { raw: d.raw } : null; }
    case 'datetime': { const m = ISO_DATETIME.exec(text); return m ? { raw: m[0] } : null; }
    case 'number': { const m = NUMBER.exec(text); return m ? { raw: m[0].trim() } : null; }
    case 'boolean': { const m = /\b(yes|yeah|yep|sure|ok|okay|no|nope|nah)\b/i.exec(text); return m ? { raw: m[0] } : null; }
    default: return null;
  }
}

/**
 * Extracts values for `fields` from one message, deterministically:
 * 1. labelled values ("amount is 120", "email: a@b.co") for any field;
 * 2. typed values (email, phone, date, number, pattern, enum) in field order, each match consumed;
 * 3. when nothing else was found, the whole message for the plain string field the agent is expecting.
 */
export function extractGatherValues(fields: readonly ExtractableField[], message: string, opts: ExtractOptions = {}): GatherExtraction {
  const existing = opts.existing ?? {};
  const out: GatherExtraction = { values: {}, invalid: [] };
  let rest = message.slice(0, 10_000);
  const open = fields.filter((f) => opts.corrections || existing[f.name] === undefined || existing[f.name] === null);
  const accept = (f: ExtractableField, raw: string, value?: unknown): boolean => {
    const v = validateGatherValue(f, value ?? raw);
    if (v.ok) {
      out.values[f.name] = v.value;
      rest = rest.replace(raw, ' ');
      return true;
    }
    out.invalid.push({ field: f.name, raw, error: v.error ?? 'invalid' });
    return false;
  };
  // 1. labelled
  for (const f of open) {
    const label = labelRegex(f);
    const m = label?.exec(rest);
    if (!m) continue;
    const after = rest.slice(m.index + m[0].length);
    // A list runs to the end of the sentence, commas included.
    const c = f.list
      ? { raw: (/^[^.!?\n]+/.exec(after)?.[0] ?? '').trim() }
      : candidate(f, after) ?? (f.type === 'string' ? { raw: (/^[^,;.!?\n]+/.exec(after)?.[0] ?? '').trim() } : null);
    if (c && c.raw && after.indexOf(c.raw) <= 2 && accept(f, c.raw, c.value)) rest = rest.replace(m[0], ' ');
  }
  // 2. typed, most specific first so a date's digits are not taken as a number
  const rank = (f: ExtractableField): number =>
    f.validate.some((v) => v.kind === 'pattern' || v.kind === 'enum') ? 0 : TYPE_RANK[f.type];
  for (const f of [...open].sort((a, b) => rank(a) - rank(b))) {
    // A list is taken labelled or as the answer to its question, never one item at a time.
    if (Object.hasOwn(out.values, f.name) || f.list) continue;
    const c = candidate(f, rest);
    if (c) accept(f, c.raw, c.value);
  }
  // 3. the expected plain string takes the whole (remaining) message
  const expecting = opts.expecting === undefined
    ? open.find((f) => f.required && !Object.hasOwn(out.values, f.name))?.name ?? null
    : opts.expecting;
  const target = open.find((f) => f.name === expecting);
  const nothingElse = Object.keys(out.values).length === 0 && out.invalid.length === 0;
  if (nothingElse && target && (target.list || (target.type === 'string' && !target.validate.some((v) => v.kind === 'pattern' || v.kind === 'enum')))) {
    const text = message.replace(/\s+/g, ' ').trim();
    if (text) accept(target, text);
  }
  return out;
}

/** True when every active required field has a value (`all_fields_gathered`). */
/** Whether a field is asked for and counts now: `active(f)` is false while it waits for its `depends_on` or `activation: {when}`. */
export type FieldActive = (f: GatherFieldIR) => boolean;

/**
 * Every active required field is set. With field rules (`active` given), a field with a `default`
 * does not hold completion up: it takes the default when the GATHER completes (applyDefaults).
 */
export function allFieldsGathered(fields: readonly GatherFieldIR[], values: Readonly<Record<string, unknown>>, active?: FieldActive): boolean {
  return fields.every((f) => !f.required || isGiven(values[f.name]) || (active !== undefined && (!active(f) || f.default !== undefined)));
}

/** The defaults of the unset active fields, taken when a GATHER completes. */
export function pendingDefaults(fields: readonly GatherFieldIR[], values: Readonly<Record<string, unknown>>, active: FieldActive): Array<[string, unknown]> {
  return fields.filter((f) => f.default !== undefined && !isGiven(values[f.name]) && active(f)).map((f) => [f.name, f.default]);
}

function isGiven(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}

/** True when a field uses activation rules, `depends_on`, a `default`, a `range`, `list` or `transient` (GATHER field rules). */
export function usesFieldRules(f: GatherFieldIR): boolean {
  return f.depends_on.length > 0 || (f.activation !== 'required' && f.activation !== 'optional') || f.default !== undefined || rangeBounds(f) !== null || f.list || f.transient;
}

/** A number field's `range` as bounds: `[min, max]` or `{min, max}` (either may be left out). */
function rangeBounds(f: GatherFieldIR): { min: number | null; max: number | null } | null {
  if (f.type !== 'number' || f.range === null || typeof f.range !== 'object') return null;
  const [min, max] = Array.isArray(f.range) ? f.range : [f.range.min, f.range.max];
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return num(min) === null && num(max) === null ? null : { min: num(min), max: num(max) };
}

const withRulesCache = new WeakMap<readonly GatherFieldIR[], GatherFieldIR[]>();
const withoutRulesCache = new WeakMap<readonly GatherFieldIR[], GatherFieldIR[]>();

function rangedField(f: GatherFieldIR): GatherFieldIR {
  const b = rangeBounds(f);
  if (!b) return f;
  const rules: ValidationIR[] = [...(b.min !== null ? [{ kind: 'min' as const, value: b.min }] : []), ...(b.max !== null ? [{ kind: 'max' as const, value: b.max }] : [])];
  return { ...f, validate: [...f.validate, ...rules] };
}

/** A date, datetime or string field's `range` as validate rules (a string's bounds are lengths); null when it has none. */
function typedRangeRules(f: GatherFieldIR): ValidationIR[] | null {
  if ((f.type !== 'date' && f.type !== 'datetime' && f.type !== 'string') || f.range === null || typeof f.range !== 'object') return null;
  const [min, max] = Array.isArray(f.range) ? f.range : [f.range.min, f.range.max];
  if (f.type === 'string') {
    const len = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : null);
    const rules: ValidationIR[] = [...(len(min) !== null ? [{ kind: 'min' as const, value: len(min) as number }] : []), ...(len(max) !== null ? [{ kind: 'max' as const, value: len(max) as number }] : [])];
    return rules.length > 0 ? rules : null;
  }
  const iso = (v: unknown) => (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) ? v : null);
  return iso(min) === null && iso(max) === null ? null : [{ kind: 'between', min: iso(min), max: iso(max) }];
}

/** True when a date, datetime or string field has a `range` (checked with the option `gatherRanges`). */
export function hasTypedRange(f: GatherFieldIR): boolean {
  return typedRangeRules(f) !== null;
}

const typedRangeCache = new WeakMap<readonly GatherFieldIR[], GatherFieldIR[]>();

/** The fields with the `range` of date, datetime and string fields added to their validate rules. */
export function fieldsWithTypedRanges(fields: readonly GatherFieldIR[]): readonly GatherFieldIR[] {
  if (!fields.some(hasTypedRange)) return fields;
  let out = typedRangeCache.get(fields);
  if (!out) {
    out = fields.map((f) => {
      const rules = typedRangeRules(f);
      return rules ? { ...f, validate: [...f.validate, ...rules] } : f;
    });
    typedRangeCache.set(fields, out);
  }
  return out;
}

/**
 * The fields as extraction and validation see them. With the field rules on, a number field's
 * `range` is added to its validate rules as min/max; with them off (runs recorded before), `list`
 * is dropped, so such a field takes one value as it did then.
 */
export function fieldsForRules(fields: readonly GatherFieldIR[], on: boolean): readonly GatherFieldIR[] {
  const cache = on ? withRulesCache : withoutRulesCache;
  const change = on ? (f: GatherFieldIR) => rangeBounds(f) !== null : (f: GatherFieldIR) => f.list;
  if (!fields.some(change)) return fields;
  let out = cache.get(fields);
  if (!out) {
    out = fields.map((f) => (!change(f) ? f : on ? rangedField(f) : { ...f, list: false }));
    cache.set(fields, out);
  }
  return out;
}

/**
 * A field's `depends_on` and `activation` (ABL.md §6): inactive while a field it depends on is
 * unset (one with a `default` counts as set: it will have a value) or its `{when}` condition is
 * false. `cond` evaluates that condition.
 */
export function fieldActivity(fields: readonly GatherFieldIR[], values: Readonly<Record<string, unknown>>, cond: (when: ExprIR) => boolean): FieldActive {
  const hasDefault = new Set(fields.filter((f) => f.default !== undefined).map((f) => f.name));
  return (f) => f.depends_on.every((d) => isGiven(values[d]) || hasDefault.has(d)) && (typeof f.activation !== 'object' || cond(f.activation.when));
}

/**
 * The field to ask for next among the unset active ones: required fields first, `activation:
 * progressive` ones after every other required field, then the optional ones.
 */
export function nextFieldToAsk(fields: readonly GatherFieldIR[], values: Readonly<Record<string, unknown>>, active: FieldActive, optionalToo: boolean): GatherFieldIR | undefined {
  // A field with a default is not asked: it takes the default if nobody gives a value.
  const open = fields.filter((f) => !isGiven(values[f.name]) && f.default === undefined && active(f));
  return (
    open.find((f) => f.required && f.activation !== 'progressive') ??
    open.find((f) => f.required) ??
    (optionalToo ? open[0] : undefined)
  );
}

/** The fields of a flow step's own GATHER and of every GATHER in its branches. */
export function stepGatherFields(step: FlowStepIR): GatherFieldIR[] {
  const branches = [...step.on_fail, ...step.on_result, ...step.on_success, ...step.on_input].map((b) => b.actions);
  return [step.gather, step.on_exhausted?.gather, ...branches.map((a) => a.gather)].flatMap((g) => g?.fields ?? []);
}

const sensitiveByAgent = new WeakMap<AgentIR, ReadonlySet<string>>();

/** Names of an agent's GATHER fields marked `sensitive: true` (top level, steps and their branches). */
export function sensitiveFields(agent: AgentIR): ReadonlySet<string> {
  let names = sensitiveByAgent.get(agent);
  if (!names) {
    const fields = [...agent.gather, ...Object.values(agent.flow?.steps ?? {}).flatMap(stepGatherFields)];
    names = new Set(fields.filter((f) => f.sensitive).map((f) => f.name));
    sensitiveByAgent.set(agent, names);
  }
  return names;
}

/** What traces and API views show instead of a sensitive field's value. */
export const SENSITIVE_MASK = '[sensitive]';

/** `vars` with the agent's sensitive fields masked (a copy when any is present). */
export function maskSensitive(agent: AgentIR | undefined, vars: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const names = agent ? sensitiveFields(agent) : null;
  if (!names || names.size === 0 || !Object.keys(vars).some((k) => names.has(k))) return vars as Record<string, unknown>;
  return Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, names.has(k) && v !== null && v !== undefined ? SENSITIVE_MASK : v]));
}
