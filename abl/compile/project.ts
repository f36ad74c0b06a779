// Project compiler: files → CompilationOutput. Parses every file, compiles tool libraries, then
// agents (resolving imports), then runs the project rules. Never throws on any input.

import type { DocumentNode } from '../ast';
import { DiagnosticSink, sortDiagnostics, type Diagnostic } from '../diagnostics';
import { hashFiles } from '../hash';
import { jsonCopy } from '../json-copy';
import { IR_VERSION, type AgentIR, type CompilationOutput, type ProjectManifest, type ToolLibraryIR } from '../ir';
import { parseSource } from '../parser';
import { isYamlAgentPath, parseYamlSource } from '../yaml';
import { basename, normalizePath } from '../paths';
import { PROJECT_RULES } from '../rules';
import { createRuleContext } from '../rules/context';
import { createSource, LIMITS } from '../source';
import { compileAgent, type ProjectFiles } from './agent';
import { CompileContext, ParseMemo } from './context';
import { checkSections } from './sections';
import { compileTools, type CompiledTools } from './tools';

export interface ProjectFile {
  path: string;
  content: string;
}

export interface CompileOptions {
  /** Overrides project.json's entryAgent. */
  entryAgent?: string;
  /**
   * Stop reporting after this many diagnostics.
   * @default 200
   */
  maxDiagnostics?: number;
}

function readManifest(file: ProjectFile | undefined, sink: DiagnosticSink): ProjectManifest {
  const empty: ProjectManifest = { name: null, entryAgent: null, description: null };
  if (!file) return empty;
  let data: unknown;
  try {
    data = JSON.parse(file.content);
  } catch (e) {
    sink.report('E215', { path: file.path, line: 1, column: 1 }, { detail: e instanceof Error ? e.message : 'invalid JSON' });
    return empty;
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    sink.report('E215', { path: file.path, line: 1, column: 1 }, { detail: 'expected a JSON object' });
    return empty;
  }
  const o = data as Record<string, unknown>;
  const s = (k: string): string | null => (typeof o[k] === 'string' ? (o[k] as string) : null);
  return { name: s('name'), entryAgent: s('entryAgent') ?? s('entry_agent'), description: s('description') };
}

/** Compiles a whole project. Returns the IR of every agent plus every diagnostic. */
export function compileProject(files: ReadonlyArray<ProjectFile>, options: CompileOptions = {}): CompilationOutput {
  const sink = new DiagnosticSink(options.maxDiagnostics);
  const input = files.slice(0, LIMITS.maxFiles).map((f) => ({ path: normalizePath(String(f.path)), content: String(f.content) }));
  if (files.length > LIMITS.maxFiles) sink.report('E106', { path: '', line: 1, column: 1 }, { what: `Number of files (${files.length})`, limit: LIMITS.maxFiles });
  input.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  const manifestFile = input.find((f) => basename(f.path) === 'project.json');
  const manifest = readManifest(manifestFile, sink);
  const ablFiles = input.filter((f) => f.path.endsWith('.abl') || isYamlAgentPath(f.path));

  const documents = new Map<string, DocumentNode>();
  const contents = new Map<string, string>();
  for (const f of ablFiles) {
    contents.set(f.path, f.content);
    const source = createSource(f.content, f.path);
    const doc = isYamlAgentPath(f.path) ? parseYamlSource(source, sink) : parseSource(source, sink);
    if (!doc) continue; // unreadable YAML: already reported (E111)
    documents.set(f.path, doc);
    if (doc.sections.length === 0) sink.report('E107', { path: f.path, line: 1, column: 1 }, { path: f.path });
    else if (doc.docKind === 'unknown') {
      const first = doc.sections[0];
      // A behavior profile (behavior_profiles/*.behavior_profile.abl) is a phase-2 document: W206, not an error.
      if (first?.rawKey.trim().toUpperCase() === 'BEHAVIOR_PROFILE') sink.report('W206', { path: f.path, line: first.loc.line, column: 1 }, { name: `BEHAVIOR_PROFILE (the file ${f.path})` });
      else sink.report('E200', { path: f.path, line: first?.loc.line ?? 1, column: 1 }, { path: f.path, found: first?.rawKey ?? '' });
    }
  }

  // Tool libraries first: agents import from them.
  const memo = new ParseMemo();
  const libraries = new Map<string, CompiledTools>();
  const toolLibraries: Record<string, ToolLibraryIR> = {};
  for (const [path, doc] of documents) {
    if (doc.docKind !== 'tools') continue;
    const ctx = new CompileContext(path, sink, memo);
    const checked = checkSections(ctx, doc);
    const section = checked.byKey.get('TOOLS');
    const compiled = compileTools(ctx, section ? (section.children ?? section.value) : null, { library: true });
    if (compiled.imports.length > 0) ctx.report('E414', compiled.imports[0]?.loc ?? { line: 1, column: 1 }, { src: 'FROM … USE inside a tool library' });
    if (compiled.tools.length === 0) ctx.report('E216', section?.loc ?? { line: 1, column: 1 }, { path });
    libraries.set(path, compiled);
    toolLibraries[path] = { path, defaults: compiled.defaults, tools: compiled.tools };
  }

  const project: ProjectFiles = { libraries, documents, contents };
  const agentList: AgentIR[] = [];
  const usedTemplates = new Map<AgentIR, ReadonlySet<string>>();
  for (const [path, doc] of documents) {
    if (doc.docKind !== 'agent' && doc.docKind !== 'supervisor') continue;
    const ctx = new CompileContext(path, sink, memo);
    const agent = compileAgent(ctx, doc, project);
    agentList.push(agent);
    usedTemplates.set(agent, ctx.usedTemplates);
  }

  const ruleCtx = createRuleContext(sink, agentList, manifest, manifestFile?.path ?? null, usedTemplates);
  for (const rule of PROJECT_RULES) rule(ruleCtx);

  const agents: Record<string, AgentIR> = {};
  for (const a of agentList) if (!Object.hasOwn(agents, a.metadata.name) && a.metadata.name) agents[a.metadata.name] = a;

  const requested = options.entryAgent ?? manifest.entryAgent;
  const entry =
    requested && Object.hasOwn(agents, requested)
      ? requested
      : (agentList.find((a) => a.metadata.kind === 'supervisor')?.metadata.name ?? agentList[0]?.metadata.name ?? null);

  const diagnostics: Diagnostic[] = sortDiagnostics(sink.list);
  const output: CompilationOutput = {
    irVersion: IR_VERSION,
    sourceHash: hashFiles(input),
    project: manifest,
    agents,
    tool_libraries: toolLibraries,
    entry_agent: entry,
    diagnostics,
    ok: !diagnostics.some((d) => d.severity === 'error'),
  };
  // Guarantee plain JSON (drops `undefined` fields, copies shared nodes).
  return jsonCopy(output);
}

/** Checks a whole project and returns only its diagnostics. */
export function validateProject(files: ReadonlyArray<ProjectFile>, options: CompileOptions = {}): Diagnostic[] {
  return compileProject(files, options).diagnostics;
}
