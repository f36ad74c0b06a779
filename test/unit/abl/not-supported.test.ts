// docs/not-supported.md and the compiler say the same thing: every "not supported" warning has a
// row on the page and every row is such a warning, and each row's example compiles to exactly it.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileProject, DIAGNOSTICS, UNSUPPORTED_WARNINGS, type DiagnosticDef } from '../../../abl';

const PAGE = readFileSync(join(__dirname, '../../../docs/not-supported.md'), 'utf8');
const LINK = 'docs/not-supported.md';

/** The page's table: one row per construct, the code in the "Warning" column. */
function tableRows(page: string): Array<{ construct: string; code: string }> {
  const lines = page.split('\n');
  const headerAt = lines.findIndex((l) => /^\|\s*Construct\s*\|/.test(l));
  if (headerAt < 0) throw new Error('docs/not-supported.md has no table whose first column is "Construct"');
  const cells = (l: string): string[] => l.replace(/^\|/, '').replace(/\|\s*$/, '').split(/(?<!\\)\|/).map((c) => c.trim());
  const codeCol = cells(lines[headerAt] as string).indexOf('Warning');
  const rows: Array<{ construct: string; code: string }> = [];
  for (const l of lines.slice(headerAt + 2)) {
    if (!l.startsWith('|')) break;
    const c = cells(l);
    rows.push({ construct: c[0] ?? '', code: (c[codeCol] ?? '').replace(/`/g, '') });
  }
  return rows;
}

/** The page's examples: the ```abl blocks under each `### Wnnn` heading. */
function examples(page: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const sections = page.split(/^### /m).slice(1);
  for (const s of sections) {
    const heading = (s.split('\n')[0] ?? '').trim();
    const blocks = [...s.matchAll(/^```abl\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
    out.set(heading, blocks);
  }
  return out;
}

/**
 * A sample project: the example as the rest of an agent file (unless it starts with `AGENT:`); a
 * later line starting with `AGENT:` begins another agent file of the same project.
 */
function sampleProject(example: string): Array<{ path: string; content: string }> {
  const text = /^AGENT:/.test(example) ? example : `AGENT: Sample\nGOAL: "Show one construct."\n${example}`;
  return text.split(/^(?=AGENT:)/m).map((content) => ({ path: `agents/${/^AGENT:\s*(\w+)/.exec(content)?.[1] ?? 'Sample'}.agent.abl`, content }));
}

/** A warning that says a construct is not run (or not fully): by its registry title. */
const saysNotRun = (d: DiagnosticDef): boolean => /\bnot (run|applied|executed|used|matched|kept|sent)\b|\bnever\b/i.test(d.title);

const rows = tableRows(PAGE);
const byCode = examples(PAGE);
const listed = new Set<string>(UNSUPPORTED_WARNINGS);

describe('docs/not-supported.md', () => {
  it('has one row per warning code', () => {
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.code).toMatch(/^W\d{3}$/);
    const codes = rows.map((r) => r.code);
    expect(codes.filter((c, i) => codes.indexOf(c) !== i)).toEqual([]);
  });

  it('lists exactly the codes of UNSUPPORTED_WARNINGS', () => {
    expect(rows.map((r) => r.code).sort()).toEqual([...UNSUPPORTED_WARNINGS].sort());
  });

  it('has an example for every row, and no example without a row', () => {
    expect([...byCode.keys()].sort()).toEqual(rows.map((r) => r.code).sort());
    for (const [code, blocks] of byCode) expect({ code, blocks: blocks.length }).toEqual({ code, blocks: 1 });
  });

  it.each(rows)('$code: its example compiles with exactly that warning', ({ code }) => {
    const example = byCode.get(code)?.[0];
    if (example === undefined) throw new Error(`no example under "### ${code}"`);
    const out = compileProject(sampleProject(example));
    expect(out.ok).toBe(true);
    const found = out.diagnostics.map((d) => d.code);
    expect(found.length).toBeGreaterThan(0);
    expect([...new Set(found)]).toEqual([code]);
    // Reported with a position in the sample's first file, the one that uses the construct.
    for (const d of out.diagnostics) {
      expect(d.path).toBe('agents/Sample.agent.abl');
      expect(d.line).toBeGreaterThanOrEqual(1);
      expect(d.column).toBeGreaterThanOrEqual(1);
    }
  });
});

describe('UNSUPPORTED_WARNINGS', () => {
  it('holds registry warnings only, each pointing at the page', () => {
    for (const code of UNSUPPORTED_WARNINGS) {
      const d: DiagnosticDef = DIAGNOSTICS[code];
      expect({ code, severity: d.severity }).toEqual({ code, severity: 'warning' });
      expect({ code, points: `${d.message} ${d.fix}`.includes(LINK) }).toEqual({ code, points: true });
    }
  });

  it('holds every warning that points at the page or says a construct is not run', () => {
    const unlisted = Object.entries(DIAGNOSTICS)
      .filter(([code, d]) => !listed.has(code) && d.severity === 'warning' && (`${d.message} ${d.fix}`.includes(LINK) || saysNotRun(d)))
      .map(([code]) => code);
    expect(unlisted).toEqual([]);
  });

  it('names only warnings that say a construct is not run', () => {
    expect(UNSUPPORTED_WARNINGS.filter((code) => !saysNotRun(DIAGNOSTICS[code]))).toEqual([]);
  });
});
