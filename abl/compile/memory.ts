// MEMORY reducer (ABL.md §7): session variables, persistent facts, remember and recall rules.

import type { ValueNode } from '../ast';
import type { MemoryIR } from '../ir';
import { headOf, toJson, type CompileContext, type Fields } from './context';

function entries(ctx: CompileContext, node: ValueNode | null, kind: string): Array<{ name: string | null; props: Fields; loc: ValueNode['loc'] }> {
  if (!node) return [];
  const out: Array<{ name: string | null; props: Fields; loc: ValueNode['loc'] }> = [];
  const items = node.kind === 'List' ? node.items : [node];
  for (const item of items) {
    const head = headOf(item);
    if (item.kind === 'Item') out.push({ name: String(item.head.value), props: ctx.fields(item.children), loc: item.loc });
    else if (head) out.push({ name: head.value === null ? null : String(head.value), props: ctx.fields(null), loc: item.loc });
    else if (item.kind === 'Map') out.push({ name: null, props: ctx.fields(item), loc: item.loc });
    else ctx.report('E801', item.loc, { kind, detail: 'expected "- name" followed by properties' });
  }
  return out;
}

/** Legacy recall keys (`ON_START:` …) → the `ON:` event they stand for. */
const LEGACY_EVENTS: Record<string, string> = {
  start: 'session:start',
  session_start: 'session:start',
  end: 'session:end',
  session_end: 'session:end',
  turn: 'turn:start',
  turn_start: 'turn:start',
};

/** The recall events the runtime triggers: the session's start and a named tool's result. */
export function recallRuns(on: string): boolean {
  return on === 'session:start' || /^tool:[A-Za-z_][\w-]*:after$/.test(on);
}

