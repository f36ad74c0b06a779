// Tenant-written regular expressions (GATHER `pattern(...)`, `matches /re/`, MATCHES_PATTERN, redacting
// guardrails) run on the workflow thread, so they are matched by RE2JS, a linear-time engine, never by
// the backtracking RegExp: no pattern can stall a worker. JavaScript syntax is translated; what RE2
// cannot do in linear time (backreferences, lookaround) is refused at compile time (E310).
import { RE2JS } from 're2js';

/** Longer patterns are refused: matching time grows with the pattern's size as well as the text's. */
export const MAX_PATTERN_LENGTH = 2000;

/** A compiled tenant pattern with the subset of the RegExp API the language uses. */
export class SafeRegex {
  private constructor(
    readonly source: string,
    readonly flags: string,
    private readonly re: RE2JS,
  ) {}

  /** Compiles `pattern` (JavaScript syntax); throws SafeRegexError when it cannot be matched safely. */
  static compile(pattern: string, flags = ''): SafeRegex {
    const checked = checkCached(pattern, flags);
    if ('kind' in checked) throw new SafeRegexError(checked.kind, checked.detail);
    return new SafeRegex(pattern, flags, checked.re);
  }

  /**
   * A fixed pattern of the language's own, compiled on its first use. Module code in the workflow
   * bundle runs again for every workflow a worker creates (a new session, a replay after eviction
   * from the sticky cache), so a pattern compiled at import would cost each of them its RE2 compile.
   */
  static builtIn(pattern: string): () => SafeRegex {
    let compiled: SafeRegex | null = null;
    return () => (compiled ??= SafeRegex.compile(pattern));
  }

  /** True when the pattern matches somewhere in `text`. */
  test(text: string): boolean {
    return this.re.test(text);
  }

  /** The first match, shaped like RegExp#exec's (index, groups); null when none. */
  exec(text: string): RegExpExecArray | null {
    return this.re.exec(text) as RegExpExecArray | null;
  }

  /** `text` with every match replaced by `replacement`, taken literally (no `$1`). */
  replaceAll(text: string, replacement: string): string {
    let out = '';
    let last = 0;
    for (const m of this.re.matchAll(text)) {
      const at = m.index ?? 0;
      out += text.slice(last, at) + replacement;
      last = at + m[0].length;
    }
    return out + text.slice(last);
  }
}

export class SafeRegexError extends Error {
  constructor(
    /** `invalid`: not a JavaScript regular expression; `unsupported`: valid, but not linear-time. */
    readonly kind: 'invalid' | 'unsupported',
    readonly detail: string,
  ) {
    super(detail);
    this.name = 'SafeRegexError';
  }
}

const FLAG_BITS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL };

function compileRe2(pattern: string, flags: string): RE2JS {
  let bits = 0;
  for (const f of flags) bits |= FLAG_BITS[f] ?? 0;
  return RE2JS.compile(RE2JS.translateRegExp(pattern), bits);
}

/** Backreferences and lookaround, found outside character classes, with the name users know them by. */
function backtrackingFeature(pattern: string): string | null {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      const next = pattern[i + 1] ?? '';
      if (!inClass && /[1-9]/.test(next)) return `a backreference (\\${next})`;
      if (!inClass && next === 'k' && pattern[i + 2] === '<') return 'a named backreference (\\k<...>)';
      i++;
    } else if (inClass) {
      if (ch === ']') inClass = false;
    } else if (ch === '[') {
      inClass = true;
    } else if (ch === '(' && pattern[i + 1] === '?') {
      const head = pattern.slice(i + 2, i + 4);
      if (head.startsWith('=') || head.startsWith('!')) return `a lookahead (?${head[0]}...)`;
      if (head === '<=' || head === '<!') return `a lookbehind (?${head}...)`;
    }
  }
  return null;
}

type PatternProblem = { kind: 'invalid' | 'unsupported'; detail: string };

/** Why `pattern` cannot be used, or null when it can. Never matches anything, so it is safe to call on any input. */
export function patternProblem(pattern: string, flags = ''): PatternProblem | null {
  const checked = checkCached(pattern, flags);
  return 'kind' in checked ? { ...checked } : null;
}

const checks = new Map<string, PatternProblem | { re: RE2JS }>();

/**
 * `check`, remembered per pattern and flags: a project repeats its patterns (every agent's
 * `pattern(...)` for the same kind of field), and an RE2 compile costs far more than the lookup.
 * The compiled RE2JS is immutable, so SafeRegex objects made from one entry can share it.
 */
function checkCached(pattern: string, flags: string): PatternProblem | { re: RE2JS } {
  const key = `${flags}/${pattern}`;
  let checked = checks.get(key);
  if (checked === undefined) {
    checked = check(pattern, flags);
    if (checks.size >= 500) checks.clear();
    checks.set(key, checked);
  }
  return checked;
}

/** The pattern compiled for RE2, or why it cannot be (compiled once: the check is the compile). */
function check(pattern: string, flags: string): PatternProblem | { re: RE2JS } {
  try {
    // Compiling (not running) a RegExp is linear in the pattern: it only checks the syntax users wrote.
    new RegExp(pattern, flags.replace(/[gy]/g, ''));
  } catch (err) {
    return { kind: 'invalid', detail: err instanceof Error ? err.message : 'invalid' };
  }
  if (pattern.length > MAX_PATTERN_LENGTH) return { kind: 'unsupported', detail: `it is longer than ${MAX_PATTERN_LENGTH} characters` };
  if (flags.includes('v')) return { kind: 'unsupported', detail: 'the v flag is not supported' };
  const feature = backtrackingFeature(pattern);
  if (feature) return { kind: 'unsupported', detail: `it uses ${feature}` };
  try {
    return { re: compileRe2(pattern, flags) };
  } catch (err) {
    const message = err instanceof Error ? err.message.replace(/^error parsing regexp: /, '') : 'not supported';
    return { kind: 'unsupported', detail: message.startsWith('invalid repeat count') ? `a counted repetition exceeds 1000 (${message})` : message };
  }
}

const cache = new Map<string, SafeRegex | null>();

/** Compiles (and caches) a tenant pattern; null when it is invalid or cannot be matched safely. */
export function safeRegex(pattern: string, flags = ''): SafeRegex | null {
  const key = `${flags}/${pattern}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  let re: SafeRegex | null;
  try {
    re = SafeRegex.compile(pattern, flags.replace(/[gy]/g, ''));
  } catch {
    re = null;
  }
  if (cache.size > 500) cache.clear();
  cache.set(key, re);
  return re;
}
