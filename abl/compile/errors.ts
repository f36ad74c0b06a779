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

/** The error types the runtime raises (abl/runtime/on-error.ts `errorType`); `timeout` also takes tool timeouts. */
const RAISED = ['tool_timeout', 'tool_error', 'validation_error', 'llm_error', 'timeout'];

/** What happens instead of a handler for a type the runtime never raises. */
const INSTEAD: Record<string, string> = {
  routing_failure: ': a refused handoff is traced as an error and the agent stays',
  agent_unavailable: ': a failed delegation follows its DELEGATE entry\'s ON_FAILURE',
};

/** A handler for a type that is never raised never runs (docs/not-supported.md). */
function reportNeverRaised(ctx: CompileContext, type: string, at: Loc): void {
  if (!RAISED.includes(type)) ctx.report('W855', at, { type, instead: INSTEAD[type] ?? '' });
}

/**
 * ON_ERROR RETRY repeats a failed tool call, at once; other errors are not retried by it
 * (docs/not-supported.md).
 */
function reportRetryNotApplied(ctx: CompileContext, type: string, f: Fields, backoff: string | null, retry: number): void {
  const at = (k: string): Loc => (f.map.get(k) as NonNullable<ReturnType<typeof f.map.get>>).loc;
  if (retry > 0 && (type === 'llm_error' || type === 'validation_error')) {
    ctx.report('W854', at('retry'), {
      type,
      key: 'RETRY',
      value: retry,
      ...(type === 'llm_error'
        ? { instead: 'RETRY repeats only tool calls; a failed model call is already retried by the platform', fix: 'Remove RETRY' }
        : { instead: 'RETRY repeats only tool calls; a GATHER field is asked again up to its max_retries', fix: 'Set max_retries on the field instead' }),
    });
  }
  if (backoff !== null) {
    ctx.report('W854', at('retry_backoff'), {
      type,
      key: 'RETRY_BACKOFF',
      value: backoff,
      instead: 'its RETRY attempts follow one another at once',
      fix: "Remove it; the tool's own retry already waits between attempts (500 ms, doubling up to 15 s)",
    });
  }
}

function handler(ctx: CompileContext, type: string, f: Fields, at: Loc): ErrorHandlerIR {
  const get = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
  ctx.extras(f, ['type', 'respond', 'retry', 'retry_backoff', 'then', 'backtrack_to', 'reason'], `ON_ERROR ${type}`);
  const backoff = ctx.oneOf(get('retry_backoff'), ['fixed', 'exponential', 'linear'] as const, 'RETRY_BACKOFF');
  const retry = ctx.num(get('retry'), 'RETRY') ?? 0;
  reportRetryNotApplied(ctx, type, f, backoff, retry);
  return {
    type,
    respond: ctx.text(get('respond'), 'RESPOND'),
    retry,
    retry_backoff: backoff ?? 'fixed',
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
      else reportNeverRaised(ctx, type, (f.map.get('type') as NonNullable<ReturnType<typeof f.map.get>>).loc);
      out.push(handler(ctx, type ?? 'default', f, item.loc));
    }
    return out;
  }
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'ON_ERROR', expected: 'error type blocks', found: 'a value' });
    return out;
  }
  for (const e of ctx.pairs(node, 'ON_ERROR', 'error type blocks')) {
    reportNeverRaised(ctx, e.key, e.loc);
    const body = ctx.value(e);
    if (body && body.kind === 'Map') out.push(handler(ctx, e.key, ctx.fields(body), e.loc));
    else {
      // `tool_timeout: "message"` shorthand
      out.push({ type: e.key, respond: ctx.text(body, 'RESPOND'), retry: 0, retry_backoff: 'fixed', then: null, loc: ctx.loc(e.loc) });
    }
  }
  return out;
}
