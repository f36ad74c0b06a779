// Indentation-based block parser (ABL.md §2): scanned lines → Document AST with `loc` everywhere.
// Recovers from errors (reporting them) so one typo does not hide the rest of the file.

import type {
  BlockNode,
  DocumentKind,
  DocumentNode,
  EntryNode,
  ItemNode,
  ListNode,
  Loc,
  MapNode,
  PairNode,
  ScalarNode,
  SectionNode,
  ValueNode,
} from './ast';
import { DiagnosticSink, type Diagnostic } from './diagnostics';
import { opensQuote, scanLines, type ScannedLine } from './lexer';
import { createSource, LIMITS, type Source } from './source';

export interface ParseResult {
  document: DocumentNode;
  diagnostics: Diagnostic[];
}

/** Parses one ABL file. Never throws: problems come back as diagnostics. */
export function parse(source: string, path: string): ParseResult {
  const sink = new DiagnosticSink();
  const document = parseSource(createSource(source, path), sink);
  return { document, diagnostics: sink.list };
}

/** Parses a Source, reporting into a shared sink. */
export function parseSource(source: Source, sink: DiagnosticSink): DocumentNode {
  const lines = scanLines(source, sink);
  return new BlockParser(source.path, lines, sink).parseDocument();
}

/** Splits `key: rest` at the first `:` outside quotes and brackets that is followed by a blank or the end. */
export function splitKey(text: string): { key: string; rest: string; restOffset: number } | null {
  const first = text[0];
  if (first === undefined || first === '[' || first === '{' || first === '-' && text[1] === ' ') return null;
  let quote: string | null = null;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if ((c === '"' || c === "'") && opensQuote(text, i)) quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth = Math.max(0, depth - 1);
    else if (c === ':' && depth === 0) {
      const next = text[i + 1];
      if (next === undefined || next === ' ' || next === '\t') {
        const key = text.slice(0, i).trim();
        if (key === '' || key.includes('{{')) return null;
        let restOffset = i + 1;
        while (text[restOffset] === ' ' || text[restOffset] === '\t') restOffset++;
        return { key, rest: text.slice(restOffset), restOffset };
      }
    }
  }
  return null;
}

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

function unquote(raw: string): string | null {
  const q = raw[0];
  if ((q !== '"' && q !== "'") || raw.length < 2 || raw[raw.length - 1] !== q) return null;
  const inner = raw.slice(1, -1);
  // Without a backslash the text is the inner part as is, unless a quote closes early.
  if (!inner.includes('\\')) return inner.includes(q) ? null : inner;
  let out = '';
  for (let i = 1; i < raw.length - 1; i++) {
    const c = raw[i] as string;
    if (c === '\\' && i + 1 < raw.length - 1) {
      const n = raw[++i] as string;
      out += n === 'n' ? '\n' : n === 't' ? '\t' : n === 'r' ? '\r' : n === q || n === '\\' ? n : `\\${n}`;
    } else if (c === q) {
      return null; // quote closes early: `"a" + "b"` is not one string
    } else out += c;
  }
  return out;
}

/** Reads a scalar: quoted string, number, true/false/null, or bare text. */
export function scalar(raw: string, loc: Loc): ScalarNode {
  const text = raw.trim();
  const s = unquote(text);
  if (s !== null) return { kind: 'Scalar', value: s, raw: text, quoted: true, loc };
  let value: ScalarNode['value'] = text;
  if (NUMBER.test(text)) value = Number(text);
  else if (/^true$/i.test(text)) value = true;
  else if (/^false$/i.test(text)) value = false;
  else if (/^null$/i.test(text)) value = null;
  return { kind: 'Scalar', value, raw: text, quoted: false, loc };
}

/** Reader for inline `[..]` / `{..}` values. */
class InlineReader {
  pos = 0;
  constructor(
    private readonly text: string,
    private readonly loc: Loc,
    private readonly fail: (detail: string, column: number) => void,
  ) {}

  private at(offset: number): Loc {
    return { line: this.loc.line, column: this.loc.column + offset };
  }

  private skip(): void {
    while (this.text[this.pos] === ' ' || this.text[this.pos] === '\t') this.pos++;
  }

