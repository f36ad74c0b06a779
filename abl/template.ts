// `{{ }}` templates (ABL.md §2 "Interpolation"): parse once, render purely against a scope.
// Supports {{expr | filter}}, {{#if}}/{{#unless}}…{{else}}…, {{#each}}…{{else}}…{{/each}} with
// this/@index/@first/@last/@key, and Handlebars helper calls ({{add @index 1}}, (eq a b)).

import type { Expr } from './expr/ast';
import type { EvalContext } from './expr/context';
import { evaluate, type Scope } from './expr/evaluate';
import { parseExpression, type ExprParseResult } from './expr/parser';
import { toText, truthy } from './expr/values';

export const TEMPLATE_FILTERS = ['upper', 'lower', 'json', 'ago'] as const;

export interface TemplateExpr {
  src: string;
  ast: Expr | null;
  /** Offset of `src` in the template text. */
  offset: number;
  parsed: ExprParseResult;
}

export type TemplateNode =
  | { type: 'Text'; value: string }
  | { type: 'Output'; expr: TemplateExpr; filters: string[] }
  /** `unless`: written {{#unless}} (its block is `else`, its {{else}} block `then`). */
  | { type: 'If'; cond: TemplateExpr; then: TemplateNode[]; else: TemplateNode[]; unless?: boolean }
  | { type: 'Each'; list: TemplateExpr; body: TemplateNode[]; else?: TemplateNode[] };

export interface TemplateProblem {
  kind: 'syntax' | 'expression' | 'filter';
  message: string;
  /** Offset in the template text. */
  offset: number;
}

export interface ParsedTemplate {
  nodes: TemplateNode[];
  problems: TemplateProblem[];
}

function splitFilters(inner: string): { expr: string; filters: string[] } {
  // Split on single `|` outside quotes (`||` is the OR operator).
  const parts: string[] = [];
  let quote: string | null = null;
  let last = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '|' && inner[i + 1] !== '|' && inner[i - 1] !== '|') {
      parts.push(inner.slice(last, i));
      last = i + 1;
    }
  }
  parts.push(inner.slice(last));
  return { expr: parts[0] ?? '', filters: parts.slice(1).map((p) => p.trim().toLowerCase()) };
}

/**
 * Handlebars helpers written as `name arg arg` (arguments split on blanks; `(name arg …)` nests),
 * as the expression they stand for. Each maps onto a function or operator of the language.
 */
const call = (fn: string) => (a: string[]) => `${fn}(${a.join(', ')})`;
const infix = (op: string, min = 2) => (a: string[]) => (a.length < min ? null : `(${a.join(` ${op} `)})`);
const HELPERS: Record<string, (args: string[]) => string | null> = {
  add: call('ADD'), sum: call('ADD'), subtract: call('SUB'), sub: call('SUB'), minus: call('SUB'),
  multiply: call('MUL'), mul: call('MUL'), times: call('MUL'), divide: call('DIV'), div: call('DIV'),
  mod: infix('%'), modulo: infix('%'), round: call('ROUND'), abs: call('ABS'), min: call('MIN'), max: call('MAX'),
  eq: infix('=='), is: infix('=='), ne: infix('!='), neq: infix('!='), not_eq: infix('!='),
  gt: infix('>'), gte: infix('>='), lt: infix('<'), lte: infix('<='),
  and: infix('AND'), or: infix('OR'), not: (a) => (a.length === 1 ? `(NOT ${a[0]})` : null),
  contains: infix('contains'), includes: infix('contains'),
  length: call('LENGTH'), len: call('LENGTH'), size: call('LENGTH'),
  default: call('COALESCE'), coalesce: call('COALESCE'), join: call('JOIN'), concat: infix('+', 1),
  upper: call('UPPER'), uppercase: call('UPPER'), lower: call('LOWER'), lowercase: call('LOWER'), trim: call('TRIM'),
  capitalize: (a) => (a.length === 1 ? `(UPPER(SUBSTRING(${a[0]}, 0, 1)) + SUBSTRING(${a[0]}, 1))` : null),
  truncate: (a) => (a.length === 2 ? `SUBSTRING(${a[0]}, 0, ${a[1]})` : null),
  format_currency: call('FORMAT_CURRENCY'), currency: call('FORMAT_CURRENCY'), format_date: call('FORMAT_DATE'),
  ordinal: call('ORDINAL'), mask: call('MASK'), to_number: call('TO_NUMBER'), to_string: call('TO_STRING'),
};

/** Splits helper arguments on blanks outside quotes and parentheses; null when unbalanced. */
function helperArgs(text: string): string[] | null {
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      cur += c;
      if (c === '\\' && i + 1 < text.length) cur += text[++i];
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") { quote = c; cur += c; }
    else if (c === '(') { depth++; cur += c; }
    else if (c === ')') { if (--depth < 0) return null; cur += c; }
    else if (/\s/.test(c) && depth === 0) { if (cur) out.push(cur); cur = ''; }
    else cur += c;
  }
  if (depth !== 0 || quote) return null;
  if (cur) out.push(cur);
  return out;
}

