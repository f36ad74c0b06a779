// What a tool receives (`pii_access`, `context_access`; docs/abl.md "What a tool receives"): reading
// the two keys, and applying them to a call's arguments and to the message metadata it is sent.
import { SENSITIVE_MASK } from './gather';
import type { Json, PiiKind, ToolAccessIR, ToolIR } from './ir';
import { SafeRegex } from './regex';

export const PII_KINDS: readonly PiiKind[] = ['email', 'card', 'ssn', 'phone'];

/** What `none` leaves of a PII match (the same mark a redacting guardrail leaves). */
export const PII_REDACTED = '[REDACTED]';

// Fixed patterns, matched in this order: a card number must be taken before the phone pattern,
// which would also match it. The same shapes CONTAINS_PII and redacting guardrails look for.
// Compiled on first use (SafeRegex.builtIn: module code runs for every workflow a worker creates).
const PII_PATTERNS: ReadonlyArray<[PiiKind, () => SafeRegex]> = [
  ['email', SafeRegex.builtIn('[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}')],
  ['card', SafeRegex.builtIn('\\b\\d{4}[ -]?\\d{4}[ -]?\\d{4}[ -]?\\d{4}\\b')],
  ['ssn', SafeRegex.builtIn('\\b\\d{3}-\\d{2}-\\d{4}\\b')],
  ['phone', SafeRegex.builtIn('\\+?\\d[\\d\\s().-]{7,}\\d')],
];

/** Sensitive values shorter than this are replaced only where they are a whole argument. */
const MIN_EMBEDDED_SENSITIVE = 4;

export interface AccessProblem {
  key: 'pii_access' | 'context_access';
  detail: string;
}

function words(v: Json): string[] | null {
  if (Array.isArray(v)) return v.every((x) => typeof x === 'string') ? (v as string[]).map((x) => x.trim()).filter(Boolean) : null;
  if (typeof v === 'string' && v.includes(',')) return v.split(',').map((x) => x.trim()).filter(Boolean);
  return null;
}

function readPii(v: Json, problems: AccessProblem[]): ToolAccessIR['pii'] {
  if (typeof v === 'boolean') return v ? 'full' : 'none';
  if (v === null) return 'none';
  const list = words(v);
  if (list) return { allow: [...new Set(list)] };
  const text = typeof v === 'string' ? v.trim().toLowerCase() : null;
  if (text === 'full' || text === 'masked' || text === 'none') return text;
  if (text) return { allow: [String(v).trim()] };
  problems.push({ key: 'pii_access', detail: `expected full, masked, none or a list, found ${JSON.stringify(v)}` });
  // Unreadable: the strictest reading, never a silent "everything".
  return 'none';
}

// `message_metadata.x` and `session.messageMetadata.x` name the key `x`.
const CONTEXT_PREFIX = /^(?:message_metadata|session\.messageMetadata)\./;

function readContext(v: Json, problems: AccessProblem[]): string[] | null {
  if (v === true) return null;
  if (v === false || v === null) return [];
  const text = typeof v === 'string' ? v.trim() : null;
  if (text !== null && /^all$/i.test(text)) return null;
  if (text !== null && /^none$/i.test(text)) return [];
  const list = words(v) ?? (text ? [text] : null);
  if (!list) {
    problems.push({ key: 'context_access', detail: `expected all, none or a list of message metadata keys, found ${JSON.stringify(v)}` });
    return [];
  }
  const keys: string[] = [];
  for (const item of list) {
    const key = item.replace(CONTEXT_PREFIX, '');
    if (!/^[A-Za-z_][\w-]*$/.test(key)) {
      problems.push({ key: 'context_access', detail: `"${item}" is not a message metadata key (a top-level key such as locale or channel)` });
      continue;
    }
    if (!keys.includes(key)) keys.push(key);
  }
  return keys;
}

/**
 * The access a tool's `pii_access` / `context_access` values describe (undefined when neither is
 * given), and what could not be read. An unreadable value reads as the strictest one.
 */
