// Type expressions (ABL.md §4 "Types"): string, number, T[], {f: T, g?: T}, nullable<T>, Named.

import type { Loc } from '../ast';
import type { TypeIR } from '../ir';
import type { CompileContext } from './context';

const PRIMITIVES = ['string', 'number', 'boolean', 'date', 'datetime', 'object', 'any', 'email', 'phone'] as const;

function splitTop(text: string, sep: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let last = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '<' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === '>' || c === ']' || c === ')') depth--;
    else if (c === sep && depth === 0) {
      out.push(text.slice(last, i));
      last = i + 1;
    }
  }
  out.push(text.slice(last));
  return out;
}

/** Parses a type; null when the text is not a type. `named` collects undeclared names. */
export function parseType(text: string, named: string[] = [], depth = 0): TypeIR | null {
  const t = text.trim();
  if (t === '' || depth > 16) return null;
  if (t.endsWith('[]')) {
    const of = parseType(t.slice(0, -2), named, depth + 1);
    return of ? { kind: 'array', of } : null;
  }
  const nullable = /^nullable\s*<(.*)>$/i.exec(t);
  if (nullable) {
    const of = parseType(nullable[1] ?? '', named, depth + 1);
    return of ? { kind: 'nullable', of } : null;
  }
  if (t.endsWith('?')) {
    const of = parseType(t.slice(0, -1), named, depth + 1);
    return of ? { kind: 'nullable', of } : null;
  }
  if (t.startsWith('{') && t.endsWith('}')) {
    const inner = t.slice(1, -1).trim();
    const fields: Array<{ name: string; type: TypeIR; optional: boolean }> = [];
    if (inner === '') return { kind: 'object', fields };
    const parts = splitTop(inner, ',');
    if (parts.length > 1 && (parts[parts.length - 1] ?? '').trim() === '') parts.pop(); // trailing comma
    for (const part of parts) {
      const m = /^\s*([A-Za-z_]\w*)(\?)?\s*:\s*(.+)$/.exec(part);
      if (!m) return null;
      const type = parseType(m[3] ?? '', named, depth + 1);
      if (!type) return null;
      fields.push({ name: m[1] as string, type, optional: m[2] === '?' });
    }
    return { kind: 'object', fields };
  }
  const lower = t.toLowerCase();
  const prim = PRIMITIVES.find((p) => p === lower) ?? (lower === 'array' ? 'any' : lower === 'integer' || lower === 'int' || lower === 'float' ? 'number' : lower === 'bool' ? 'boolean' : lower === 'str' ? 'string' : undefined);
  if (lower === 'array') return { kind: 'array', of: { kind: 'primitive', name: 'any' } };
  if (prim) return { kind: 'primitive', name: prim };
  if (/^[A-Za-z_]\w*$/.test(t)) {
    named.push(t);
    return { kind: 'named', name: t };
  }
  return null;
}

/** Parses a type and reports E411 / W410. Falls back to `object`. */
export function compileType(ctx: CompileContext, text: string, at: Loc): TypeIR {
  const named: string[] = [];
  const t = parseType(text, named);
  if (!t) {
    ctx.report('E411', at, { src: text });
    return { kind: 'primitive', name: 'object' };
  }
  for (const n of named) ctx.report('W410', at, { name: n });
  return t;
}