/**
 * A Handlebars helper call (`add @index 1`, `(eq status "open")`, nested) as an expression of the
 * language; null when `src` is not one (it is then parsed as written).
 */
export function helperExpression(src: string): string | null {
  let t = src.trim();
  if (t.startsWith('(') && t.endsWith(')') && helperArgs(t.slice(1, -1)) !== null) {
    const inner = helperExpression(t.slice(1, -1));
    if (inner !== null) return inner;
  }
  const m = /^([A-Za-z_]\w*)\s+(\S[\s\S]*)$/.exec(t);
  const helper = m ? HELPERS[(m[1] as string).toLowerCase()] : undefined;
  if (!m || !helper) return null;
  const args = helperArgs(m[2] as string);
  if (!args || args.length === 0) return null;
  // A hash argument (`includeZero=true`) has no counterpart: left for the parser to report.
  if (args.some((a) => /^[A-Za-z_]\w*=/.test(a))) return null;
  t = helper(args.map((a) => (a.startsWith('(') ? `(${helperExpression(a) ?? a.slice(1, -1)})` : a))) ?? '';
  return t || null;
}

/** Parses `src`, or, when it does not parse and is a helper call, the expression the helper stands for. */
function parseWithHelpers(src: string, parseExpr: (src: string) => ExprParseResult): ExprParseResult {
  const parsed = parseExpr(src);
  if (!parsed.error) return parsed;
  const alt = helperExpression(src);
  if (alt === null) return parsed;
  const helped = parseExpr(alt);
  return helped.error ? parsed : helped;
}

/**
 * Parses a template. Never throws; problems are listed with offsets. `parseExpr` parses each
 * `{{ }}` expression (the compiler passes a memoised one).
 */
export function parseTemplate(text: string, parseExpr: (src: string) => ExprParseResult = parseExpression): ParsedTemplate {
  const problems: TemplateProblem[] = [];
  const root: TemplateNode[] = [];
  type Frame = { node: Extract<TemplateNode, { type: 'If' } | { type: 'Each' }>; inElse: boolean; offset: number };
  const stack: Frame[] = [];
  const target = (): TemplateNode[] => {
    const top = stack[stack.length - 1];
    if (!top) return root;
    if (top.node.type === 'If') return top.inElse ? top.node.else : top.node.then;
    return top.inElse ? (top.node.else ??= []) : top.node.body;
  };
  const mkExpr = (src: string, offset: number): TemplateExpr => {
    const parsed = parseWithHelpers(src, parseExpr);
    if (parsed.error) problems.push({ kind: 'expression', message: `"${src.trim()}": ${parsed.error.message}`, offset });
    return { src: src.trim(), ast: parsed.ast, offset, parsed };
  };
  let i = 0;
  while (i < text.length) {
    const open = text.indexOf('{{', i);
    if (open < 0) {
      target().push({ type: 'Text', value: text.slice(i) });
      break;
    }
    if (open > i) target().push({ type: 'Text', value: text.slice(i, open) });
    const close = text.indexOf('}}', open + 2);
    if (close < 0) {
      problems.push({ kind: 'syntax', message: '"{{" is never closed with "}}"', offset: open });
      target().push({ type: 'Text', value: text.slice(open) });
      break;
    }
    const inner = text.slice(open + 2, close);
    const trimmed = inner.trim();
    const at = open + 2 + (inner.length - inner.trimStart().length);
    const block = /^#(if|unless|each)\b\s*/i.exec(trimmed);
    if (block) {
      const kind = (block[1] as string).toLowerCase();
      const expr = mkExpr(trimmed.slice(block[0].length), at + block[0].length);
      // {{#unless x}} is {{#if x}} with its branches swapped: it starts in the else branch.
      const node: Frame['node'] = kind === 'each'
        ? { type: 'Each', list: expr, body: [] }
        : { type: 'If', cond: expr, then: [], else: [], ...(kind === 'unless' ? { unless: true } : {}) };
      target().push(node);
      stack.push({ node, inElse: kind === 'unless', offset: open });
    } else if (/^else$/i.test(trimmed)) {
      const top = stack[stack.length - 1];
      const unless = top?.node.type === 'If' && top.node.unless === true;
      if (top && top.inElse === !!unless) top.inElse = !unless;
      else problems.push({ kind: 'syntax', message: '{{else}} outside {{#if}}, {{#unless}} or {{#each}}', offset: open });
    } else if (/^\/(if|unless|each)$/i.test(trimmed)) {
      const name = trimmed.slice(1).toLowerCase();
      const top = stack[stack.length - 1];
      const matches = top && (name === 'each' ? top.node.type === 'Each' : top.node.type === 'If' && (name === 'unless') === (top.node.unless === true));
      if (matches) stack.pop();
      else problems.push({ kind: 'syntax', message: `{{${trimmed}}} without a matching {{#${name}}}`, offset: open });
    } else {
      const { expr, filters } = splitFilters(inner);
      for (const f of filters) {
        if (!(TEMPLATE_FILTERS as readonly string[]).includes(f)) problems.push({ kind: 'filter', message: f, offset: at });
      }
      target().push({ type: 'Output', expr: mkExpr(expr, at), filters });
    }
    i = close + 2;
  }
  for (const frame of stack) {
    const name = frame.node.type === 'If' && frame.node.unless ? 'unless' : frame.node.type.toLowerCase();
    problems.push({ kind: 'syntax', message: `{{#${name}}} is never closed`, offset: frame.offset });
  }
  return { nodes: root, problems };
}

