// Expression AST (ABL.md §4). Plain JSON; `pos` is the 0-based offset in the expression source.

export type BinaryOp =
  | '+' | '-' | '*' | '/' | '%'
  | '==' | '!=' | '>' | '<' | '>=' | '<='
  | 'CONTAINS' | 'MATCHES'
  | 'AND' | 'OR' | 'IMPLIES';

export type UnaryOp = 'NEG' | 'NOT' | 'EXISTS' | 'EMPTY';

export type Expr =
  | { type: 'Literal'; value: string | number | boolean | null; pos: number }
  | { type: 'Regex'; pattern: string; flags: string; pos: number }
  | { type: 'Ident'; name: string; pos: number }
  | { type: 'Member'; object: Expr; property: string; pos: number }
  | { type: 'Index'; object: Expr; index: Expr; pos: number }
  | { type: 'Call'; name: string; args: Expr[]; pos: number }
  | { type: 'Unary'; op: UnaryOp; operand: Expr; pos: number }
  | { type: 'Binary'; op: BinaryOp; left: Expr; right: Expr; pos: number }
  | { type: 'In'; negated: boolean; left: Expr; right: Expr; pos: number }
  | { type: 'IsSet'; negated: boolean; operand: Expr; pos: number }
  | { type: 'List'; items: Expr[]; pos: number }
  | { type: 'Map'; entries: Array<{ key: string; value: Expr }>; pos: number };

/** Calls `visit` on every node, depth first. */
export function walkExpr(e: Expr, visit: (e: Expr) => void): void {
  visit(e);
  switch (e.type) {
    case 'Member': walkExpr(e.object, visit); break;
    case 'Index': walkExpr(e.object, visit); walkExpr(e.index, visit); break;
    case 'Call': e.args.forEach((a) => walkExpr(a, visit)); break;
    case 'Unary': walkExpr(e.operand, visit); break;
    case 'IsSet': walkExpr(e.operand, visit); break;
    case 'Binary': case 'In': walkExpr(e.left, visit); walkExpr(e.right, visit); break;
    case 'List': e.items.forEach((a) => walkExpr(a, visit)); break;
    case 'Map': e.entries.forEach((m) => walkExpr(m.value, visit)); break;
    case 'Literal': case 'Regex': case 'Ident': break;
  }
}

/** The dotted path of `a.b[0].c` (indexes by literal only), or null when not a plain path. */
export function exprPath(e: Expr): string | null {
  if (e.type === 'Ident') return e.name;
  if (e.type === 'Member') {
    const base = exprPath(e.object);
    return base === null ? null : `${base}.${e.property}`;
  }
  if (e.type === 'Index' && e.index.type === 'Literal') {
    const base = exprPath(e.object);
    return base === null ? null : `${base}.${String(e.index.value)}`;
  }
  return null;
}
