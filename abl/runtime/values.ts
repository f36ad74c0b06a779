// Small pure helpers of the session interpreter: JSON coercion, cloning, truncation, dotted
// paths and JSON-schema generation for LLM tool specs.

import type { Expr } from '../expr/ast';
import type { AgentIR, Json, ParamIR, TypeIR } from '../ir';
import type { LlmRequestSpec } from './contract';
import { safeRegex, SafeRegex } from '../regex';

/** The EXECUTION settings every LLM request of `agent` carries: its timeout and fallback model. */
export function llmLimits(agent: AgentIR): Pick<LlmRequestSpec, 'fallbackModel' | 'timeoutMs'> {
  const { fallback_model: fallback, llm_timeout_ms: timeoutMs } = agent.execution;
  return { timeoutMs, ...(fallback ? { fallbackModel: fallback } : {}) };
}

/** Code-unit order of two strings: the same on every worker, whatever its locale (unlike localeCompare). */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Coerces any evaluation result to JSON: undefined → null, SafeRegex → source, non-finite → null. */
export function toJson(v: unknown, depth = 0): Json {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (depth > 40) return null;
  if (Array.isArray(v)) return v.map((x) => toJson(x, depth + 1));
  if (v instanceof SafeRegex) return v.source;
  if (typeof v === 'object') {
    const out: { [k: string]: Json } = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (x !== undefined && typeof x !== 'function') out[k] = toJson(x, depth + 1);
    }
    return out;
  }
  return null;
}

export function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [truncated ${text.length - max} chars]`;
}

/** A compact JSON preview for traces and LLM tool results. */
export function preview(v: Json, max = 2000): Json {
  const text = JSON.stringify(v) ?? 'null';
  return text.length <= max ? v : truncate(text, max);
}

export function isSetValue(v: unknown): boolean {
  return v !== undefined && v !== null && v !== '';
}

/** Writes `value` at a dotted path inside `target`, creating objects on the way. */
export function setPath(target: Record<string, Json>, path: string, value: Json): void {
  const parts = path.split('.');
  let cur: Record<string, Json> = target;
  for (let i = 0; i < parts.length - 1; i++) {
    const k = parts[i] as string;
    const next = cur[k];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[k] = {};
    cur = cur[k] as Record<string, Json>;
  }
  cur[parts[parts.length - 1] as string] = value;
}

/** The variables an expression reads (top-level identifiers). */
export function identifiers(e: Expr | null): string[] {
  const out = new Set<string>();
  const visit = (x: Expr): void => {
    switch (x.type) {
      case 'Ident': out.add(x.name); break;
      case 'Member': visit(x.object); break;
      case 'Index': visit(x.object); visit(x.index); break;
      case 'Call': x.args.forEach(visit); break;
      case 'Unary': case 'IsSet': visit(x.operand); break;
      case 'Binary': case 'In': visit(x.left); visit(x.right); break;
      case 'List': x.items.forEach(visit); break;
      case 'Map': x.entries.forEach((m) => visit(m.value)); break;
      default: break;
    }
  };
  if (e) visit(e);
  return [...out];
}

/** Rewrites `input == x` / `input != x` to compare lower-cased (ON_INPUT ignores case). */
export function lowerInputComparisons(e: Expr): Expr {
  const isInput = (x: Expr): boolean => x.type === 'Ident' && x.name === 'input';
  const lower = (x: Expr): Expr => ({ type: 'Call', name: 'LOWER', args: [x], pos: x.pos });
  switch (e.type) {
    case 'Binary':
      if ((e.op === '==' || e.op === '!=') && (isInput(e.left) || isInput(e.right))) {
        return { ...e, left: lower(e.left), right: lower(e.right) };
      }
      return { ...e, left: lowerInputComparisons(e.left), right: lowerInputComparisons(e.right) };
    case 'Unary':
      return { ...e, operand: lowerInputComparisons(e.operand) };
    default:
      return e;
  }
}

function typeSchema(t: TypeIR): Json {
  switch (t.kind) {
    case 'primitive':
      if (t.name === 'number') return { type: 'number' };
      if (t.name === 'boolean') return { type: 'boolean' };
      if (t.name === 'object' || t.name === 'any') return { type: 'object' };
      return { type: 'string' };
    case 'array':
      return { type: 'array', items: typeSchema(t.of) };
    case 'object': {
      const properties: Record<string, Json> = {};
      for (const f of t.fields) properties[f.name] = typeSchema(f.type);
      return { type: 'object', properties, required: t.fields.filter((f) => !f.optional).map((f) => f.name) };
    }
    case 'nullable':
      return typeSchema(t.of);
    case 'named':
      return { type: 'object' };
  }
}

/** JSON schema of a tool's parameters, for the LLM tool list. */
export function paramsSchema(params: readonly ParamIR[]): Json {
  const properties: Record<string, Json> = {};
  for (const p of params) {
    const s = typeSchema(p.type) as Record<string, Json>;
    properties[p.name] = p.description ? { ...s, description: p.description } : s;
  }
  return { type: 'object', properties, required: params.filter((p) => p.required).map((p) => p.name) };
}

// Compiled on first use (SafeRegex.builtIn: module code runs for every workflow a worker creates).
const PII_PATTERNS = [
  /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/,
  /\b\d{4}[ -]?\d{4}[ -]?\d{4}[ -]?\d{4}\b/,
  /\b\d{3}-\d{2}-\d{4}\b/,
  /\+?\d[\d\s().-]{7,}\d/,
].map((re) => SafeRegex.builtIn(re.source));

/** The PII patterns of `contains_pii` (a fix guardrail's `redact_pii` marks their matches). */
export function piiPatterns(): SafeRegex[] {
  return PII_PATTERNS.map((pattern) => pattern());
}

/** Patterns a redacting guardrail removes: the regexes of its pattern helpers, or PII. */
export function redactionPatterns(check: Expr): SafeRegex[] {
  const out: SafeRegex[] = [];
  const visit = (x: Expr): void => {
    if (x.type === 'Call') {
      const name = x.name.toUpperCase();
      const arg = x.args[1];
      if ((name === 'MATCHES_PATTERN' || name === 'NOT_MATCHES_PATTERN') && arg?.type === 'Literal' && typeof arg.value === 'string') {
        // An invalid or unsupported pattern redacts nothing.
        const re = safeRegex(arg.value);
        if (re) out.push(re);
      } else if (name === 'CONTAINS_PII') {
        out.push(...PII_PATTERNS.map((pattern) => pattern()));
      }
      x.args.forEach(visit);
    } else if (x.type === 'Binary' || x.type === 'In') {
      visit(x.left);
      visit(x.right);
    } else if (x.type === 'Unary' || x.type === 'IsSet') {
      visit(x.operand);
    }
  };
  visit(check);
  return out;
}
