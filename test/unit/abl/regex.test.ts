// Tenant-written regular expressions are matched in linear time (abl/regex.ts): a pattern that
// backtracks exponentially in JavaScript's RegExp finishes at once wherever ABL runs one, and what the
// linear-time matcher cannot do is refused at compile time with E310.

import { compileProject, evaluate, evaluateDetailed, extractGatherValues, fixedContext, parseExpression, validateGatherValue } from '../../../abl';
import { patternProblem, SafeRegex, safeRegex } from '../../../abl/regex';
import { redactJson } from '../../../abl/runtime/checkpoints';
import { agentProject } from './helpers';

const ctx = fixedContext(Date.UTC(2025, 0, 15), 7);
// 2^50 backtracking steps for RegExp: a worker thread would never come back from one of these.
const HOSTILE = '(a+)+$';
const SUBJECT = 'a'.repeat(50) + '!';

function run(src: string, scope: Record<string, unknown> = {}): unknown {
  const p = parseExpression(src);
  if (!p.ast) throw new Error(`does not parse: ${src}`);
  return evaluate(p.ast, scope, ctx);
}

describe('a catastrophic pattern cannot stall a worker', () => {
  it('GATHER pattern() validation answers at once', () => {
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'pattern', pattern: HOSTILE }] }, SUBJECT)).toMatchObject({ ok: false, error: 'has the wrong format' });
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'pattern', pattern: HOSTILE }] }, 'aaaa')).toMatchObject({ ok: true });
  });

  it('GATHER pattern extraction searches a long message at once', () => {
    const out = compileProject(agentProject(`GATHER:\n  code:\n    validate: pattern(${HOSTILE})\n`));
    expect(out.diagnostics).toEqual([]);
    // Anchors are dropped for the search and re-checked on the value found.
    const r = extractGatherValues(out.agents.A!.gather, SUBJECT.repeat(100));
    expect(r.values).toEqual({ code: 'a'.repeat(50) });
  });

  it('`matches`, MATCHES_PATTERN and NOT_MATCHES_PATTERN answer at once', () => {
    expect(run(`s matches /${HOSTILE}/`, { s: SUBJECT })).toBe(false);
    expect(run('s matches p', { s: SUBJECT, p: HOSTILE })).toBe(false);
    expect(run('MATCHES_PATTERN(s, p)', { s: SUBJECT, p: HOSTILE })).toBe(false);
    expect(run('NOT_MATCHES_PATTERN(s, p)', { s: SUBJECT, p: HOSTILE })).toBe(true);
  });

  it('a redacting guardrail pattern answers at once', () => {
    const re = safeRegex('(x+x+)+y')!;
    expect(redactJson({ note: 'x'.repeat(5000) }, [re])).toEqual({ note: 'x'.repeat(5000) });
  });
});

describe('JavaScript syntax on the linear-time matcher', () => {
  it('keeps named groups, flags and \\u escapes', () => {
    const p = parseExpression('code matches /^inv-(?<num>\\d{3})\\u002D(\\d+)$/i');
    const r = evaluateDetailed(p.ast!, { code: 'INV-123-45' }, ctx);
    expect(r.value).toBe(true);
    expect(r.match).toEqual({ 0: 'INV-123-45', 1: '123', 2: '45', num: '123' });
  });

  it('replaces every match literally, empty matches included', () => {
    expect(SafeRegex.compile('\\d+').replaceAll('a1b22c', '[$1]')).toBe('a[$1]b[$1]c');
    expect(SafeRegex.compile('x*').replaceAll('ab', '-')).toBe('ab'.replace(/x*/g, '-'));
    // Offsets are UTF-16 positions, as in JavaScript strings.
    expect(SafeRegex.compile('\\d+').replaceAll('\u{1F600}\u00e9 12 \u00f63', '#')).toBe('\u{1F600}\u00e9 # \u00f6#');
  });

  it('tells invalid patterns from unsupported ones', () => {
    expect(patternProblem('(')).toMatchObject({ kind: 'invalid' });
    expect(patternProblem('(a)\\1')).toEqual({ kind: 'unsupported', detail: 'it uses a backreference (\\1)' });
    expect(patternProblem('(?<n>a)\\k<n>')).toMatchObject({ kind: 'unsupported', detail: expect.stringContaining('named backreference') });
    expect(patternProblem('a(?=b)')).toMatchObject({ kind: 'unsupported', detail: expect.stringContaining('lookahead') });
    expect(patternProblem('(?<!a)b')).toMatchObject({ kind: 'unsupported', detail: expect.stringContaining('lookbehind') });
    expect(patternProblem('(a{100}){100}')).toMatchObject({ kind: 'unsupported', detail: expect.stringContaining('exceeds 1000') });
    expect(patternProblem('a'.repeat(2001))).toMatchObject({ kind: 'unsupported' });
    expect(patternProblem('[(?=]')).toBeNull();
    expect(patternProblem(HOSTILE)).toBeNull();
    // Unusable at run time too: such a pattern matches nothing rather than falling back to RegExp.
    expect(safeRegex('(a)\\1')).toBeNull();
  });
});

describe('E310 at compile time', () => {
  const codes = (body: string) => compileProject(agentProject(body)).diagnostics.map((d) => `${d.code}@${d.line}:${d.column}`);

  it('reports a GATHER pattern the matcher cannot run', () => {
    expect(codes('GATHER:\n  a:\n    validate: pattern((a)\\1)\n')).toEqual(['E310@5:15']);
  });

  it('reports regex literals and literal patterns in expressions', () => {
    expect(codes('COMPLETE:\n  - WHEN: x matches /a(?=b)/\n')).toEqual(['E310@4:21']);
    expect(codes('COMPLETE:\n  - WHEN: MATCHES_PATTERN(x, "(?<!a)b")\n')).toEqual(['E310@4:30']);
    expect(codes('COMPLETE:\n  - WHEN: x matches "("\n')).toEqual(['E307@4:21']);
  });
});

describe('the fixed PII patterns', () => {
  // Module code in the workflow bundle runs again for every workflow a worker creates (a new
  // session, a replay after eviction): patterns compiled at import cost each of them.
  it('are compiled at first use, once, not when the workflow modules load', async () => {
    await jest.isolateModulesAsync(async () => {
      const { RE2JS } = await import('re2js');
      const compile = jest.spyOn(RE2JS, 'compile');
      await import('../../../abl/runtime');
      const { redactionPatterns } = await import('../../../abl/runtime/values');
      const { applyPiiAccess } = await import('../../../abl/tool-access');
      const { parseExpression: parse } = await import('../../../abl');
      expect(compile).not.toHaveBeenCalled();

      const check = parse('CONTAINS_PII(input)').ast!;
      const patterns = redactionPatterns(check);
      expect(patterns.some((re) => re.test('write to ada@example.com'))).toBe(true);
      const compiledOnce = compile.mock.calls.length;
      expect(compiledOnce).toBe(4);
      redactionPatterns(check);
      expect(applyPiiAccess({ to: 'ada@example.com, 4111 1111 1111 1111' }, 'none', new Map())).toEqual({ to: '[REDACTED], [REDACTED]' });
      applyPiiAccess({ to: 'ada@example.com' }, 'none', new Map());
      // The tool-access four are the guardrail's four patterns: each compiled once however often used.
      expect(compile).toHaveBeenCalledTimes(4);
    });
  });
});