  value(depth: number): ValueNode {
    this.skip();
    const c = this.text[this.pos];
    if (depth > LIMITS.maxDepth) {
      this.fail('nested too deeply', this.pos);
      this.pos = this.text.length;
      return scalar('', this.at(this.pos));
    }
    if (c === '[') return this.list(depth);
    if (c === '{' && this.text[this.pos + 1] !== '{') return this.map(depth);
    return this.atom(false);
  }

  private atom(inMapKey: boolean): ScalarNode {
    this.skip();
    const start = this.pos;
    const q = this.text[this.pos];
    if ((q === '"' || q === "'") ) {
      this.pos++;
      while (this.pos < this.text.length && this.text[this.pos] !== q) {
        if (this.text[this.pos] === '\\') this.pos++;
        this.pos++;
      }
      if (this.pos >= this.text.length) this.fail('unterminated string', start);
      this.pos++;
      return scalar(this.text.slice(start, this.pos), this.at(start));
    }
    let depth = 0;
    while (this.pos < this.text.length) {
      const c = this.text[this.pos];
      if (c === '(' || (c === '{' && this.text[this.pos + 1] === '{')) depth++;
      if (c === ')' || (c === '}' && this.text[this.pos + 1] === '}' && depth > 0)) {
        depth = Math.max(0, depth - 1);
        if (c === '}') this.pos++;
      } else if (depth === 0 && (c === ',' || c === ']' || c === '}' || (inMapKey && c === ':'))) break;
      this.pos++;
    }
    return scalar(this.text.slice(start, this.pos), this.at(start));
  }

  private list(depth: number): ListNode {
    const start = this.pos++;
    const items: ValueNode[] = [];
    for (;;) {
      this.skip();
      if (this.text[this.pos] === ']') {
        this.pos++;
        break;
      }
      if (this.pos >= this.text.length) {
        this.fail('missing "]"', start);
        break;
      }
      const item = this.value(depth + 1);
      if (!(item.kind === 'Scalar' && item.raw === '')) items.push(item);
      this.skip();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== ']' && this.pos < this.text.length) {
        this.fail(`unexpected "${this.text[this.pos]}"`, this.pos);
        this.pos++;
      }
    }
    return { kind: 'List', items, inline: true, loc: this.at(start) };
  }

  private map(depth: number): MapNode {
    const start = this.pos++;
    const entries: EntryNode[] = [];
    for (;;) {
      this.skip();
      if (this.text[this.pos] === '}') {
        this.pos++;
        break;
      }
      if (this.pos >= this.text.length) {
        this.fail('missing "}"', start);
        break;
      }
      const key = this.atom(true);
      this.skip();
      let value: ValueNode | null = null;
      if (this.text[this.pos] === ':') {
        this.pos++;
        value = this.value(depth + 1);
      }
      const name = typeof key.value === 'string' ? key.value : key.raw;
      if (name !== '') {
        // `{a}` is shorthand for `{a: a}`
        entries.push({ kind: 'Pair', key: name, value: value ?? key, children: null, loc: key.loc });
      }
      this.skip();
      if (this.text[this.pos] === ',') this.pos++;
      else if (this.text[this.pos] !== '}' && this.pos < this.text.length) {
        this.fail(`unexpected "${this.text[this.pos]}"`, this.pos);
        this.pos++;
      }
    }
    return { kind: 'Map', entries, inline: true, loc: this.at(start) };
  }
}

/**
 * True when the quote opening `text` is closed before any line break: what
 * /^(["'])(?:\\.|(?!\1).)*\1/ answers (a backslash may stand for itself, so the first quote
 * character after the opening one closes it; `.` stops at a line terminator).
 */
function closesOnLine(text: string): boolean {
  const q = text.charCodeAt(0);
  for (let i = 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === q) return true;
    if (c === 10 || c === 13 || c === 0x2028 || c === 0x2029) return false;
  }
  return false;
}

