// ON_ERROR reducer (ABL.md §10): a map `type: {RESPOND, RETRY, RETRY_BACKOFF, THEN}` or a `- TYPE:` list.

import type { Loc, ValueNode } from '../ast';
import type { ErrorHandlerIR } from '../ir';
import { pairValue, type CompileContext, type Fields } from './context';

function compileThen(ctx: CompileContext, node: ValueNode | null, f: Fields): ErrorHandlerIR['then'] {
  const s = ctx.str(node, 'THEN');
  if (s === null) return null;
  const t = s.trim();
  if (/^continue$/i.test(t)) return { kind: 'continue' };
  if (/^complete$/i.test(t)) return { kind: 'complete' };
  const esc = /^escalate\b(?:\s+with\s+reason\s*:\s*(.+))?$/i.exec(t);
  if (esc) return { kind: 'escalate', reason: esc[1] ? esc[1].trim().replace(/^["']|["']$/g, '') : ctx.str(pairValue(f.map.get('reason') ?? ({ value: null } as never)), 'REASON') };
  const ho = /^handoff\s+(?:to\s+)?([A-Za-z]\w*)$/i.exec(t);
  if (ho) return { kind: 'handoff', agent: ho[1] as string };
  if (/^backtrack$/i.test(t)) {
    const b = f.map.get('backtrack_to');
    return { kind: 'backtrack', step: b ? ctx.str(pairValue(b), 'BACKTRACK_TO') : null };
  }
  if (node) ctx.report('E211', node.loc, { what: 'ON_ERROR THEN', allowed: 'CONTINUE, ESCALATE, HANDOFF <Agent>, COMPLETE, backtrack', value: t });
  return null;
}

function handler(ctx: CompileContext, type: string, f: Fields, at: Loc): ErrorHandlerIR {
  const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
  ctx.extras(f, ['type', 'respond', 'retry', 'retry_backoff', 'then', 'backtrack_to', 'reason'], `ON_ERROR ${type}`);
  return {
    type,
    respond: ctx.text(get('respond'), 'RESPOND'),
    retry: ctx.num(get('retry'), 'RETRY') ?? 0,
    retry_backoff: ctx.oneOf(get('retry_backoff'), ['fixed', 'exponential', 'linear'] as const, 'RETRY_BACKOFF') ?? 'fixed',
    then: compileThen(ctx, get('then'), f),
    loc: ctx.loc(at),
  };
}

export function compileErrorHandlers(ctx: CompileContext, node: ValueNode | null): ErrorHandlerIR[] {
  if (!node) return [];
  const out: ErrorHandlerIR[] = [];
  if (node.kind === 'List') {
    for (const item of node.items) {
      if (item.kind !== 'Map') {
        ctx.report('E210', item.loc, { what: 'ON_ERROR entry', expected: '- TYPE: tool_error with RESPOND/RETRY/THEN', found: 'a value' });
        continue;
      }
      const f = ctx.fields(item);
      const type = ctx.str(f.map.get('type')?.value, 'TYPE');
      if (!type) ctx.report('E212', item.loc, { what: 'ON_ERROR entry', key: 'TYPE' });
      out.push(handler(ctx, type ?? 'default', f, item.loc));
    }
    return out;
  }
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'ON_ERROR', expected: 'error type blocks', found: 'a value' });
    return out;
  }
  for (const e of ctx.pairs(node, 'ON_ERROR', 'error type blocks')) {
    const body = ctx.value(e);
    if (body && body.kind === 'Map') out.push(handler(ctx, e.key, ctx.fields(body), e.loc));
    else {
      // `tool_timeout: "message"` shorthand
      out.push({ type: e.key, respond: ctx.text(body, 'RESPOND'), retry: 0, retry_backoff: 'fixed', then: null, loc: ctx.loc(e.loc) });
    }
  }
  return out;
}
