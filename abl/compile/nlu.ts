// NLU reducer: `NLU:` with `intents:` (NAME, PATTERNS, EXAMPLES, ENTITIES), `entities:` (NAME,
// TYPE, VALUES, SYNONYMS, PATTERN) and `glossary:` → NluIR, which the runtime classifies each user
// message with (docs/abl.md, "NLU"). Every shape it cannot read is a diagnostic, never a default.

import type { Loc, ValueNode } from '../ast';
import type { IRLoc, Json, NluEntityIR, NluEntityType, NluIR, NluIntentIR } from '../ir';
import { patternProblem } from '../regex';
import { describe, NAME_RE, pairValue, toJson, type CompileContext, type Fields } from './context';

const SECTION_KEYS = ['intents', 'entities', 'glossary', 'threshold', 'confidence_threshold', 'fallback_intent', 'model'] as const;
/** Documented NLU settings the runtime does not run: stored, with W861. */
const NOT_RUN: Record<string, string> = {
  synonyms: 'section-wide synonyms are not applied; give them on an enum entity (SYNONYMS: under the entity)',
  embeddings: 'the model classifies every message; embeddings-based matching is not available',
  languages: 'one classification prompt serves every language; per-language models are not available',
  language: 'one classification prompt serves every language; per-language models are not available',
};
const INTENT_KEYS = ['name', 'description', 'patterns', 'keywords', 'examples', 'examples_file', 'entities'] as const;
const ENTITY_KEYS = ['name', 'type', 'description', 'values', 'synonyms', 'pattern', 'regex'] as const;
const TYPES: Record<string, NluEntityType> = {
  enum: 'enum', list: 'enum', pattern: 'pattern', regex: 'pattern', number: 'number', date: 'date', location: 'location',
  free_text: 'free_text', 'free text': 'free_text', freetext: 'free_text', text: 'free_text', string: 'free_text',
};
/** The threshold when none is written [D]: a model at least as sure as not. */
export const DEFAULT_NLU_THRESHOLD = 0.5;

/** One list entry or map entry as a name and its property block. */
interface Entry {
  name: string | null;
  fields: Fields;
  at: Loc;
}

export function compileNlu(ctx: CompileContext, node: ValueNode | null, at: Loc): NluIR | undefined {
  if (!node) {
    ctx.report('E210', at, { what: 'NLU', expected: 'intents:, entities: and glossary: blocks', found: 'nothing' });
    return undefined;
  }
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: 'NLU', expected: 'intents:, entities: and glossary: blocks', found: describe(node) });
    return undefined;
  }
  const f = ctx.fields(node);
  for (const e of f.items) ctx.report('E210', e.loc, { what: 'NLU', expected: 'intents:, entities: and glossary: blocks', found: `"${e.kind === 'Item' ? e.head.raw : e.key}"` });
  const get = ctx.getter(f);
  const other: Record<string, Json> = {};
  for (const k of f.order) {
    if ((SECTION_KEYS as readonly string[]).includes(k)) continue;
    const p = f.map.get(k)!;
    other[k] = toJson(pairValue(p));
    const detail = NOT_RUN[k];
    if (detail) ctx.report('W861', p.loc, { what: `NLU ${p.key}`, detail, fix: 'Remove it, or keep it knowing the runtime ignores it' });
    else ctx.report('W213', p.loc, { key: p.key, where: 'NLU' });
  }

  const sectionEntities = entries(ctx, get('entities'), 'NLU entities').map((e) => entity(ctx, e)).filter((e): e is NluEntityIR => e !== null);
  // An intent may declare its entities itself (ENTITIES: - NAME: x + TYPE:): they join the section's.
  const intentEntries = entries(ctx, get('intents'), 'NLU intents');
  const inline = intentEntries.flatMap((e) => intentEntityEntries(ctx, e).defs).map((d) => entity(ctx, d)).filter((e): e is NluEntityIR => e !== null);
  const entities = unique(ctx, [...sectionEntities, ...inline], 'NLU entity');
  const intents = unique(ctx, intentEntries.map((e) => intent(ctx, e, entities)).filter((i): i is NluIntentIR => i !== null), 'NLU intent');
  if (intents.length === 0) ctx.report('E860', node.loc, { what: 'NLU', detail: 'it declares no intents, so there is nothing to classify', fix: 'Add intents: with at least one - NAME: entry (PATTERNS and EXAMPLES).' });

  const thresholdKey = f.map.has('threshold') ? 'threshold' : 'confidence_threshold';
  const thresholdNode = get(thresholdKey);
  let threshold = ctx.num(thresholdNode, `NLU ${thresholdKey}`) ?? DEFAULT_NLU_THRESHOLD;
  if (thresholdNode && (threshold < 0 || threshold > 1)) {
    ctx.report('E860', thresholdNode.loc, { what: `NLU ${thresholdKey}`, detail: `${threshold} is not a confidence between 0 and 1`, fix: `Write a number from 0 to 1 (default ${DEFAULT_NLU_THRESHOLD}).` });
    threshold = DEFAULT_NLU_THRESHOLD;
  }
  const fallbackNode = get('fallback_intent');
  let fallback = ctx.str(fallbackNode, 'NLU fallback_intent');
  if (fallback !== null && fallbackNode && !intents.some((i) => i.name === fallback)) {
    ctx.report('E860', fallbackNode.loc, { what: 'NLU fallback_intent', detail: `"${fallback}" is not one of the intents`, fix: `Name one of: ${intents.map((i) => i.name).join(', ') || '(none)'}.` });
    fallback = null;
  }
  return {
    intents,
    entities,
    glossary: ctx.strList(get('glossary'), 'NLU glossary'),
    threshold,
    fallback_intent: fallback,
    model: ctx.str(get('model'), 'NLU model'),
    other,
    loc: ctx.loc(at),
  };
}

