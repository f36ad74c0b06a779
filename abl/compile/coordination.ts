// HANDOFF, DELEGATE and ESCALATE reducers (ABL.md §9). WHENs here may be natural language.

import type { PairNode, ValueNode } from '../ast';
import { HUMAN_TASK_FIELD_TYPES, HUMAN_TASK_RESERVED_FIELDS, HUMAN_TASK_TYPES, type DelegateIR, type EscalationIR, type EscalationRoutingIR, type HandoffIR, type HandoffReturnIR, type HumanCompleteActionIR, type HumanTaskFieldIR, type Json, type TypeIR } from '../ir';
import { splitKey } from '../parser';
import { describe, pairValue, textOf, type CompileContext, type Fields } from './context';
import { compileType } from './types';

function listItems(ctx: CompileContext, node: ValueNode | null, what: string): Array<{ f: Fields; node: ValueNode }> {
  if (!node) return [];
  const items = node.kind === 'List' ? node.items : [node];
  const out: Array<{ f: Fields; node: ValueNode }> = [];
  for (const item of items) {
    if (item.kind !== 'Map') {
      ctx.report('E210', item.loc, { what, expected: 'a list of "- KEY: value" entries', found: item.kind === 'Scalar' ? `"${item.raw}"` : 'a value' });
      continue;
    }
    out.push({ f: ctx.fields(item), node: item });
  }
  return out;
}

function nameMap(ctx: CompileContext, node: ValueNode | null, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!node) return out;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what, expected: 'child: parent lines', found: 'a value' });
    return out;
  }
  for (const e of ctx.pairs(node, what, 'child: parent lines')) out[e.key] = ctx.str(ctx.value(e), `${what} ${e.key}`) ?? e.key;
  return out;
}

/** The keys of a remote (A2A) HANDOFF or DELEGATE, which the language keeps for a later phase. */
const REMOTE_KEYS = ['remote', 'async', 'async_timeout', 'location', 'endpoint', 'protocol'] as const;

/** W709 for each remote (A2A) key of a HANDOFF or DELEGATE entry: the project's own agent runs. */
function remoteKeys(ctx: CompileContext, f: Fields, what: string, name: string): void {
  for (const k of REMOTE_KEYS) {
    const p = f.map.get(k);
    if (p) ctx.report('W709', p.loc, { what, name, key: p.key });
  }
}

/** `hasFlow`: ON_RETURN may name a step (without a FLOW, one word is an instruction too). */
export function compileHandoffs(ctx: CompileContext, node: ValueNode | null, hasFlow = false): HandoffIR[] {
  const out: HandoffIR[] = [];
  for (const { f, node: item } of listItems(ctx, node, 'HANDOFF')) {
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
    ctx.extras(f, ['to', 'when', 'priority', 'context', 'pass', 'return', 'on_return', 'map', 'on_failure', 'grant_memory', ...REMOTE_KEYS], 'HANDOFF');
    const to = ctx.str(get('to'), 'TO');
    if (!to) { ctx.report('E212', item.loc, { what: 'A HANDOFF rule', key: 'TO' }); continue; }
    remoteKeys(ctx, f, 'HANDOFF to', to);
    const when = ctx.expr(get('when'), 'HANDOFF WHEN', { naturalLanguage: true });
    if (!when) ctx.report('E212', item.loc, { what: `HANDOFF to ${to}`, key: 'WHEN' });
    const onFailure = ctx.str(get('on_failure'), 'ON_FAILURE');
    // Kept in the IR; nothing reads it (docs/not-supported.md).
    if (onFailure !== null) ctx.report('W708', (f.map.get('on_failure') as PairNode).loc, { to, value: onFailure });
    const contextNode = get('context');
    if (contextNode && contextNode.kind !== 'Map') ctx.report('E210', contextNode.loc, { what: 'HANDOFF CONTEXT', expected: 'pass:/history:/summary: lines', found: describe(contextNode) });
    const cf = ctx.fields(contextNode?.kind === 'Map' ? contextNode : null);
    ctx.extras(cf, ['pass', 'history', 'summary', 'last_n', 'grant_memory'], 'HANDOFF CONTEXT');
    const cget = (k: string): ValueNode | null => { const p = cf.map.get(k); return p ? ctx.value(p) : null; };
    const hist = ctx.str(cget('history'), 'history');
    let history: HandoffIR['context']['history'] = 'summary_only';
    if (hist !== null) {
      const lastN = /^last_n\s*:?\s*(\d+)$/i.exec(hist.trim());
      if (lastN) history = { last_n: Number(lastN[1]) };
      else history = ctx.oneOf(cget('history'), ['none', 'summary_only', 'full'] as const, 'history') ?? 'summary_only';
    }
    const lastNNode = cget('last_n');
    if (lastNNode) history = { last_n: ctx.num(lastNNode, 'last_n') ?? 10 };
    const summary = cget('summary');
    const onReturn = compileOnReturn(ctx, get('on_return'), to, hasFlow);
    // CONTEXT `grant_memory:` (or the rule-level `GRANT_MEMORY:`): persistent paths the target may use.
    const grants = [...new Set([...ctx.strList(cget('grant_memory'), 'grant_memory'), ...ctx.strList(get('grant_memory'), 'GRANT_MEMORY')])];
    out.push({
      to,
      when: when ?? { src: '', ast: null },
      priority: ctx.num(get('priority'), 'PRIORITY') ?? 100,
      context: { pass: passList(ctx, cget('pass'), get('pass')), summary: summary ? ctx.text(summary, 'summary') : null, history, ...(grants.length > 0 ? { grant_memory: grants } : {}) },
      return: ctx.bool(get('return'), 'RETURN') ?? false,
      on_return: onReturn.kind === 'resume_intent' ? 'resume_intent' : 'continue',
      on_return_action: onReturn,
      map: f.map.has('map') ? nameMap(ctx, get('map'), 'MAP') : null,
      on_failure: onFailure,
      loc: ctx.loc(item.loc),
    });
  }
  return out;
}

