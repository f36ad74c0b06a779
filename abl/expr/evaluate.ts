// Pure expression evaluator. Never throws: invalid operations yield null/undefined.

import type { Expr } from './ast';
import type { EvalContext } from './context';
import { SafeRegex } from '../regex';
import { lookupFunction } from './functions';
import {
  compare, containsValue, getMember, isEmpty, isSet, looseEquals, looseNotEquals, toNumber, toRegExp, toText, truthy,
} from './values';

/** Variables visible to an expression: a plain object, or a lookup function for layered scopes. */
export type Scope = Readonly<Record<string, unknown>> | ((name: string) => unknown);

export interface EvalResult {
  value: unknown;
  /** Groups captured by the last successful `matches`: `{"0": full, "1": …, name: …}`. */
  match: Record<string, string> | undefined;
}

class Evaluator {
  match: Record<string, string> | undefined;

  constructor(
    private readonly scope: Scope,
    private readonly ctx: EvalContext,
  ) {}

  private lookup(name: string): unknown {
    if (name === 'match' && this.match) return this.match;
    if (typeof this.scope === 'function') return this.scope(name);
    return Object.hasOwn(this.scope, name) ? this.scope[name] : undefined;
  }

  eval(e: Expr): unknown {
    switch (e.type) {
      case 'Literal':
        return e.value;
      case 'Regex':
        return toRegExp(e.pattern, e.flags);
      case 'Ident':
        return this.lookup(e.name);
      case 'Member':
        return getMember(this.eval(e.object), e.property);
      case 'Index': {
        const key = this.eval(e.index);
        return typeof key === 'number' || typeof key === 'string' ? getMember(this.eval(e.object), key) : undefined;
      }
      case 'Call': {
        const def = lookupFunction(e.name);
        if (!def) return null;
        try {
          const v = def.fn(e.args.map((a) => this.plain(this.eval(a))), this.ctx);
          return v === undefined ? null : v;
        } catch {
          return null;
        }
      }
      case 'Unary': {
        const v = this.eval(e.operand);
        if (e.op === 'NOT') return !truthy(v);
        if (e.op === 'EXISTS') return isSet(v);
        if (e.op === 'EMPTY') return isEmpty(v);
        const n = toNumber(v);
        return n === null ? null : -n;
      }
      case 'IsSet': {
        const v = isSet(this.eval(e.operand));
        return e.negated ? !v : v;
      }
      case 'In': {
        const hay = this.eval(e.right);
        const v = this.eval(e.left);
        const r = Array.isArray(hay) ? hay.some((x) => looseEquals(x, v)) : containsValue(hay, v);
        return e.negated ? !r : r;
      }
      case 'List':
        return e.items.map((i) => this.plain(this.eval(i)));
      case 'Map': {
        const out: Record<string, unknown> = {};
        for (const { key, value } of e.entries) out[key] = this.plain(this.eval(value));
        return out;
      }
      case 'Binary':
        return this.binary(e);
    }
  }

  /** Regex values never leak out of expressions: they become their source text. */
  private plain(v: unknown): unknown {
    return v instanceof SafeRegex ? v.source : v;
  }

  private binary(e: Extract<Expr, { type: 'Binary' }>): unknown {
    switch (e.op) {
      case 'AND':
        return truthy(this.eval(e.left)) && truthy(this.eval(e.right));
      case 'OR':
        return truthy(this.eval(e.left)) || truthy(this.eval(e.right));
      case 'IMPLIES':
        return !truthy(this.eval(e.left)) || truthy(this.eval(e.right));
      case 'MATCHES':
        return this.matches(this.eval(e.left), this.eval(e.right));
      default:
        break;
    }
    const a = this.plain(this.eval(e.left));
    const b = this.plain(this.eval(e.right));
    switch (e.op) {
      case '==': return looseEquals(a, b);
      case '!=': return looseNotEquals(a, b);
      case '<': case '>': case '<=': case '>=': {
        const c = compare(a, b);
        if (c === null) return false;
        return e.op === '<' ? c < 0 : e.op === '>' ? c > 0 : e.op === '<=' ? c <= 0 : c >= 0;
      }
      case 'CONTAINS': return containsValue(a, b);
      case '+': {
        if (typeof a === 'string' || typeof b === 'string') return toText(a) + toText(b);
        if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b];
        const x = toNumber(a);
        const y = toNumber(b);
        return x === null || y === null ? null : x + y;
      }
      case '-': case '*': case '/': case '%': {
        const x = toNumber(a);
        const y = toNumber(b);
        if (x === null || y === null) return null;
        if ((e.op === '/' || e.op === '%') && y === 0) return null;
        return e.op === '-' ? x - y : e.op === '*' ? x * y : e.op === '/' ? x / y : x % y;
      }
    }
  }

  private matches(subject: unknown, pattern: unknown): boolean {
    const re = pattern instanceof SafeRegex ? pattern : typeof pattern === 'string' ? toRegExp(pattern) : null;
    if (!re || subject === null || subject === undefined) return false;
    const m = re.exec(toText(subject));
    if (!m) return false;
    const groups: Record<string, string> = {};
    m.forEach((g, i) => { groups[String(i)] = g ?? ''; });
    for (const [k, v] of Object.entries(m.groups ?? {})) groups[k] = v ?? '';
    this.match = groups;
    return true;
  }
}

/** Evaluates an expression AST against a scope. Pure; time/randomness come from `ctx`. */
export function evaluate(expr: Expr, scope: Scope, ctx: EvalContext): unknown {
  return new Evaluator(scope, ctx).eval(expr);
}

/** Like `evaluate`, also returning the `match.*` groups of a successful `matches`. */
export function evaluateDetailed(expr: Expr, scope: Scope, ctx: EvalContext): EvalResult {
  const ev = new Evaluator(scope, ctx);
  const value = ev.eval(expr);
  return { value, match: ev.match };
}

/** Evaluates as a condition (truthiness). */
export function evaluateCondition(expr: Expr, scope: Scope, ctx: EvalContext): boolean {
  return truthy(evaluate(expr, scope, ctx));
}
