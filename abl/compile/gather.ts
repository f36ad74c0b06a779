// GATHER reducer (ABL.md §6): agent-level field blocks and flow-step field lists.

import type { Loc, MapNode, ValueNode } from '../ast';
import type { GatherFieldIR, GatherType, StepGatherIR, ValidationIR } from '../ir';
import { describe, pairValue, toJson, type CompileContext, type Fields } from './context';
import { patternProblem } from '../regex';

const TYPES: readonly GatherType[] = ['string', 'number', 'boolean', 'date', 'datetime', 'email', 'phone'];
const FIELD_KEYS = [
  'prompt', 'type', 'required', 'default', 'validate', 'retry_prompt', 'max_retries', 'infer', 'infer_confidence',
  'infer_confirm', 'extraction_hints', 'depends_on', 'activation', 'sensitive', 'transient', 'list', 'range', 'description',
  'values', 'enum', 'options',
];

/** The values of a `type: enum` field (`values:`, `enum:` or `options:`); E451 when it has none. */
function compileEnumValues(ctx: CompileContext, name: string, props: Fields, at: Loc): string[] {
  const key = ['values', 'enum', 'options'].find((k) => props.map.has(k));
  const p = key ? props.map.get(key) : undefined;
  const values = p ? ctx.strList(ctx.value(p), `Gather field ${name} ${key}`) : [];
  if (values.length === 0) ctx.report('E451', at, { name, type: 'enum (without values: [a, b, …])' });
  return values;
}

