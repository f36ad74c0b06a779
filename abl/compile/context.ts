// Per-file compile context: the diagnostic sink, the file path, and AST → IR helpers shared by
// every section reducer (locations, typed readers, expressions, templates).

import type { BlockNode, EntryNode, Loc, MapNode, PairNode, ScalarNode, ValueNode } from '../ast';
import type { DiagnosticArgs, DiagnosticCode, DiagnosticSink } from '../diagnostics';
import { walkExpr, type Expr } from '../expr/ast';
import { lookupFunction } from '../expr/functions';
import { parseExpression, type ExprParseResult } from '../expr/parser';
import type { ExprIR, IRLoc, Json } from '../ir';
import { parseTemplate, type ParsedTemplate, type TemplateNode } from '../template';
import { patternProblem } from '../regex';

/** Key aliases (ABL.md §14), applied to lower-cased keys. `on_failure` → `on_fail` only in steps. */
const ALIASES: Record<string, string> = {
  expect_return: 'return',
  action_id: 'action',
  server_tool: 'tool',
  resetms: 'reset_ms',
  failure_msg: 'failure_message',
  msg: 'message',
  validation: 'validate',
  call_with: 'with',
  grantmemory: 'grant_memory',
};

export function canonicalKey(key: string, stepContext = false): string {
  const k = key.trim().toLowerCase();
  if (stepContext && k === 'on_failure') return 'on_fail';
  return ALIASES[k] ?? k;
}

export interface Fields {
  /** Canonical lower-case key → pair. */
  map: Map<string, PairNode>;
  /** Bare lines (items) in the block, in order. */
  items: EntryNode[];
  /** Keys in file order. */
  order: string[];
}

/**
 * Parses shared by every file of one project compile: agents repeat their conditions and
 * messages, and a parse is pure. The results are shared, so nothing may change them (the
 * compiler's output is a copy: no two places in it share a node).
 */
export class ParseMemo {
  private readonly expressions = new Map<string, ExprParseResult>();
  private readonly templates = new Map<string, ParsedTemplate>();

  expression(src: string): ExprParseResult {
    let parsed = this.expressions.get(src);
    if (parsed === undefined) {
      parsed = parseExpression(src);
      this.expressions.set(src, parsed);
    }
    return parsed;
  }

  template(text: string): ParsedTemplate {
    let parsed = this.templates.get(text);
    if (parsed === undefined) {
      parsed = parseTemplate(text, (src) => this.expression(src));
      this.templates.set(text, parsed);
    }
    return parsed;
  }
}

export class CompileContext {
  /** Template names used via TEMPLATE(x), for W602. */
  readonly usedTemplates = new Set<string>();
  templates: Record<string, Record<string, string>> = {};

  constructor(
    readonly path: string,
    readonly sink: DiagnosticSink,
    readonly memo: ParseMemo = new ParseMemo(),
  ) {}

  loc(l: Loc): IRLoc {
    return { file: this.path, line: l.line, column: l.column };
  }

  report(code: DiagnosticCode, at: Loc, args: DiagnosticArgs = {}): void {
    this.sink.report(code, { path: this.path, line: at.line, column: at.column }, args);
  }

  /** Reads a block's `key: value` entries with canonical keys; duplicates are reported. */
  fields(block: BlockNode | null | undefined, opts: { step?: boolean; dupCode?: DiagnosticCode } = {}): Fields {
    const map = new Map<string, PairNode>();
    const items: EntryNode[] = [];
    const order: string[] = [];
    if (!block) return { map, items, order };
    if (block.kind === 'List') {
      this.report('E210', block.loc, { what: 'This block', expected: 'key: value lines', found: 'a list' });
      return { map, items, order };
    }
    for (const e of block.entries) {
      if (e.kind === 'Item') {
        items.push(e);
        continue;
      }
      const k = canonicalKey(e.key, opts.step);
      if (map.has(k)) {
        if (opts.dupCode === 'E502') this.report('E502', e.loc, { name: e.key });
        else this.report(opts.dupCode ?? 'E108', e.loc, { key: e.key });
        continue;
      }
      map.set(k, e);
      order.push(k);
    }
    return { map, items, order };
  }

