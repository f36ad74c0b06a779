// HANDOFF, DELEGATE and ESCALATE reducers (ABL.md §9). WHENs here may be natural language.

import type { ValueNode } from '../ast';
import type { DelegateIR, EscalationIR, HandoffIR, HumanCompleteActionIR } from '../ir';
import { splitKey } from '../parser';
import { pairValue, type CompileContext, type Fields } from './context';

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
  for (const e of node.entries) if (e.kind === 'Pair') out[e.key] = ctx.str(pairValue(e), `${what} ${e.key}`) ?? e.key;
  return out;
}

export function compileHandoffs(ctx: CompileContext, node: ValueNode | null): HandoffIR[] {
  const out: HandoffIR[] = [];
  for (const { f, node: item } of listItems(ctx, node, 'HANDOFF')) {
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? pairValue(p) : null; };
    ctx.extras(f, ['to', 'when', 'priority', 'context', 'return', 'on_return', 'map', 'on_failure'], 'HANDOFF');
    const to = ctx.str(get('to'), 'TO');
    if (!to) { ctx.report('E212', item.loc, { what: 'A HANDOFF rule', key: 'TO' }); continue; }
    const when = ctx.expr(get('when'), 'HANDOFF WHEN', { naturalLanguage: true });
    if (!when) ctx.report('E212', item.loc, { what: `HANDOFF to ${to}`, key: 'WHEN' });
    const cf = ctx.fields(get('context')?.kind === 'Map' ? (get('context') as never) : null);
    const cget = (k: string): ValueNode | null => { const p = cf.map.get(k); return p ? pairValue(p) : null; };
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
    out.push({
      to,
      when: when ?? { src: '', ast: null },
      priority: ctx.num(get('priority'), 'PRIORITY') ?? 100,
      context: { pass: ctx.strList(cget('pass'), 'pass'), summary: summary ? ctx.text(summary, 'summary') : null, history },
      return: ctx.bool(get('return'), 'RETURN') ?? false,
      on_return: ctx.oneOf(get('on_return'), ['continue', 'resume_intent'] as const, 'ON_RETURN') ?? 'continue',
      map: f.map.has('map') ? nameMap(ctx, get('map'), 'MAP') : null,
      on_failure: ctx.str(get('on_failure'), 'ON_FAILURE'),
      loc: ctx.loc(item.loc),
    });
  }
  return out;
}

export function compileDelegates(ctx: CompileContext, node: ValueNode | null): DelegateIR[] {
  const out: DelegateIR[] = [];
  for (const { f, node: item } of listItems(ctx, node, 'DELEGATE')) {
    const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? pairValue(p) : null; };
    ctx.extras(f, ['agent', 'to', 'when', 'purpose', 'input', 'returns', 'use_result', 'timeout', 'on_failure', 'failure_message'], 'DELEGATE');
    const agent = ctx.str(get('agent') ?? get('to'), 'AGENT');
    if (!agent) { ctx.report('E212', item.loc, { what: 'A DELEGATE entry', key: 'AGENT' }); continue; }
    const input: DelegateIR['input'] = {};
    const inNode = get('input');
    if (inNode?.kind === 'Map') {
      for (const e of inNode.entries) if (e.kind === 'Pair') input[e.key] = ctx.expr(pairValue(e), `INPUT ${e.key}`) ?? { src: '', ast: null };
    } else if (inNode) ctx.report('E210', inNode.loc, { what: 'INPUT', expected: 'child_input: parent expression lines', found: 'a value' });
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
    out.push({
      agent,
      when: ctx.expr(get('when'), 'DELEGATE WHEN', { naturalLanguage: true }),
      purpose: ctx.str(get('purpose'), 'PURPOSE'),
      input,
      returns: nameMap(ctx, get('returns'), 'RETURNS'),
      use_result: ctx.str(get('use_result'), 'USE_RESULT'),
      timeout_ms: ctx.duration(get('timeout'), 'TIMEOUT', 's'),
      on_failure: onFailure,
      failure_message: ctx.text(get('failure_message'), 'FAILURE_MESSAGE'),
      loc: ctx.loc(item.loc),
    });
  }
  return out;
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

export function compileEscalation(ctx: CompileContext, node: ValueNode | null): EscalationIR | null {
  if (!node) return null;
  const esc: EscalationIR = { triggers: [], context_for_human: [], on_human_complete: [], loc: ctx.loc(node.loc) };
  let triggersNode: ValueNode | null = null;
  let f: Fields | null = null;
  if (node.kind === 'List') triggersNode = node;
  else if (node.kind === 'Map') {
    f = ctx.fields(node);
    ctx.extras(f, ['triggers', 'context_for_human', 'on_human_complete'], 'ESCALATE');
    const t = f.map.get('triggers');
    triggersNode = t ? pairValue(t) : null;
    const c = f.map.get('context_for_human');
    esc.context_for_human = c ? ctx.strList(pairValue(c), 'context_for_human') : [];
  } else ctx.report('E210', node.loc, { what: 'ESCALATE', expected: 'triggers:/context_for_human:/on_human_complete:', found: 'a value' });
  for (const { f: tf, node: item } of listItems(ctx, triggersNode, 'ESCALATE trigger')) {
    const get = (k: string): ValueNode | null => { const p = tf.map.get(k); return p ? pairValue(p) : null; };
    ctx.extras(tf, ['when', 'reason', 'priority', 'tags', 'type', 'due'], 'ESCALATE trigger');
    const when = ctx.expr(get('when'), 'ESCALATE WHEN', { naturalLanguage: true });
    if (!when) { ctx.report('E212', item.loc, { what: 'An ESCALATE trigger', key: 'WHEN' }); continue; }
    const tags = ctx.strList(get('tags'), 'TAGS');
    esc.triggers.push({
      when,
      reason: ctx.text(get('reason'), 'REASON'),
      priority: ctx.oneOf(get('priority'), ['low', 'medium', 'high', 'critical'] as const, 'PRIORITY') ?? 'medium',
      tags,
      type: ctx.str(get('type'), 'TYPE') ?? (tags.some((t) => t.toLowerCase().includes('approval')) ? 'approval' : 'escalation'),
      due_ms: ctx.duration(get('due'), 'DUE', 's'),
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
          const action = humanAction(ctx, ctx.str(first.value, 'action') ?? '', first.loc);
          if (action) esc.on_human_complete.push({ condition: cond, action, loc: ctx.loc(item.loc) });
          continue;
        }
        const hf = ctx.fields(item);
        const ifNode = hf.map.get('if');
        const thenNode = hf.map.get('then');
        if (thenNode) {
          const action = humanAction(ctx, ctx.str(pairValue(thenNode), 'THEN') ?? '', thenNode.loc);
          if (action) esc.on_human_complete.push({ condition: ifNode ? ctx.expr(pairValue(ifNode), 'IF') : null, action, loc: ctx.loc(item.loc) });
          continue;
        }
      }
      if (item.kind === 'Scalar') {
        const text = String(item.value ?? '');
        const pair = splitKey(text);
        const action = humanAction(ctx, pair ? pair.rest : text, item.loc);
        if (action) esc.on_human_complete.push({ condition: null, action, loc: ctx.loc(item.loc) });
        continue;
      }
      ctx.report('E853', item.loc, { src: item.kind === 'Item' ? item.head.raw : '…' });
    }
  }
  return esc;
}
