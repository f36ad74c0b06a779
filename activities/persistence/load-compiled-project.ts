// Loads the compiled agents a session runs. A session pinned to a deployment runs the versions
// its manifest names, with its model overrides applied; any other session runs each agent's
// newest version. Only the chosen versions' IR is read. Returns null when there is nothing to run.
import type { AgentIR, CompilationOutput } from '../../abl/ir';
import { type AgentVersionDoc } from '../../db/agent-version';
import { type DeploymentDoc } from '../../db/deployment';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import type { SessionStartInput } from '../../workflows/definitions';

type ChosenVersion = Pick<AgentVersionDoc, 'agentName' | 'irJson' | 'irVersion' | 'sourceHash'>;
const IR_FIELDS = { _id: 0, agentName: 1, irJson: 1, irVersion: 1, sourceHash: 1 } as const;

export interface BundleQuery {
  tenantId: string;
  projectId: string;
  bundleRef?: SessionStartInput['bundleRef'];
}

/** Each agent's newest version: labels and order first, then the IR of those versions only. */
async function latestVersions(models: Models, scope: { tenantId: string; projectId: string }): Promise<ChosenVersion[]> {
  const rows = await models.AgentVersion.find(scope).select({ _id: 1, agentId: 1, seq: 1 }).sort({ seq: -1 }).lean();
  const newest = new Map<string, string>();
  for (const row of rows) if (!newest.has(row.agentId)) newest.set(row.agentId, row._id);
  if (newest.size === 0) return [];
  return models.AgentVersion.find({ ...scope, _id: { $in: [...newest.values()] } }).select(IR_FIELDS).lean();
}

async function deploymentVersions(models: Models, deployment: DeploymentDoc): Promise<ChosenVersion[]> {
  const pairs = Object.entries(deployment.agentVersionManifest).map(([agentName, version]) => ({ agentName, version }));
  if (pairs.length === 0) return [];
  return models.AgentVersion.find({ tenantId: deployment.tenantId, projectId: deployment.projectId, $or: pairs }).select(IR_FIELDS).lean();
}

/** A deployment's per-agent model and temperature replace what the agent's EXECUTION says. */
function applyModelOverrides(agents: Record<string, AgentIR>, overrides: DeploymentDoc['modelOverrides']): void {
  for (const [name, override] of Object.entries(overrides ?? {})) {
    const agent = agents[name];
    if (!agent) continue;
    agent.execution = {
      ...agent.execution,
      ...(override.model !== undefined ? { model: override.model } : {}),
      ...(override.temperature !== undefined ? { temperature: override.temperature } : {}),
    };
  }
}

export function createLoadCompiledProject(deps: { models: Models }) {
  return async function loadCompiledProject(query: BundleQuery): Promise<CompilationOutput | null> {
    const { models } = deps;
    const scope = { tenantId: query.tenantId, projectId: query.projectId };
    const ref = query.bundleRef;
    let deployment: DeploymentDoc | null = null;
    let versions: ChosenVersion[];
    if (ref?.kind === 'deployment') {
      // Retired or not: a session keeps the versions it started with until it ends.
      deployment = await findOwned(models.Deployment, ref.deploymentId, scope);
      if (!deployment) return null;
      versions = await deploymentVersions(models, deployment);
    } else {
      versions = await latestVersions(models, scope);
    }
    if (versions.length === 0) return null;
    versions.sort((a, b) => (a.agentName < b.agentName ? -1 : a.agentName > b.agentName ? 1 : 0));
    const agents: Record<string, AgentIR> = {};
    for (const v of versions) agents[v.agentName] = JSON.parse(v.irJson) as AgentIR;
    if (deployment) applyModelOverrides(agents, deployment.modelOverrides);
    return {
      irVersion: versions[0]!.irVersion,
      sourceHash: versions.map((v) => v.sourceHash).sort().join(':'),
      project: { name: null, entryAgent: deployment?.entryAgentName ?? null, description: null },
      agents,
      tool_libraries: {},
      entry_agent: deployment?.entryAgentName ?? null,
      diagnostics: [],
      ok: true,
    };
  };
}