  /** Reports keys outside `known` as W213 and returns them as JSON for `extra`. */
  extras(f: Fields, known: readonly string[], where: string): Record<string, Json> {
    const out: Record<string, Json> = {};
    for (const k of f.order) {
      if (known.includes(k)) continue;
      const p = f.map.get(k) as PairNode;
      this.report('W213', p.loc, { key: p.key, where });
      out[k] = toJson(pairValue(p));
    }
    return out;
  }

  /**
   * A pair's value where one value is expected: a value on the key's line, or a block under it.
   * Both at once (`RESPOND: "Hi"` + an indented `VOICE INSTRUCTIONS:`) is E110, never a substitution:
   * the value on the line is kept and the block is reported.
   */
  value(p: PairNode): ValueNode | null {
    if (p.value && p.children) {
      const first = p.children.kind === 'Map' ? p.children.entries[0] : p.children.items[0];
      const found = !first ? 'a block' : first.kind === 'Pair' ? `"${first.key}:"` : first.kind === 'Item' ? `"${first.head.raw}"` : describe(first);
      this.report('E110', p.children.loc, { key: p.key, found });
      return p.value;
    }
    return p.children ?? p.value;
  }

  /** The `key: value` entries of a map block; a bare line among them is E210, never skipped silently. */
  pairs(node: MapNode, what: string, expected: string): PairNode[] {
    const out: PairNode[] = [];
    for (const e of node.entries) {
      if (e.kind === 'Pair') out.push(e);
      else this.report('E210', e.loc, { what, expected, found: `"${e.head.raw}"` });
    }
    return out;
  }

  /** Keys of an action block (ON_SUCCESS, a constraint's ON_FAIL…) that nothing reads: W214. */
  ignoredKeys(f: Fields, known: readonly string[], where: string): void {
    for (const k of f.order) {
      if (known.includes(k)) continue;
      const p = f.map.get(k) as PairNode;
      this.report('W214', p.loc, { key: p.key, where, known: known.map((x) => x.toUpperCase()).join(', ') });
    }
    for (const e of f.items) this.report('W214', e.loc, { key: e.kind === 'Item' ? e.head.raw : e.key, where, known: known.map((x) => x.toUpperCase()).join(', ') });
  }

  /** `get(key)` over a block's fields, through `value()`. */
  getter(f: Fields): (key: string) => ValueNode | null {
    return (k) => {
      const p = f.map.get(k);
      return p ? this.value(p) : null;
    };
  }

  str(node: ValueNode | null | undefined, what: string): string | null {
    if (!node) return null;
    if (node.kind === 'Scalar') return node.value === null ? null : String(node.value);
    if (node.kind === 'Text') return node.value;
    this.report('E210', node.loc, { what, expected: 'a string', found: describe(node) });
    return null;
  }

  num(node: ValueNode | null | undefined, what: string): number | null {
    if (!node) return null;
    if (node.kind === 'Scalar' && typeof node.value === 'number') return node.value;
    if (node.kind === 'Scalar' && typeof node.value === 'string' && /^-?\d+(\.\d+)?$/.test(node.value.trim())) return Number(node.value);
    this.report('E214', node.loc, { what, expected: 'a number', value: node.kind === 'Scalar' ? node.raw : describe(node) });
    return null;
  }

  bool(node: ValueNode | null | undefined, what: string): boolean | null {
    if (!node) return null;
    if (node.kind === 'Scalar') {
      if (typeof node.value === 'boolean') return node.value;
      const s = String(node.value).toLowerCase();
      if (s === 'yes' || s === 'on') return true;
      if (s === 'no' || s === 'off') return false;
    }
    this.report('E211', node.loc, { what, allowed: 'true, false', value: node.kind === 'Scalar' ? node.raw : describe(node) });
    return null;
  }

  /** One of `allowed` (case-insensitive); reports E211 otherwise. */
  oneOf<T extends string>(node: ValueNode | null | undefined, allowed: readonly T[], what: string): T | null {
    const s = this.str(node, what);
    if (s === null || !node) return null;
    const found = allowed.find((a) => a.toLowerCase() === s.trim().toLowerCase());
    if (!found) this.report('E211', node.loc, { what, allowed: allowed.join(', '), value: s });
    return found ?? null;
  }

