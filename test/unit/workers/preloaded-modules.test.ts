// The worker shares its workflow modules between every workflow it runs (WORKFLOW_PRELOAD_MODULES):
// state kept at a module's top level would then pass from one session to another. Keeps that
// visible: the preloaded modules and everything they import declare no top-level `let` or `var`.
// (Bounded memo maps of values computed from their keys alone, as abl/regex.ts keeps, are fine.)
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { WORKFLOW_PRELOAD_MODULES } from '../../../workers/create-worker';

const ROOT = path.resolve(__dirname, '../../..');
function resolveImport(from: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts'), base]) {
    try {
      readFileSync(candidate);
      return candidate;
    } catch {
      // next candidate
    }
  }
  return null;
}

/** Our own modules the preloaded ones load at run time (type-only imports left out). */
function moduleGraph(entries: readonly string[]): string[] {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file) || !file.endsWith('.ts')) continue;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    for (const m of source.matchAll(/^(?:import|export)\s+(?!type\s)[^;]*?from\s+'([^']+)'/gms)) {
      const next = resolveImport(file, m[1]!);
      if (next) queue.push(next);
    }
  }
  return [...seen].map((f) => path.relative(ROOT, f)).sort();
}

it('preloads the workflows and the shared bundles, whose modules keep no per-workflow state at top level', () => {
  const preloaded = WORKFLOW_PRELOAD_MODULES.map((m) => path.relative(ROOT, m));
  expect(preloaded).toEqual(expect.arrayContaining(['workflows/index.ts', 'workflows/shared-bundles.ts']));
  const files = moduleGraph(WORKFLOW_PRELOAD_MODULES);
  expect(files).toEqual(expect.arrayContaining(['workflows/agent-session.ts', 'abl/runtime/interpreter.ts']));
  const found = files.flatMap((file) =>
    readFileSync(path.join(ROOT, file), 'utf8')
      .split('\n')
      .filter((line) => /^(export\s+)?(let|var)\s/.test(line))
      .map((line) => `${file}: ${line.trim()}`),
  );
  expect(found).toEqual([]);
});
