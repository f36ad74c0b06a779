// Value semantics shared by the evaluator, functions and templates (ABL.md §4 "Semantics").
import { safeRegex, type SafeRegex } from '../regex';

const NUMERIC = /^\s*-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

export function isNumericString(v: unknown): v is string {
  return typeof v === 'string' && NUMERIC.test(v);
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Falsy: false 0 "" "false" null undefined [] {} (and NaN). */
export function truthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === '' || v === 'false') return false;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (Array.isArray(v)) return v.length > 0;
  if (isPlainObject(v)) return Object.keys(v).length > 0;
  return true;
}

export function isSet(v: unknown): boolean {
  return v !== null && v !== undefined;
}

/** EMPTY: null, undefined, "", [] or {}. */
export function isEmpty(v: unknown): boolean {
  if (v === null || v === undefined || v === '') return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isPlainObject(v)) return Object.keys(v).length === 0;
  return false;
}

/** `==`: null equals undefined; numeric strings compare as numbers; other strings are case-sensitive. */
export function looseEquals(a: unknown, b: unknown): boolean {
  if (a === null || a === undefined || b === null || b === undefined) {
    return (a === null || a === undefined) && (b === null || b === undefined);
  }
  if (typeof a === 'number' && isNumericString(b)) return a === Number(b);
  if (typeof b === 'number' && isNumericString(a)) return b === Number(a);
  if (isNumericString(a) && isNumericString(b)) return Number(a) === Number(b);
  if (typeof a === 'boolean' && typeof b === 'string') return String(a) === b.toLowerCase();
  if (typeof b === 'boolean' && typeof a === 'string') return String(b) === a.toLowerCase();
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => looseEquals(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && looseEquals(a[k], b[k]));
  }
  return a === b;
}

/** `!=`: true if either side is null/undefined, else not `==`. */
export function looseNotEquals(a: unknown, b: unknown): boolean {
  if (a === null || a === undefined || b === null || b === undefined) return true;
  return !looseEquals(a, b);
}

/** Ordering coercion: strings → numbers, booleans → 0/1, arrays → length, null/undefined → 0. */
export function toOrderable(v: unknown): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') return v.trim() === '' ? 0 : Number(v);
  if (Array.isArray(v)) return v.length;
  if (isPlainObject(v)) return Object.keys(v).length;
  return Number.NaN;
}

/** Compares for <, >, <=, >=. Two non-numeric strings (e.g. ISO dates) compare as text [D]. */
export function compare(a: unknown, b: unknown): number | null {
  if (typeof a === 'string' && typeof b === 'string' && !(isNumericString(a) && isNumericString(b))) {
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const x = toOrderable(a);
  const y = toOrderable(b);
  if (Number.isNaN(x) || Number.isNaN(y)) return null;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Numeric coercion for arithmetic; null when not a number. */
export function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (isNumericString(v)) return Number(v);
  if (v === null || v === undefined) return null;
  return null;
}

/** Text form for concatenation and rendering: null/undefined → "", objects → JSON. */
export function toText(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  try {
    return JSON.stringify(v) ?? '';
  } catch {
    return '';
  }
}

/** `contains`: substring or array member (by `==`), or an object key. */
export function containsValue(hay: unknown, needle: unknown): boolean {
  if (typeof hay === 'string') return needle !== null && needle !== undefined && hay.includes(toText(needle));
  if (Array.isArray(hay)) return hay.some((x) => looseEquals(x, needle));
  if (isPlainObject(hay) && typeof needle === 'string') return Object.hasOwn(hay, needle);
  return false;
}

/** Reads an own property (never the prototype chain); arrays accept numeric keys. */
export function getMember(obj: unknown, key: string | number): unknown {
  if (obj === null || obj === undefined) return undefined;
  if (Array.isArray(obj)) {
    if (key === 'length') return obj.length;
    const n = typeof key === 'number' ? key : Number(key);
    if (!Number.isInteger(n)) return undefined;
    return obj[n < 0 ? obj.length + n : n];
  }
  if (typeof obj === 'string') {
    if (key === 'length') return obj.length;
    return undefined;
  }
  if (typeof obj === 'object') {
    const k = String(key);
    return Object.hasOwn(obj, k) ? (obj as Record<string, unknown>)[k] : undefined;
  }
  return undefined;
}

/** Compiles (and caches) a tenant regular expression for the linear-time matcher; null when unusable. */
export function toRegExp(pattern: string, flags = ''): SafeRegex | null {
  return safeRegex(pattern, flags);
}