  /** A list of strings: inline `[a, b]`, `- a` lines, or `a, b` text. */
  strList(node: ValueNode | null | undefined, what: string): string[] {
    if (!node) return [];
    if (node.kind === 'List') {
      const out: string[] = [];
      for (const item of node.items) {
        if (item.kind === 'Scalar') {
          if (item.value !== null && String(item.value) !== '') out.push(String(item.value));
        } else if (item.kind === 'Map' && item.entries[0]?.kind === 'Pair') out.push(textOf(item));
        else if (item.kind === 'Item') out.push(String(item.head.value));
        else this.report('E210', item.loc, { what, expected: 'a list of names', found: describe(item) });
      }
      return out;
    }
    if (node.kind === 'Scalar') {
      if (node.value === null) return [];
      if (node.quoted) return [String(node.value)];
      return String(node.value).split(',').map((s) => s.trim()).filter(Boolean);
    }
    this.report('E210', node.loc, { what, expected: 'a list', found: describe(node) });
    return [];
  }

  /** Durations: 500ms, 15s, 5m, 2h, 90d; a bare number is in `bareUnit`. Returns milliseconds. */
  duration(node: ValueNode | null | undefined, what: string, bareUnit: 'ms' | 's'): number | null {
    if (!node) return null;
    if (node.kind === 'Scalar') {
      if (typeof node.value === 'number') return bareUnit === 's' ? node.value * 1000 : node.value;
      const ms = parseDuration(String(node.value), bareUnit);
      if (ms !== null) return ms;
    }
    this.report('E214', node.loc, { what, expected: 'a duration', value: node.kind === 'Scalar' ? node.raw : describe(node) });
    return null;
  }

  /**
   * Compiles an expression from a scalar or block. With `naturalLanguage`, text that does not parse
   * (or a quoted string) is kept as `{src, ast: null}`; otherwise it is E300.
   */
  expr(node: ValueNode | null | undefined, what: string, opts: { naturalLanguage?: boolean; implies?: boolean } = {}): ExprIR | null {
    if (!node) return null;
    if (node.kind === 'Scalar') {
      // A quoted WHEN is prose, unless it is a comparison (`"transfer_type == 'international'"`):
      // a WHEN is a condition by position, so such text is compiled as the expression it is.
      if (node.quoted && opts.naturalLanguage) {
        const parsed = this.memo.expression(String(node.value));
        if (!parsed.ast || !isComparison(parsed.ast)) return { src: String(node.value), ast: null };
      }
      const src = node.quoted ? String(node.value) : node.raw;
      return this.exprText(src, node.quoted ? { line: node.loc.line, column: node.loc.column + 1 } : node.loc, what, opts);
    }
    if (node.kind === 'Text') return this.exprText(node.value.replace(/\s*\n\s*/g, ' ').trim(), node.loc, what, opts);
    this.report('E210', node.loc, { what, expected: 'an expression', found: describe(node) });
    return null;
  }

  /**
   * A value position (WITH, SET key: value, DELEGATE INPUT, TRANSFORM MAP): a quoted scalar is a
   * string, with `{{ }}` rendered at run time; bare text is an expression; a block of `key: value`
   * lines is an object and a list a list, each entry a value again. Conditions use `expr()`.
   */
  valueExpr(node: ValueNode | null | undefined, what: string, depth = 0): ExprIR | null {
    if (!node) return null;
    if (node.kind === 'Scalar' && node.quoted) {
      const text = String(node.value);
      const at = { line: node.loc.line, column: node.loc.column + 1 };
      if (text.includes('{{')) return { src: node.raw, ast: this.templateValue(text, at, what) };
      const parsed = this.memo.expression(text);
      if (parsed.ast && looksLikeExpression(parsed.ast)) this.report('W311', node.loc, { what, value: text.length > 60 ? `${text.slice(0, 60)}…` : text });
      return { src: node.raw, ast: { type: 'Literal', value: text, pos: 0 } };
    }
    if (node.kind === 'Map' || node.kind === 'List') {
      if (depth > 16) {
        this.report('E106', node.loc, { what: 'Nesting depth of a value', limit: 16 });
        return null;
      }
      if (node.kind === 'List') {
        const items = node.items.map((i) => this.valueExpr(i, what, depth + 1)?.ast ?? { type: 'Literal' as const, value: null, pos: 0 });
        return { src: sourceOf(node), ast: { type: 'List', items, pos: 0 } };
      }
      const entries: Array<{ key: string; value: Expr }> = [];
      for (const e of node.entries) {
        if (e.kind !== 'Pair') {
          this.report('E210', e.loc, { what, expected: 'key: value lines', found: `"${e.head.raw}"` });
          continue;
        }
        entries.push({ key: e.key, value: this.valueExpr(this.value(e), `${what}.${e.key}`, depth + 1)?.ast ?? { type: 'Literal', value: null, pos: 0 } });
      }
      return { src: sourceOf(node), ast: { type: 'Map', entries, pos: 0 } };
    }
    if (node.kind === 'Item') {
      this.report('E210', node.loc, { what, expected: 'a value or key: value lines', found: describe(node) });
      return null;
    }
    return this.expr(node, what, { naturalLanguage: false });
  }

