// Line scanner: turns ABL text into logical lines (indent, text without comments) and
// captures `key: |` pipe blocks verbatim. The block parser consumes its output.

import { type DiagnosticSink } from './diagnostics';
import { LIMITS, type Source } from './source';

export interface ScannedLine {
  /** Indent in columns (a tab counts as 2). */
  indent: number;
  /** Text after the indent, comment stripped, trailing blanks removed. */
  text: string;
  /** 1-based line number. */
  line: number;
  /** For `key: |` lines: the captured block (common indent stripped). */
  pipe?: { text: string };
}

const PIPE_OPENER = /:\s*[|>][-+]?$/;

/** True when a quote at `i` opens a string: at start, or after a blank or an opening punctuator. */
export function opensQuote(text: string, i: number): boolean {
  if (i === 0) return true;
  const prev = text.charCodeAt(i - 1);
  // : [ { ( , = or a blank (`\s`: ASCII blanks answered here, the rest by the regex).
  if (prev === 58 || prev === 91 || prev === 123 || prev === 40 || prev === 44 || prev === 61 || prev === 32 || (prev >= 9 && prev <= 13)) return true;
  return prev > 127 && /\s/.test(text[i - 1] as string);
}

/** Removes a trailing `# comment` (a `#` after whitespace, outside quotes and `{{ }}`). */
/**
 * Calls `visit` for each character outside quoted strings and `{{ }}` templates, with its index;
 * stops when `visit` returns true and gives that index (else -1).
 */
function scanCode(text: string, visit: (c: string, i: number) => boolean | void): number {
  let quote: string | null = null;
  let templates = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if ((c === '"' || c === "'") && opensQuote(text, i)) quote = c;
    else if (c === '{' && text[i + 1] === '{') {
      templates++;
      i++;
    } else if (c === '}' && text[i + 1] === '}' && templates > 0) {
      templates--;
      i++;
    } else if (templates === 0 && visit(c, i)) return i;
  }
  return -1;
}

export function stripComment(text: string): string {
  if (!text.includes('#')) return text.trimEnd();
  const at = scanCode(text, (c, i) => c === '#' && (i === 0 || /\s/.test(text[i - 1] ?? '')));
  return (at < 0 ? text : text.slice(0, at)).trimEnd();
}

function measureIndent(raw: string): { indent: number; offset: number; tabs: boolean } {
  let indent = 0;
  let offset = 0;
  let tabs = false;
  while (offset < raw.length) {
    const c = raw[offset];
    if (c === ' ') indent += 1;
    else if (c === '\t') {
      indent += 2;
      tabs = true;
    } else break;
    offset++;
  }
  return { indent, offset, tabs };
}

/** Splits a source into logical lines. Never throws; reports W101 (tabs) and E106 (size). */
export function scanLines(source: Source, sink: DiagnosticSink): ScannedLine[] {
  const path = source.path;
  let body = source.body;
  if (body.length > LIMITS.maxFileLength) {
    sink.report('E106', { path, line: 1, column: 1 }, { what: `File length (${body.length} characters)`, limit: LIMITS.maxFileLength });
    body = body.slice(0, LIMITS.maxFileLength);
  }
  const raws = body.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  const out: ScannedLine[] = [];
  let tabWarned = false;
  for (let i = 0; i < raws.length; i++) {
    if (out.length >= LIMITS.maxLines) {
      sink.report('E106', { path, line: i + 1, column: 1 }, { what: 'Number of lines', limit: LIMITS.maxLines });
      break;
    }
    const raw = raws[i] ?? '';
    const { indent, offset, tabs } = measureIndent(raw);
    const content = raw.slice(offset);
    const lead = content.charCodeAt(0);
    // A printable ASCII lead is not blank: only other leads need the trim to tell.
    if (lead === 35 || (!(lead > 32 && lead < 127) && content.trim() === '')) continue; // '#' or blank
    if (tabs && !tabWarned) {
      tabWarned = true;
      sink.report('W101', { path, line: i + 1, column: 1 });
    }
    const lineNo = i + 1;
    let text = stripComment(content);
    // `-> {` + field lines + `}` (any line that ends by opening a bracket it does not close): one logical line.
    if (/[[({]$/.test(text) && !text.endsWith('{{') && bracketDepth(text) > 0) {
      const joined = joinContinuation(text, raws, i);
      text = joined.text;
      i = joined.last;
    }
    const scanned: ScannedLine = { indent, text, line: lineNo };
    if (PIPE_OPENER.test(text)) {
      // Capture every following line that is blank or indented deeper, verbatim.
      const block: Array<{ indent: number; text: string }> = [];
      let j = i + 1;
      for (; j < raws.length; j++) {
        const r = raws[j] ?? '';
        const m = measureIndent(r);
        const rest = r.slice(m.offset);
        if (rest.trim() === '') {
          block.push({ indent: Number.MAX_SAFE_INTEGER, text: '' });
          continue;
        }
        if (m.indent <= indent) break;
        block.push({ indent: m.indent, text: rest.trimEnd() });
      }
      while (block.length > 0 && block[block.length - 1]?.text === '') block.pop();
      j = i + 1 + block.length;
      const common = Math.min(...block.filter((b) => b.text !== '').map((b) => b.indent), Number.MAX_SAFE_INTEGER);
      scanned.pipe = {
        text: block.map((b) => (b.text === '' ? '' : ' '.repeat(b.indent - common) + b.text)).join('\n'),
      };
      i = j - 1;
    }
    out.push(scanned);
  }
  return out;
}

/** Open `( [ {` minus closed ones, outside quotes and `{{ }}`. */
function bracketDepth(text: string): number {
  let depth = 0;
  scanCode(text, (c) => {
    if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
  });
  return depth;
}

/** Max lines one bracketed value may span. */
const MAX_CONTINUATION = 200;

/**
 * Appends the lines after `start` until the brackets balance. Line breaks become ", " between
 * two entries (`name: string` / `amount: number`) and " " next to a bracket or a written comma.
 */
function joinContinuation(first: string, raws: string[], start: number): { text: string; last: number } {
  let text = first;
  let j = start + 1;
  for (; j < raws.length && j <= start + MAX_CONTINUATION; j++) {
    const piece = stripComment((raws[j] ?? '').trim());
    if (piece === '' || piece.startsWith('#')) continue;
    const glue = /[[({,]$/.test(text) || /^[\])}]/.test(piece) ? ' ' : ', ';
    text += glue + piece;
    if (bracketDepth(text) <= 0) return { text, last: j };
  }
  return { text: first, last: start }; // never closed: leave it to the readers to report
}

/**
 * Splits a list at its top-level commas: commas inside quotes or brackets stay. With
 * `angleBrackets`, `<…>` nests too (type lists such as `nullable<T>`); expressions leave it off,
 * since `<` compares there.
 */
export function splitTopLevel(text: string, options: { angleBrackets?: boolean } = {}): string[] {
  const open = options.angleBrackets ? '([{<' : '([{';
  const close = options.angleBrackets ? ')]}>' : ')]}';
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'") quote = c;
    else if (open.includes(c)) depth++;
    else if (close.includes(c)) depth--;
    else if (c === ',' && depth === 0) {
      out.push(text.slice(last, i));
      last = i + 1;
    }
  }
  if (text.slice(last).trim() !== '') out.push(text.slice(last));
  return out;
}
