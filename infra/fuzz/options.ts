// The fuzz run's knobs (flags win over FUZZ_* variables, which win over the CI defaults), the
// schemathesis command line they make, and the one-line summary read back from its JUnit report.
import path from 'node:path';

/** CI's defaults: a fixed seed and a bounded example count, so a run is reproducible. */
// One worker: schemathesis' generator can hit a CPython 3.11 race ("AST constructor recursion
// depth mismatch") when two threads build strategies at once.
export const FUZZ_DEFAULTS = { seed: 14, maxExamples: 25, workers: 1, timeoutSeconds: 600 } as const;

export interface FuzzOptions {
  seed: number;
  maxExamples: number;
  /** Time budget handed to schemathesis (`--max-time`): its phases repeat until it is spent. */
  maxTime: number | null;
  workers: number;
  /** Hard stop for the whole schemathesis run; reaching it fails the run. */
  timeoutSeconds: number;
  reportDir: string;
  /** Anything after `--`, passed to `schemathesis run` as is (e.g. `--include-path-regex`). */
  extra: string[];
}

function positiveInt(name: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got "${value}"`);
  return n;
}

function parseSeed(name: string, value: string): number {
  if (value === 'random') return Math.floor(Math.random() * 2 ** 31);
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer or "random", got "${value}"`);
  return n;
}

const FLAGS: Record<string, string> = {
  '--seed': 'FUZZ_SEED',
  '--max-examples': 'FUZZ_MAX_EXAMPLES',
  '--max-time': 'FUZZ_MAX_TIME',
  '--workers': 'FUZZ_WORKERS',
  '--timeout': 'FUZZ_TIMEOUT_SECONDS',
  '--report-dir': 'FUZZ_REPORT_DIR',
};

export function parseFuzzOptions(argv: string[], env: NodeJS.ProcessEnv, root = process.cwd()): FuzzOptions {
  const values: Record<string, string | undefined> = {};
  for (const name of Object.values(FLAGS)) values[name] = env[name] || undefined;
  const dashDash = argv.indexOf('--');
  const own = dashDash === -1 ? argv : argv.slice(0, dashDash);
  const extra = dashDash === -1 ? [] : argv.slice(dashDash + 1);
  for (let i = 0; i < own.length; i++) {
    const arg = own[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (flag === '--random-seed') {
      values.FUZZ_SEED = 'random';
      continue;
    }
    const name = FLAGS[flag];
    const value = inline ?? own[++i];
    if (!name || value === undefined) throw new Error(`unknown or incomplete option "${arg}" (see docs/testing.md)`);
    values[name] = value;
  }
  const timeoutSeconds = values.FUZZ_TIMEOUT_SECONDS ? positiveInt('FUZZ_TIMEOUT_SECONDS', values.FUZZ_TIMEOUT_SECONDS) : null;
  const maxTime = values.FUZZ_MAX_TIME ? positiveInt('FUZZ_MAX_TIME', values.FUZZ_MAX_TIME) : null;
  return {
    seed: values.FUZZ_SEED ? parseSeed('FUZZ_SEED', values.FUZZ_SEED) : FUZZ_DEFAULTS.seed,
    maxExamples: values.FUZZ_MAX_EXAMPLES ? positiveInt('FUZZ_MAX_EXAMPLES', values.FUZZ_MAX_EXAMPLES) : FUZZ_DEFAULTS.maxExamples,
    maxTime,
    workers: values.FUZZ_WORKERS ? positiveInt('FUZZ_WORKERS', values.FUZZ_WORKERS) : FUZZ_DEFAULTS.workers,
    // A time budget needs room to finish the phase it is in.
    timeoutSeconds: timeoutSeconds ?? (maxTime ? maxTime + 120 : FUZZ_DEFAULTS.timeoutSeconds),
    reportDir: path.resolve(root, values.FUZZ_REPORT_DIR ?? path.join('.data', 'fuzz-report')),
    extra,
  };
}

/** `schemathesis run` with every check and every phase (the stateful one follows the document's links). */
export function schemathesisArgs(options: FuzzOptions, where: { configFile: string; schemaUrl: string }): string[] {
  return [
    '--config-file',
    where.configFile,
    'run',
    where.schemaUrl,
    '--checks',
    'all',
    '--phases',
    'examples,coverage,fuzzing,stateful',
    '--max-examples',
    String(options.maxExamples),
    '--seed',
    String(options.seed),
    '--workers',
    String(options.workers),
    // No example database: the same seed gives the same run, whatever ran before on this machine.
    '--generation-database',
    'none',
    '--report',
    'junit,ndjson',
    '--report-junit-path',
    path.join(options.reportDir, 'junit.xml'),
    '--report-ndjson-path',
    path.join(options.reportDir, 'events.ndjson'),
    ...(options.maxTime ? ['--max-time', String(options.maxTime)] : []),
    ...options.extra,
  ];
}

export interface FuzzSummary {
  ok: boolean;
  /** The closing line, in the plain form CI reads: `fuzz: N passed, N failed, N skipped`. */
  line: string;
  /** How to reproduce it: the seed, the bounds, the time and where the report is. */
  detail: string;
}

function count(xml: string, attribute: string): number {
  const suite = /<testsuites?\b[^>]*>/.exec(xml)?.[0] ?? '';
  const match = new RegExp(`\\b${attribute}="(\\d+)"`).exec(suite);
  return match ? Number(match[1]) : 0;
}

/**
 * The verdict from the JUnit report (one test per operation, one for the stateful run) and the
 * exit code: a run that failed without a failing test (an interrupted or crashed schemathesis)
 * counts as one failure, so the line never reads as a pass when the exit code says otherwise.
 */
export function summarize(junitXml: string | null, exitCode: number | null, options: FuzzOptions, seconds: number): FuzzSummary {
  const tests = junitXml === null ? 0 : count(junitXml, 'tests');
  const skipped = junitXml === null ? 0 : count(junitXml, 'skipped');
  let failed = junitXml === null ? 0 : count(junitXml, 'failures') + count(junitXml, 'errors');
  if (exitCode !== 0 && failed === 0) failed = 1;
  const passed = Math.max(0, tests - skipped - (junitXml === null ? 0 : count(junitXml, 'failures') + count(junitXml, 'errors')));
  const ok = exitCode === 0 && failed === 0;
  const how = junitXml === null ? `schemathesis exited ${exitCode ?? 'on a signal'} without a report` : `schemathesis exit ${exitCode ?? 'signal'}`;
  return {
    ok,
    line: `fuzz: ${passed} passed, ${failed} failed, ${skipped} skipped`,
    detail: `${ok ? 'passed' : 'FAILED'}: ${how}; seed ${options.seed}, max ${options.maxExamples} examples, ${seconds} s; report in ${options.reportDir}`,
  };
}

/**
 * schemathesis closes with pytest's banner (`===== 2 warnings in 58.78s =====`), which a reader
 * of test output takes for a pytest run that executed no test. Its rule lines are redrawn with
 * dashes so that the only closing line is ours.
 */
export function relabelRuleLine(line: string): string {
  const rule = /^=+ (.*) =+$/.exec(line);
  // The closing banner's words too ("2 warnings in 58.78s" reads as pytest's own summary).
  if (rule) return `--- ${rule[1]!.replace(/^(.*) in ([\d.]+)s$/, 'schemathesis: $1 ($2 s)')} ---`;
  return /^=+$/.test(line) ? line.replace(/=/g, '-') : line;
}