  /**
   * `"{{department}}_queue"` as an expression: `"" + department + "_queue"` (`+` renders like a
   * template: null is "", objects are JSON). Filters upper/lower become UPPER()/LOWER(); other
   * template forms (#if, #each, json, ago) cannot be values (E312).
   */
  private templateValue(text: string, at: Loc, what: string): Expr {
    this.checkTemplate(text, at);
    const parsed = this.memo.template(text);
    let out: Expr = { type: 'Literal', value: '', pos: 0 };
    const add = (e: Expr): void => { out = { type: 'Binary', op: '+', left: out, right: e, pos: 0 }; };
    const unsupported = (n: TemplateNode): string | null =>
      n.type === 'If' ? '{{#if}}' : n.type === 'Each' ? '{{#each}}' : n.type === 'Output' ? (n.filters.find((f) => f !== 'upper' && f !== 'lower') ?? null) : null;
    for (const n of parsed.nodes) {
      const bad = unsupported(n);
      if (bad) {
        this.report('E312', at, { what, form: bad });
        continue;
      }
      if (n.type === 'Text') add({ type: 'Literal', value: n.value, pos: 0 });
      else if (n.type === 'Output' && n.expr.ast) {
        let e: Expr = n.expr.ast;
        for (const f of n.filters) e = { type: 'Call', name: f.toUpperCase(), args: [e], pos: 0 };
        add(e);
      }
    }
    return out;
  }

  exprText(src: string, at: Loc, what: string, opts: { naturalLanguage?: boolean; implies?: boolean } = {}): ExprIR {
    const parsed = this.memo.expression(src);
    const col = (pos: number): Loc => ({ line: at.line, column: at.column + pos });
    if (!parsed.ast) {
      if (opts.naturalLanguage) return { src, ast: null };
      const err = parsed.error ?? { message: 'cannot parse', pos: 0 };
      if (/nested deeper|more than \d+ tokens/.test(err.message)) this.report('E303', col(err.pos), { limit: err.message, what: '' });
      else this.report('E300', col(err.pos), {
        src: src.length > 60 ? `${src.slice(0, 60)}…` : src,
        detail: err.message,
        fix: `${what} must be an expression such as amount > 100 AND status == "open".${opts.naturalLanguage === false ? '' : ' Natural-language conditions are only allowed in HANDOFF, DELEGATE and ESCALATE WHENs.'}`,
      });
      return { src, ast: null };
    }
    for (const call of parsed.calls) {
      const def = lookupFunction(call.name);
      if (!def) this.report('E301', col(call.pos), { name: call.name });
      else if (call.argc < def.min || call.argc > def.max) {
        this.report('E309', col(call.pos), { name: call.name, expected: def.min === def.max ? String(def.min) : `${def.min} to ${def.max}`, found: call.argc });
      }
    }
    if (parsed.usesImplies && !opts.implies) this.report('E304', at);
    walkExpr(parsed.ast, (e) => {
      // Regex literals, and string literals used as patterns, must suit the linear-time matcher.
      const pattern =
        e.type === 'Regex' ? { text: e.pattern, flags: e.flags, pos: e.pos }
        : e.type === 'Binary' && e.op === 'MATCHES' && e.right.type === 'Literal' && typeof e.right.value === 'string' ? { text: e.right.value, flags: '', pos: e.right.pos }
        : e.type === 'Call' && /^(NOT_)?MATCHES_PATTERN$/i.test(e.name) && e.args[1]?.type === 'Literal' && typeof e.args[1].value === 'string' ? { text: e.args[1].value, flags: '', pos: e.args[1].pos }
        : null;
      const problem = pattern ? patternProblem(pattern.text, pattern.flags) : null;
      if (pattern && problem) this.report(problem.kind === 'invalid' ? 'E307' : 'E310', col(pattern.pos), { pattern: pattern.text, detail: problem.detail });
    });
    return { src, ast: parsed.ast };
  }