export function compileMemory(ctx: CompileContext, node: ValueNode | null): MemoryIR {
  const mem: MemoryIR = { session: [], persistent: [], remember: [], recall: [] };
  if (!node) return mem;
  const f = ctx.fields(node.kind === 'Map' ? node : null);
  if (node.kind !== 'Map') ctx.report('E210', node.loc, { what: 'MEMORY', expected: 'session:/persistent:/remember:/recall: blocks', found: 'a value' });
  ctx.extras(f, ['session', 'persistent', 'remember', 'recall'], 'MEMORY');
  const v = (k: string): ValueNode | null => {
    const p = f.map.get(k);
    return p ? ctx.value(p) : null;
  };
  for (const e of entries(ctx, v('session'), 'session')) {
    const g = (k: string): ValueNode | null => { const p = e.props.map.get(k); return p ? ctx.value(p) : null; };
    const name = e.name ?? ctx.str(g('name'), 'name');
    if (!name) { ctx.report('E801', e.loc, { kind: 'session', detail: 'the variable has no name' }); continue; }
    const reset = ctx.oneOf(g('reset'), ['per_session', 'per_step', 'never', 'per_activation'] as const, 'RESET') ?? 'per_session';
    mem.session.push({
      name,
      type: ctx.str(g('type'), 'TYPE'),
      initial: e.props.map.has('initial') ? toJson(g('initial')) : undefined,
      reset,
      description: ctx.str(g('description'), 'DESCRIPTION'),
      loc: ctx.loc(e.loc),
    });
  }
  for (const e of entries(ctx, v('persistent'), 'persistent')) {
    const g = (k: string): ValueNode | null => { const p = e.props.map.get(k); return p ? ctx.value(p) : null; };
    const path = e.name ?? ctx.str(g('path'), 'path');
    if (!path) { ctx.report('E801', e.loc, { kind: 'persistent', detail: 'the fact has no path' }); continue; }
    const scope = ctx.oneOf(g('scope'), ['user', 'project', 'execution_tree'] as const, 'SCOPE') ?? 'user';
    mem.persistent.push({
      path,
      scope,
      access: ctx.oneOf(g('access'), ['read', 'write', 'readwrite'] as const, 'ACCESS') ?? 'readwrite',
      default: e.props.map.has('default') ? toJson(g('default')) : undefined,
      loc: ctx.loc(e.loc),
    });
  }
  for (const e of entries(ctx, v('remember'), 'remember')) {
    const g = (k: string): ValueNode | null => { const p = e.props.map.get(k); return p ? ctx.value(p) : null; };
    const store = ctx.str(g('store'), 'STORE');
    const m = store ? /^([\s\S]+?)\s*->\s*([\w.]+)\s*$/.exec(store) : null;
    if (!m) { ctx.report('E801', e.props.map.get('store')?.loc ?? e.loc, { kind: 'remember', detail: 'STORE must be "expression -> path"' }); continue; }
    const storeNode = g('store');
    // `- WHEN booking.confirmed` + STORE: the condition is the item's head; it must never be dropped.
    let when = ctx.expr(g('when'), 'remember WHEN');
    if (e.name !== null) {
      const head = /^(WHEN\s*:?\s+)([\s\S]+)$/i.exec(e.name);
      if (!head) { ctx.report('E801', e.loc, { kind: 'remember', detail: `"${e.name}" is neither "WHEN: condition" nor a property` }); continue; }
      if (when) { ctx.report('E108', e.props.map.get('when')?.loc ?? e.loc, { key: 'WHEN' }); continue; }
      when = ctx.exprText(head[2] as string, { line: e.loc.line, column: e.loc.column + (head[1] as string).length }, 'remember WHEN');
    }
    const ttl = ctx.duration(g('ttl'), 'TTL', 's');
    mem.remember.push({
      when,
      from: ctx.exprText(m[1] as string, storeNode?.loc ?? e.loc, 'STORE'),
      to: m[2] as string,
      ttl_ms: ttl,
      loc: ctx.loc(e.loc),
    });
  }
  for (const e of entries(ctx, v('recall'), 'recall')) {
    const g = (k: string): ValueNode | null => { const p = e.props.map.get(k); return p ? ctx.value(p) : null; };
    // Legacy `- ON_START: "instruction"` (any `ON_<event>:` key): normalised, with a deprecation warning.
    const legacy = e.props.order.find((k) => /^on_\w+$/.test(k));
    if (legacy && !e.props.map.has('on')) {
      const pair = e.props.map.get(legacy) as NonNullable<ReturnType<typeof e.props.map.get>>;
      const event = legacy.slice(3);
      const on = LEGACY_EVENTS[event] ?? event.replace('_', ':');
      // `- ON_START: "text"` is an instruction; `- ON_START:` + ACTION/PATHS lines is an ordinary entry.
      const body = ctx.value(pair);
      const inner = body?.kind === 'Map' ? ctx.fields(body) : null;
      const instruction = inner ? null : ctx.text(body, pair.key);
      const props = inner ?? { ...e.props, order: e.props.order.filter((k) => k !== legacy) };
      const get = ctx.getter(props);
      ctx.report('W802', pair.loc, { key: pair.key, on });
      if (!recallRuns(on)) ctx.report('W806', e.loc, { on });
      ctx.extras(props, ['action', 'paths'], 'recall');
      mem.recall.push({
        on,
        action: ctx.oneOf(get('action'), ['inject_context', 'load_memory', 'prompt_llm'] as const, 'ACTION') ?? 'prompt_llm',
        paths: ctx.strList(get('paths'), 'PATHS'),
        ...(instruction ? { instruction } : {}),
        loc: ctx.loc(e.loc),
      });
      continue;
    }
    const on = ctx.str(g('on'), 'ON');
    if (!on) { ctx.report('E801', e.loc, { kind: 'recall', detail: 'ON: session:start or tool:<name>:after is missing' }); continue; }
    // Only session start and a tool's result trigger recall (docs/not-supported.md).
    if (!recallRuns(on)) ctx.report('W806', e.loc, { on });
    // DOMAIN (a knowledge domain to search) has no effect here: W213 says so.
    ctx.extras(e.props, ['on', 'action', 'paths', 'instruction'], 'recall');
    const instruction = g('instruction') ? ctx.text(g('instruction'), 'INSTRUCTION') : null;
    mem.recall.push({
      on,
      action: ctx.oneOf(g('action'), ['inject_context', 'load_memory', 'prompt_llm'] as const, 'ACTION') ?? 'prompt_llm',
      paths: ctx.strList(g('paths'), 'PATHS'),
      ...(instruction ? { instruction } : {}),
      loc: ctx.loc(e.loc),
    });
  }
  return mem;
}