/** CONTEXT `pass:` and the rule-level `PASS:` (the quickstart supervisor's form), merged in that order without repeats. */
function passList(ctx: CompileContext, contextPass: ValueNode | null, rulePass: ValueNode | null): string[] {
  return [...new Set([...ctx.strList(contextPass, 'pass'), ...ctx.strList(rulePass, 'PASS')])];
}

/**
 * ON_RETURN: `continue`, `resume_intent`, a step name (one identifier: the FLOW resumes there; an
 * unknown step is E501) or an instruction (any other text, for the returning agent's next LLM call).
 */
function compileOnReturn(ctx: CompileContext, node: ValueNode | null, to: string, hasFlow: boolean): HandoffReturnIR {
  const text = ctx.str(node, 'ON_RETURN');
  if (text === null || !node) return { kind: 'continue' };
  const t = text.trim();
  if (/^continue$/i.test(t)) return { kind: 'continue' };
  if (/^resume_intent$/i.test(t)) return { kind: 'resume_intent' };
  if (t === '') {
    ctx.report('E211', node.loc, { what: 'ON_RETURN', allowed: 'continue, resume_intent, a step name or an instruction', value: t });
    return { kind: 'continue' };
  }
  const action: HandoffReturnIR = hasFlow && /^[A-Za-z_]\w*$/.test(t) ? { kind: 'step', step: t } : { kind: 'instruction', text: t };
  if (action.kind === 'instruction') ctx.checkTemplate(t, node.loc);
  return action;
}

/**
 * RETURNS lines: `child_var: parent_var`, or `child_var: Type` (a type such as `Reward[]`,
 * `{id: string}`, `number` or a capitalised name), which copies the child variable to the same name
 * and records its type.
 */
function compileReturns(ctx: CompileContext, node: ValueNode | null): { returns: Record<string, string>; types: Record<string, TypeIR> } {
  const returns: Record<string, string> = {};
  const types: Record<string, TypeIR> = {};
  if (!node) return { returns, types };
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'RETURNS', expected: 'child: parent (or child: Type) lines', found: 'a value' });
    return { returns, types };
  }
  for (const e of node.entries) {
    if (e.kind !== 'Pair') {
      ctx.report('E210', e.loc, { what: 'RETURNS', expected: 'child: parent (or child: Type) lines', found: `"${e.head.raw}"` });
      continue;
    }
    const v = ctx.value(e);
    if (v && v.kind !== 'Scalar' && !(v.kind === 'Map' && v.inline)) {
      ctx.report('E210', v.loc, { what: `RETURNS ${e.key}`, expected: 'a parent variable or a type', found: 'a block' });
      continue;
    }
    const raw = !v ? '' : v.kind === 'Scalar' ? (v.value === null ? '' : String(v.value)) : `{${textOf(v)}}`;
    if (raw === '') {
      returns[e.key] = e.key;
      continue;
    }
    if (looksLikeType(raw)) {
      returns[e.key] = e.key;
      types[e.key] = compileType(ctx, raw, v?.loc ?? e.loc);
    } else returns[e.key] = raw;
  }
  return { returns, types };
}