  /** Checks a `{{ }}` template and returns its text (TEMPLATE(x) is expanded). */
  text(node: ValueNode | null | undefined, what: string): string | null {
    if (!node) return null;
    if (node.kind === 'Map' && !node.inline) {
      // RESPOND with variants: {DEFAULT: ..., MARKDOWN: ...} → DEFAULT
      const f = this.fields(node);
      const d = f.map.get('default') ?? f.map.get(f.order[0] ?? '');
      // Only that one is ever sent (docs/not-supported.md).
      for (const k of f.order) {
        const p = f.map.get(k) as PairNode;
        if (p !== d) this.report('W603', p.loc, { variant: p.key, what });
      }
      return d ? this.text(pairValue(d), what) : null;
    }
    const raw = this.str(node, what);
    if (raw === null) return null;
    // Only text whose first non-blank is a T can be TEMPLATE(x): the rest skips the regex.
    const lead = raw.trimStart().charCodeAt(0);
    const tpl = lead === 84 || lead === 116 ? TEMPLATE_REF.exec(raw) : null;
    if (tpl && !(node.kind === 'Scalar' && node.quoted)) {
      const name = tpl[1] as string;
      this.usedTemplates.add(name);
      const variants = this.templates[name];
      if (!variants) {
        this.report('E601', node.loc, { name });
        return '';
      }
      return variants.DEFAULT ?? Object.values(variants)[0] ?? '';
    }
    this.checkTemplate(raw, node.kind === 'Scalar' && node.quoted ? { line: node.loc.line, column: node.loc.column + 1 } : node.loc);
    return raw;
  }

  checkTemplate(raw: string, at: Loc): void {
    if (!raw.includes('{{')) return;
    const parsed = this.memo.template(raw);
    const locOf = (offset: number): Loc => {
      const before = raw.slice(0, offset);
      const nl = before.lastIndexOf('\n');
      if (nl < 0) return { line: at.line, column: at.column + offset };
      return { line: at.line + before.split('\n').length - 1, column: offset - nl };
    };
    for (const p of parsed.problems) {
      if (p.kind === 'filter') this.report('W306', locOf(p.offset), { name: p.message });
      else if (p.kind === 'syntax') this.report('E305', locOf(p.offset), { detail: p.message });
      else this.report('E300', locOf(p.offset), { src: p.message.split('": ')[0]?.slice(1) ?? '', detail: p.message.split('": ').slice(1).join('": '), fix: 'Fix the expression inside {{ }}.' });
    }
    const visit = (nodes: typeof parsed.nodes): void => {
      for (const n of nodes) {
        const exprs = n.type === 'Output' ? [n.expr] : n.type === 'If' ? [n.cond] : n.type === 'Each' ? [n.list] : [];
        for (const e of exprs) {
          for (const call of e.parsed.calls) {
            if (!lookupFunction(call.name)) this.report('E301', locOf(e.offset + call.pos), { name: call.name });
          }
        }
        if (n.type === 'If') { visit(n.then); visit(n.else); }
        if (n.type === 'Each') visit(n.body);
      }
    };
    visit(parsed.nodes);
  }
}

const TEMPLATE_REF = /^\s*TEMPLATE\s*\(\s*([A-Za-z_][\w-]*)\s*\)\s*$/i;

