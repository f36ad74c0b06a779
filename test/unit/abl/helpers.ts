// Test helpers for the ABL suite: in-memory projects and the examples on disk.

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { compileProject, type CompilationOutput, type ProjectFile } from '../../../abl';

export const EXAMPLES_DIR = join(__dirname, '../../../examples/support-desk');

export function readProject(dir: string): ProjectFile[] {
  const out: ProjectFile[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push({ path: relative(dir, p).split('\\').join('/'), content: readFileSync(p, 'utf8') });
    }
  };
  walk(dir);
  return out.sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** A one-agent project; `body` follows `AGENT: A` and `GOAL: "g"` (so body line 1 is file line 3). */
export function agentProject(body: string, extra: ProjectFile[] = []): ProjectFile[] {
  return [{ path: 'agents/A.agent.abl', content: `AGENT: A\nGOAL: "g"\n${body}` }, ...extra];
}

export function compileAgentBody(body: string, extra: ProjectFile[] = []): CompilationOutput {
  return compileProject(agentProject(body, extra));
}
