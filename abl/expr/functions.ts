// Built-in expression functions (ABL.md §4 "Functions"), keyed by upper-case name with arity.
// Pure: time and randomness come only from the EvalContext.

import type { EvalContext } from './context';
import { containsValue, getMember, isPlainObject, looseEquals, toNumber, toRegExp, toText } from './values';

export interface FunctionDef {
  min: number;
  max: number;
  fn: (args: unknown[], ctx: EvalContext) => unknown;
}

const num = (v: unknown): number => toNumber(v) ?? 0;
const str = (v: unknown): string => toText(v);
const MAX_STRING = 100_000;

function flatNumbers(args: unknown[]): number[] {
  const out: number[] = [];
  for (const a of args) {
    if (Array.isArray(a)) a.forEach((x) => { const n = toNumber(x); if (n !== null) out.push(n); });
    else { const n = toNumber(a); if (n !== null) out.push(n); }
  }
  return out;
}

function toDate(v: unknown): Date | null {
  if (v === null || v === undefined || v === '') return null;
  const d = typeof v === 'number' ? new Date(v) : new Date(String(v));
  return Number.isNaN(d.getTime()) ? null : d;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

interface DateParts { year: number; month: number; day: number; hour: number; minute: number; second: number; weekday: number }

function partsIn(d: Date, timeZone: string): DateParts {
  if (timeZone.toUpperCase() !== 'UTC') {
    try {
      const f = new Intl.DateTimeFormat('en-US', {
        timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric',
        hour: 'numeric', minute: 'numeric', second: 'numeric', weekday: 'short',
      });
      const p: Record<string, string> = {};
      for (const part of f.formatToParts(d)) p[part.type] = part.value;
      return {
        year: Number(p.year), month: Number(p.month), day: Number(p.day),
        hour: Number(p.hour) % 24, minute: Number(p.minute), second: Number(p.second),
        weekday: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(p.weekday ?? 'Sun'),
      };
    } catch {
      // unknown zone: fall back to UTC
    }
  }
  return {
    year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate(),
    hour: d.getUTCHours(), minute: d.getUTCMinutes(), second: d.getUTCSeconds(), weekday: d.getUTCDay(),
  };
}

/** FORMAT_DATE tokens: YYYY YY MMMM MMM MM M DD D dddd ddd HH H hh h mm ss A. */
export function formatDate(v: unknown, fmt: string, timeZone: string): string {
  const d = toDate(v);
  if (!d) return '';
  const p = partsIn(d, timeZone);
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const h12 = p.hour % 12 === 0 ? 12 : p.hour % 12;
  const tokens: Record<string, string> = {
    YYYY: String(p.year), YY: pad(p.year % 100), MMMM: MONTHS[p.month - 1] ?? '', MMM: (MONTHS[p.month - 1] ?? '').slice(0, 3),
    MM: pad(p.month), M: String(p.month), DD: pad(p.day), D: String(p.day), dddd: DAYS[p.weekday] ?? '',
    ddd: (DAYS[p.weekday] ?? '').slice(0, 3), HH: pad(p.hour), H: String(p.hour), hh: pad(h12), h: String(h12),
    mm: pad(p.minute), ss: pad(p.second), A: p.hour < 12 ? 'AM' : 'PM',
  };
  return fmt.replace(/YYYY|YY|MMMM|MMM|MM|M|DD|D|dddd|ddd|HH|H|hh|h|mm|ss|A/g, (t) => tokens[t] ?? t);
}

export function ordinal(v: unknown): string {
  const n = Math.trunc(num(v));
  const a = Math.abs(n);
  const suffix = a % 100 >= 11 && a % 100 <= 13 ? 'th' : a % 10 === 1 ? 'st' : a % 10 === 2 ? 'nd' : a % 10 === 3 ? 'rd' : 'th';
  return `${n}${suffix}`;
}

/** MASK(s, "last4"|"first4"|"N*N"): keep the named characters, replace the rest with "*". */
export function mask(v: unknown, mode: unknown): string {
  const s = str(v);
  const m = str(mode || 'last4');
  let keepStart = 0;
  let keepEnd = 4;
  const last = /^last(\d+)$/i.exec(m);
  const first = /^first(\d+)$/i.exec(m);
  const both = /^(\d+)\*(\d+)$/.exec(m);
  if (last) { keepStart = 0; keepEnd = Number(last[1]); }
  else if (first) { keepStart = Number(first[1]); keepEnd = 0; }
  else if (both) { keepStart = Number(both[1]); keepEnd = Number(both[2]); }
  if (keepStart + keepEnd >= s.length) return s;
  return s.slice(0, keepStart) + '*'.repeat(s.length - keepStart - keepEnd) + (keepEnd > 0 ? s.slice(s.length - keepEnd) : '');
}

/** Number formats by currency code (building one costs more than formatting with it); null for unknown codes. */
const currencyFormats = new Map<string, Intl.NumberFormat | null>();

function formatCurrency(v: unknown, code: unknown): string {
  const n = toNumber(v);
  if (n === null) return '';
  const currency = str(code || 'USD').toUpperCase();
  let format = currencyFormats.get(currency);
  if (format === undefined) {
    try {
      format = new Intl.NumberFormat('en-US', { style: 'currency', currency });
    } catch {
      format = null;
    }
    if (currencyFormats.size < 500) currencyFormats.set(currency, format);
  }
  return format ? format.format(n) : `${currency} ${n.toFixed(2)}`;
}

const ID_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

const PII = [
  /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/,
  /\b(?:\d[ -]?){13,16}\b/,
  /\b\d{3}-\d{2}-\d{4}\b/,
  /\+?\d[\d ()-]{8,}\d/,
];

/** Guardrail helpers: an address with a scheme or `www.`, and an e-mail address (PII's pattern). */
const URL_RE = /\b(?:https?:\/\/|www\.)[^\s]+/i;
const EMAIL_RE = PII[0] as RegExp;

/** Sentences: runs of text ended by `.`, `!` or `?` (or by the end of the text). */
function sentenceCount(text: string): number {
  return text.split(/[.!?]+(?:\s+|$)/).filter((s) => s.trim() !== '').length;
}

function pad(s: unknown, len: unknown, fill: unknown, atStart: boolean): string {
  const text = str(s);
  const width = Math.min(Math.max(0, Math.trunc(num(len))), MAX_STRING);
  const f = fill === undefined || fill === null || fill === '' ? ' ' : str(fill);
  return atStart ? text.padStart(width, f) : text.padEnd(width, f);
}

function findIndex(arr: unknown, key: unknown, value: unknown): number {
  if (!Array.isArray(arr)) return -1;
  const path = str(key).split('.').filter(Boolean);
  return arr.findIndex((item) => {
    let v: unknown = item;
    for (const p of path) v = getMember(v, p);
    return looseEquals(v, value);
  });
}

const f = (min: number, max: number, fn: FunctionDef['fn']): FunctionDef => ({ min, max, fn });
/** Text IS_NUMBER takes as a number: an optional sign, digits, an optional fraction, blanks around. */
const NUMERIC_TEXT = /^\s*[-+]?(\d+(\.\d+)?|\.\d+)\s*$/;
const ANY = 64;

export const FUNCTIONS: Readonly<Record<string, FunctionDef>> = {
  // arithmetic
  ADD: f(2, ANY, (a) => flatNumbers(a).reduce((x, y) => x + y, 0)),
  SUB: f(2, 2, ([a, b]) => num(a) - num(b)),
  MUL: f(2, ANY, (a) => flatNumbers(a).reduce((x, y) => x * y, 1)),
  DIV: f(2, 2, ([a, b]) => (num(b) === 0 ? null : num(a) / num(b))),
  ROUND: f(1, 2, ([a, d]) => {
    const p = 10 ** Math.min(12, Math.max(0, Math.trunc(num(d))));
    return Math.round(num(a) * p) / p;
  }),
  ABS: f(1, 1, ([a]) => Math.abs(num(a))),
  MIN: f(1, ANY, (a) => { const n = flatNumbers(a); return n.length ? Math.min(...n) : null; }),
  MAX: f(1, ANY, (a) => { const n = flatNumbers(a); return n.length ? Math.max(...n) : null; }),
  // strings (null → "")
  UPPER: f(1, 1, ([s]) => str(s).toUpperCase()),
  LOWER: f(1, 1, ([s]) => str(s).toLowerCase()),
  TRIM: f(1, 1, ([s]) => str(s).trim()),
  SUBSTRING: f(2, 3, ([s, a, b]) => str(s).substring(num(a), b === undefined || b === null ? undefined : num(b))),
  REPLACE: f(3, 3, ([s, a, b]) => (str(a) === '' ? str(s) : str(s).split(str(a)).join(str(b)))),
  SPLIT: f(1, 2, ([s, sep]) => (s === null || s === undefined ? [] : str(s).split(sep === undefined ? ',' : str(sep)))),
  JOIN: f(1, 2, ([a, sep]) => (Array.isArray(a) ? a.map(str).join(sep === undefined ? ',' : str(sep)) : str(a))),
  PAD_START: f(2, 3, ([s, n, c]) => pad(s, n, c, true)),
  PAD_END: f(2, 3, ([s, n, c]) => pad(s, n, c, false)),
  REPEAT: f(2, 2, ([s, n]) => {
    const text = str(s);
    const times = Math.max(0, Math.trunc(num(n)));
    return text.length * times > MAX_STRING ? text.repeat(Math.floor(MAX_STRING / Math.max(1, text.length))) : text.repeat(times);
  }),
  // formatting
  MASK: f(1, 2, ([s, m]) => mask(s, m)),
  FORMAT_CURRENCY: f(1, 2, ([n, c]) => formatCurrency(n, c)),
  FORMAT_DATE: f(1, 3, ([d, fmt, tz], ctx) => formatDate(d, fmt === undefined ? 'YYYY-MM-DD' : str(fmt), tz ? str(tz) : ctx.timeZone ?? 'UTC')),
  ORDINAL: f(1, 1, ([n]) => ordinal(n)),
  // types
  IS_ARRAY: f(1, 1, ([v]) => Array.isArray(v)),
  IS_NUMBER: f(1, 1, ([v], ctx) => (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && NUMERIC_TEXT.test(v) && (ctx.numericText?.() ?? true))),
  IS_STRING: f(1, 1, ([v]) => typeof v === 'string'),
  TO_NUMBER: f(1, 1, ([v]) => toNumber(v)),
  TO_STRING: f(1, 1, ([v]) => str(v)),
  LENGTH: f(1, 1, ([v]) => (typeof v === 'string' || Array.isArray(v) ? v.length : isPlainObject(v) ? Object.keys(v).length : 0)),
  ARRAY_FIND: f(3, 3, ([a, k, v]) => { const i = findIndex(a, k, v); return i < 0 ? null : (a as unknown[])[i]; }),
  ARRAY_FIND_INDEX: f(3, 3, ([a, k, v]) => findIndex(a, k, v)),
  OBJECT_KEYS: f(1, 1, ([o]) => (isPlainObject(o) ? Object.keys(o) : [])),
  OBJECT_VALUES: f(1, 1, ([o]) => (isPlainObject(o) ? Object.values(o) : [])),
  OBJECT_MERGE: f(1, ANY, (a) => Object.assign({}, ...a.filter(isPlainObject))),
  COALESCE: f(1, ANY, (a) => a.find((v) => v !== null && v !== undefined && v !== '') ?? null),
  // time and ids (from the context only)
  NOW: f(0, 0, (_a, ctx) => new Date(ctx.now()).toISOString()),
  NOW_MS: f(0, 0, (_a, ctx) => ctx.now()),
  UNIQUE_ID: f(0, 1, ([n], ctx) => {
    const len = Math.min(64, Math.max(1, Math.trunc(n === undefined ? 6 : num(n))));
    let out = '';
    for (let i = 0; i < len; i++) out += ID_CHARS[Math.floor(ctx.random() * ID_CHARS.length) % ID_CHARS.length];
    return out;
  }),
  // guardrail helpers
  MATCHES_PATTERN: f(2, 2, ([s, p]) => toRegExp(str(p))?.test(str(s)) ?? false),
  NOT_MATCHES_PATTERN: f(2, 2, ([s, p]) => !(toRegExp(str(p))?.test(str(s)) ?? false)),
  CONTAINS_PII: f(1, 1, ([s]) => PII.some((re) => re.test(str(s)))),
  WORD_COUNT: f(1, 1, ([s]) => str(s).split(/\s+/).filter(Boolean).length),
  CONTAINS: f(2, 2, ([h, n]) => containsValue(h, n)),
  SENTENCE_COUNT: f(1, 1, ([s]) => sentenceCount(str(s))),
  CONTAINS_URL: f(1, 1, ([s]) => URL_RE.test(str(s))),
  CONTAINS_EMAIL: f(1, 1, ([s]) => EMAIL_RE.test(str(s))),
};

export function lookupFunction(name: string): FunctionDef | undefined {
  const key = name.toUpperCase();
  return Object.hasOwn(FUNCTIONS, key) ? FUNCTIONS[key] : undefined;
}
