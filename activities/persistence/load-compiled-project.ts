// Loads the compiled agents a session runs: for each agent of the project, its newest version's
// IR (deployments will pin versions later). Returns null when the project has no versioned agent.
import type { AgentIR, CompilationOutput } from '../../abl/ir';
import { type Models } from '../../db/models';

export function createLoadCompiledProject(deps: { models: Models }) {
  return async function loadCompiledProject(query: { tenantId: string; projectId: string }): Promise<CompilationOutput | null> {
    const { models } = deps;
    const versions = await models.AgentVersion.find({ tenantId: query.tenantId, projectId: query.projectId })
      .select({ agentName: 1, agentId: 1, seq: 1, irJson: 1, irVersion: 1, sourceHash: 1 })
      .sort({ seq: -1 })
      .lean();
    const newest = new Map<string, (typeof versions)[number]>();
    for (const v of versions) if (!newest.has(v.agentId)) newest.set(v.agentId, v);
    if (newest.size === 0) return null;
    const agents: Record<string, AgentIR> = {};
    for (const v of newest.values()) agents[v.agentName] = JSON.parse(v.irJson) as AgentIR;
    const first = [...newest.values()][0]!;
    return {
      irVersion: first.irVersion,
      sourceHash: [...newest.values()].map((v) => v.sourceHash).sort().join(':'),
      project: { name: null, entryAgent: null, description: null },
      agents,
      tool_libraries: {},
      entry_agent: null,
      diagnostics: [],
      ok: true,
    };
  };
}
