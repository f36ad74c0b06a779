// `npm run abl:test -- [paths…] [--junit <file>] [--model <m>] [--judge-model <m>] [--concurrency <n>] [--filter <text>]`:
// runs the scenario files (`*.scenarios.yaml`) of project folders through the session interpreter,
// prints a report and exits non-zero when a scenario fails (docs/abl-tests.md).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { formatDiagnostic } from '../abl';
import { loadScenarioProject, projectDirOf } from '../core/abl-tests/files';
import { platformModelResolver } from '../core/abl-tests/models';
import { formatJunit, formatTextReport } from '../core/abl-tests/report';
import { runScenarioFiles, type FileReport, type RunReport } from '../core/abl-tests/runner';
import { formatScenarioError } from '../core/abl-tests/schema';

const USAGE = `Usage: npm run abl:test -- [paths…] [options]

Runs the scenario files (*.scenarios.yaml) of ABL projects. A path is a project folder (all its
scenario files) or a scenario file; the default is examples/support-desk.

Options:
  --junit <file>        also write JUnit XML there
  --model <model>       run every agent on this model (provider:model or a tier)
  --judge-model <model> the judge's and personas' model (default: the balanced tier)
  --concurrency <n>     scenarios run at once (default 8)
  --filter <text>       only scenarios whose name contains the text
`;

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: Record<string, string | undefined>;
  cwd: string;
}

/** Runs the command; resolves to the exit code (0 all passed, 1 a scenario failed, 2 bad input). */
export async function runAblTestCli(argv: string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        junit: { type: 'string' },
        model: { type: 'string' },
        'judge-model': { type: 'string' },
        concurrency: { type: 'string' },
        filter: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    io.err(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const concurrency = values.concurrency === undefined ? 8 : Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
    io.err('--concurrency: a whole number from 1 to 64\n');
    return 2;
  }
  const targets = (positionals.length > 0 ? positionals : ['examples/support-desk']).map((p) => path.resolve(io.cwd, p));
  // Paths of one project run together (one compilation); a file path narrows its project to it.
  const projects = new Map<string, string[] | null>();
  for (const target of targets) {
    let dir: string;
    try {
      dir = projectDirOf(target);
    } catch {
      io.err(`${target}: no such file or folder\n`);
      return 2;
    }
    const isDir = dir === target || path.basename(target) === 'agents';
    const known = projects.get(dir);
    if (isDir || known === null) projects.set(dir, null);
    else projects.set(dir, [...(known ?? []), target]);
  }

  const resolveModel = platformModelResolver(io.env, values.model);
  const reports: RunReport[] = [];
  let bad = false;
  for (const [dir, only] of projects) {
    const project = loadScenarioProject(dir, only ?? undefined);
    const rel = path.relative(io.cwd, dir) || '.';
    if (project.errors.length > 0) {
      io.err(`${rel}: the project does not compile:\n${project.errors.map((d) => `  ${formatDiagnostic(d)}`).join('\n')}\n`);
      bad = true;
      continue;
    }
    if (project.fileErrors.length > 0) {
      io.err(`${project.fileErrors.map((e) => formatScenarioError({ ...e, file: path.join(rel, e.file) })).join('\n')}\n`);
      bad = true;
      continue;
    }
    const files = project.files
      .map((f) => ({ ...f, file: path.join(rel, f.file), scenarios: values.filter ? f.scenarios.filter((s) => s.name.includes(values.filter!)) : f.scenarios }))
      .filter((f) => f.scenarios.length > 0);
    reports.push(await runScenarioFiles(files, { compiled: project.compiled, resolveModel, judgeModel: values['judge-model'] ?? null, concurrency }));
  }
  const files: FileReport[] = reports.flatMap((r) => r.files);
  const report: RunReport = {
    files,
    total: reports.reduce((n, r) => n + r.total, 0),
    passed: reports.reduce((n, r) => n + r.passed, 0),
    failed: reports.reduce((n, r) => n + r.failed, 0),
    durationMs: reports.reduce((n, r) => n + r.durationMs, 0),
  };
  io.out(`${formatTextReport(report)}\n`);
  if (values.junit) {
    const target = path.resolve(io.cwd, values.junit);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, formatJunit(report));
  }
  if (bad) return 2;
  if (report.total === 0) {
    io.err('no scenarios found (files are named <Agent>.scenarios.yaml)\n');
    return 2;
  }
  return report.failed > 0 ? 1 : 0;
}

if (require.main === module) {
  runAblTestCli(process.argv.slice(2), { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), env: process.env, cwd: process.cwd() }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 2;
    },
  );
}