function ago(v: unknown, ctx: EvalContext): string {
  const t = typeof v === 'number' ? v : typeof v === 'string' ? Date.parse(v) : Number.NaN;
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((ctx.now() - t) / 1000));
  const units: Array<[number, string]> = [[86400, 'day'], [3600, 'hour'], [60, 'minute'], [1, 'second']];
  for (const [size, name] of units) {
    if (s >= size) {
      const n = Math.floor(s / size);
      return `${n} ${name}${n === 1 ? '' : 's'} ago`;
    }
  }
  return 'just now';
}

function applyFilter(v: unknown, filter: string, ctx: EvalContext): unknown {
  switch (filter) {
    case 'upper': return toText(v).toUpperCase();
    case 'lower': return toText(v).toLowerCase();
    case 'json': return JSON.stringify(v === undefined ? null : v);
    case 'ago': return ago(v, ctx);
    default: return '';
  }
}

function layered(scope: Scope, locals: Record<string, unknown>): Scope {
  return (name: string) => {
    if (Object.hasOwn(locals, name)) return locals[name];
    const self = locals.this;
    if (typeof self === 'object' && self !== null && !Array.isArray(self) && Object.hasOwn(self, name)) {
      return (self as Record<string, unknown>)[name];
    }
    return typeof scope === 'function' ? scope(name) : Object.hasOwn(scope, name) ? scope[name] : undefined;
  };
}

const MAX_OUTPUT = 1_000_000;
const MAX_EACH = 10_000;

function renderNodes(nodes: TemplateNode[], scope: Scope, ctx: EvalContext, out: string[], escape?: (text: string) => string): void {
  for (const n of nodes) {
    if (out.length > MAX_OUTPUT) return;
    switch (n.type) {
      case 'Text':
        out.push(n.value);
        break;
      case 'Output': {
        if (!n.expr.ast) break;
        let v = evaluate(n.expr.ast, scope, ctx);
        for (const f of n.filters) v = applyFilter(v, f, ctx);
        out.push(escape ? escape(toText(v)) : toText(v));
        break;
      }
      case 'If': {
        const ok = n.cond.ast ? truthy(evaluate(n.cond.ast, scope, ctx)) : false;
        renderNodes(ok ? n.then : n.else, scope, ctx, out, escape);
        break;
      }
      case 'Each': {
        const list = n.list.ast ? evaluate(n.list.ast, scope, ctx) : undefined;
        // An object is iterated over its entries (@key is the key); nothing to iterate renders {{else}}.
        const entries: Array<[string | null, unknown]> = Array.isArray(list)
          ? list.map((x) => [null, x])
          : list !== null && typeof list === 'object' ? Object.entries(list) : [];
        if (entries.length === 0) {
          if (n.else) renderNodes(n.else, scope, ctx, out, escape);
          break;
        }
        const shown = entries.slice(0, MAX_EACH);
        shown.forEach(([key, item], index) => {
          const locals: Record<string, unknown> = { this: item, '@index': index, '@first': index === 0, '@last': index === shown.length - 1 };
          if (key !== null) locals['@key'] = key;
          renderNodes(n.body, layered(scope, locals), ctx, out, escape);
        });
        break;
      }
    }
  }
}

const cache = new Map<string, ParsedTemplate>();

/** Parses with a small memo (templates are re-rendered every turn). */
export function parseTemplateCached(text: string): ParsedTemplate {
  let parsed = cache.get(text);
  if (!parsed) {
    parsed = parseTemplate(text);
    if (cache.size > 1000) cache.clear();
    cache.set(text, parsed);
  }
  return parsed;
}

/** Renders a template. null/undefined render as ""; unknown filters as "". `escape` applies to each `{{ }}` value (SSML escapes them as XML text). Pure. */
export function renderTemplate(template: string | ParsedTemplate, scope: Scope, ctx: EvalContext, escape?: (text: string) => string): string {
  const parsed = typeof template === 'string' ? parseTemplateCached(template) : template;
  const out: string[] = [];
  renderNodes(parsed.nodes, scope, ctx, out, escape);
  return out.join('');
}
