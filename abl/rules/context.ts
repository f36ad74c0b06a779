// What a project rule sees: every compiled agent, the manifest, and a reporter.

import type { DiagnosticArgs, DiagnosticCode, DiagnosticSink } from '../diagnostics';
import type { AgentIR, IRLoc, ProjectManifest } from '../ir';

export interface RuleContext {
  /** All compiled agents, in path order (duplicates included). */
  agents: readonly AgentIR[];
  /** First agent per name. */
  byName: ReadonlyMap<string, AgentIR>;
  manifest: ProjectManifest;
  manifestPath: string | null;
  /** Template names used per agent (for W602). */
  usedTemplates: ReadonlyMap<AgentIR, ReadonlySet<string>>;
  report(code: DiagnosticCode, at: IRLoc, args?: DiagnosticArgs): void;
}

/** A project-wide check. */
export type Rule = (ctx: RuleContext) => void;

export function createRuleContext(
  sink: DiagnosticSink,
  agents: readonly AgentIR[],
  manifest: ProjectManifest,
  manifestPath: string | null,
  usedTemplates: ReadonlyMap<AgentIR, ReadonlySet<string>>,
): RuleContext {
  const byName = new Map<string, AgentIR>();
  for (const a of agents) if (!byName.has(a.metadata.name)) byName.set(a.metadata.name, a);
  return {
    agents,
    byName,
    manifest,
    manifestPath,
    usedTemplates,
    report: (code, at, args = {}) => sink.report(code, { path: at.file, line: at.line, column: at.column }, args),
  };
}