/** True when `text` is one balanced inline collection (so `{a} -> x` stays a plain string). */
function isWholeCollection(text: string): boolean {
  const open = text[0];
  if (open !== '[' && !(open === '{' && text[1] !== '{')) return false;
  let depth = 0;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if ((c === '"' || c === "'") && opensQuote(text, i)) quote = c;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') {
      depth--;
      if (depth === 0) return i === text.length - 1;
    }
  }
  return true; // unbalanced: let the reader report it
}

class BlockParser {
  private depth = 0;

  constructor(
    private readonly path: string,
    private readonly lines: ScannedLine[],
    private readonly sink: DiagnosticSink,
  ) {}

  private report(code: 'E100' | 'E102' | 'E103' | 'E104' | 'E105' | 'E106' | 'E109', loc: Loc, args: Record<string, string | number> = {}): void {
    this.sink.report(code, { path: this.path, ...loc }, args);
  }

  /** Document := Section* ; Section := KEYWORD ":" value? Block? at column 1. */
  parseDocument(): DocumentNode {
    const sections: SectionNode[] = [];
    let i = 0;
    while (i < this.lines.length) {
      const line = this.lines[i] as ScannedLine;
      const loc = { line: line.line, column: line.indent + 1 };
      const end = this.childEnd(i, line.indent);
      const pair = line.indent === 0 ? splitKey(line.text) : null;
      if (!pair) {
        this.report('E105', loc, { text: line.text.length > 40 ? `${line.text.slice(0, 40)}…` : line.text });
        // Skip the line and anything nested under it.
        i = line.indent === 0 ? end : i + 1;
        continue;
      }
      const node = this.pairFrom(line, pair, i, end);
      // The pair's fields in their order, then rawKey (what `{ ...node, rawKey, key }` makes, without the spread).
      sections.push({ kind: node.kind, key: node.key.toUpperCase(), value: node.value, children: node.children, loc: node.loc, rawKey: node.key });
      i = end;
    }
    const first = sections[0];
    const head = first?.key;
    const docKind: DocumentKind = head === 'AGENT' ? 'agent' : head === 'SUPERVISOR' ? 'supervisor' : head === 'TOOLS' ? 'tools' : 'unknown';
    const name =
      (docKind === 'agent' || docKind === 'supervisor') && first?.value?.kind === 'Scalar' && first.value.value !== null
        ? String(first.value.value)
        : null;
    return { kind: 'Document', path: this.path, docKind, name, sections, loc: { line: 1, column: 1 } };
  }

  /** Index of the first line after `start` whose indent is ≤ `indent`. */
  private childEnd(start: number, indent: number): number {
    let j = start + 1;
    while (j < this.lines.length && (this.lines[j] as ScannedLine).indent > indent) j++;
    return j;
  }

  /** Pair := key ":" (inline | "|" text)? children? ; children are lines (start, end). */
  private pairFrom(line: ScannedLine, pair: { key: string; rest: string; restOffset: number }, start: number, end: number): PairNode {
    const loc = { line: line.line, column: line.indent + 1 };
    const valueLoc = { line: line.line, column: line.indent + 1 + pair.restOffset };
    let value: ValueNode | null = null;
    if (line.pipe) value = { kind: 'Text', value: line.pipe.text, loc: valueLoc };
    else if (pair.rest !== '') value = this.inlineValue(pair.rest, valueLoc);
    const children = end > start + 1 ? this.parseBlock(start + 1, end) : null;
    return { kind: 'Pair', key: pair.key, value, children, loc };
  }

  /** InlineValue := "[" … "]" | "{" … "}" | scalar. */
  private inlineValue(text: string, loc: Loc): ValueNode {
    if (isWholeCollection(text)) {
      let failed = false;
      const reader = new InlineReader(text, loc, (detail, offset) => {
        if (failed) return;
        failed = true;
        const at = { line: loc.line, column: loc.column + offset };
        if (detail.startsWith('missing')) this.report('E103', at, { kind: text[0] === '[' ? 'list' : 'map', close: text[0] === '[' ? ']' : '}' });
        else if (detail === 'unterminated string') this.report('E102', at, { quote: text[offset] ?? '"' });
        else this.report('E109', at, { kind: text[0] === '[' ? 'list' : 'map', detail });
      });
      return reader.value(0);
    }
    const q = text[0];
    if ((q === '"' || q === "'") && !closesOnLine(text)) {
      this.report('E102', loc, { quote: q });
    }
    return scalar(text, loc);
  }

