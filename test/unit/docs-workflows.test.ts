// docs/architecture.md's "Workflows" table tells the truth: one row per workflow type the worker
// registers, each row's file exports that function, and its search attributes and activities are
// ones the platform declares and the workflow's code really calls.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import ts from 'typescript';
import * as registered from '../../workflows';
import { searchAttributeSpecs } from '../../workflows/search-attributes';
import { createActivities, type ActivityDeps } from '../../activities';
import type { VoiceAgentActivities } from '../../activities/voice/types';
import { loadConfig } from '../../lib/config';

const ROOT = join(__dirname, '../..');

interface WorkflowRow {
  type: string;
  file: string;
  attributes: { name: string; type: string | null }[];
  activities: string[];
}

const code = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The first table under `## Workflows`, one row per workflow, found by its header's names. */
function workflowTable(markdown: string): WorkflowRow[] {
  const start = markdown.indexOf('\n## Workflows\n');
  if (start < 0) throw new Error('docs/architecture.md has no "## Workflows" section');
  const end = markdown.indexOf('\n## ', start + 1);
  const lines = markdown.slice(start, end < 0 ? undefined : end).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const table: string[] = [];
  for (let i = first; i >= 0 && i < lines.length && lines[i]!.startsWith('|'); i++) table.push(lines[i]!);
  const cells = (line: string) => line.slice(1, line.endsWith('|') ? -1 : undefined).split('|').map((c) => c.trim());
  const header = cells(table[0]!);
  const column = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`the Workflows table has no column "${name}"`);
    return i;
  };
  const [type, file, atStart, upserted, activities] = ['workflow type', 'file', 'search attributes at start', 'upserted', 'activities'].map(column);
  return table.slice(2).map((line) => {
    const row = cells(line);
    const attributeCells = [row[atStart!]!, row[upserted!]!].join(' ');
    return {
      type: code(row[type!]!).join(' '),
      file: code(row[file!]!).join(' '),
      // Every name in code type in these cells is an attribute, followed by its type in parentheses.
      attributes: [...attributeCells.matchAll(/`([^`]+)`(?:\s*\(([A-Za-z]+))?/g)].map((m) => ({ name: m[1]!, type: m[2] ?? null })),
      activities: code(row[activities!]!),
    };
  });
}

/** Workflow modules that `file` imports for their values (a type-only import brings no code), itself included. */
function moduleClosure(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const specifier = statement.moduleSpecifier.text;
    const clause = statement.importClause;
    if (!specifier.startsWith('./') || clause?.isTypeOnly) continue;
    const bindings = clause?.namedBindings;
    const onlyTypes = !clause?.name && bindings && ts.isNamedImports(bindings) && bindings.elements.every((e) => e.isTypeOnly);
    if (onlyTypes) continue;
    moduleClosure(resolve(dirname(file), `${specifier}.ts`), seen);
  }
  return seen;
}

/** Activity names taken from `proxyActivities`/`proxyLocalActivities` in these modules. */
function proxiedActivities(files: Iterable<string>): Set<string> {
  const names = new Set<string>();
  for (const file of files) {
    const visit = (node: ts.Node): void => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        const calleeName = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : '';
        if (calleeName === 'proxyActivities' || calleeName === 'proxyLocalActivities') {
          const parent = node.parent;
          // const { a, b: c } = proxyActivities(...)
          if (ts.isVariableDeclaration(parent) && ts.isObjectBindingPattern(parent.name)) {
            for (const element of parent.name.elements) names.add((element.propertyName ?? element.name).getText());
          }
          // proxyActivities(...).a
          if (ts.isPropertyAccessExpression(parent) && parent.expression === node) names.add(parent.name.text);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true));
  }
  return names;
}

const rows = workflowTable(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
const registeredTypes = Object.entries(registered)
  .filter(([, value]) => typeof value === 'function')
  .map(([name]) => name);
const declaredAttributes = new Map(searchAttributeSpecs().map((s) => [s.name, s.typeName]));
// The activity factory only closes over its dependencies; a config is all it reads while building.
const config = loadConfig({ MONGODB_URI: 'mongodb://127.0.0.1:27017/docs', JWT_SECRET: 'x'.repeat(32) });
// The voice agent process serves its activities on the voice task queue (activities/voice/types.ts), not this factory.
const voiceAgentActivities: (keyof VoiceAgentActivities)[] = ['attendVoiceRoom'];
const activityNames = [...Object.keys(createActivities({ config } as ActivityDeps)), ...voiceAgentActivities];

describe('docs/architecture.md, Workflows', () => {
  it('has one row per workflow type the worker registers (workflows/index.ts), and no other', () => {
    const listed = rows.map((r) => r.type);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual([...registeredTypes].sort());
  });

  it.each(rows.map((r) => [r.type, r] as const))('%s: its file exists and exports the registered function', async (type, row) => {
    expect(row.file).toMatch(/^workflows\/[\w-]+\.ts$/);
    const path = join(ROOT, row.file);
    expect(existsSync(path)).toBe(true);
    const exported = ((await import(path)) as Record<string, unknown>)[type];
    expect(typeof exported).toBe('function');
    expect(exported).toBe((registered as Record<string, unknown>)[type]);
  });

  it.each(rows.map((r) => [r.type, r] as const))('%s: every search attribute listed is declared, with the type given', (_type, row) => {
    for (const attribute of row.attributes) {
      expect({ name: attribute.name, declared: declaredAttributes.has(attribute.name) }).toEqual({ name: attribute.name, declared: true });
      expect({ name: attribute.name, type: attribute.type }).toEqual({ name: attribute.name, type: declaredAttributes.get(attribute.name) });
    }
  });

  it.each(rows.map((r) => [r.type, r] as const))('%s: every activity listed exists and is called by its workflow code', (_type, row) => {
    const called = proxiedActivities(moduleClosure(join(ROOT, row.file)));
    for (const activity of row.activities) {
      expect({ activity, exists: activityNames.includes(activity) }).toEqual({ activity, exists: true });
      expect({ activity, called: called.has(activity) }).toEqual({ activity, called: true });
    }
  });

  it('lists every activity the worker registers under some workflow', () => {
    const listed = new Set(rows.flatMap((r) => r.activities));
    expect(activityNames.filter((a) => !listed.has(a))).toEqual([]);
  });

  it('lists under each workflow every activity its own module proxies', () => {
    // The shared effects (workflows/effects.ts) serve sessions and delegations alike, and a
    // delegation never reaches some of them: only the workflow's own module is held to this.
    for (const row of rows) {
      const own = proxiedActivities([join(ROOT, row.file)]);
      expect({ type: row.type, missing: [...own].filter((a) => !row.activities.includes(a)) }).toEqual({ type: row.type, missing: [] });
    }
  });
});
