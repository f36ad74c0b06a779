// The YAML agent format (`*.agent.yaml`): read with the `yaml` package and turned into the same
// block AST as the ABL text form, so one compiler gives both spellings the same IR.

import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, Scalar, type Node as YamlNode, type Pair as YamlPair } from 'yaml';
import type { DocumentKind, DocumentNode, EntryNode, ItemNode, ListNode, Loc, MapNode, PairNode, ScalarNode, SectionNode, ValueNode } from './ast';
import type { DiagnosticSink } from './diagnostics';
import { LIMITS, type Source } from './source';

/** True for the file names read as YAML agents. */
export function isYamlAgentPath(path: string): boolean {
  return /\.agent\.ya?ml$/i.test(path);
}

/**
 * True when agent source stored without a file name (an API draft) is the YAML format: its first
 * key, after blank lines, comments and a `---` marker, is a lower-case `agent:`, `supervisor:`,
 * `name:` or `kind:`. The ABL text form starts with AGENT: / SUPERVISOR: (lower-case ABL section
 * keys are a W205 warning anyway), so a YAML draft with a syntax error gets YAML diagnostics (E111).
 */
export function looksLikeYamlAgent(body: string): boolean {
  // Line by line up to the first key: the rest of a long source is never split or trimmed.
  for (let start = 0; start <= body.length; ) {
    const nl = body.indexOf('\n', start);
    const end = nl < 0 ? body.length : nl;
    const line = body.slice(start, end).trim();
    if (line !== '' && !line.startsWith('#') && line !== '---') return /^(agent|supervisor|name|kind)\s*:/.test(line);
    start = end + 1;
  }
  return false;
}

/**
 * Parses a YAML agent into the block AST. Never throws: problems are E111 (and E106 for size), and
 * a file that cannot be read as an agent at all gives null.
 */
export function parseYamlSource(source: Source, sink: DiagnosticSink): DocumentNode | null {
  const path = source.path;
  if (source.body.length > LIMITS.maxFileLength) {
    sink.report('E106', { path, line: 1, column: 1 }, { what: `File length (${source.body.length} characters)`, limit: LIMITS.maxFileLength });
    return null;
  }
  const lines = new LineCounter();
  const doc = parseDocument(source.body, { lineCounter: lines, uniqueKeys: true });
  const reader = new YamlReader(path, lines, sink);
  for (const e of doc.errors) {
    const at = e.linePos?.[0] ?? { line: 1, col: 1 };
    sink.report('E111', { path, line: at.line, column: at.col }, { detail: (e.message.split('\n')[0] ?? e.message).replace(/ at line \d+, column \d+:?$/, '') });
  }
  if (doc.errors.length > 0) return null;
  if (!isMap(doc.contents)) {
    if (doc.contents) sink.report('E111', { path, ...reader.loc(doc.contents) }, { detail: 'the document must be a map of sections (agent:, goal:, …)' });
    return null;
  }
  return reader.document(doc.contents.items);
}

class YamlReader {
  private depth = 0;

  constructor(
    private readonly path: string,
    private readonly lines: LineCounter,
    private readonly sink: DiagnosticSink,
  ) {}

  loc(node: YamlNode | YamlPair | null | undefined): Loc {
    const range = node && 'range' in node ? node.range : isPair(node) && node.key && typeof node.key === 'object' && 'range' in node.key ? (node.key as YamlNode).range : undefined;
    const pos = range ? this.lines.linePos(range[0]) : { line: 1, col: 1 };
    return { line: pos.line, column: pos.col };
  }

  /** Sections in file order, the `agent:`/`supervisor:` (or `name:` + `kind:`) header first. */
  document(items: YamlPair[]): DocumentNode {
    const sections: SectionNode[] = [];
    let header: SectionNode | null = null;
    let kindPair: YamlPair | null = null;
    for (const p of items) {
      const key = keyText(p);
      if (key.toLowerCase() === 'kind') {
        kindPair = p;
        continue;
      }
      const pair = this.pair(p, key);
      let upper = key.toUpperCase();
      if (upper === 'NAME' && !header) upper = 'AGENT';
      const section: SectionNode = { ...pair, key: upper, rawKey: upper };
      if (!header && (upper === 'AGENT' || upper === 'SUPERVISOR')) header = section;
      else if (upper === 'TOOLS') sections.push({ ...section, value: null, children: this.tools(p.value as YamlNode | null) });
      else sections.push(section);
    }
    if (header && kindPair && isScalar(kindPair.value) && String(kindPair.value.value).toLowerCase() === 'supervisor') header = { ...header, key: 'SUPERVISOR', rawKey: 'SUPERVISOR' };
    if (header) sections.unshift(header);
    const first = sections[0];
    const docKind: DocumentKind = first?.key === 'AGENT' ? 'agent' : first?.key === 'SUPERVISOR' ? 'supervisor' : 'unknown';
    const name = header && header.value?.kind === 'Scalar' && header.value.value !== null ? String(header.value.value) : null;
    return { kind: 'Document', path: this.path, docKind, name, sections, loc: { line: 1, column: 1 } };
  }