const PRIMITIVE_TYPE = /^(string|number|boolean|date|datetime|object|any|email|phone|integer|int|float|bool|array)$/i;

/** A primitive, a capitalised name, `T[]`, `{…}` or `nullable<T>`; a lower-case name is a parent variable. */
function looksLikeType(raw: string): boolean {
  const t = raw.trim();
  return PRIMITIVE_TYPE.test(t) || /^[A-Z]\w*$/.test(t) || /\[\]$/.test(t) || t.startsWith('{') || /^nullable\s*</i.test(t);
}

/** `routing:` of ESCALATE or one of its triggers: queue, skills (or skill_tags), priority_boost. */
function compileRouting(ctx: CompileContext, node: ValueNode | null, where: string): EscalationRoutingIR | undefined {
  if (!node) return undefined;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: `${where} routing`, expected: 'queue:/skills:/priority_boost: lines', found: 'a value' });
    return undefined;
  }
  const f = ctx.fields(node);
  const get = ctx.getter(f);
  const extra: Record<string, Json> = ctx.extras(f, ['queue', 'skills', 'skill_tags', 'tags', 'priority_boost'], `${where} routing`);
  const skills = ctx.strList(get('skills') ?? get('skill_tags') ?? get('tags'), 'routing skills');
  // Kept on the task for the person to read; nothing assigns by them (docs/not-supported.md).
  if (skills.length > 0) {
    const at = f.map.get('skills') ?? f.map.get('skill_tags') ?? f.map.get('tags');
    ctx.report('W859', at?.loc ?? node.loc, { where, skills: skills.join(', ') });
  }
  return {
    queue: ctx.str(get('queue'), 'routing queue'),
    skills,
    priority_boost: ctx.num(get('priority_boost'), 'routing priority_boost') ?? 0,
    extra,
  };
}

export function compileDelegates(ctx: CompileContext, node: ValueNode | null): DelegateIR[] {
  const out: DelegateIR[] = [];
  for (const { f, node: item } of listItems(ctx, node, 'DELEGATE')) {
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
    ctx.extras(f, ['agent', 'to', 'when', 'purpose', 'input', 'returns', 'use_result', 'timeout', 'on_failure', 'failure_message', ...REMOTE_KEYS], 'DELEGATE');
    const agent = ctx.str(get('agent') ?? get('to'), 'AGENT');
    if (!agent) { ctx.report('E212', item.loc, { what: 'A DELEGATE entry', key: 'AGENT' }); continue; }
    remoteKeys(ctx, f, 'DELEGATE', agent);
    const input: DelegateIR['input'] = {};
    const inNode = get('input');
    if (inNode?.kind === 'Map') {
      for (const e of ctx.pairs(inNode, 'INPUT', 'child_input: parent expression lines')) input[e.key] = ctx.valueExpr(ctx.value(e), `INPUT ${e.key}`) ?? { src: '', ast: null };
    } else if (inNode) ctx.report('E210', inNode.loc, { what: 'INPUT', expected: 'child_input: parent expression lines', found: 'a value' });
    const returns = compileReturns(ctx, get('returns'));
    const failNode = get('on_failure');
    let onFailure: DelegateIR['on_failure'] = { type: 'respond', count: 0 };
    if (failNode?.kind === 'Map') {
      const ff = ctx.fields(failNode);
      onFailure = {
        type: ctx.oneOf(ff.map.get('type')?.value, ['respond', 'continue', 'escalate', 'retry'] as const, 'ON_FAILURE type') ?? 'respond',
        count: ctx.num(ff.map.get('count')?.value, 'ON_FAILURE count') ?? 1,
      };
    } else if (failNode) {
      const t = ctx.oneOf(failNode, ['respond', 'continue', 'escalate', 'retry'] as const, 'ON_FAILURE');
      onFailure = { type: t ?? 'respond', count: t === 'retry' ? 1 : 0 };
    }
    // A failed delegation is not tried again (docs/not-supported.md).
    if (onFailure.type === 'retry' && failNode) ctx.report('W707', failNode.loc, { agent });
    out.push({
      agent,
      when: ctx.expr(get('when'), 'DELEGATE WHEN', { naturalLanguage: true }),
      purpose: ctx.str(get('purpose'), 'PURPOSE'),
      input,
      returns: returns.returns,
      ...(Object.keys(returns.types).length > 0 ? { return_types: returns.types } : {}),
      use_result: ctx.str(get('use_result'), 'USE_RESULT'),
      timeout_ms: ctx.duration(get('timeout'), 'TIMEOUT', 's'),
      on_failure: onFailure,
      failure_message: ctx.text(get('failure_message'), 'FAILURE_MESSAGE'),
      loc: ctx.loc(item.loc),
    });
  }
  return out;
}