/** Splits `min(1) max(5) pattern(^a(b)c$)` into rules, honouring nested parentheses and escapes. */
export function parseValidation(text: string): ValidationIR[] | null {
  const out: ValidationIR[] = [];
  let i = 0;
  const s = text.trim();
  while (i < s.length) {
    while (s[i] === ' ' || s[i] === ',') i++;
    if (i >= s.length) break;
    const m = /^(min|max|enum|email|pattern|regex|length)\s*\(/i.exec(s.slice(i));
    if (!m) return null;
    let j = i + m[0].length;
    let depth = 1;
    const start = j;
    for (; j < s.length && depth > 0; j++) {
      if (s[j] === '\\') { j++; continue; }
      if (s[j] === '(') depth++;
      else if (s[j] === ')') depth--;
    }
    if (depth !== 0) return null;
    const arg = s.slice(start, j - 1).trim();
    const kind = (m[1] as string).toLowerCase();
    if (kind === 'min' || kind === 'max') {
      if (!/^-?\d+(\.\d+)?$/.test(arg)) return null;
      out.push({ kind, value: Number(arg) });
    } else if (kind === 'enum') out.push({ kind: 'enum', values: arg.split(',').map((v) => v.trim().replace(/^["']|["']$/g, '')).filter(Boolean) });
    else if (kind === 'email') out.push({ kind: 'email' });
    else if (kind === 'length') {
      const [a, b] = arg.split(',').map((v) => Number(v.trim()));
      if (a !== undefined && !Number.isNaN(a)) out.push({ kind: 'min', value: a });
      if (b !== undefined && !Number.isNaN(b)) out.push({ kind: 'max', value: b });
    } else out.push({ kind: 'pattern', pattern: arg.replace(/^(["'])([\s\S]*)\1$/, '$2').replace(/^\/([\s\S]*)\/$/, '$1') });
    i = j;
  }
  return out;
}

function compileValidate(ctx: CompileContext, name: string, node: ValueNode | null): ValidationIR[] {
  if (!node) return [];
  const texts: Array<{ text: string; loc: Loc }> = [];
  if (node.kind === 'List') {
    for (const it of node.items) {
      if (it.kind === 'Scalar') texts.push({ text: String(it.value ?? ''), loc: it.loc });
      else ctx.report('E210', it.loc, { what: `Gather field ${name} validate`, expected: 'a list of rules such as min(1)', found: describe(it) });
    }
  }
  else {
    const t = ctx.str(node, 'validate');
    if (t !== null) texts.push({ text: t, loc: node.loc });
  }
  const out: ValidationIR[] = [];
  for (const { text, loc } of texts) {
    const rules = parseValidation(text);
    if (rules === null) {
      if (/^\s*(min|max|enum|email|pattern|regex|length)\s*\(/i.test(text)) {
        ctx.report('E452', loc, { name, detail: `cannot read "${text}"` });
      } else out.push({ kind: 'llm', rule: text });
      continue;
    }
    for (const r of rules) {
      if (r.kind !== 'pattern') continue;
      const problem = patternProblem(r.pattern);
      if (problem?.kind === 'invalid') ctx.report('E452', loc, { name, detail: `invalid pattern /${r.pattern}/ (${problem.detail})` });
      else if (problem) ctx.report('E310', loc, { pattern: r.pattern, detail: problem.detail });
    }
    out.push(...rules);
  }
  return out;
}

const RANGED: readonly GatherType[] = ['number', 'date', 'datetime', 'string'];
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** What is wrong with a field's `range` (`[min, max]` or `{min, max}`) for its type, or null. */
function rangeProblem(type: GatherType, range: unknown): string | null {
  if (range === null || typeof range !== 'object') return 'must be [min, max] or {min: …, max: …}';
  const [min, max] = Array.isArray(range) ? range : [(range as Record<string, unknown>).min, (range as Record<string, unknown>).max];
  const given = [min, max].filter((v) => v !== undefined && v !== null);
  if (given.length === 0) return 'gives no bound';
  if (type === 'number' && given.some((v) => typeof v !== 'number')) return 'bounds of a number field must be numbers';
  if (type === 'string' && given.some((v) => typeof v !== 'number' || !Number.isInteger(v) || v < 0)) return 'bounds of a string field are lengths: whole numbers of 0 or more';
  if ((type === 'date' || type === 'datetime') && given.some((v) => typeof v !== 'string' || !ISO_DATE.test(v))) return `bounds of a ${type} field must be ISO dates such as "2025-01-31"`;
  return null;
}

/** One field from its name and property block (props may be null: all defaults). */
export function compileField(ctx: CompileContext, name: string, at: Loc, props: Fields, requiredDefault = true): GatherFieldIR {
  const get = (k: string): ValueNode | null => {
    const p = props.map.get(k);
    return p ? ctx.value(p) : null;
  };
  if (!/^[A-Za-z_][\w.]*$/.test(name)) ctx.report('E207', at, { name, what: 'gather field' });
  const typeNode = get('type');
  let type: GatherType = 'string';
  const t = ctx.str(typeNode, 'type');
  // `type: enum` with `values:` (or `enum:`, `options:`): a string field whose value is one of them.
  const enumValues = t !== null && t.trim().toLowerCase() === 'enum' ? compileEnumValues(ctx, name, props, typeNode?.loc ?? at) : null;
  if (t !== null && enumValues === null) {
    const found = TYPES.find((x) => x === t.trim().toLowerCase());
    if (found) type = found;
    else ctx.report('E451', typeNode?.loc ?? at, { name, type: t });
  }
  for (const k of ['values', 'enum', 'options']) {
    const p = props.map.get(k);
    if (p && enumValues === null) ctx.report('E210', p.loc, { what: `Gather field ${name} ${k}`, expected: 'type: enum on the same field', found: `type: ${t ?? 'string'}` });
  }
  const activationNode = get('activation');
  let activation: GatherFieldIR['activation'] = 'required';
  if (activationNode?.kind === 'Map') {
    const w = ctx.fields(activationNode).map.get('when');
    const e = w ? ctx.expr(pairValue(w), 'activation when') : null;
    if (e) activation = { when: e };
  } else if (activationNode) activation = ctx.oneOf(activationNode, ['required', 'optional', 'progressive'] as const, 'activation') ?? 'required';
  const required = ctx.bool(get('required'), `${name}.required`) ?? (activation === 'optional' ? false : requiredDefault);
  // The runtime bounds number, date, datetime and string fields by range (docs/not-supported.md).
  const rangeAt = props.map.get('range');
  const range = props.map.has('range') ? toJson(get('range')) : null;
  if (rangeAt && !RANGED.includes(type)) ctx.report('W454', rangeAt.loc, { name, type });
  else if (rangeAt) {
    const problem = rangeProblem(type, range);
    if (problem) ctx.report('E452', rangeAt.loc, { name, detail: `range ${problem}` });
  }
  return {
    name,
    prompt: ctx.text(get('prompt'), 'prompt'),
    type,
    required,
    default: props.map.has('default') ? toJson(get('default')) : undefined,
    validate: [...(enumValues && enumValues.length > 0 ? [{ kind: 'enum' as const, values: enumValues }] : []), ...compileValidate(ctx, name, get('validate'))],
    retry_prompt: ctx.text(get('retry_prompt'), 'retry_prompt'),
    max_retries: ctx.num(get('max_retries'), 'max_retries'),
    infer: ctx.bool(get('infer'), 'infer') ?? false,
    infer_confidence: ctx.num(get('infer_confidence'), 'infer_confidence') ?? 0.8,
    infer_confirm: ctx.bool(get('infer_confirm'), 'infer_confirm') ?? true,
    extraction_hints: ctx.strList(get('extraction_hints'), 'extraction_hints'),
    depends_on: ctx.strList(get('depends_on'), 'depends_on'),
    activation,
    sensitive: ctx.bool(get('sensitive'), 'sensitive') ?? false,
    transient: ctx.bool(get('transient'), 'transient') ?? false,
    list: ctx.bool(get('list'), 'list') ?? false,
    range,
    extra: ctx.extras(props, FIELD_KEYS, `gather field ${name}`),
    loc: ctx.loc(at),
  };
}

function checkFields(ctx: CompileContext, fields: GatherFieldIR[], where: string): GatherFieldIR[] {
  const seen = new Set<string>();
  const out: GatherFieldIR[] = [];
  for (const f of fields) {
    if (seen.has(f.name)) {
      ctx.report('E450', f.loc, { name: f.name, where });
      continue;
    }
    seen.add(f.name);
    out.push(f);
  }
  for (const f of out) {
    for (const dep of f.depends_on) if (!seen.has(dep)) ctx.report('E453', f.loc, { name: f.name, dep });
  }
  return out;
}

const emptyFields = (): Fields => ({ map: new Map(), items: [], order: [] });

const STRATEGIES = ['llm', 'pattern', 'hybrid'] as const;

/**
 * The agent's GATHER section: its fields, and `STRATEGY: llm|pattern|hybrid` written among them (a
 * key with one of those values and no block under it; a field named strategy has a block).
 */
export function compileAgentGatherSection(ctx: CompileContext, node: ValueNode | null): { fields: GatherFieldIR[]; strategy?: (typeof STRATEGIES)[number] } {
  if (node?.kind !== 'Map') return { fields: compileAgentGather(ctx, node) };
  const s = node.entries.find((e) => e.kind === 'Pair' && e.key.toLowerCase() === 'strategy' && !e.children && e.value?.kind === 'Scalar');
  if (!s || s.kind !== 'Pair') return { fields: compileAgentGather(ctx, node) };
  const strategy = ctx.oneOf(s.value, STRATEGIES, 'GATHER STRATEGY') ?? undefined;
  const fields = compileAgentGather(ctx, { ...node, entries: node.entries.filter((e) => e !== s) });
  return { fields, ...(strategy ? { strategy } : {}) };
}

/** Agent-level GATHER: `name:` blocks, or `GATHER: a, b, c`. */
export function compileAgentGather(ctx: CompileContext, node: ValueNode | null): GatherFieldIR[] {
  if (!node) return [];
  if (node.kind === 'Scalar' || node.kind === 'List') return compileListGather(ctx, node, 'GATHER');
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'GATHER', expected: 'field blocks', found: 'a value' });
    return [];
  }
  const fields: GatherFieldIR[] = [];
  for (const e of node.entries) {
    if (e.kind === 'Item') {
      fields.push(compileField(ctx, String(e.head.value), e.loc, ctx.fields(e.children)));
      continue;
    }
    const props = e.children?.kind === 'Map' ? ctx.fields(e.children) : emptyFields();
    const field = compileField(ctx, e.key, e.loc, props);
    if (e.value && e.value.kind === 'Scalar' && typeof e.value.value === 'string') {
      const v = e.value.value.toLowerCase();
      if (v === 'optional') field.required = false;
      else if (v !== 'required') field.prompt = e.value.value;
    }
    fields.push(field);
  }
  return checkFields(ctx, fields, 'GATHER');
}

/** Step GATHER: `- name: required|optional` + props, `- name` + props, or `a, b, c`. */
export function compileListGather(ctx: CompileContext, node: ValueNode, where: string): GatherFieldIR[] {
  const fields: GatherFieldIR[] = [];
  if (node.kind === 'Scalar') {
    for (const n of ctx.strList(node, 'GATHER')) fields.push(compileField(ctx, n, node.loc, emptyFields()));
    return checkFields(ctx, fields, where);
  }
  if (node.kind === 'Map') return compileAgentGather(ctx, node);
  if (node.kind !== 'List') {
    ctx.report('E210', node.loc, { what: 'GATHER', expected: 'a list of fields', found: 'a value' });
    return [];
  }
  for (const item of node.items) {
    if (item.kind === 'Scalar') {
      fields.push(compileField(ctx, String(item.value ?? ''), item.loc, emptyFields()));
    } else if (item.kind === 'Item') {
      fields.push(compileField(ctx, String(item.head.value ?? ''), item.loc, ctx.fields(item.children)));
    } else if (item.kind === 'Map') {
      const [first, ...rest] = item.entries;
      if (!first || first.kind !== 'Pair') {
        ctx.report('E210', item.loc, { what: 'GATHER', expected: '- name: required|optional with properties', found: describe(item) });
        continue;
      }
      const restMap: MapNode = { ...item, entries: rest };
      const props = ctx.fields(restMap);
      if (first.children?.kind === 'Map') for (const [k, v] of ctx.fields(first.children).map) if (!props.map.has(k)) { props.map.set(k, v); props.order.push(k); }
      const mode = first.value?.kind === 'Scalar' ? String(first.value.value ?? '').toLowerCase() : '';
      if (mode && mode !== 'required' && mode !== 'optional') {
        ctx.report('E211', first.value?.loc ?? first.loc, { what: `Gather field ${first.key}`, allowed: 'required, optional', value: mode });
      }
      fields.push(compileField(ctx, first.key, first.loc, props, mode !== 'optional'));
    } else ctx.report('E210', item.loc, { what: 'GATHER item', expected: '- name: required', found: 'a value' });
  }
  return checkFields(ctx, fields, where);
}

/** A step's GATHER plus its companion keys STRATEGY, CORRECTIONS, COMPLETE_WHEN. */
export function compileStepGather(ctx: CompileContext, node: ValueNode, step: Fields): StepGatherIR {
  const get = (k: string): ValueNode | null => {
    const p = step.map.get(k);
    return p ? ctx.value(p) : null;
  };
  return {
    fields: compileListGather(ctx, node, 'this step'),
    // Default `pattern`: a step asks a model to extract only when its author writes STRATEGY llm|hybrid.
    strategy: ctx.oneOf(get('strategy'), ['llm', 'pattern', 'hybrid'] as const, 'STRATEGY') ?? 'pattern',
    strategy_authored: get('strategy') !== null,
    corrections: ctx.bool(get('corrections'), 'CORRECTIONS') ?? false,
    complete_when: ctx.expr(get('complete_when'), 'COMPLETE_WHEN'),
  };
}