  private pair(p: YamlPair, key = keyText(p)): PairNode {
    const loc = this.loc(p.key as YamlNode);
    const v = p.value as YamlNode | null;
    if (v && (isMap(v) || isSeq(v)) && !v.flow) return { kind: 'Pair', key, value: null, children: this.value(v) as MapNode | ListNode, loc };
    return { kind: 'Pair', key, value: v ? this.value(v) : null, children: null, loc };
  }

  value(node: YamlNode): ValueNode {
    const loc = this.loc(node);
    if (++this.depth > LIMITS.maxDepth) {
      this.depth--;
      this.sink.report('E106', { path: this.path, ...loc }, { what: 'Nesting depth', limit: LIMITS.maxDepth });
      return { kind: 'Scalar', value: null, raw: '', quoted: false, loc };
    }
    try {
      if (isMap(node)) return { kind: 'Map', entries: node.items.map((p) => this.pair(p)), inline: node.flow === true, loc };
      if (isSeq(node)) return { kind: 'List', items: node.items.map((i) => (i ? this.value(i as YamlNode) : scalarOf(null, loc))), inline: node.flow === true, loc };
      if (isScalar(node)) {
        if (node.type === Scalar.BLOCK_LITERAL || node.type === Scalar.BLOCK_FOLDED) return { kind: 'Text', value: String(node.value).replace(/\n$/, ''), loc };
        const quoted = node.type === Scalar.QUOTE_DOUBLE || node.type === Scalar.QUOTE_SINGLE;
        return scalarOf(node.value as ScalarNode['value'], loc, quoted, node.source);
      }
      this.sink.report('E111', { path: this.path, ...loc }, { detail: 'aliases and tags are not supported' });
      return scalarOf(null, loc);
    } finally {
      this.depth--;
    }
  }

  /**
   * `tools:` is a list of `- name:` objects (`description`, `parameters`, `returns`, binding keys) and
   * imports (`- from: "../tools/x.tools.abl"` + `use: [a, b]`, or `- file: …`). Each tool becomes the
   * ABL signature line `name(p: type = default) -> Returns` with its other keys below it.
   */
  private tools(node: YamlNode | null): MapNode | ListNode | null {
    if (!node) return null;
    if (!isSeq(node)) return this.value(node) as MapNode;
    const entries: EntryNode[] = [];
    for (const item of node.items) {
      const loc = this.loc(item as YamlNode);
      if (!isMap(item)) {
        if (isScalar(item)) entries.push({ kind: 'Item', head: scalarOf(String(item.value), loc), children: null, loc });
        else this.sink.report('E111', { path: this.path, ...loc }, { detail: 'a tools entry must be "- name: …" with its properties' });
        continue;
      }
      const props = new Map(item.items.map((p) => [keyText(p).toLowerCase(), p] as const));
      const from = props.get('from');
      if (from && isScalar(from.value)) {
        const use = props.get('use');
        entries.push({ kind: 'Pair', key: `FROM "${String(from.value.value)}" USE`, value: use?.value ? this.value(use.value as YamlNode) : null, children: null, loc });
        continue;
      }
      const file = props.get('file');
      if (file && !props.has('name') && isScalar(file.value)) {
        entries.push({ kind: 'Pair', key: 'file', value: this.value(file.value), children: null, loc });
        continue;
      }
      entries.push(this.tool(item.items, props, loc));
    }
    return { kind: 'Map', entries, inline: false, loc: this.loc(node) };
  }

