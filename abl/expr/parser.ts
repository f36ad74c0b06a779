// Recursive-descent expression parser for the ABL.md §4 grammar. Each method names its rule.

import { LIMITS } from '../source';
import type { BinaryOp, Expr } from './ast';
import { ExprSyntaxError, tokenize, type Token } from './lexer';

export interface ExprParseResult {
  ast: Expr | null;
  error: { message: string; pos: number } | null;
  /** Every function call, for the unknown-function and arity checks. */
  calls: Array<{ name: string; pos: number; argc: number }>;
  usesImplies: boolean;
}

const CMP_OPS: Record<string, BinaryOp> = { '==': '==', '!=': '!=', '>': '>', '<': '<', '>=': '>=', '<=': '<=' };

class ExprParser {
  private i = 0;
  private depth = 0;
  readonly calls: ExprParseResult['calls'] = [];
  usesImplies = false;

  constructor(private readonly tokens: Token[]) {}

  private get tok(): Token {
    return this.tokens[this.i] as Token;
  }

  private peek(n = 1): Token {
    return (this.tokens[this.i + n] ?? this.tokens[this.tokens.length - 1]) as Token;
  }

  private isWord(t: Token, word: string): boolean {
    return t.kind === 'ident' && t.value.toUpperCase() === word;
  }

  private isOp(t: Token, op: string): boolean {
    return t.kind === 'op' && t.value === op;
  }

  private expectOp(op: string): Token {
    const t = this.tok;
    if (!this.isOp(t, op)) throw new ExprSyntaxError(`expected "${op}" but found ${describe(t)}`, t.pos);
    this.i++;
    return t;
  }

  private enter(pos: number): void {
    if (++this.depth > LIMITS.maxExpressionDepth) throw new ExprSyntaxError(`nested deeper than ${LIMITS.maxExpressionDepth} levels`, pos);
  }

  /** Top := expr EOF */
  parseTop(): Expr {
    const e = this.expr();
    if (this.tok.kind !== 'eof') throw new ExprSyntaxError(`unexpected ${describe(this.tok)}`, this.tok.pos);
    return e;
  }

  /** expr := or ("IMPLIES" or)* */
  private expr(): Expr {
    let left = this.or();
    while (this.isWord(this.tok, 'IMPLIES')) {
      const pos = this.tok.pos;
      this.i++;
      this.usesImplies = true;
      left = { type: 'Binary', op: 'IMPLIES', left, right: this.or(), pos };
    }
    return left;
  }

  /** or := and ("OR" and)* */
  private or(): Expr {
    let left = this.and();
    while (this.isWord(this.tok, 'OR') || this.isOp(this.tok, '||')) {
      const pos = this.tok.pos;
      this.i++;
      left = { type: 'Binary', op: 'OR', left, right: this.and(), pos };
    }
    return left;
  }

  /** and := not ("AND" not)* */
  private and(): Expr {
    let left = this.not();
    while (this.isWord(this.tok, 'AND') || this.isOp(this.tok, '&&')) {
      const pos = this.tok.pos;
      this.i++;
      left = { type: 'Binary', op: 'AND', left, right: this.not(), pos };
    }
    return left;
  }

  /** not := "NOT" not | cmp */
  private not(): Expr {
    if (this.isWord(this.tok, 'NOT') || this.isOp(this.tok, '!')) {
      const pos = this.tok.pos;
      this.i++;
      this.enter(pos);
      const operand = this.not();
      this.depth--;
      return { type: 'Unary', op: 'NOT', operand, pos };
    }
    return this.cmp();
  }