export function parseDuration(text: string, bareUnit: 'ms' | 's'): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|d|days?)?\s*$/i.exec(text);
  if (!m) return null;
  const n = Number(m[1]);
  const unit = (m[2] ?? bareUnit).toLowerCase();
  if (unit === 'ms') return n;
  if (unit.startsWith('s')) return n * 1000;
  if (unit.startsWith('m')) return n * 60_000;
  if (unit.startsWith('h')) return n * 3_600_000;
  return n * 86_400_000;
}

/** A pair's effective value: its deeper block, else its inline value. */
export function pairValue(p: PairNode): ValueNode | null {
  return p.children ?? p.value;
}

export function describe(node: ValueNode): string {
  switch (node.kind) {
    case 'Scalar': return `"${node.raw}"`;
    case 'Text': return 'a text block';
    case 'List': return 'a list';
    case 'Map': return 'a block of key: value lines';
    case 'Item': return `"${node.head.raw}" with nested lines`;
  }
}

/** Reconstructs the source-ish text of a node (for list items that look like `a: b`). */
export function textOf(node: ValueNode): string {
  switch (node.kind) {
    case 'Scalar': return node.value === null ? '' : String(node.value);
    case 'Text': return node.value;
    case 'Item': return String(node.head.value);
    case 'List': return node.items.map(textOf).join(', ');
    case 'Map': return node.entries.map((e) => (e.kind === 'Pair' ? `${e.key}: ${e.value ? textOf(e.value) : ''}` : String(e.head.value))).join(', ');
  }
}

/** A value as written, on one line (quotes kept): the `src` of an object or list value. */
export function sourceOf(node: ValueNode): string {
  switch (node.kind) {
    case 'Scalar': return node.raw;
    case 'Text': return JSON.stringify(node.value);
    case 'Item': return node.head.raw;
    case 'List': return `[${node.items.map(sourceOf).join(', ')}]`;
    case 'Map': return `{${node.entries.map((e) => (e.kind === 'Pair' ? `${e.key}: ${e.children ? sourceOf(e.children) : e.value ? sourceOf(e.value) : ''}` : e.head.raw)).join(', ')}}`;
  }
}

/** Converts any AST value to JSON (for `extra` and free-form maps). */
export function toJson(node: ValueNode | null | undefined): Json {
  if (!node) return null;
  switch (node.kind) {
    case 'Scalar': return node.value;
    case 'Text': return node.value;
    case 'List': return node.items.map(toJson);
    case 'Item': return node.children ? { [String(node.head.value)]: toJson(node.children) } : node.head.value;
    case 'Map': {
      const out: Record<string, Json> = {};
      for (const e of node.entries) {
        if (e.kind === 'Pair') out[e.key] = e.value && e.children ? { _value: toJson(e.value), ...(asObject(toJson(e.children))) } : toJson(e.children ?? e.value);
        else out[String(e.head.value)] = e.children ? toJson(e.children) : null;
      }
      return out;
    }
  }
}

function asObject(j: Json): Record<string, Json> {
  return j !== null && typeof j === 'object' && !Array.isArray(j) ? j : { _children: j };
}

/** The scalar head of a list item (for `- name` + props forms). */
export function headOf(node: ValueNode): ScalarNode | null {
  if (node.kind === 'Scalar') return node;
  if (node.kind === 'Item') return node.head;
  return null;
}

/** True when a comparison appears anywhere in `e` (so quoted text is a condition, not prose). */
function isComparison(e: Expr): boolean {
  let found = false;
  walkExpr(e, (n) => {
    if (n.type === 'In' || n.type === 'IsSet' || (n.type === 'Binary' && ['==', '!=', '>', '<', '>=', '<=', 'CONTAINS', 'MATCHES'].includes(n.op))) found = true;
  });
  return found;
}

/** A quoted value that would do something if written bare: an operator, a call or a dotted path. */
function looksLikeExpression(e: Expr): boolean {
  return e.type === 'Binary' || e.type === 'Call' || e.type === 'In' || e.type === 'IsSet' || e.type === 'Member' || e.type === 'Index' || (e.type === 'Unary' && e.op !== 'NEG');
}

export const NAME_RE = /^[A-Za-z][A-Za-z0-9_]*$/;