  private tool(items: YamlPair[], props: Map<string, YamlPair>, loc: Loc): ItemNode {
    const nameNode = props.get('name')?.value;
    const name = isScalar(nameNode) ? String(nameNode.value) : '';
    if (!name) this.sink.report('E111', { path: this.path, ...loc }, { detail: 'a tool needs "name:"' });
    const params: string[] = [];
    const described: PairNode[] = [];
    const paramsNode = props.get('parameters')?.value as YamlNode | undefined;
    const param = (pname: string, spec: YamlNode | null, at: Loc): void => {
      if (spec && isMap(spec)) {
        const sp = new Map(spec.items.map((p) => [keyText(p).toLowerCase(), p] as const));
        const type = typeText(sp.get('type')?.value as YamlNode | undefined) ?? 'any';
        const required = sp.get('required')?.value;
        const def = sp.get('default')?.value;
        const optional = isScalar(required) && required.value === false && !def;
        params.push(`${pname}${optional ? '?' : ''}: ${type}${def && isScalar(def) ? ` = ${literal(def)}` : ''}`);
        const desc = sp.get('description');
        if (desc) described.push({ kind: 'Pair', key: pname, value: null, children: { kind: 'Map', entries: [this.pair(desc)], inline: false, loc: at }, loc: at });
      } else params.push(`${pname}: ${typeText(spec ?? undefined) ?? 'any'}`);
    };
    if (paramsNode && isMap(paramsNode)) for (const p of paramsNode.items) param(keyText(p), p.value as YamlNode | null, this.loc(p.key as YamlNode));
    else if (paramsNode && isSeq(paramsNode)) {
      for (const p of paramsNode.items) {
        const pn = isMap(p) ? p.items.find((x) => keyText(x).toLowerCase() === 'name')?.value : null;
        if (isMap(p) && isScalar(pn)) param(String(pn.value), p, this.loc(p));
        else this.sink.report('E111', { path: this.path, ...this.loc(p as YamlNode) }, { detail: 'a parameter in a list needs "name:"' });
      }
    } else if (paramsNode) this.sink.report('E111', { path: this.path, ...this.loc(paramsNode) }, { detail: 'parameters must be a map (name: type) or a list of - name: entries' });
    const returnsNode = props.get('returns')?.value as YamlNode | undefined;
    const returns = returnsNode ? typeText(returnsNode) : null;
    const signature = `${name}(${params.join(', ')})${returns ? ` -> ${returns}` : ''}`;
    const rest: EntryNode[] = items.filter((p) => !['name', 'parameters', 'returns'].includes(keyText(p).toLowerCase())).map((p) => this.pair(p));
    if (described.length > 0) rest.push({ kind: 'Pair', key: 'parameters', value: null, children: { kind: 'Map', entries: described, inline: false, loc }, loc });
    return { kind: 'Item', head: scalarOf(signature, loc), children: rest.length > 0 ? { kind: 'Map', entries: rest, inline: false, loc } : null, loc };
  }
}

function keyText(p: YamlPair): string {
  const k = p.key as unknown;
  return isScalar(k) ? String(k.value) : String(k ?? '');
}

function scalarOf(value: ScalarNode['value'], loc: Loc, quoted = false, source?: string): ScalarNode {
  const raw = quoted ? JSON.stringify(String(value)) : (source ?? (value === null ? '' : String(value)));
  return { kind: 'Scalar', value, raw, quoted, loc };
}

/** A parameter default as ABL writes it. */
function literal(node: Scalar): string {
  return typeof node.value === 'string' ? JSON.stringify(node.value) : String(node.value);
}

/** A type written as a string (`Reward[]`), or a map of field → type (nested maps are objects). */
function typeText(node: YamlNode | undefined): string | null {
  if (!node) return null;
  if (isScalar(node)) return node.value === null ? null : String(node.value);
  if (isMap(node)) {
    const fields = node.items.map((p) => {
      const v = p.value as YamlNode | null;
      const spec = v && isMap(v) && v.items.some((x) => keyText(x).toLowerCase() === 'type') ? typeText(v.items.find((x) => keyText(x).toLowerCase() === 'type')?.value as YamlNode) : typeText(v ?? undefined);
      return `${keyText(p)}: ${spec ?? 'any'}`;
    });
    return `{${fields.join(', ')}}`;
  }
  if (isSeq(node) && node.items.length === 1) {
    const of = typeText(node.items[0] as YamlNode);
    return of ? `${of}[]` : null;
  }
  return null;
}