/** A list of `- NAME: x` maps or `- x` items with properties, or a map of `x:` blocks. */
function entries(ctx: CompileContext, node: ValueNode | null, what: string): Entry[] {
  if (!node) return [];
  const out: Entry[] = [];
  if (node.kind === 'List') {
    for (const item of node.items) {
      if (item.kind === 'Map') out.push({ name: null, fields: ctx.fields(item), at: item.loc });
      else if (item.kind === 'Item') out.push({ name: String(item.head.value), fields: ctx.fields(item.children), at: item.loc });
      else if (item.kind === 'Scalar' && item.value !== null) out.push({ name: String(item.value), fields: ctx.fields(null), at: item.loc });
      else ctx.report('E210', item.loc, { what, expected: '- NAME: name entries with their properties', found: describe(item) });
    }
    return out;
  }
  if (node.kind === 'Map') {
    for (const e of node.entries) {
      if (e.kind === 'Item') {
        ctx.report('E210', e.loc, { what, expected: '- NAME: name entries with their properties', found: `"${e.head.raw}"` });
        continue;
      }
      const body = ctx.value(e);
      if (body && body.kind !== 'Map') {
        ctx.report('E210', body.loc, { what: `${what} ${e.key}`, expected: 'a block of properties', found: describe(body) });
        continue;
      }
      out.push({ name: e.key, fields: ctx.fields(body), at: e.loc });
    }
    return out;
  }
  ctx.report('E210', node.loc, { what, expected: '- NAME: name entries with their properties', found: describe(node) });
  return out;
}

/** The entry's name: its head (`- refund`) or its NAME property, one of them, valid. */
function nameOf(ctx: CompileContext, e: Entry, what: string): string | null {
  const p = e.fields.map.get('name');
  const named = p ? ctx.str(ctx.value(p), `${what} NAME`) : null;
  if (e.name !== null && named !== null && named !== e.name) {
    ctx.report('E860', p!.loc, { what, detail: `it is headed "${e.name}" but named "${named}"`, fix: 'Give it one name.' });
  }
  const name = named ?? e.name;
  if (name === null) {
    ctx.report('E212', e.at, { what, key: 'NAME' });
    return null;
  }
  if (!NAME_RE.test(name)) {
    ctx.report('E207', p ? (ctx.value(p)?.loc ?? p.loc) : e.at, { name, what });
    return null;
  }
  return name;
}

