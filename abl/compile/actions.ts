// Shared reducers for actions: SET assignments, CALL, THEN transitions, IF/ELSE branch lists,
// and the lifecycle blocks (ON_START, HOOKS) that run SET → CALL → DELEGATE → RESPOND.

import type { Loc, PairNode, ValueNode } from '../ast';
import type { ActionsIR, BranchIR, CallIR, ConditionIR, ExprIR, LifecycleIR, SetIR, StepGatherIR, TransitionIR } from '../ir';
import { describe, pairValue, type CompileContext, type Fields } from './context';
import { splitTopLevel } from '../lexer';

const ASSIGN = /^([A-Za-z_@$][\w]*(?:\.[\w]+|\[\d+\])*)\s*=(?!=)\s*([\s\S]+)$/;

function assignment(ctx: CompileContext, text: string, at: Loc, out: SetIR[]): void {
  const m = ASSIGN.exec(text.trim());
  if (!m) {
    ctx.report('E308', at, { src: text.trim() });
    return;
  }
  const offset = text.indexOf(m[2] as string);
  const value = ctx.exprText(m[2] as string, { line: at.line, column: at.column + Math.max(0, offset) }, 'A SET value', { naturalLanguage: false });
  out.push({ target: (m[1] as string).replace(/\[(\d+)\]/g, '.$1'), value, loc: ctx.loc(at) });
}

/** SET: `var = expr` lines, a `- var = expr` list, `var: expr` pairs, an inline `{var: expr}` or one inline assignment. */
export function compileSet(ctx: CompileContext, node: ValueNode | null): SetIR[] {
  const out: SetIR[] = [];
  if (!node) return out;
  const visit = (n: ValueNode): void => {
    switch (n.kind) {
      case 'Scalar':
        if (n.value !== null) assignment(ctx, n.quoted ? String(n.value) : n.raw, n.loc, out);
        break;
      case 'Text':
        n.value.split('\n').filter((l) => l.trim()).forEach((l, i) => assignment(ctx, l, { line: n.loc.line + i + 1, column: n.loc.column }, out));
        break;
      case 'Item':
        assignment(ctx, n.head.raw, n.loc, out);
        break;
      case 'List':
        n.items.forEach(visit);
        break;
      case 'Map':
        for (const e of n.entries) {
          if (e.kind === 'Item') assignment(ctx, e.head.raw, e.loc, out);
          else {
            const v = ctx.value(e);
            const value = ctx.valueExpr(v, `SET ${e.key}`) ?? { src: '', ast: null };
            out.push({ target: e.key, value, loc: ctx.loc(e.loc) });
          }
        }
        break;
    }
  };
  visit(node);
  return out;
}

/** CALL: `t` (+ WITH/AS in `extra` fields), `t(a, "x")` or `t(p = expr)`. */
export function compileCall(ctx: CompileContext, pair: PairNode, sibling?: Fields): CallIR | null {
  const headNode = pair.value;
  const text = headNode && headNode.kind === 'Scalar' ? String(headNode.value ?? '') : '';
  const at = headNode?.loc ?? pair.loc;
  const m = /^([A-Za-z_][\w]*)\s*(?:\(([\s\S]*)\))?\s*$/.exec(text.trim());
  if (!m) {
    ctx.report('E507', at, { src: text, detail: 'expected a tool name' });
    return null;
  }
  const call: CallIR = { tool: m[1] as string, with: {}, positional: [], as: null, loc: ctx.loc(pair.loc) };
  if (m[2] !== undefined) {
    const argsStart = text.indexOf('(') + 1;
    let offset = argsStart;
    for (const arg of splitTopLevel(m[2])) {
      const lead = arg.length - arg.trimStart().length;
      const argAt = { line: at.line, column: at.column + offset + lead };
      const named = /^\s*([A-Za-z_]\w*)\s*=(?!=)\s*([\s\S]+)$/.exec(arg);
      if (named) {
        const valueOffset = arg.indexOf(named[2] as string);
        call.with[named[1] as string] = ctx.exprText((named[2] as string).trim(), { line: at.line, column: at.column + offset + valueOffset }, `Argument ${named[1]}`, { naturalLanguage: false });
      } else call.positional.push(ctx.exprText(arg.trim(), argAt, 'A CALL argument', { naturalLanguage: false }));
      offset += arg.length + 1;
    }
  }
  const own = ctx.fields(pair.children && pair.children.kind === 'Map' ? pair.children : null);
  for (const f of [own, sibling]) {
    if (!f) continue;
    const w = f.map.get('with');
    if (w) {
      const block = pairValue(w);
      if (block?.kind === 'Map') {
        for (const e of block.entries) {
          if (e.kind === 'Pair') call.with[e.key] = ctx.valueExpr(ctx.value(e), `WITH ${e.key}`) ?? { src: '', ast: null };
          else ctx.report('E210', e.loc, { what: 'WITH', expected: 'param: expression lines', found: `"${e.head.raw}"` });
        }
      } else if (block) ctx.report('E210', block.loc, { what: 'WITH', expected: 'param: expression lines', found: 'a value' });
    }
    const as = f.map.get('as');
    if (as) call.as = ctx.str(pairValue(as), 'AS');
  }
  return call;
}

