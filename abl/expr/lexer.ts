// Expression tokenizer: numbers, strings, /regex/, identifiers and operators, with a token cap.

import { LIMITS } from '../source';

export type TokenKind = 'num' | 'str' | 'regex' | 'ident' | 'op' | 'eof';

export interface Token {
  kind: TokenKind;
  /** Text for ident/op; decoded value for str; pattern for regex. */
  value: string;
  num?: number;
  flags?: string;
  pos: number;
}

export class ExprSyntaxError {
  constructor(
    readonly message: string,
    readonly pos: number,
  ) {}
}

const OPERATORS = ['==', '!=', '>=', '<=', '&&', '||', '>', '<', '+', '-', '*', '/', '%', '(', ')', '[', ']', '{', '}', ',', '.', ':', '!'];

function endsOperand(t: Token | undefined): boolean {
  if (!t) return false;
  if (t.kind === 'num' || t.kind === 'str' || t.kind === 'regex') return true;
  if (t.kind === 'ident') return !/^(and|or|not|in|is|implies|contains|matches|exists|empty)$/i.test(t.value);
  return t.value === ')' || t.value === ']' || t.value === '}';
}

/** Tokenizes an expression. Throws ExprSyntaxError (caught by the parser). */
export function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    if (out.length > LIMITS.maxExpressionTokens) throw new ExprSyntaxError(`more than ${LIMITS.maxExpressionTokens} tokens`, i);
    const c = src[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] ?? '') && !endsOperand(out[out.length - 1]))) {
      // After a ".", `match.1.x` is a path: read digits only.
      const afterDot = out[out.length - 1]?.value === '.' && out[out.length - 1]?.kind === 'op';
      const m = (afterDot ? /^\d+/ : /^(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?/).exec(src.slice(i));
      const text = m ? m[0] : c;
      out.push({ kind: 'num', value: text, num: Number(text), pos: start });
      i += text.length;
      continue;
    }
    if (/[A-Za-z_@$]/.test(c)) {
      const m = /^[A-Za-z_@$][A-Za-z0-9_]*/.exec(src.slice(i)) as RegExpExecArray;
      out.push({ kind: 'ident', value: m[0], pos: start });
      i += m[0].length;
      continue;
    }
    if (c === '"' || c === "'") {
      let value = '';
      i++;
      for (;;) {
        if (i >= src.length) throw new ExprSyntaxError('unterminated string', start);
        const d = src[i] as string;
        if (d === c) break;
        if (d === '\\') {
          const n = src[i + 1] ?? '';
          value += n === 'n' ? '\n' : n === 't' ? '\t' : n === 'r' ? '\r' : n;
          i += 2;
          continue;
        }
        value += d;
        i++;
      }
      i++;
      out.push({ kind: 'str', value, pos: start });
      continue;
    }
    if (c === '/' && !endsOperand(out[out.length - 1])) {
      let j = i + 1;
      let inClass = false;
      let pattern = '';
      for (;;) {
        if (j >= src.length) throw new ExprSyntaxError('unterminated regular expression', start);
        const d = src[j] as string;
        if (d === '\\') {
          pattern += d + (src[j + 1] ?? '');
          j += 2;
          continue;
        }
        if (d === '[') inClass = true;
        else if (d === ']') inClass = false;
        else if (d === '/' && !inClass) break;
        pattern += d;
        j++;
      }
      j++;
      const fm = /^[gimsuy]*/.exec(src.slice(j)) as RegExpExecArray;
      out.push({ kind: 'regex', value: pattern, flags: fm[0], pos: start });
      i = j + fm[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExprSyntaxError(`unexpected character "${c}"`, i);
    out.push({ kind: 'op', value: op, pos: start });
    i += op.length;
  }
  out.push({ kind: 'eof', value: '', pos: src.length });
  return out;
}