function intent(ctx: CompileContext, e: Entry, declared: readonly NluEntityIR[]): NluIntentIR | null {
  const name = nameOf(ctx, e, 'NLU intent');
  ctx.extras(e.fields, INTENT_KEYS, `NLU intent ${name ?? ''}`.trim());
  if (name === null) return null;
  const get = ctx.getter(e.fields);
  const patternsKey = e.fields.map.has('patterns') ? 'patterns' : 'keywords';
  const patterns = ctx.strList(get(patternsKey), `NLU intent ${name} ${patternsKey.toUpperCase()}`).map((p) => p.trim()).filter(Boolean);
  const examples = ctx.strList(get('examples'), `NLU intent ${name} EXAMPLES`).map((x) => x.trim()).filter(Boolean);
  const description = ctx.str(get('description'), `NLU intent ${name} DESCRIPTION`);
  const file = e.fields.map.get('examples_file');
  if (file) {
    ctx.report('W861', file.loc, {
      what: `NLU intent ${name} EXAMPLES_FILE`,
      detail: 'a project holds only ABL files, so the examples in that file are not read',
      fix: 'Copy the examples into EXAMPLES: [...] on the intent',
    });
  }
  if (patterns.length === 0 && examples.length === 0 && !description) {
    ctx.report('E860', e.at, { what: `NLU intent ${name}`, detail: 'it has no PATTERNS, EXAMPLES or DESCRIPTION, so nothing can tell it apart', fix: 'Add PATTERNS: ["…"] and EXAMPLES: ["…"].' });
  }
  const wanted = get('entities');
  const entities = intentEntityEntries(ctx, e, name).names;
  for (const n of entities) {
    if (!declared.some((d) => d.name === n)) {
      ctx.report('E860', wanted?.loc ?? e.at, { what: `NLU intent ${name} ENTITIES`, detail: `"${n}" is not declared under entities:`, fix: `Declare it under NLU entities: (- NAME: ${n} with TYPE:) or remove it.` });
    }
  }
  return { name, description, patterns, examples, entities: entities.filter((n) => declared.some((d) => d.name === n)), loc: ctx.loc(e.at) };
}

const intentEntityCache = new WeakMap<Entry, { names: string[]; defs: Entry[] }>();

/**
 * An intent's ENTITIES: names of declared entities (`[a, b]`), or entities declared right there
 * (`- NAME: a` + `TYPE:`, or `a:` blocks), which are added to the section's entities. Read once
 * per intent (its problems are reported once).
 */
function intentEntityEntries(ctx: CompileContext, e: Entry, intentName?: string): { names: string[]; defs: Entry[] } {
  const seen = intentEntityCache.get(e);
  if (seen) return seen;
  const node = ctx.getter(e.fields)('entities');
  const out = { names: [] as string[], defs: [] as Entry[] };
  const what = `NLU intent ${intentName ?? e.name ?? ''} ENTITIES`.replace(/\s+/g, ' ');
  const definitions = (n: ValueNode | null): boolean =>
    !!n && (n.kind === 'Map' || (n.kind === 'List' && n.items.some((i) => i.kind === 'Map' || i.kind === 'Item')));
  if (definitions(node)) {
    const items = node!.kind === 'List' ? node!.items : [];
    // Scalars beside definitions name entities declared elsewhere.
    for (const i of items) if (i.kind === 'Scalar' && i.value !== null) out.names.push(String(i.value));
    const defNode: ValueNode = node!.kind === 'List' ? { ...node!, items: items.filter((i) => i.kind !== 'Scalar') } : node!;
    for (const d of entries(ctx, defNode, what)) {
      out.defs.push(d);
      const p = d.fields.map.get('name');
      const n = p ? ctx.str(ctx.value(p), `${what} NAME`) : d.name;
      if (n) out.names.push(n);
    }
  } else out.names.push(...ctx.strList(node, what));
  intentEntityCache.set(e, out);
  return out;
}

