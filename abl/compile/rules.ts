// CONSTRAINTS, GUARDRAILS and COMPLETE reducers (ABL.md §9–10).

import type { Loc, PairNode, ValueNode } from '../ast';
import type { CompletionRuleIR, ConstraintIR, ExprIR, GuardrailFixIR, GuardrailIR, GuardrailProviderIR, OnFailIR } from '../ir';
import { walkExpr, type Expr } from '../expr/ast';
import { MODERATION_CATEGORIES, MODERATION_PROVIDER_NAMES, normalizeCategory } from '../moderation';
import { describe, pairValue, type CompileContext, type Fields } from './context';

const CONSTRAINT = /^(REQUIRE|RESTRICT|LIMIT|WARN)\s+([\s\S]+?)(?:\s+BEFORE\s+(calling\s+([A-Za-z_]\w*)|returning\s+results))?\s*$/i;

function compileOnFail(ctx: CompileContext, node: ValueNode | null): OnFailIR {
  if (!node) return { kind: 'block' };
  if (node.kind === 'Map') {
    const f = ctx.fields(node);
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
    const then = ctx.str(get('then'), 'THEN');
    ctx.ignoredKeys(f, ['respond', 'collect', 'goto', 'then'], 'a constraint ON_FAIL block');
    return {
      kind: 'recover',
      respond: ctx.text(get('respond'), 'RESPOND'),
      collect: ctx.strList(get('collect'), 'COLLECT'),
      goto: ctx.str(get('goto'), 'GOTO'),
      then: then && /^retry$/i.test(then.trim()) ? 'retry' : 'continue',
    };
  }
  if (node.kind === 'Scalar' && node.quoted) {
    ctx.checkTemplate(String(node.value), { line: node.loc.line, column: node.loc.column + 1 });
    return { kind: 'message', message: String(node.value) };
  }
  const text = ctx.str(node, 'ON_FAIL');
  if (text === null) return { kind: 'block' };
  const t = text.trim();
  if (/^block$/i.test(t)) return { kind: 'block' };
  const esc = /^escalate(?:\s+(?:with\s+reason\s*:?\s*)?(["'])([\s\S]*)\1)?$/i.exec(t);
  if (esc) return { kind: 'escalate', reason: esc[2] ?? null };
  const h = /^handoff\s+(?:to\s+)?([A-Za-z]\w*)$/i.exec(t);
  if (h) return { kind: 'handoff', agent: h[1] as string };
  // `RESPOND "text"`: the action, written on one line (a message, like a quoted ON_FAIL).
  const respond = /^(?:respond|say)\s*:?\s*(["'])([\s\S]*)\1$/i.exec(t);
  if (respond) {
    const message = respond[2] as string;
    ctx.checkTemplate(message, node.loc);
    return { kind: 'message', message };
  }
  // An action keyword that did not read as an action must not become the text of a message.
  if (t === '' || /^(respond|say|escalate|handoff|block|goto|then|collect|retry)\b/i.test(t)) {
    ctx.report('E851', node.loc, { src: t });
    return { kind: 'block' };
  }
  ctx.checkTemplate(t, node.loc);
  return { kind: 'message', message: t };
}

function compileConstraint(ctx: CompileContext, text: string, at: Loc, props: Fields, label: string | null): ConstraintIR | null {
  const m = CONSTRAINT.exec(text.trim());
  if (!m) {
    ctx.report('E850', at, { src: text.trim() });
    return null;
  }
  const kind = (m[1] as string).toLowerCase() as ConstraintIR['kind'];
  const condStart = text.indexOf(m[2] as string);
  const condition = ctx.exprText(m[2] as string, { line: at.line, column: at.column + Math.max(0, condStart) }, 'A constraint condition', { implies: true, naturalLanguage: false });
  const get = (k: string): ValueNode | null => { const p = props.map.get(k); return p ? ctx.value(p) : null; };
  ctx.extras(props, ['on_fail', 'when', 'message'], 'constraint');
  const checkpoint: ConstraintIR['checkpoint'] = m[4]
    ? { kind: 'before_tool', tool: m[4] }
    : m[3]
      ? { kind: 'before_returning' }
      : { kind: 'default' };
  return {
    kind,
    label,
    condition,
    when: ctx.expr(get('when'), 'Constraint WHEN', { implies: true }),
    checkpoint,
    on_fail: compileOnFail(ctx, get('on_fail') ?? get('message')),
    loc: ctx.loc(at),
  };
}

export function compileConstraints(ctx: CompileContext, node: ValueNode | null): ConstraintIR[] {
  const out: ConstraintIR[] = [];
  const visitList = (n: ValueNode, label: string | null): void => {
    const items = n.kind === 'List' ? n.items : [n];
    for (const item of items) {
      if (item.kind === 'Scalar') {
        const c = compileConstraint(ctx, String(item.value ?? ''), item.loc, ctx.fields(null), label);
        if (c) out.push(c);
      } else if (item.kind === 'Item') {
        const c = compileConstraint(ctx, String(item.head.value ?? ''), item.loc, ctx.fields(item.children), label);
        if (c) out.push(c);
      } else if (item.kind === 'Map') {
        // `- REQUIRE x: …` rarely parses as a pair; treat the first key as the rule text
        const first = item.entries[0];
        if (first?.kind === 'Pair' && /^(REQUIRE|RESTRICT|LIMIT|WARN)\b/i.test(first.key)) {
          // `- REQUIRE: cond` (the YAML spelling) reads like `- REQUIRE cond`
          const sep = /^(REQUIRE|RESTRICT|LIMIT|WARN)$/i.test(first.key.trim()) ? ' ' : ': ';
          const rest = first.value ? (first.value.kind === 'Scalar' ? (first.value.quoted ? String(first.value.value) : first.value.raw) : '') : '';
          const c = compileConstraint(ctx, `${first.key}${first.value ? `${sep}${rest}` : ''}`, first.loc, ctx.fields({ ...item, entries: item.entries.slice(1) }), label);
          if (c) out.push(c);
        } else if (first?.kind === 'Pair' && label === null) {
          // label: [rules]
          for (const e of item.entries) if (e.kind === 'Pair' && pairValue(e)) visitList(pairValue(e) as ValueNode, e.key);
        } else ctx.report('E850', item.loc, { src: first?.kind === 'Pair' ? first.key : '…' });
      } else ctx.report('E850', item.loc, { src: '…' });
    }
  };
  if (!node) return out;
  if (node.kind === 'Map') {
    for (const e of node.entries) {
      if (e.kind === 'Item') {
        const c = compileConstraint(ctx, String(e.head.value ?? ''), e.loc, ctx.fields(e.children), null);
        if (c) out.push(c);
      } else {
        const v = pairValue(e);
        if (v) visitList(v, e.key);
      }
    }
  } else visitList(node, null);
  return out;
}

const KINDS = ['input', 'output', 'both', 'tool_input', 'tool_output', 'handoff'] as const;
const ACTIONS = ['block', 'warn', 'redact', 'fix', 'reask', 'filter', 'escalate'] as const;

export function compileGuardrails(ctx: CompileContext, node: ValueNode | null): GuardrailIR[] {
  const out: GuardrailIR[] = [];
  if (!node) return out;
  const entries: Array<{ name: string; f: Fields; at: Loc }> = [];
  if (node.kind === 'Map') {
    for (const e of node.entries) {
      if (e.kind !== 'Pair' || !e.children || e.children.kind !== 'Map') {
        ctx.report('E852', e.loc, { name: e.kind === 'Pair' ? e.key : e.head.raw, detail: 'expected a block with kind, check and action' });
        continue;
      }
      entries.push({ name: e.key, f: ctx.fields(e.children), at: e.loc });
    }
  } else if (node.kind === 'List') {
    for (const item of node.items) {
      if (item.kind !== 'Map') {
        ctx.report('E852', item.loc, { name: item.kind === 'Scalar' ? item.raw : '?', detail: 'a list entry must be a block with name, kind, check and action' });
        continue;
      }
      const f = ctx.fields(item);
      const name = ctx.str(f.map.get('name')?.value, 'name');
      if (!name) { ctx.report('E852', item.loc, { name: '?', detail: 'a list entry needs name:' }); continue; }
      entries.push({ name, f, at: item.loc });
    }
  } else ctx.report('E210', node.loc, { what: 'GUARDRAILS', expected: 'named guardrail blocks', found: 'a value' });
  for (const { name, f, at } of entries) {
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
    const extra = ctx.extras(f, ['name', 'kind', 'check', 'action', 'message', 'priority', 'llm_check', 'provider', 'category', 'categories', 'threshold', 'on_error', 'fix_strategy', 'max_length', 'fix_expression', 'max_reasks'], `guardrail ${name}`);
    if (f.map.has('llm_check')) extra.llm_check = ctx.str(get('llm_check'), 'llm_check');
    const kindNode = get('kind');
    if (!kindNode) ctx.report('E852', at, { name, detail: 'kind is missing (input, output, both, tool_input, tool_output, handoff)' });
    const kind = ctx.oneOf(kindNode, KINDS, `Guardrail ${name} kind`) ?? 'input';
    const check = ctx.expr(get('check'), `Guardrail ${name} check`);
    const action = ctx.oneOf(get('action'), ACTIONS, `Guardrail ${name} action`) ?? 'block';
    const provider = compileProvider(ctx, name, f, get, at, { kind, action, hasCheck: f.map.has('check') });
    const actionSettings = compileActionSettings(ctx, name, f, get, at, { kind, action, check, provider: !!provider });
    if (!check && !provider && !f.map.has('llm_check') && !f.map.has('provider')) ctx.report('E852', at, { name, detail: 'check is missing' });
    // An LLM judge: the model judges the text against the llm_check rule (with a check or a provider, the llm_check is kept in extra: W857).
    const llmCheck = f.map.has('llm_check') && !check && !provider ? ctx.str(get('llm_check'), 'llm_check') : null;
    if (f.map.has('llm_check') && (check || provider)) ctx.report('W857', (f.map.get('llm_check') as PairNode).loc, { name, what: 'an llm_check beside a check or provider (one guardrail judges one way; split it in two)' });
    const base = {
      check,
      action,
      message: ctx.text(get('message'), 'message'),
      priority: ctx.num(get('priority'), 'priority') ?? 100,
      ...(provider ? { provider } : {}),
      ...(llmCheck ? { llm_check: llmCheck } : {}),
      ...actionSettings,
      extra,
      loc: ctx.loc(at),
    };
    if (kind === 'both') {
      out.push({ name: `${name}_input`, kind: 'input', ...base }, { name: `${name}_output`, kind: 'output', ...base });
    } else out.push({ name, kind, ...base });
  }
  return out.sort((a, b) => a.priority - b.priority);
}

const FIX_STRATEGIES = ['truncate', 'strip_html', 'redact_pii', 'normalize', 'custom'] as const;

/** The pattern helpers whose matches `filter` removes (and `redact` marks). */
function hasPatternHelper(check: Expr): boolean {
  let found = false;
  walkExpr(check, (x) => {
    if (x.type === 'Call' && /^(NOT_)?MATCHES_PATTERN$|^CONTAINS_PII$/i.test(x.name)) found = true;
  });
  return found;
}

/** The bound of a `length(...) < n` / `<= n` (or `n > length(...)`) comparison in the check, for `truncate`. */
function lengthBound(check: Expr): number | null {
  let bound: number | null = null;
  walkExpr(check, (x) => {
    if (bound !== null || x.type !== 'Binary') return;
    const isLen = (e: Expr): boolean => e.type === 'Call' && e.name.toUpperCase() === 'LENGTH';
    const num = (e: Expr): number | null => (e.type === 'Literal' && typeof e.value === 'number' ? e.value : null);
    const [lenLeft, n] = isLen(x.left) ? [true, num(x.right)] : isLen(x.right) ? [false, num(x.left)] : [true, null];
    if (n === null) return;
    const op = lenLeft ? x.op : ({ '>': '<', '>=': '<=' } as Record<string, string>)[x.op];
    if (op === '<') bound = Math.max(0, Math.ceil(n) - 1);
    else if (op === '<=') bound = Math.max(0, Math.floor(n));
  });
  return bound;
}

/**
 * The settings of the actions that change or hold content: `fix` (`fix_strategy`, `max_length`,
 * `fix_expression`), `reask` (`max_reasks`, input guardrails only) and `filter` (a check with a
 * pattern helper). A setting of another action is E852, as is a fix that cannot be applied.
 */
function compileActionSettings(
  ctx: CompileContext, name: string, f: Fields, get: (k: string) => ValueNode | null, at: Loc,
  g: { kind: string; action: GuardrailIR['action']; check: ExprIR | null; provider: boolean },
): { fix?: GuardrailFixIR; max_reasks?: number } {
  const bad = (node: { loc: Loc } | null, detail: string): void => { ctx.report('E852', node?.loc ?? at, { name, detail }); };
  const own: Record<string, GuardrailIR['action']> = { fix_strategy: 'fix', max_length: 'fix', fix_expression: 'fix', max_reasks: 'reask' };
  for (const [k, a] of Object.entries(own)) {
    const p = f.map.get(k);
    if (p && g.action !== a) bad(p, `${k} belongs to action: ${a}, and this guardrail's action is ${g.action}`);
  }
  if (g.action === 'reask') {
    if (g.kind !== 'input') {
      bad(f.map.get('action') ?? null, `action reask asks the user to rephrase, so it applies to input guardrails only (this one is ${g.kind}); use fix or block`);
      return {};
    }
    const n = get('max_reasks') ? ctx.num(get('max_reasks'), `Guardrail ${name} max_reasks`) : 2;
    if (n === null) return {};
    if (!Number.isInteger(n) || n < 0) { bad(f.map.get('max_reasks') ?? null, `max_reasks must be a whole number of 0 or more, found ${n}`); return {}; }
    return { max_reasks: n };
  }
  if (g.action === 'filter' && !g.provider && g.check?.ast && !hasPatternHelper(g.check.ast)) {
    bad(f.map.get('action') ?? null, 'action filter removes what the check\'s matches_pattern, not_matches_pattern or contains_pii finds, and this check has none; use block, or fix with a fix_strategy');
  }
  if (g.action === 'filter' && g.provider) {
    bad(f.map.get('action') ?? null, 'action filter removes the matches of a pattern check, and a provider finds no matches; use block or redact');
  }
  if (g.action !== 'fix') return {};
  const strategyNode = get('fix_strategy');
  const lenNode = get('max_length');
  const maxLength = lenNode ? ctx.num(lenNode, `Guardrail ${name} max_length`) : (g.check?.ast ? lengthBound(g.check.ast) : null);
  if (lenNode && maxLength !== null && (!Number.isInteger(maxLength) || maxLength < 1)) { bad(lenNode, `max_length must be a whole number above zero, found ${maxLength}`); return {}; }
  let strategy = strategyNode ? ctx.oneOf(strategyNode, FIX_STRATEGIES, `Guardrail ${name} fix_strategy`) : null;
  if (!strategyNode) {
    if (maxLength === null) {
      bad(f.map.get('action') ?? null, `action fix needs fix_strategy (${FIX_STRATEGIES.join(', ')})`);
      return {};
    }
    strategy = 'truncate';
  }
  if (!strategy) return {};
  if (strategy === 'truncate' && maxLength === null) {
    bad(strategyNode, 'fix_strategy truncate needs max_length (or a check of the form length(output) < n)');
    return {};
  }
  const expression = ctx.expr(get('fix_expression'), `Guardrail ${name} fix_expression`);
  if (strategy === 'custom' && !expression) {
    bad(strategyNode, 'fix_strategy custom needs fix_expression, an expression whose value replaces the text (input and output are the text)');
    return {};
  }
  if (strategy !== 'custom' && f.map.has('fix_expression')) bad(f.map.get('fix_expression') ?? null, `fix_expression belongs to fix_strategy custom, and this one is ${strategy}`);
  return { fix: { strategy, max_length: strategy === 'truncate' ? maxLength : null, expression: strategy === 'custom' ? expression : null } };
}

const ON_ERROR: Record<string, GuardrailProviderIR['on_error']> = {
  block: 'block', closed: 'block', fail_closed: 'block', allow: 'allow', open: 'allow', fail_open: 'allow',
};

/**
 * `provider`, `category` (or `categories`), `threshold` and `on_error` of a provider guardrail;
 * null when the guardrail has no provider (its keys are then refused) or the provider is unreadable.
 */
function compileProvider(
  ctx: CompileContext, name: string, f: Fields, get: (k: string) => ValueNode | null, at: Loc,
  g: { kind: string; action: GuardrailIR['action']; hasCheck: boolean },
): GuardrailProviderIR | null {
  const bad = (node: { loc: Loc } | null, detail: string): null => {
    ctx.report('E856', node?.loc ?? at, { name, detail });
    return null;
  };
  const providerNode = get('provider');
  if (!providerNode) {
    for (const k of ['category', 'categories', 'threshold', 'on_error']) {
      const p = f.map.get(k);
      if (p) bad(p, `${p.key} belongs to a provider guardrail, and this one has no provider`);
    }
    return null;
  }
  const raw = ctx.str(providerNode, 'provider');
  if (raw === null) return null;
  const provider = MODERATION_PROVIDER_NAMES[raw.trim().toLowerCase()];
  if (!provider) return bad(providerNode, `unknown provider "${raw}" (known: ${Object.keys(MODERATION_PROVIDER_NAMES).join(', ')})`);
  if (g.hasCheck) return bad(f.map.get('check') ?? null, 'it has both check and provider; a guardrail is either an expression check or a provider check, so split it in two');
  if (g.action === 'redact' && g.kind !== 'input' && g.kind !== 'output' && g.kind !== 'both') {
    return bad(f.map.get('action') ?? null, `action redact with a provider replaces the whole text, which only input and output guardrails can do (this one is ${g.kind}); use block or warn`);
  }
  if (f.map.has('category') && f.map.has('categories')) return bad(f.map.get('categories') ?? null, 'give category or categories, not both');
  const catNode = get('category') ?? get('categories');
  const categories: string[] = [];
  for (const c of ctx.strList(catNode, 'category')) {
    const id = normalizeCategory(c);
    if (!id) return bad(catNode, `unknown moderation category "${c}" (known: ${MODERATION_CATEGORIES.join(', ')})`);
    if (!categories.includes(id)) categories.push(id);
  }
  let threshold: number | null = null;
  const thresholdNode = get('threshold');
  if (thresholdNode) {
    threshold = ctx.num(thresholdNode, `Guardrail ${name} threshold`);
    if (threshold === null) return null;
    if (threshold < 0 || threshold > 1) return bad(thresholdNode, `threshold ${threshold} is outside 0..1 (a score, e.g. 0.7 for 70%)`);
  }
  let onError: GuardrailProviderIR['on_error'] = 'block';
  const onErrorNode = get('on_error');
  if (onErrorNode) {
    const v = ctx.str(onErrorNode, 'on_error');
    const found = v === null ? undefined : ON_ERROR[v.trim().toLowerCase()];
    if (!found) return bad(onErrorNode, `on_error must be block (fail closed) or allow (fail open), found "${v ?? ''}"`);
    onError = found;
  }
  return { name: provider, categories, threshold, on_error: onError };
}

export function compileCompletion(ctx: CompileContext, node: ValueNode | null): CompletionRuleIR[] {
  const out: CompletionRuleIR[] = [];
  if (!node) return out;
  const items = node.kind === 'List' ? node.items : [node];
  for (const item of items) {
    if (item.kind !== 'Map') {
      ctx.report('E210', item.loc, { what: 'COMPLETE', expected: 'a list of "- WHEN: condition" rules', found: item.kind === 'Scalar' ? `"${item.raw}"` : 'a value' });
      continue;
    }
    const f = ctx.fields(item);
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
    ctx.extras(f, ['when', 'respond', 'store', 'terminal'], 'COMPLETE');
    const when = ctx.expr(get('when'), 'COMPLETE WHEN');
    if (!when) { ctx.report('E212', item.loc, { what: 'A COMPLETE rule', key: 'WHEN' }); continue; }
    const storeNode = get('store');
    let store: CompletionRuleIR['store'] = null;
    if (storeNode) {
      if (storeNode.kind === 'Scalar' && storeNode.quoted) store = { kind: 'label', label: String(storeNode.value) };
      else {
        if (storeNode.kind !== 'Scalar') ctx.report('E210', storeNode.loc, { what: 'COMPLETE STORE', expected: '"label" or expression -> path', found: describe(storeNode) });
        const raw = storeNode.kind === 'Scalar' ? storeNode.raw : '';
        const m = /^([\s\S]+?)\s*->\s*([\w.]+)\s*$/.exec(raw);
        if (m) store = { kind: 'fact', value: ctx.exprText(m[1] as string, storeNode.loc, 'STORE'), path: m[2] as string };
        else if (raw) store = { kind: 'label', label: raw };
      }
    }
    out.push({ when, respond: ctx.text(get('respond'), 'RESPOND'), store, loc: ctx.loc(item.loc) });
  }
  return out;
}
