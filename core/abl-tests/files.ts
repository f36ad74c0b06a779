// Scenario files on disk: finds `*.scenarios.yaml` in a project folder (beside the agents, as an
// export lays them out: agents/<Agent>.abl, tools/<name>.tools.abl) and compiles the project
// they belong to, for `npm run abl:test`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { compileProject, type CompilationOutput, type Diagnostic, type ProjectFile } from '../../abl';
import { isScenarioPath, parseScenarioFile, type ScenarioFile, type ScenarioFileError } from './schema';

export interface ScenarioProject {
  /** The project folder. */
  dir: string;
  compiled: CompilationOutput;
  /** Compile errors: a project with any is not run. */
  errors: Diagnostic[];
  files: ScenarioFile[];
  fileErrors: ScenarioFileError[];
}

function walk(dir: string, rel = '', out: string[] = []): string[] {
  for (const entry of readdirSync(path.join(dir, rel)).sort()) {
    if (entry === 'node_modules' || entry.startsWith('.')) continue;
    const relPath = rel ? `${rel}/${entry}` : entry;
    if (statSync(path.join(dir, relPath)).isDirectory()) walk(dir, relPath, out);
    else out.push(relPath);
  }
  return out;
}

/** The project folder a path belongs to: the nearest folder up with a project.json, else the parent of `agents/`, else the folder itself. */
export function projectDirOf(target: string): string {
  const start = statSync(target).isDirectory() ? target : path.dirname(target);
  for (let dir = path.resolve(start); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'project.json'))) return dir;
    if (path.dirname(dir) === dir) break;
  }
  const resolved = path.resolve(start);
  return path.basename(resolved) === 'agents' ? path.dirname(resolved) : resolved;
}

/**
 * Loads a project folder: compiles its ABL (`.abl`, `.agent.yaml`, project.json) and parses its
 * scenario files, all of them or only `only` (absolute paths).
 */
export function loadScenarioProject(dir: string, only?: readonly string[]): ScenarioProject {
  const rels = walk(dir);
  const sources: ProjectFile[] = rels
    .filter((p) => p.endsWith('.abl') || /\.agent\.ya?ml$/.test(p) || path.basename(p) === 'project.json')
    .map((p) => ({ path: p, content: readFileSync(path.join(dir, p), 'utf8') }));
  const compiled = compileProject(sources);
  const wanted = only ? new Set(only.map((p) => path.resolve(p))) : null;
  const files: ScenarioFile[] = [];
  const fileErrors: ScenarioFileError[] = [];
  for (const rel of rels.filter(isScenarioPath)) {
    if (wanted && !wanted.has(path.resolve(dir, rel))) continue;
    const parsed = parseScenarioFile(rel, readFileSync(path.join(dir, rel), 'utf8'));
    if (parsed.ok) files.push(parsed.file);
    else fileErrors.push(...parsed.errors);
  }
  return { dir, compiled, errors: compiled.diagnostics.filter((d) => d.severity === 'error'), files, fileErrors };
}
