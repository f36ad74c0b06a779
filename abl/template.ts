// `{{ }}` templates (ABL.md §2 "Interpolation"): parse once, render purely against a scope.
// Supports {{expr | filter}}, {{#if}}…{{else}}…{{/if}}, {{#each}}…{{/each}} with this/@index.

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
  | { type: 'If'; cond: TemplateExpr; then: TemplateNode[]; else: TemplateNode[] }
  | { type: 'Each'; list: TemplateExpr; body: TemplateNode[] };

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
    return top.node.body;
  };
  const mkExpr = (src: string, offset: number): TemplateExpr => {
    const parsed = parseExpr(src);
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
    const block = /^#(if|each)\b\s*/i.exec(trimmed);
    if (block) {
      const kind = (block[1] as string).toLowerCase();
      const expr = mkExpr(trimmed.slice(block[0].length), at + block[0].length);
      const node: Frame['node'] = kind === 'if'
        ? { type: 'If', cond: expr, then: [], else: [] }
        : { type: 'Each', list: expr, body: [] };
      target().push(node);
      stack.push({ node, inElse: false, offset: open });
    } else if (/^else$/i.test(trimmed)) {
      const top = stack[stack.length - 1];
      if (top?.node.type === 'If' && !top.inElse) top.inElse = true;
      else problems.push({ kind: 'syntax', message: '{{else}} outside {{#if}}', offset: open });
    } else if (/^\/(if|each)$/i.test(trimmed)) {
      const kind = trimmed.slice(1).toLowerCase() === 'if' ? 'If' : 'Each';
      const top = stack[stack.length - 1];
      if (top && top.node.type === kind) stack.pop();
      else problems.push({ kind: 'syntax', message: `{{${trimmed}}} without a matching {{#${kind.toLowerCase()}}}`, offset: open });
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
    problems.push({ kind: 'syntax', message: `{{#${frame.node.type.toLowerCase()}}} is never closed`, offset: frame.offset });
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
        if (!Array.isArray(list)) break;
        list.slice(0, MAX_EACH).forEach((item, index) => {
          renderNodes(n.body, layered(scope, { this: item, '@index': index }), ctx, out, escape);
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