  /** Block := (ListItem+ | (Pair | BareLine)+) at one indent; lines [start, end) are all deeper than the owner. */
  private parseBlock(start: number, end: number): BlockNode {
    const firstLine = this.lines[start] as ScannedLine;
    const loc = { line: firstLine.line, column: firstLine.indent + 1 };
    if (++this.depth > LIMITS.maxDepth) {
      this.report('E106', loc, { what: 'Nesting depth', limit: LIMITS.maxDepth });
      this.depth--;
      return { kind: 'Map', entries: [], inline: false, loc };
    }
    const indent = firstLine.indent;
    const items: ValueNode[] = [];
    const entries: EntryNode[] = [];
    let mixedReported = false;
    let i = start;
    while (i < end) {
      const line = this.lines[i] as ScannedLine;
      if (line.indent !== indent) {
        this.report('E100', { line: line.line, column: line.indent + 1 }, { column: line.indent + 1, expected: indent + 1 });
      }
      const next = this.childEnd(i, Math.max(line.indent, indent));
      const isItem = line.text === '-' || line.text.startsWith('- ');
      if (isItem) items.push(this.listItem(line, i, next));
      else {
        const pair = splitKey(line.text);
        if (pair) entries.push(this.pairFrom(line, pair, i, next));
        else entries.push(this.bareLine(line, i, next));
      }
      if (items.length > 0 && entries.length > 0 && !mixedReported) {
        mixedReported = true;
        this.report('E104', { line: line.line, column: line.indent + 1 });
      }
      i = next;
    }
    this.depth--;
    if (items.length > 0 && items.length >= entries.length) return { kind: 'List', items, inline: false, loc };
    return { kind: 'Map', entries, inline: false, loc };
  }

  /** BareLine := text children? → Item{head, children}. */
  private bareLine(line: ScannedLine, start: number, end: number): ItemNode {
    const loc = { line: line.line, column: line.indent + 1 };
    const children = end > start + 1 ? this.parseBlock(start + 1, end) : null;
    return { kind: 'Item', head: scalar(line.text, loc), children, loc };
  }

  /**
   * ListItem := "-" (scalar | pair) deeper-lines?
   * `- k: v` + lines at k's column → a map; `- head` + deeper lines → Item{head, children}.
   */
  private listItem(line: ScannedLine, start: number, end: number): ValueNode {
    const after = line.text.slice(1);
    const pad = after.length - after.trimStart().length;
    const content = after.trimStart();
    const contentIndent = line.indent + 1 + pad;
    const loc = { line: line.line, column: contentIndent + 1 };
    const hasChildren = end > start + 1;
    if (content === '') {
      return hasChildren ? this.parseBlock(start + 1, end) : scalar('', loc);
    }
    const pair = content.startsWith('- ') ? null : splitKey(content);
    if (!pair) {
      if (!hasChildren) return this.inlineValue(content, loc);
      return { kind: 'Item', head: scalar(content, loc), children: this.parseBlock(start + 1, end), loc };
    }
    // Re-parse the item as a block whose first line is the head pair at the content column.
    const saved = this.lines[start] as ScannedLine;
    const virtual: ScannedLine = { indent: contentIndent, text: content, line: line.line, ...(saved.pipe ? { pipe: saved.pipe } : {}) };
    this.lines[start] = virtual;
    // Children shallower than the content column are siblings of the head pair.
    const shifted: Array<[number, number]> = [];
    for (let j = start + 1; j < end; j++) {
      const l = this.lines[j] as ScannedLine;
      if (l.indent < contentIndent) {
        shifted.push([j, l.indent]);
        this.lines[j] = { ...l, indent: contentIndent };
      }
    }
    const block = this.parseBlock(start, end);
    this.lines[start] = saved;
    for (const [j, ind] of shifted) this.lines[j] = { ...(this.lines[j] as ScannedLine), indent: ind };
    return block;
  }
}