/** THEN: a step name, COMPLETE or ESCALATE. */
export function compileTransition(ctx: CompileContext, node: ValueNode | null): TransitionIR | null {
  const s = ctx.str(node, 'THEN');
  if (s === null) return null;
  const t = s.trim();
  if (/^complete$/i.test(t)) return { kind: 'complete' };
  const esc = /^escalate\b(?:\s+with\s+reason\s*:\s*(.+))?$/i.exec(t);
  if (esc) return { kind: 'escalate', reason: esc[1] ? esc[1].replace(/^["']|["']$/g, '') : null };
  return { kind: 'goto', step: t };
}

export const ACTION_KEYS = ['set', 'clear', 'respond', 'call', 'with', 'as', 'gather', 'then', 'goto'] as const;

/** A branch body: SET, CLEAR, RESPOND, CALL, GATHER, THEN (GOTO is a THEN alias in branches). */
export function compileActions(
  ctx: CompileContext,
  f: Fields,
  gather: (node: ValueNode, f: Fields) => StepGatherIR | null,
): ActionsIR {
  const get = (k: string): ValueNode | null => {
    const p = f.map.get(k);
    return p ? ctx.value(p) : null;
  };
  const call = f.map.get('call');
  const g = get('gather');
  return {
    set: compileSet(ctx, get('set')),
    clear: ctx.strList(get('clear'), 'CLEAR'),
    respond: ctx.text(get('respond'), 'RESPOND'),
    call: call ? compileCall(ctx, call, f) : null,
    gather: g ? gather(g, f) : null,
    then: compileTransition(ctx, get('then') ?? get('goto')),
  };
}

const emptyActions = (): ActionsIR => ({ set: [], clear: [], respond: null, call: null, gather: null, then: null });

export const INPUT_KEYWORDS: Record<string, string[]> = {
  yes: ['yes', 'yeah', 'yep', 'sure', 'ok', 'okay', 'confirm', 'y'],
  no: ['no', 'nope', 'nah', 'wrong', 'n'],
  back: ['back', 'go back', 'previous'],
  cancel: ['cancel', 'nevermind', 'never mind', 'stop'],
  help: ['help'],
  change: ['change', 'edit', 'modify'],
};

/**
 * ON_RESULT / ON_SUCCESS / ON_FAIL / ON_INPUT: a scalar (`step`, COMPLETE, ESCALATE), a block of
 * actions, or a list of `- IF: cond` … `- ELSE:` branches.
 */
export function compileBranches(
  ctx: CompileContext,
  node: ValueNode | null,
  what: string,
  gather: (node: ValueNode, f: Fields) => StepGatherIR | null,
  opts: { input?: boolean } = {},
): BranchIR[] {
  if (!node) return [];
  const loc = ctx.loc(node.loc);
  if (node.kind === 'Scalar' || node.kind === 'Text') {
    const then = compileTransition(ctx, node);
    return then ? [{ condition: { kind: 'else' }, actions: { ...emptyActions(), then }, loc }] : [];
  }
  if (node.kind === 'Map') {
    const f = ctx.fields(node);
    ctx.ignoredKeys(f, [...ACTION_KEYS, 'strategy', 'corrections', 'complete_when'], what);
    return [{ condition: { kind: 'else' }, actions: compileActions(ctx, f, gather), loc }];
  }
  if (node.kind === 'Item') {
    ctx.report('E210', node.loc, { what, expected: 'a step name, a block or a list of - IF: branches', found: `"${node.head.raw}" with nested lines` });
    return [];
  }
  const out: BranchIR[] = [];
  for (const item of node.items) {
    if (item.kind !== 'Map') {
      ctx.report('E210', item.loc, { what, expected: '- IF: condition / - ELSE: branches', found: item.kind === 'Scalar' ? `"${item.raw}"` : 'a value' });
      continue;
    }
    const f = ctx.fields(item);
    const ifPair = f.map.get('if');
    const elsePair = f.map.get('else');
    // `- ELSE:` with its actions nested under it
    const nested = (ifPair ?? elsePair)?.children;
    const actionFields = nested && nested.kind === 'Map' ? mergeFields(f, ctx.fields(nested)) : f;
    let condition: ConditionIR;
    if (ifPair && ifPair.value) condition = compileCondition(ctx, ifPair.value, what, opts.input === true);
    else if (elsePair || !ifPair) condition = { kind: 'else' };
    else {
      ctx.report('E212', ifPair.loc, { what: `${what} branch`, key: 'IF condition' });
      continue;
    }
    ctx.ignoredKeys(actionFields, [...ACTION_KEYS, 'if', 'else', 'strategy', 'corrections', 'complete_when'], `${what} branch`);
    out.push({ condition, actions: compileActions(ctx, actionFields, gather), loc: ctx.loc(item.loc) });
  }
  return out;
}

/**
 * ON_ACTION: button handlers, as branches matching a structured action by id. A map of
 * `action_id: step` or `action_id:` + a block of actions, or a list of `- ACTION: id` (or `- id: id`)
 * items with their actions.
 */
export function compileActionHandlers(
  ctx: CompileContext,
  node: ValueNode | null,
  gather: (node: ValueNode, f: Fields) => StepGatherIR | null,
): BranchIR[] {
  if (!node) return [];
  const out: BranchIR[] = [];
  const seen = new Set<string>();
  const add = (id: string, actions: ActionsIR, loc: Loc): void => {
    if (seen.has(id)) ctx.report('E108', loc, { key: id });
    else out.push({ condition: { kind: 'action', id }, actions, loc: ctx.loc(loc) });
    seen.add(id);
  };
  if (node.kind === 'Map') {
    for (const e of ctx.pairs(node, 'ON_ACTION', 'action_id: step, or action_id: + a block of actions')) {
      const v = ctx.value(e);
      if (v?.kind === 'Map') {
        const f = ctx.fields(v);
        ctx.ignoredKeys(f, [...ACTION_KEYS], `ON_ACTION ${e.key}`);
        add(e.key, compileActions(ctx, f, gather), e.loc);
      } else {
        add(e.key, { ...emptyActions(), then: compileTransition(ctx, v) }, e.loc);
      }
    }
    return out;
  }
  if (node.kind !== 'List') {
    ctx.report('E210', node.loc, { what: 'ON_ACTION', expected: 'action_id: step lines or - ACTION: id items', found: describe(node) });
    return out;
  }
  for (const item of node.items) {
    const f = item.kind === 'Map' ? ctx.fields(item) : null;
    const idPair = f?.map.get('action') ?? f?.map.get('id');
    const id = idPair ? ctx.str(pairValue(idPair), 'ON_ACTION action') : null;
    if (!f || !id) {
      ctx.report('E210', item.loc, { what: 'ON_ACTION item', expected: '- ACTION: id with THEN or other actions', found: describe(item) });
      continue;
    }
    ctx.ignoredKeys(f, [...ACTION_KEYS, 'action', 'id'], `ON_ACTION ${id}`);
    add(id, compileActions(ctx, f, gather), item.loc);
  }
  return out;
}

function mergeFields(a: Fields, b: Fields): Fields {
  const map = new Map(a.map);
  for (const [k, v] of b.map) if (!map.has(k)) map.set(k, v);
  return { map, items: [...a.items, ...b.items], order: [...a.order, ...b.order] };
}

function compileCondition(ctx: CompileContext, node: ValueNode, what: string, input: boolean): ConditionIR {
  if (input && node.kind === 'Scalar' && typeof node.value === 'string') {
    const kw = node.value.trim().toLowerCase();
    const words = INPUT_KEYWORDS[kw];
    if (words && !node.quoted) return { kind: 'keyword', keyword: kw, words };
  }
  const e: ExprIR | null = ctx.expr(node, `${what} IF`);
  return e ? { kind: 'expr', expr: e } : { kind: 'else' };
}

/** ON_START and HOOKS blocks. */
export function compileLifecycle(ctx: CompileContext, node: ValueNode | null, what: string): LifecycleIR | null {
  if (!node) return null;
  if (node.kind !== 'Map') {
    const respond = ctx.text(node, `${what} RESPOND`);
    return { set: [], call: null, delegate: [], respond, loc: ctx.loc(node.loc) };
  }
  const f = ctx.fields(node);
  const get = (k: string): ValueNode | null => {
    const p = f.map.get(k);
    return p ? ctx.value(p) : null;
  };
  const call = f.map.get('call');
  ctx.extras(f, ['set', 'call', 'with', 'as', 'delegate', 'respond'], what);
  return {
    set: compileSet(ctx, get('set')),
    call: call ? compileCall(ctx, call, f) : null,
    delegate: ctx.strList(get('delegate'), `${what} DELEGATE`),
    respond: ctx.text(get('respond'), `${what} RESPOND`),
    loc: ctx.loc(node.loc),
  };
}