  /** cmp := add ( cmpop add | "NOT"? ("IN" | "CONTAINS" | "MATCHES") add | "IS" "NOT"? "SET" )? */
  private cmp(): Expr {
    const left = this.add();
    const t = this.tok;
    const pos = t.pos;
    if (t.kind === 'op' && CMP_OPS[t.value]) {
      this.i++;
      return { type: 'Binary', op: CMP_OPS[t.value] as BinaryOp, left, right: this.add(), pos };
    }
    if (this.isWord(t, 'CONTAINS') || this.isWord(t, 'MATCHES')) {
      this.i++;
      return { type: 'Binary', op: t.value.toUpperCase() as BinaryOp, left, right: this.add(), pos };
    }
    if (this.isWord(t, 'IN')) {
      this.i++;
      return { type: 'In', negated: false, left, right: this.add(), pos };
    }
    // `x NOT CONTAINS y` / `x NOT MATCHES y`: the negation of the comparison.
    if (this.isWord(t, 'NOT') && (this.isWord(this.peek(), 'CONTAINS') || this.isWord(this.peek(), 'MATCHES'))) {
      const op = this.peek().value.toUpperCase() as BinaryOp;
      this.i += 2;
      return { type: 'Unary', op: 'NOT', operand: { type: 'Binary', op, left, right: this.add(), pos }, pos };
    }
    if (this.isWord(t, 'NOT') && this.isWord(this.peek(), 'IN')) {
      this.i += 2;
      return { type: 'In', negated: true, left, right: this.add(), pos };
    }
    if (this.isWord(t, 'IS')) {
      this.i++;
      let negated = false;
      if (this.isWord(this.tok, 'NOT')) {
        negated = true;
        this.i++;
      }
      if (!this.isWord(this.tok, 'SET')) throw new ExprSyntaxError(`expected SET after IS${negated ? ' NOT' : ''} but found ${describe(this.tok)}`, this.tok.pos);
      this.i++;
      return { type: 'IsSet', negated, operand: left, pos };
    }
    return left;
  }

  /** add := mul (("+"|"-") mul)* */
  private add(): Expr {
    let left = this.mul();
    while (this.isOp(this.tok, '+') || this.isOp(this.tok, '-')) {
      const t = this.tok;
      this.i++;
      left = { type: 'Binary', op: t.value as BinaryOp, left, right: this.mul(), pos: t.pos };
    }
    return left;
  }

  /** mul := unary (("*"|"/"|"%") unary)* */
  private mul(): Expr {
    let left = this.unary();
    while (this.isOp(this.tok, '*') || this.isOp(this.tok, '/') || this.isOp(this.tok, '%')) {
      const t = this.tok;
      this.i++;
      left = { type: 'Binary', op: t.value as BinaryOp, left, right: this.unary(), pos: t.pos };
    }
    return left;
  }

  /** unary := "-" unary | "EXISTS" postfix | "EMPTY" postfix | postfix */
  private unary(): Expr {
    const t = this.tok;
    if (this.isOp(t, '-')) {
      this.i++;
      this.enter(t.pos);
      const operand = this.unary();
      this.depth--;
      return { type: 'Unary', op: 'NEG', operand, pos: t.pos };
    }
    if ((this.isWord(t, 'EXISTS') || this.isWord(t, 'EMPTY')) && startsOperand(this.peek())) {
      this.i++;
      return { type: 'Unary', op: t.value.toUpperCase() as 'EXISTS' | 'EMPTY', operand: this.postfix(), pos: t.pos };
    }
    return this.postfix();
  }

  /** postfix := primary ("." ident | "[" expr "]" | "(" args? ")")* */
  private postfix(): Expr {
    let e = this.primary();
    for (;;) {
      const t = this.tok;
      if (this.isOp(t, '.')) {
        this.i++;
        const name = this.tok;
        if (name.kind !== 'ident' && name.kind !== 'num') throw new ExprSyntaxError(`expected a name after "." but found ${describe(name)}`, name.pos);
        this.i++;
        e = { type: 'Member', object: e, property: name.value, pos: t.pos };
      } else if (this.isOp(t, '[')) {
        this.i++;
        this.enter(t.pos);
        const index = this.expr();
        this.depth--;
        this.expectOp(']');
        e = { type: 'Index', object: e, index, pos: t.pos };
      } else if (this.isOp(t, '(')) {
        if (e.type !== 'Ident') throw new ExprSyntaxError('only named functions can be called', t.pos);
        this.i++;
        this.enter(t.pos);
        const args: Expr[] = [];
        if (!this.isOp(this.tok, ')')) {
          args.push(this.expr());
          while (this.isOp(this.tok, ',')) {
            this.i++;
            args.push(this.expr());
          }
        }
        this.depth--;
        this.expectOp(')');
        const name = e.name.toUpperCase();
        this.calls.push({ name, pos: e.pos, argc: args.length });
        e = { type: 'Call', name, args, pos: e.pos };
      } else return e;
    }
  }

