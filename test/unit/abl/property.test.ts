// Property tests: compile never throws on random or mutated input, always returns diagnostics,
// produces JSON-serialisable IR, and is deterministic.

import fc from 'fast-check';
import { compileProject, parse, parseExpression, renderTemplate, fixedContext, type ProjectFile } from '../../../abl';
import { EXAMPLES_DIR, readProject } from './helpers';

const examples = readProject(EXAMPLES_DIR);
const ablFiles = examples.filter((f) => f.path.endsWith('.abl'));

type Mutation =
  | { kind: 'delete'; at: number }
  | { kind: 'duplicate'; at: number }
  | { kind: 'swap'; a: number; b: number }
  | { kind: 'insert'; at: number; col: number; text: string }
  | { kind: 'indent'; at: number; delta: number }
  | { kind: 'tab'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('swap' as const), a: fc.nat(), b: fc.nat() }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), col: fc.nat(), text: fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(':', '- ', '"', "'", '[', '{', '{{', '}}', '|', '#', '->', '(', ')', '\t', 'WHEN: ', 'THEN: x')) }),
  fc.record({ kind: fc.constant('indent' as const), at: fc.nat(), delta: fc.integer({ min: -4, max: 6 }) }),
  fc.record({ kind: fc.constant('tab' as const), at: fc.nat() }),
);

function mutate(text: string, ms: Mutation[]): string {
  const lines = text.split('\n');
  for (const m of ms) {
    const n = lines.length;
    if (n === 0) break;
    switch (m.kind) {
      case 'delete': lines.splice(m.at % n, 1); break;
      case 'duplicate': lines.splice(m.at % n, 0, lines[m.at % n] ?? ''); break;
      case 'swap': { const a = m.a % n; const b = m.b % n; [lines[a], lines[b]] = [lines[b] ?? '', lines[a] ?? '']; break; }
      case 'insert': { const l = lines[m.at % n] ?? ''; const c = m.col % (l.length + 1); lines[m.at % n] = l.slice(0, c) + m.text + l.slice(c); break; }
      case 'indent': { const l = lines[m.at % n] ?? ''; lines[m.at % n] = m.delta >= 0 ? ' '.repeat(m.delta) + l : l.replace(new RegExp(`^ {0,${-m.delta}}`), ''); break; }
      case 'tab': lines[m.at % n] = `\t${lines[m.at % n] ?? ''}`; break;
    }
  }
  return lines.join('\n');
}

function checkOutput(files: ProjectFile[]): void {
  const out = compileProject(files);
  expect(Array.isArray(out.diagnostics)).toBe(true);
  for (const d of out.diagnostics) {
    expect(typeof d.code).toBe('string');
    expect(d.line).toBeGreaterThanOrEqual(1);
    expect(d.column).toBeGreaterThanOrEqual(1);
  }
  const json = JSON.stringify(out);
  expect(JSON.parse(json)).toEqual(out);
  expect(JSON.stringify(compileProject(files))).toBe(json);
}

describe('properties', () => {
  it('mutated example files never throw, always yield diagnostics, JSON IR, deterministic output', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: ablFiles.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 8 }), (i, ms) => {
        const target = ablFiles[i] as ProjectFile;
        const files = examples.map((f) => (f.path === target.path ? { ...f, content: mutate(f.content, ms) } : f));
        checkOutput(files);
      }),
      { numRuns: 300 },
    );
  });

  it('random text never throws', () => {
    const line = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('AGENT: A', 'GOAL: g', 'FLOW:', '  s:', '    REASONING: false', '    THEN: s', '- x', '  - TO: B', 'TOOLS:', '  t(a: string) -> {x: number}', '    type: http', 'key: |', '  {{#if x}}', '[a, {b: [c'));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 8 }), line), { maxLength: 40 }), (ls) => {
        const content = ls.map(([ind, l]) => ' '.repeat(ind) + l).join('\n');
        checkOutput([{ path: 'agents/R.agent.abl', content }, { path: 'tools/r.tools.abl', content }]);
        expect(Array.isArray(parse(content, 'x.abl').diagnostics)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('expression parser and template renderer never throw', () => {
    const ctx = fixedContext(0, 1);
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (s) => {
        const p = parseExpression(s);
        expect(p.ast === null).toBe(p.error !== null);
        expect(typeof renderTemplate(`{{${s}}} {{#if ${s}}}a{{/if}}`, { a: 1 }, ctx)).toBe('string');
      }),
      { numRuns: 500 },
    );
  });

  it('hostile sizes are capped, not fatal', () => {
    const deepExpr = `COMPLETE:\n  - WHEN: ${'NOT '.repeat(5000)}x\n`;
    const wide = `GOAL: ${'a'.repeat(200_000)}`;
    const many = Array.from({ length: 3000 }, (_, i) => `X${i}: 1`).join('\n');
    for (const body of [deepExpr, wide, many]) {
      const out = compileProject([{ path: 'agents/A.agent.abl', content: `AGENT: A\nGOAL: g\n${body}` }]);
      expect(out.diagnostics.length).toBeLessThanOrEqual(201);
    }
  });
});
