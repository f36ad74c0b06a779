// Identity and EXECUTION reducers (ABL.md §3): GOAL, PERSONA, LIMITATIONS, INSTRUCTIONS, IDENTITY, defaults.

import type { PairNode, SectionNode, ValueNode } from '../ast';
import type { AgentIR, Json } from '../ir';
import { toJson, type CompileContext } from './context';

export function compileIdentity(ctx: CompileContext, sections: SectionNode[]): AgentIR['identity'] {
  const id: AgentIR['identity'] = { goal: '', persona: null, role: null, instructions: null, expertise: [], limitations: [] };
  // File order: the later form wins (GOAL vs IDENTITY.role etc.).
  for (const s of sections) {
    const v = ctx.value(s);
    switch (s.key) {
      case 'GOAL': id.goal = ctx.text(v, 'GOAL') ?? ''; break;
      case 'PERSONA': id.persona = ctx.text(v, 'PERSONA'); break;
      case 'INSTRUCTIONS': id.instructions = v?.kind === 'List' ? ctx.strList(v, 'INSTRUCTIONS').join('\n') : ctx.text(v, 'INSTRUCTIONS'); break;
      case 'LIMITATIONS': id.limitations = v?.kind === 'Text' ? v.value.split('\n').map((l) => l.replace(/^\s*-\s*/, '').trim()).filter(Boolean) : ctx.strList(v, 'LIMITATIONS'); break;
      case 'IDENTITY': {
        const f = ctx.fields(v?.kind === 'Map' ? v : null);
        if (v && v.kind !== 'Map') ctx.report('E210', v.loc, { what: 'IDENTITY', expected: 'role/persona/expertise/limitations lines', found: 'a value' });
        ctx.extras(f, ['role', 'persona', 'expertise', 'limitations', 'goal'], 'IDENTITY');
        const g = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
        if (f.map.has('role')) id.role = ctx.text(g('role'), 'role');
        if (f.map.has('goal')) id.goal = ctx.text(g('goal'), 'goal') ?? id.goal;
        if (f.map.has('persona')) id.persona = ctx.text(g('persona'), 'persona');
        if (f.map.has('expertise')) id.expertise = ctx.strList(g('expertise'), 'expertise');
        if (f.map.has('limitations')) id.limitations = ctx.strList(g('limitations'), 'limitations');
        break;
      }
      default: break;
    }
  }
  if (!id.goal && id.role) id.goal = id.role;
  return id;
}

export function compileExecution(ctx: CompileContext, node: ValueNode | null): AgentIR['execution'] {
  const f = ctx.fields(node?.kind === 'Map' ? node : null);
  if (node && node.kind !== 'Map') ctx.report('E210', node.loc, { what: 'EXECUTION', expected: 'key: value lines', found: 'a value' });
  const g = (k: string): ValueNode | null => { const p = f.map.get(k); return p ? ctx.value(p) : null; };
  const known = ['model', 'fallback_model', 'temperature', 'max_tokens', 'tool_timeout', 'llm_timeout', 'session_idle_timeout', 'max_reasoning_iterations', 'max_flow_iterations', 'max_fan_out'];
  const other: Record<string, Json> = {};
  for (const k of f.order) {
    if (known.includes(k)) continue;
    other[k] = toJson(g(k));
    // Stored, as the language asks, but nothing reads it: say so (docs/not-supported.md).
    ctx.report('W218', (f.map.get(k) as PairNode).loc, { key: (f.map.get(k) as PairNode).key });
  }
  return {
    model: ctx.str(g('model'), 'model'),
    fallback_model: ctx.str(g('fallback_model'), 'fallback_model'),
    temperature: ctx.num(g('temperature'), 'temperature'),
    max_tokens: ctx.num(g('max_tokens'), 'max_tokens'),
    tool_timeout_ms: ctx.duration(g('tool_timeout'), 'tool_timeout', 'ms') ?? 30000,
    llm_timeout_ms: ctx.duration(g('llm_timeout'), 'llm_timeout', 'ms') ?? 30000,
    session_idle_timeout_ms: ctx.duration(g('session_idle_timeout'), 'session_idle_timeout', 'ms'),
    max_reasoning_iterations: ctx.num(g('max_reasoning_iterations'), 'max_reasoning_iterations') ?? 10,
    max_flow_iterations: ctx.num(g('max_flow_iterations'), 'max_flow_iterations') ?? 100,
    ...fanOutCap(ctx.num(g('max_fan_out'), 'max_fan_out')),
    other,
  };
}

/** EXECUTION `max_fan_out`, a whole number kept within 1..32 (absent when not written: the runtime's 8). */
function fanOutCap(n: number | null): { max_fan_out?: number } {
  if (n === null || !Number.isFinite(n)) return {};
  return { max_fan_out: Math.min(32, Math.max(1, Math.floor(n))) };
}

export function compileTemplates(ctx: CompileContext, node: ValueNode | null): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  if (!node) return out;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'TEMPLATES', expected: 'name: {DEFAULT: "...", MARKDOWN: "..."} blocks', found: 'a value' });
    return out;
  }
  for (const e of ctx.pairs(node, 'TEMPLATES', 'name: {DEFAULT: "..."} blocks')) {
    const v = ctx.value(e);
    const variants: Record<string, string> = {};
    if (v?.kind === 'Map') {
      for (const ve of ctx.pairs(v, `template ${e.key}`, 'VARIANT: "text" lines')) {
        const t = ctx.str(ctx.value(ve), `template ${e.key}.${ve.key}`);
        if (t !== null) {
          ctx.checkTemplate(t, ve.loc);
          variants[ve.key.toUpperCase()] = t;
        }
      }
      // TEMPLATE(x) sends DEFAULT (else the first variant); the others are kept, never sent (docs/not-supported.md).
      const sent = Object.hasOwn(variants, 'DEFAULT') ? 'DEFAULT' : Object.keys(variants)[0];
      for (const ve of v.entries) {
        if (ve.kind === 'Pair' && ve.key.toUpperCase() !== sent && Object.hasOwn(variants, ve.key.toUpperCase())) ctx.report('W603', ve.loc, { variant: ve.key, what: `template ${e.key}` });
      }
    } else {
      const t = ctx.str(v, `template ${e.key}`);
      if (t !== null) {
        ctx.checkTemplate(t, v?.loc ?? e.loc);
        variants.DEFAULT = t;
      }
    }
    out[e.key] = variants;
  }
  return out;
}

export function compileMessages(ctx: CompileContext, node: ValueNode | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!node) return out;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'MESSAGES', expected: 'name: "text" lines', found: 'a value' });
    return out;
  }
  for (const e of ctx.pairs(node, 'MESSAGES', 'name: "text" lines')) out[e.key] = ctx.text(ctx.value(e), `MESSAGES ${e.key}`) ?? '';
  return out;
}
