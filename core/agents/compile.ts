// Compiles one agent's draft in the context of its project: the draft itself, every tool
// library file of the project, and the other agents' drafts (so HANDOFF / DELEGATE / ESCALATE
// targets and cycles are checked). Only diagnostics about this agent's file and the tool
// libraries it imports are reported: another agent's broken draft never blocks this one.
import { compileProject, IR_VERSION, type AgentIR, type CompilationOutput, type Diagnostic, type ProjectFile } from '../../abl';
import { resolveRelative } from '../../abl/paths';
import { looksLikeYamlAgent } from '../../abl/yaml';
import { type Models } from '../../db/models';

/**
 * Where the compiler reads a stored agent: `agents/<Name>.agent.abl`, or `.agent.yaml` when the
 * source is the YAML agent format (stored agents have no file name of their own).
 */
export const agentFilePath = (name: string, content?: string): string => `agents/${name}.agent.${content !== undefined && looksLikeYamlAgent(content) ? 'yaml' : 'abl'}`;
export const toolFilePath = (name: string): string => `tools/${name}.tools.abl`;

/** API-level diagnostic codes (the compiler's own codes are listed in docs/abl.md). */
export const AGENT_DIAGNOSTICS = {
  /** The draft declares `AGENT: Other` while the stored agent is named differently. */
  AGENT_NAME_MISMATCH: 'AGENT_NAME_MISMATCH',
  /** The draft compiled to no agent (e.g. it is a TOOLS: document). */
  NOT_AN_AGENT: 'NOT_AN_AGENT',
} as const;

export interface ProjectScope {
  tenantId: string;
  projectId: string;
}

export interface AgentCompilation {
  /** No error-severity diagnostic in `diagnostics`. */
  ok: boolean;
  diagnostics: Diagnostic[];
  /** This agent's IR; null when it did not compile to an agent. */
  ir: AgentIR | null;
  irVersion: number;
  sourceHash: string | null;
  /** The tool library files the agent imports, as compiled. */
  toolSources: ProjectFile[];
}

/** `FROM "../tools/x.tools.abl" USE: …` lines, resolved from the agent file. */
function referencedFiles(agentPath: string, source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(/FROM\s+"([^"\n]+)"/g)) if (m[1]) out.push(resolveRelative(agentPath, m[1]));
  return out;
}

/** Compiles `draft` as the source of agent `agentName` against the project's stored files. */
export async function compileAgentDraft(models: Models, scope: ProjectScope, agentName: string, draft: string): Promise<AgentCompilation> {
  const [tools, others] = await Promise.all([
    models.ToolFile.find(scope).select({ name: 1, dslContent: 1 }).lean(),
    models.Agent.find({ ...scope, name: { $ne: agentName } }).select({ name: 1, dslContent: 1 }).lean(),
  ]);
  const path = agentFilePath(agentName, draft);
  const files: ProjectFile[] = [
    { path, content: draft },
    ...tools.map((t) => ({ path: toolFilePath(t.name), content: t.dslContent })),
    ...others.filter((a) => a.dslContent.trim() !== '').map((a) => ({ path: agentFilePath(a.name, a.dslContent), content: a.dslContent })),
  ];
  return agentCompilationFrom(compileProject(files), files, agentName, draft);
}

/**
 * One agent's share of a project compilation: its IR, the diagnostics of its file and of the tool
 * libraries it imports, and those libraries' sources. `files` are the compiled project's files
 * (agents at `agents/<Name>.agent.abl`); a project import compiles once and reads every agent here.
 */
export function agentCompilationFrom(output: CompilationOutput, files: ProjectFile[], agentName: string, draft: string): AgentCompilation {
  const path = agentFilePath(agentName, draft);
  const own = Object.values(output.agents).find((a) => a.metadata.file === path) ?? null;
  const imported = new Set<string>(referencedFiles(path, draft));
  for (const t of own?.tools ?? []) if (t.imported_from) imported.add(t.imported_from);
  const relevant = new Set<string>([path, ...imported]);
  const diagnostics = output.diagnostics.filter((d) => relevant.has(d.path));

  const ownErrors = diagnostics.some((d) => d.severity === 'error' && d.path === path);
  if (own && own.metadata.name !== agentName) {
    diagnostics.unshift({
      severity: 'error',
      code: AGENT_DIAGNOSTICS.AGENT_NAME_MISMATCH,
      message: `The draft declares "${own.metadata.name}" but this agent is "${agentName}". Change the first line to "${own.metadata.kind === 'supervisor' ? 'SUPERVISOR' : 'AGENT'}: ${agentName}".`,
      path,
      line: own.loc.line,
      column: own.loc.column,
    });
  } else if (!own && !ownErrors) {
    diagnostics.unshift({
      severity: 'error',
      code: AGENT_DIAGNOSTICS.NOT_AN_AGENT,
      message: `The draft does not define an agent. Start it with "AGENT: ${agentName}" (or "SUPERVISOR: ${agentName}").`,
      path,
      line: 1,
      column: 1,
    });
  }

  const toolSources = files.filter((f) => imported.has(f.path) && f.path !== path);
  const ok = !diagnostics.some((d) => d.severity === 'error');
  return {
    ok,
    diagnostics,
    ir: own && own.metadata.name === agentName ? own : null,
    irVersion: output.irVersion ?? IR_VERSION,
    sourceHash: own?.metadata.source_hash ?? null,
    toolSources,
  };
}
