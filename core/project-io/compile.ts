// Compiles a whole project (tool libraries and agent drafts) the way agent versions are compiled,
// so the hashes match theirs, and reports diagnostics under the export layout's paths
// (`agents/<name>.abl`) instead of the compiler's internal ones (`agents/<name>.agent.abl`).
import { compileProject, type AgentIR, type CompilationOutput, type Diagnostic, type ProjectFile } from '../../abl';
import { AGENT_DIAGNOSTICS, agentFilePath, toolFilePath } from '../agents/compile';
import { exportAgentPath, exportToolPath } from './layout';

export interface SourceFile {
  name: string;
  content: string;
}

export interface ProjectCompilation {
  output: CompilationOutput;
  /** The files as compiled, at the compiler's paths (what `agentCompilationFrom` takes). */
  files: ProjectFile[];
  /** Every diagnostic, paths in the export layout, API checks (name mismatch, not an agent) included. */
  diagnostics: Diagnostic[];
  errors: Diagnostic[];
  /** Agent name → its compiled IR (only agents that compiled to an agent of their own name). */
  agents: Map<string, AgentIR>;
}

/** Compiles agents (non-blank drafts only) and tool libraries together. */
export function compileProjectSources(agents: SourceFile[], tools: SourceFile[]): ProjectCompilation {
  const toExport = new Map<string, string>();
  const files: ProjectFile[] = [];
  for (const t of tools) {
    toExport.set(toolFilePath(t.name), exportToolPath(t.name));
    files.push({ path: toolFilePath(t.name), content: t.content });
  }
  const compiled = agents.filter((a) => a.content.trim() !== '');
  for (const a of compiled) {
    toExport.set(agentFilePath(a.name, a.content), exportAgentPath(a.name));
    files.push({ path: agentFilePath(a.name, a.content), content: a.content });
  }
  const output = compileProject(files);
  const diagnostics: Diagnostic[] = output.diagnostics.map((d) => ({ ...d, path: toExport.get(d.path) ?? d.path }));

  const byFile = new Map<string, AgentIR>();
  for (const ir of Object.values(output.agents)) byFile.set(ir.metadata.file, ir);
  // Two files declaring one name leave only one in `output.agents`; look at every agent file.
  const agentsByName = new Map<string, AgentIR>();
  for (const a of compiled) {
    const path = agentFilePath(a.name, a.content);
    const ir = byFile.get(path) ?? null;
    const ownErrors = diagnostics.some((d) => d.severity === 'error' && d.path === exportAgentPath(a.name));
    if (ir && ir.metadata.name === a.name) agentsByName.set(a.name, ir);
    else if (ir) {
      diagnostics.push({
        severity: 'error',
        code: AGENT_DIAGNOSTICS.AGENT_NAME_MISMATCH,
        message: `The file declares "${ir.metadata.name}" but is named for "${a.name}". Rename the file or change the first line to "${ir.metadata.kind === 'supervisor' ? 'SUPERVISOR' : 'AGENT'}: ${a.name}".`,
        path: exportAgentPath(a.name),
        line: ir.loc.line,
        column: ir.loc.column,
      });
    } else if (!ownErrors) {
      diagnostics.push({
        severity: 'error',
        code: AGENT_DIAGNOSTICS.NOT_AN_AGENT,
        message: `The file does not define an agent. Start it with "AGENT: ${a.name}" (or "SUPERVISOR: ${a.name}").`,
        path: exportAgentPath(a.name),
        line: 1,
        column: 1,
      });
    }
  }
  return { output, files, diagnostics, errors: diagnostics.filter((d) => d.severity === 'error'), agents: agentsByName };
}

export interface DependencyEdge {
  from: string;
  to: string;
  type: 'handoff' | 'tool';
}

/**
 * Agent → agent edges (HANDOFF and DELEGATE targets alike: the spec names two edge types) as
 * `handoff`, and agent → imported library tool as `tool`; deduplicated and sorted.
 */
export function dependencyEdges(agents: Map<string, AgentIR>): DependencyEdge[] {
  const seen = new Map<string, DependencyEdge>();
  const add = (edge: DependencyEdge) => seen.set(`${edge.type}\u0000${edge.from}\u0000${edge.to}`, edge);
  for (const [name, ir] of agents) {
    for (const h of ir.coordination.handoffs) add({ from: name, to: h.to, type: 'handoff' });
    for (const d of ir.coordination.delegates) add({ from: name, to: d.agent, type: 'handoff' });
    for (const t of ir.tools) if (t.imported_from) add({ from: name, to: t.name, type: 'tool' });
  }
  const key = (e: DependencyEdge) => [e.from, e.type, e.to].join('\u0000');
  return [...seen.values()].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