type HumanRule = { action: HumanCompleteActionIR; respond?: string };

/** An inline action: CONTINUE, COMPLETE, HANDOFF to X, or RESPOND "…" (a message, then CONTINUE). */
function humanRule(ctx: CompileContext, text: string, at: ValueNode['loc']): HumanRule | null {
  const r = /^respond\s+(["'])([\s\S]*)\1\s*$/i.exec(text.trim());
  if (r) return { action: { kind: 'continue' }, respond: r[2] as string };
  const action = humanAction(ctx, text, at);
  return action ? { action } : null;
}

/**
 * A rule's block (`- IF cond:` with deeper lines, or `- IF: cond` beside them): `RESPOND`, then
 * `THEN: CONTINUE|COMPLETE|HANDOFF to X`, or `COMPLETE: true`, `CONTINUE: …` or `HANDOFF: X`
 * (no action: CONTINUE).
 */
function humanBlock(ctx: CompileContext, hf: Fields, at: ValueNode['loc']): HumanRule | null {
  ctx.extras(hf, ['if', 'respond', 'then', 'complete', 'continue', 'handoff'], 'on_human_complete rule');
  const get = (k: string): ValueNode | null => { const p = hf.map.get(k); return p ? pairValue(p) : null; };
  const respond = ctx.text(get('respond'), 'RESPOND');
  const actions: HumanCompleteActionIR[] = [];
  const thenNode = hf.map.get('then');
  if (thenNode) {
    const a = humanAction(ctx, ctx.str(pairValue(thenNode), 'THEN') ?? '', thenNode.loc);
    if (!a) return null;
    actions.push(a);
  }
  if (hf.map.has('complete') && ctx.bool(get('complete'), 'COMPLETE') !== false) actions.push({ kind: 'complete' });
  if (hf.map.has('continue')) actions.push({ kind: 'continue' });
  const handoff = hf.map.get('handoff');
  if (handoff) {
    const agent = (ctx.str(pairValue(handoff), 'HANDOFF') ?? '').replace(/^to\s+/i, '').trim();
    if (!/^[A-Za-z]\w*$/.test(agent)) { ctx.report('E853', handoff.loc, { src: `HANDOFF: ${agent}` }); return null; }
    actions.push({ kind: 'handoff', agent });
  }
  if (actions.length > 1) { ctx.report('E853', at, { src: `${actions.map((a) => a.kind.toUpperCase()).join(' and ')} in one rule` }); return null; }
  if (actions.length === 0 && respond === null) { ctx.report('E853', at, { src: 'a rule with no RESPOND, THEN or action' }); return null; }
  return { action: actions[0] ?? { kind: 'continue' }, ...(respond !== null ? { respond } : {}) };
}

function humanAction(ctx: CompileContext, text: string, at: ValueNode['loc']): HumanCompleteActionIR | null {
  const t = text.trim();
  if (/^continue$/i.test(t)) return { kind: 'continue' };
  if (/^complete$/i.test(t)) return { kind: 'complete' };
  const h = /^handoff\s+(?:to\s+)?([A-Za-z]\w*)$/i.exec(t);
  if (h) return { kind: 'handoff', agent: h[1] as string };
  ctx.report('E853', at, { src: t });
  return null;
}

/**
 * A trigger's `FIELDS:` (the form of its human task): `- name: amount` entries with `type`
 * (text, textarea, number, boolean, select, date; default text), `label`, `required`, `options`.
 */
function compileTaskFields(ctx: CompileContext, node: ValueNode | null): HumanTaskFieldIR[] {
  const out: HumanTaskFieldIR[] = [];
  for (const { f, node: item } of listItems(ctx, node, 'FIELDS')) {
    const get = ctx.getter(f);
    ctx.extras(f, ['name', 'type', 'label', 'required', 'options'], 'FIELDS entry');
    const name = ctx.str(get('name'), 'FIELDS name');
    if (!name) { ctx.report('E212', item.loc, { what: 'A FIELDS entry', key: 'name' }); continue; }
    if (out.some((x) => x.name === name)) { ctx.report('E210', item.loc, { what: `FIELDS ${name}`, expected: 'a name used once', found: 'a repeated name' }); continue; }
    // The `human` object's outcome flags come from the decision and the outcome only, never a field.
    if ((HUMAN_TASK_RESERVED_FIELDS as readonly string[]).includes(name)) {
      ctx.report('E210', item.loc, { what: `FIELDS ${name}`, expected: `a name other than ${HUMAN_TASK_RESERVED_FIELDS.join(', ')}`, found: `"${name}", which the outcome sets` });
      continue;
    }
    const type = ctx.oneOf(get('type'), HUMAN_TASK_FIELD_TYPES, `FIELDS ${name} type`) ?? 'text';
    const options = ctx.strList(get('options'), `FIELDS ${name} options`);
    if (type === 'select' && options.length === 0) { ctx.report('E212', item.loc, { what: `The select field ${name}`, key: 'options' }); continue; }
    out.push({ name, type, label: ctx.text(get('label'), 'label'), required: ctx.bool(get('required'), `FIELDS ${name} required`) ?? false, options });
  }
  return out;
}

/**
 * A trigger's SLA at DUE: `ON_DUE: expire` (the default: the task expires) or `ON_DUE:
 * raise_priority` (the task's priority goes up one level and it waits on), with
 * `THEN_EXPIRE_AFTER: <duration>` for the expiry that follows the raise (none: it waits until
 * resolved or cancelled). ON_DUE needs a DUE; THEN_EXPIRE_AFTER needs `raise_priority`.
 */
function compileOnDue(ctx: CompileContext, onDueNode: ValueNode | null, afterNode: ValueNode | null, dueNode: ValueNode | null, item: ValueNode): { action: 'raise_priority'; then_expire_after_ms: number | null } | null {
  const action = onDueNode ? ctx.oneOf(onDueNode, ['expire', 'raise_priority'] as const, 'ON_DUE') : null;
  if (onDueNode && !dueNode) ctx.report('E212', item.loc, { what: 'An ESCALATE trigger with ON_DUE', key: 'DUE' });
  const afterMs = afterNode ? ctx.duration(afterNode, 'THEN_EXPIRE_AFTER', 's') : null;
  if (afterNode && afterMs !== null && afterMs <= 0) ctx.report('E214', afterNode.loc, { what: 'THEN_EXPIRE_AFTER', expected: 'a duration above zero', value: String(afterMs) });
  if (afterNode && action !== 'raise_priority') {
    ctx.report('E210', afterNode.loc, { what: 'THEN_EXPIRE_AFTER', expected: 'ON_DUE: raise_priority on the same trigger', found: action ? `ON_DUE: ${action}` : 'no ON_DUE' });
  }
  if (action !== 'raise_priority' || !dueNode) return null;
  return { action, then_expire_after_ms: afterMs !== null && afterMs > 0 ? afterMs : null };
}

export function compileEscalation(ctx: CompileContext, node: ValueNode | null): EscalationIR | null {
  if (!node) return null;
  const esc: EscalationIR = { triggers: [], context_for_human: [], on_human_complete: [], loc: ctx.loc(node.loc) };
  let triggersNode: ValueNode | null = null;
  let f: Fields | null = null;
  if (node.kind === 'List') triggersNode = node;
  else if (node.kind === 'Map') {
    f = ctx.fields(node);
    ctx.extras(f, ['triggers', 'context_for_human', 'on_human_complete', 'routing'], 'ESCALATE');
    const r = f.map.get('routing');
    const routing = r ? compileRouting(ctx, ctx.value(r), 'ESCALATE') : undefined;
    if (routing) esc.routing = routing;
    const t = f.map.get('triggers');
    triggersNode = t ? pairValue(t) : null;
    const c = f.map.get('context_for_human');
    esc.context_for_human = c ? ctx.strList(pairValue(c), 'context_for_human') : [];
  } else ctx.report('E210', node.loc, { what: 'ESCALATE', expected: 'triggers:/context_for_human:/on_human_complete:', found: 'a value' });
  for (const { f: tf, node: item } of listItems(ctx, triggersNode, 'ESCALATE trigger')) {
    const get = (k: string): ValueNode | null => { const p = tf.map.get(k); return p ? ctx.value(p) : null; };
    ctx.extras(tf, ['when', 'reason', 'priority', 'tags', 'type', 'due', 'on_due', 'then_expire_after', 'fields', 'routing'], 'ESCALATE trigger');
    const routing = compileRouting(ctx, get('routing'), 'ESCALATE trigger');
    const when = ctx.expr(get('when'), 'ESCALATE WHEN', { naturalLanguage: true });
    if (!when) { ctx.report('E212', item.loc, { what: 'An ESCALATE trigger', key: 'WHEN' }); continue; }
    const tags = ctx.strList(get('tags'), 'TAGS');
    const fields = compileTaskFields(ctx, get('fields'));
    const dueMs = ctx.duration(get('due'), 'DUE', 's');
    const dueNode = get('due');
    if (dueMs !== null && dueMs <= 0 && dueNode) ctx.report('E214', dueNode.loc, { what: 'DUE', expected: 'a duration above zero', value: String(dueMs) });
    const onDue = compileOnDue(ctx, get('on_due'), get('then_expire_after'), dueNode, item);
    esc.triggers.push({
      when,
      reason: ctx.text(get('reason'), 'REASON'),
      priority: ctx.oneOf(get('priority'), ['low', 'medium', 'high', 'critical'] as const, 'PRIORITY') ?? 'medium',
      tags,
      type: ctx.oneOf(get('type'), HUMAN_TASK_TYPES, 'TYPE') ?? (tags.some((t) => t.toLowerCase().includes('approval')) ? 'approval' : 'escalation'),
      due_ms: dueMs !== null && dueMs > 0 ? dueMs : null,
      ...(onDue ? { on_due: onDue } : {}),
      ...(fields.length > 0 ? { fields } : {}),
      ...(routing ? { routing } : {}),
      loc: ctx.loc(item.loc),
    });
  }
  const ohc = f?.map.get('on_human_complete');
  const ohcNode = ohc ? pairValue(ohc) : null;
  if (ohcNode) {
    const items = ohcNode.kind === 'List' ? ohcNode.items : [ohcNode];
    for (const item of items) {
      // `- IF cond: ACTION` (a pair whose key starts with IF), `- IF: cond` + `THEN: ACTION`, or `- ACTION`
      if (item.kind === 'Map' && item.entries[0]?.kind === 'Pair') {
        const first = item.entries[0];
        const m = /^IF\s+([\s\S]+)$/i.exec(first.key);
        if (m) {
          const cond = ctx.exprText(m[1] as string, { line: first.loc.line, column: first.loc.column + 3 }, 'on_human_complete IF');
          // `- IF cond: ACTION`, or `- IF cond:` with the rule's block under it.
          const rule = first.children?.kind === 'Map' && !first.value
            ? humanBlock(ctx, ctx.fields(first.children), first.loc)
            : humanRule(ctx, ctx.str(first.value, 'action') ?? '', first.loc);
          if (rule) esc.on_human_complete.push({ condition: cond, ...rule, loc: ctx.loc(item.loc) });
          continue;
        }
        const hf = ctx.fields(item);
        const ifNode = hf.map.get('if');
        if (hf.map.has('then') || hf.map.has('respond') || hf.map.has('complete') || hf.map.has('continue') || hf.map.has('handoff')) {
          const rule = humanBlock(ctx, hf, item.loc);
          if (rule) esc.on_human_complete.push({ condition: ifNode ? ctx.expr(pairValue(ifNode), 'IF') : null, ...rule, loc: ctx.loc(item.loc) });
          continue;
        }
      }
      if (item.kind === 'Scalar') {
        const text = String(item.value ?? '');
        const pair = splitKey(text);
        const rule = humanRule(ctx, pair ? pair.rest : text, item.loc);
        if (rule) esc.on_human_complete.push({ condition: null, ...rule, loc: ctx.loc(item.loc) });
        continue;
      }
      ctx.report('E853', item.loc, { src: item.kind === 'Item' ? item.head.raw : '…' });
    }
  }
  return esc;
}