  /** primary := number | string | /regex/ | true | false | null | ident | list | map | "(" expr ")" */
  private primary(): Expr {
    const t = this.tok;
    switch (t.kind) {
      case 'num':
        this.i++;
        return { type: 'Literal', value: t.num ?? 0, pos: t.pos };
      case 'str':
        this.i++;
        return { type: 'Literal', value: t.value, pos: t.pos };
      case 'regex':
        this.i++;
        return { type: 'Regex', pattern: t.value, flags: t.flags ?? '', pos: t.pos };
      case 'ident': {
        this.i++;
        const upper = t.value.toUpperCase();
        if (upper === 'TRUE') return { type: 'Literal', value: true, pos: t.pos };
        if (upper === 'FALSE') return { type: 'Literal', value: false, pos: t.pos };
        if (upper === 'NULL') return { type: 'Literal', value: null, pos: t.pos };
        if (RESERVED.has(upper) && !this.isOp(this.tok, '(')) throw new ExprSyntaxError(`unexpected keyword ${t.value}`, t.pos);
        return { type: 'Ident', name: t.value, pos: t.pos };
      }
      case 'op':
        if (t.value === '(') {
          this.i++;
          this.enter(t.pos);
          const e = this.expr();
          this.depth--;
          this.expectOp(')');
          return e;
        }
        if (t.value === '[') return this.list();
        if (t.value === '{') return this.map();
        throw new ExprSyntaxError(`unexpected ${describe(t)}`, t.pos);
      case 'eof':
        throw new ExprSyntaxError('unexpected end of expression', t.pos);
    }
  }

  /** list := "[" (expr ("," expr)*)? "]" */
  private list(): Expr {
    const open = this.expectOp('[');
    this.enter(open.pos);
    const items: Expr[] = [];
    while (!this.isOp(this.tok, ']')) {
      items.push(this.expr());
      if (!this.isOp(this.tok, ',')) break;
      this.i++;
    }
    this.depth--;
    this.expectOp(']');
    return { type: 'List', items, pos: open.pos };
  }

  /** map := "{" (ident (":" expr)?) ("," …)* "}" — `{a, b: x}` means `{a: a, b: x}` */
  private map(): Expr {
    const open = this.expectOp('{');
    this.enter(open.pos);
    const entries: Array<{ key: string; value: Expr }> = [];
    while (!this.isOp(this.tok, '}')) {
      const k = this.tok;
      if (k.kind !== 'ident' && k.kind !== 'str') throw new ExprSyntaxError(`expected a key but found ${describe(k)}`, k.pos);
      this.i++;
      let value: Expr = { type: 'Ident', name: k.value, pos: k.pos };
      if (this.isOp(this.tok, ':')) {
        this.i++;
        value = this.expr();
      }
      entries.push({ key: k.value, value });
      if (!this.isOp(this.tok, ',')) break;
      this.i++;
    }
    this.depth--;
    this.expectOp('}');
    return { type: 'Map', entries, pos: open.pos };
  }
}

const RESERVED = new Set(['AND', 'OR', 'NOT', 'IN', 'IS', 'IMPLIES']);

function startsOperand(t: Token): boolean {
  if (t.kind === 'num' || t.kind === 'str' || t.kind === 'regex') return true;
  if (t.kind === 'ident') return !RESERVED.has(t.value.toUpperCase()) && !/^(contains|matches)$/i.test(t.value);
  return t.value === '(' || t.value === '[' || t.value === '{';
}

function describe(t: Token): string {
  if (t.kind === 'eof') return 'the end of the expression';
  if (t.kind === 'str') return `the string "${t.value}"`;
  return `"${t.value}"`;
}

/** Parses an expression. Never throws. */
export function parseExpression(src: string): ExprParseResult {
  const calls: ExprParseResult['calls'] = [];
  try {
    const tokens = tokenize(src);
    const p = new ExprParser(tokens);
    const ast = p.parseTop();
    return { ast, error: null, calls: p.calls, usesImplies: p.usesImplies };
  } catch (e) {
    if (e instanceof ExprSyntaxError) return { ast: null, error: { message: e.message, pos: e.pos }, calls, usesImplies: false };
    return { ast: null, error: { message: 'internal parser error', pos: 0 }, calls, usesImplies: false };
  }
}