function entity(ctx: CompileContext, e: Entry): NluEntityIR | null {
  const name = nameOf(ctx, e, 'NLU entity');
  ctx.extras(e.fields, ENTITY_KEYS, `NLU entity ${name ?? ''}`.trim());
  if (name === null) return null;
  const get = ctx.getter(e.fields);
  const typeNode = get('type');
  const written = ctx.str(typeNode, `NLU entity ${name} TYPE`);
  const type = written === null ? null : (TYPES[written.trim().toLowerCase()] ?? null);
  if (!typeNode || written === null) {
    ctx.report('E212', e.at, { what: `NLU entity ${name}`, key: 'TYPE' });
    return null;
  }
  if (type === null) {
    ctx.report('E211', typeNode.loc, { what: `NLU entity ${name} TYPE`, allowed: 'enum, pattern, number, date, location, free_text', value: written });
    return null;
  }
  const values = ctx.strList(get('values'), `NLU entity ${name} VALUES`);
  const synonyms = synonymsOf(ctx, get('synonyms'), name);
  const patternKey = e.fields.map.has('pattern') ? 'pattern' : 'regex';
  const patternNode = get(patternKey);
  const pattern = ctx.str(patternNode, `NLU entity ${name} ${patternKey.toUpperCase()}`);
  const loc = ctx.loc(e.at);
  if (type === 'enum') {
    if (values.length === 0) {
      ctx.report('E212', e.at, { what: `NLU entity ${name} (TYPE: enum)`, key: 'VALUES' });
      return null;
    }
    for (const canonical of Object.keys(synonyms)) {
      if (!values.includes(canonical)) {
        ctx.report('E860', e.fields.map.get('synonyms')!.loc, { what: `NLU entity ${name} SYNONYMS`, detail: `"${canonical}" is not one of its VALUES`, fix: `Add it to VALUES or key the synonyms by one of: ${values.join(', ')}.` });
      }
    }
  } else if (values.length > 0 || Object.keys(synonyms).length > 0) {
    ctx.report('W214', (e.fields.map.get('values') ?? e.fields.map.get('synonyms'))!.loc, { key: 'VALUES/SYNONYMS', where: `NLU entity ${name} (TYPE: ${written})`, known: 'TYPE: enum' });
  }
  if (type === 'pattern') {
    if (pattern === null || !patternNode) {
      ctx.report('E212', e.at, { what: `NLU entity ${name} (TYPE: pattern)`, key: 'PATTERN' });
      return null;
    }
    const problem = patternProblem(pattern);
    if (problem) {
      ctx.report(problem.kind === 'invalid' ? 'E307' : 'E310', patternNode.loc, { pattern, detail: problem.detail });
      return null;
    }
  } else if (patternNode) {
    ctx.report('W214', e.fields.map.get(patternKey)!.loc, { key: patternKey.toUpperCase(), where: `NLU entity ${name} (TYPE: ${written})`, known: 'TYPE: pattern' });
  }
  return {
    name,
    type,
    description: ctx.str(get('description'), `NLU entity ${name} DESCRIPTION`),
    values: type === 'enum' ? values : [],
    synonyms: type === 'enum' ? Object.fromEntries(Object.entries(synonyms).filter(([v]) => values.includes(v))) : {},
    pattern: type === 'pattern' ? pattern : null,
    loc,
  };
}

/** `SYNONYMS:` as `value: [a, b]` lines. */
function synonymsOf(ctx: CompileContext, node: ValueNode | null, name: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!node) return out;
  if (node.kind !== 'Map') {
    ctx.report('E210', node.loc, { what: `NLU entity ${name} SYNONYMS`, expected: 'value: [other, spellings] lines', found: describe(node) });
    return out;
  }
  for (const p of ctx.pairs(node, `NLU entity ${name} SYNONYMS`, 'value: [other, spellings] lines')) {
    out[p.key] = ctx.strList(ctx.value(p), `NLU entity ${name} SYNONYMS ${p.key}`);
  }
  return out;
}

/** The first of each name; a later one is E860. */
function unique<T extends { name: string; loc: IRLoc }>(ctx: CompileContext, list: readonly T[], what: string): T[] {
  const seen = new Map<string, number>();
  return list.filter((x) => {
    const first = seen.get(x.name);
    if (first === undefined) {
      seen.set(x.name, x.loc.line);
      return true;
    }
    ctx.report('E860', { line: x.loc.line, column: x.loc.column }, { what: `${what} ${x.name}`, detail: `it is declared twice (first on line ${first})`, fix: 'Rename or remove one of them.' });
    return false;
  });
}