export function readToolAccess(pii: Json | undefined, context: Json | undefined): { access: ToolAccessIR | undefined; problems: AccessProblem[] } {
  const problems: AccessProblem[] = [];
  if (pii === undefined && context === undefined) return { access: undefined, problems };
  return {
    access: { pii: pii === undefined ? 'full' : readPii(pii, problems), context: context === undefined ? null : readContext(context, problems) },
    problems,
  };
}

/** A tool's access, from the IR, or from `extra` for IR compiled before the keys were read. */
export function toolAccessOf(tool: ToolIR): ToolAccessIR | undefined {
  if (tool.access) return tool.access;
  const extra = tool.extra ?? {};
  const find = (k: string): Json | undefined => {
    const key = Object.keys(extra).find((x) => x.toLowerCase() === k);
    return key === undefined ? undefined : extra[key];
  };
  return readToolAccess(find('pii_access'), find('context_access')).access;
}

/** True when the access changes anything a tool would otherwise receive. */
export function limitsAnything(access: ToolAccessIR | undefined): access is ToolAccessIR {
  return !!access && (access.pii !== 'full' || access.context !== null);
}

/** Every digit but the last four replaced by `*`; an e-mail keeps its first letter and its domain. */
function partial(kind: PiiKind, text: string): string {
  if (kind === 'email') {
    const at = text.lastIndexOf('@');
    return `${text.slice(0, 1)}***${text.slice(at)}`;
  }
  const digits = text.replace(/\D/g, '').length;
  let seen = 0;
  return text.replace(/\d/g, (d) => (++seen > digits - 4 ? d : '*'));
}

function replaceMatches(re: SafeRegex, text: string, replace: (match: string) => string): string {
  let out = '';
  let rest = text;
  for (let m = re.exec(rest); m && m[0].length > 0; m = re.exec(rest)) {
    const at = m.index ?? 0;
    out += rest.slice(0, at) + replace(m[0]);
    rest = rest.slice(at + m[0].length);
  }
  return out + rest;
}

/**
 * `args` as a tool with this PII access receives them. `sensitive` maps each of the agent's
 * `sensitive` GATHER fields to its current value. Only values are changed, never keys.
 */
export function applyPiiAccess(args: Record<string, Json>, pii: ToolAccessIR['pii'], sensitive: ReadonlyMap<string, Json>): Record<string, Json> {
  if (pii === 'full') return args;
  const allowed = new Set(typeof pii === 'object' ? pii.allow.map((x) => x.toLowerCase()) : []);
  const hidden = [...sensitive].filter(([name, value]) => !allowed.has(name.toLowerCase()) && value !== null && value !== undefined && value !== '');
  const whole = new Set(hidden.map(([, v]) => JSON.stringify(v)));
  const embedded = hidden.map(([, v]) => v).filter((v): v is string => typeof v === 'string' && v.length >= MIN_EMBEDDED_SENSITIVE);
  const patterns = PII_PATTERNS.filter(([kind]) => !allowed.has(kind));
  const text = (s: string): string => {
    let out = s;
    for (const v of embedded) out = out.split(v).join(SENSITIVE_MASK);
    for (const [kind, re] of patterns) out = replaceMatches(re(), out, (m) => (pii === 'masked' ? partial(kind, m) : PII_REDACTED));
    return out;
  };
  const visit = (v: Json): Json => {
    if (whole.has(JSON.stringify(v))) return SENSITIVE_MASK;
    if (typeof v === 'string') return text(v);
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x)]));
    return v;
  };
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, visit(v)]));
}

/** The message metadata a tool receives: only the listed keys (all of it when `keys` is null). */
export function pickContext(meta: Record<string, unknown> | undefined, keys: readonly string[] | null | undefined): Record<string, unknown> | undefined {
  if (!meta || keys === null || keys === undefined) return meta;
  return Object.fromEntries(Object.entries(meta).filter(([k]) => keys.includes(k)));
}
