// `npm run fuzz` options: CI's fixed defaults, overrides by flag or FUZZ_* variable, and the
// one-line verdict read from schemathesis' JUnit report.
import { FUZZ_DEFAULTS, parseFuzzOptions, relabelRuleLine, schemathesisArgs, summarize } from '../../../infra/fuzz/options';

describe('parseFuzzOptions', () => {
  it('uses the fixed seed and bounded examples by default', () => {
    const options = parseFuzzOptions([], {}, '/repo');
    expect(options).toMatchObject({ seed: FUZZ_DEFAULTS.seed, maxExamples: FUZZ_DEFAULTS.maxExamples, maxTime: null, reportDir: '/repo/.data/fuzz-report' });
    const args = schemathesisArgs(options, { configFile: 'c.toml', schemaUrl: 'http://x/openapi.json' });
    expect(args).toEqual(expect.arrayContaining(['--checks', 'all', '--phases', 'examples,coverage,fuzzing,stateful', '--seed', String(FUZZ_DEFAULTS.seed)]));
    expect(args).not.toContain('--max-time');
  });

  it('takes FUZZ_* variables, flags over them, and passes what follows -- to schemathesis', () => {
    const options = parseFuzzOptions(['--max-examples', '200', '--max-time=600', '--', '--include-tag', 'Sessions'], { FUZZ_SEED: '7', FUZZ_MAX_EXAMPLES: '50' }, '/repo');
    expect(options).toMatchObject({ seed: 7, maxExamples: 200, maxTime: 600, timeoutSeconds: 720, extra: ['--include-tag', 'Sessions'] });
    expect(schemathesisArgs(options, { configFile: 'c', schemaUrl: 'u' }).slice(-4)).toEqual(['--max-time', '600', '--include-tag', 'Sessions']);
  });

  it('draws a seed for --random-seed or FUZZ_SEED=random, and refuses nonsense', () => {
    expect(Number.isInteger(parseFuzzOptions(['--random-seed'], {}).seed)).toBe(true);
    expect(Number.isInteger(parseFuzzOptions([], { FUZZ_SEED: 'random' }).seed)).toBe(true);
    expect(() => parseFuzzOptions(['--max-examples', '0'], {})).toThrow('FUZZ_MAX_EXAMPLES');
    expect(() => parseFuzzOptions(['--bogus', '1'], {})).toThrow('unknown or incomplete option');
  });
});

describe('summarize', () => {
  const options = parseFuzzOptions([], {}, '/repo');
  const report = (failures: number, errors: number) =>
    `<?xml version="1.0"?><testsuites disabled="0" errors="${errors}" failures="${failures}" tests="48" time="90"><testsuite name="schemathesis" tests="48"></testsuite></testsuites>`;

  it('passes only with exit 0 and no failures or errors, in the plain closing form', () => {
    expect(summarize(report(0, 0), 0, options, 90)).toEqual({ ok: true, line: 'fuzz: 48 passed, 0 failed, 0 skipped', detail: expect.stringMatching(/^passed: .*seed 14/) });
    expect(summarize(report(2, 0), 1, options, 90)).toMatchObject({ ok: false, line: 'fuzz: 46 passed, 2 failed, 0 skipped' });
    expect(summarize(report(0, 1), 1, options, 90)).toMatchObject({ ok: false, line: 'fuzz: 47 passed, 1 failed, 0 skipped' });
    // A non-zero exit without a failing test is still a failure.
    expect(summarize(report(0, 0), 2, options, 90)).toMatchObject({ ok: false, line: 'fuzz: 48 passed, 1 failed, 0 skipped' });
    expect(summarize(null, null, options, 240)).toMatchObject({ ok: false, line: 'fuzz: 0 passed, 1 failed, 0 skipped', detail: expect.stringContaining('without a report') });
  });
});

describe('relabelRuleLine', () => {
  it("redraws schemathesis's pytest-style banners so no pytest closing line is printed", () => {
    expect(relabelRuleLine('============================= 2 warnings in 58.78s =============================')).toBe('--- schemathesis: 2 warnings (58.78 s) ---');
    expect(relabelRuleLine('=================================== SUMMARY ====================================')).toBe('--- SUMMARY ---');
    expect(relabelRuleLine('==========')).toBe('----------');
    expect(relabelRuleLine('  3896 generated, 3896 passed, 139 skipped')).toBe('  3896 generated, 3896 passed, 139 skipped');
  });
});
