// Shapes agent, version and tool-file documents into API objects (ids as `id`, ISO dates).
import { type Diagnostic } from '../../abl';
import { type AgentDoc } from '../../db/agent';
import { type AgentVersionDoc } from '../../db/agent-version';
import { type ToolFileDoc } from '../../db/tool-file';
import { type AgentVersionStats } from '../../core/agents/agents';
import { toolFilePath } from '../../core/agents/compile';

const iso = (d: Date): string => new Date(d).toISOString();

export const presentTenantAgent = (a: Pick<AgentDoc, '_id' | 'name' | 'projectId'>) => ({ id: a._id, name: a.name, projectId: a.projectId });


export const presentProjectAgent = (a: Omit<AgentDoc, 'dslContent'>, stats: AgentVersionStats) => ({
  id: a._id,
  name: a.name,
  agentPath: `${a.domain}/${a.name}`,
  description: a.description ?? null,
  versionCount: stats.versionCount,
  latestVersion: stats.latestVersion,
  activeVersions: { ...(a.activeVersions ?? {}) },
  createdAt: iso(a.createdAt),
  updatedAt: iso(a.updatedAt),
});

export const presentProjectAgentDetail = (a: AgentDoc, stats: AgentVersionStats) => ({
  ...presentProjectAgent(a, stats),
  dslContent: a.dslContent,
});

export const presentAgentVersion = (v: Omit<AgentVersionDoc, 'irJson' | 'dslContent' | 'toolSources' | 'diagnosticsJson'>) => ({
  id: v._id,
  agentName: v.agentName,
  version: v.version,
  irVersion: v.irVersion,
  sourceHash: v.sourceHash,
  changelog: v.changelog ?? null,
  createdBy: v.createdBy ?? null,
  createdAt: iso(v.createdAt),
});

export const presentAgentVersionDetail = (v: AgentVersionDoc) => ({
  ...presentAgentVersion(v),
  dslContent: v.dslContent,
  toolSources: v.toolSources.map((t) => ({ path: t.path, content: t.content })),
  diagnostics: JSON.parse(v.diagnosticsJson) as Diagnostic[],
  ir: JSON.parse(v.irJson) as Record<string, unknown>,
});

export const presentToolFile = (t: Omit<ToolFileDoc, 'dslContent'>) => ({
  name: t.name,
  path: toolFilePath(t.name),
  createdAt: iso(t.createdAt),
  updatedAt: iso(t.updatedAt),
});

export const presentToolFileDetail = (t: ToolFileDoc) => ({ ...presentToolFile(t), dslContent: t.dslContent });
