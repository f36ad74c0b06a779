// Agents, drafts, versions and tool files of a project. Used by the agent routes, the dev seed
// and (later) project import, so all of them create agents and versions the same way.
// Every query carries tenantId + projectId; ids from the URL never widen the scope.
import { formatDiagnostic, type Diagnostic } from '../../abl';
import { type AgentDoc } from '../../db/agent';
import { type AgentVersionDoc } from '../../db/agent-version';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { DomainError } from '../../lib/errors';
import { newId } from '../../lib/ids';
import { type Principal } from '../../lib/permissions';
import { compileAgentDraft, type AgentCompilation, type ProjectScope } from './compile';
import { VERSION_PATTERN } from './names';
import { isDuplicateKey } from '../../db/duplicate-key';

/** A project holds at most this many agents (the spec's export limit). */
export const MAX_AGENTS_PER_PROJECT = 1000;
/** A project holds at most this many tool library files (the spec's export limit). */
export const MAX_TOOL_FILES_PER_PROJECT = 500;

export const FIRST_VERSION = '1.0.0';

const draftTemplate = (name: string): string => `AGENT: ${name}\nGOAL: "Describe what ${name} is for."\n`;

// ---------------------------------------------------------------- tenant-wide discovery

/** Project filter for the tenant routes: a project-bound credential sees only its project. */
async function tenantProjectFilter(models: Models, principal: Principal, projectId: string | undefined): Promise<Record<string, unknown>> {
  if (projectId === undefined) return principal.projectId ? { projectId: principal.projectId } : {};
  if (principal.projectId && principal.projectId !== projectId) throw DomainError.notFound('Project');
  if (!(await findOwned(models.Project, projectId, { tenantId: principal.tenantId }))) throw DomainError.notFound('Project');
  return { projectId };
}

export async function listTenantAgents(models: Models, principal: Principal, query: { projectId?: string; limit: number; offset: number }) {
  const filter = { tenantId: principal.tenantId, ...(await tenantProjectFilter(models, principal, query.projectId)) };
  const [total, agents] = await Promise.all([
    models.Agent.countDocuments(filter),
    models.Agent.find(filter).select({ name: 1, projectId: 1 }).sort({ name: 1, projectId: 1 }).skip(query.offset).limit(query.limit).lean(),
  ]);
  return { total, agents };
}

/** Finds an agent by name across the caller's visible projects; ambiguous names need `projectId`. */
export async function findTenantAgentByName(models: Models, principal: Principal, name: string, projectId: string | undefined) {
  const filter = { tenantId: principal.tenantId, name, ...(await tenantProjectFilter(models, principal, projectId)) };
  const found = await models.Agent.find(filter).select({ name: 1, projectId: 1, dslContent: 1 }).sort({ projectId: 1 }).limit(2).lean();
  if (found.length === 0) throw DomainError.notFound('Agent');
  if (found.length > 1) {
    // A well-formed request the current state cannot answer: 409, not a 400.
    throw new DomainError('CONFLICT', {
      message: `Agent "${name}" exists in several projects; pass ?projectId= to choose one`,
      details: { projectIds: found.map((a) => a.projectId) },
    });
  }
  return found[0]!;
}

// ---------------------------------------------------------------- agents and drafts

export async function getAgent(models: Models, scope: ProjectScope, name: string): Promise<AgentDoc> {
  const agent = await models.Agent.findOne({ ...scope, name }).lean();
  if (!agent) throw DomainError.notFound('Agent');
  return agent;
}

/**
 * versionCount and latest label for each agent id (agents without versions are absent).
 * Computed in TypeScript over one indexed query: FerretDB lacks the $max/$first accumulators.
 */
export async function versionStats(models: Models, scope: ProjectScope, agentIds: string[]): Promise<Map<string, AgentVersionStats>> {
  const stats = new Map<string, AgentVersionStats>();
  if (agentIds.length === 0) return stats;
  const rows = await models.AgentVersion.find({ ...scope, agentId: { $in: agentIds } })
    .select({ _id: 0, agentId: 1, seq: 1, version: 1 })
    .sort({ agentId: 1, seq: -1 })
    .lean();
  for (const row of rows) {
    const seen = stats.get(row.agentId);
    if (seen) seen.versionCount += 1;
    else stats.set(row.agentId, { versionCount: 1, latestVersion: row.version });
  }
  return stats;
}

/** How many versions an agent has, and its newest label. */
export interface AgentVersionStats {
  versionCount: number;
  latestVersion: string | null;
}

export const NO_VERSIONS: AgentVersionStats = { versionCount: 0, latestVersion: null };

export async function listProjectAgents(models: Models, scope: ProjectScope) {
  const agents = await models.Agent.find(scope).select({ dslContent: 0 }).sort({ name: 1 }).limit(MAX_AGENTS_PER_PROJECT).lean();
  const stats = await versionStats(
    models,
    scope,
    agents.map((a) => a._id),
  );
  return agents.map((agent) => ({ agent, stats: stats.get(agent._id) ?? NO_VERSIONS }));
}

export async function agentWithStats(models: Models, scope: ProjectScope, name: string) {
  const agent = await getAgent(models, scope, name);
  const stats = (await versionStats(models, scope, [agent._id])).get(agent._id) ?? NO_VERSIONS;
  return { agent, stats };
}

export interface CreateAgentInput {
  name: string;
  domain: string;
  description?: string | null;
  dslContent?: string;
  createdBy?: string | null;
}

export async function createAgent(models: Models, scope: ProjectScope, input: CreateAgentInput): Promise<AgentDoc> {
  if ((await models.Agent.countDocuments(scope)) >= MAX_AGENTS_PER_PROJECT) {
    throw new DomainError('CONFLICT', `A project holds at most ${MAX_AGENTS_PER_PROJECT} agents`);
  }
  try {
    const doc = await models.Agent.create({
      ...scope,
      name: input.name,
      domain: input.domain,
      description: input.description ?? null,
      dslContent: input.dslContent ?? draftTemplate(input.name),
      activeVersions: {},
      createdBy: input.createdBy ?? null,
    });
    return doc.toObject();
  } catch (err) {
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `An agent named "${input.name}" already exists in this project`);
    throw err;
  }
}

/** Saves the working copy only: no compilation, no version. */
export async function saveDraft(models: Models, scope: ProjectScope, name: string, dslContent: string): Promise<Date> {
  // No projection: FerretDB's findAndModify does not support one.
  const updated = await models.Agent.findOneAndUpdate({ ...scope, name }, { $set: { dslContent } }, { new: true }).lean();
  if (!updated) throw DomainError.notFound('Agent');
  return updated.updatedAt;
}

/** Deletes an agent with its versions; refused while a deployment has a version active. */
export async function deleteAgent(models: Models, scope: ProjectScope, name: string): Promise<void> {
  const agent = await getAgent(models, scope, name);
  const active = Object.entries(agent.activeVersions ?? {});
  if (active.length > 0) {
    throw new DomainError('CONFLICT', {
      message: `Agent "${name}" is active in ${active.map(([env, v]) => `${env} (${v})`).join(', ')}; retire those deployments first`,
      details: { activeVersions: agent.activeVersions },
    });
  }
  await models.Agent.deleteOne({ ...scope, _id: agent._id });
  await models.AgentVersion.deleteMany({ ...scope, agentId: agent._id });
}

/**
 * Records which version of each agent an environment now runs (called by deployments):
 * agents in `manifest` get `activeVersions[environment]`, every other agent loses it.
 */
export async function recordActiveVersions(models: Models, scope: ProjectScope, environment: string, manifest: Record<string, string>): Promise<void> {
  const field = `activeVersions.${environment}`;
  const names = Object.keys(manifest);
  await models.Agent.updateMany({ ...scope, name: { $nin: names } }, { $unset: { [field]: '' } });
  // One write per distinct version label (agents mostly share a few), not one per agent.
  const byVersion = new Map<string, string[]>();
  for (const [name, version] of Object.entries(manifest)) byVersion.set(version, [...(byVersion.get(version) ?? []), name]);
  for (const [version, agents] of byVersion) await models.Agent.updateMany({ ...scope, name: { $in: agents } }, { $set: { [field]: version } });
}

// ---------------------------------------------------------------- validation and versions

export async function validateDraft(models: Models, scope: ProjectScope, name: string, dslContent?: string): Promise<AgentCompilation> {
  const agent = await getAgent(models, scope, name);
  return compileAgentDraft(models, scope, name, dslContent ?? agent.dslContent);
}

export function compileErrorToDomainError(name: string, compilation: AgentCompilation): DomainError {
  const errors = compilation.diagnostics.filter((d) => d.severity === 'error');
  const first = errors[0];
  return new DomainError('UNPROCESSABLE_ENTITY', {
    message: `Agent "${name}" does not compile: ${errors.length} error(s)${first ? `; first: ${formatDiagnostic(first)}` : ''}`,
    details: { diagnostics: compilation.diagnostics },
  });
}

/** The next patch label (`2.0.0-beta.1` → `2.0.1`); `1.0.0` after a label that is not one. */
export function bumpPatch(label: string): string {
  const m = VERSION_PATTERN.exec(label);
  if (!m) return FIRST_VERSION;
  return `${m[1]}.${m[2]}.${Number(m[3]) + 1}`;
}

async function nextFreeLabel(models: Models, agentId: string, latest: string | null): Promise<string> {
  let label = latest ? bumpPatch(latest) : FIRST_VERSION;
  // An explicitly created later label may already hold the next patch: keep bumping.
  for (let i = 0; i < 1000 && (await models.AgentVersion.exists({ agentId, version: label })); i++) label = bumpPatch(label);
  return label;
}

export interface CreateVersionInput {
  version?: string;
  changelog?: string | null;
  createdBy?: string | null;
}

export interface CreateVersionResult {
  version: AgentVersionDoc;
  /** False when the draft is unchanged since the latest version and no label was given. */
  created: boolean;
  diagnostics: Diagnostic[];
}

/**
 * Compiles the agent's draft with the project's tool files and other agents, and stores an
 * immutable version. Errors → 422 with the diagnostics; warnings are kept on the version.
 * Without a label and with the same source hash as the latest version, returns that version.
 */
export async function createVersion(models: Models, scope: ProjectScope, name: string, input: CreateVersionInput): Promise<CreateVersionResult> {
  const agent = await getAgent(models, scope, name);
  const compilation = await compileAgentDraft(models, scope, name, agent.dslContent);
  if (!compilation.ok || !compilation.ir || !compilation.sourceHash) throw compileErrorToDomainError(name, compilation);

  for (let attempt = 0; ; attempt++) {
    const latest = await models.AgentVersion.findOne({ ...scope, agentId: agent._id }).sort({ seq: -1 }).lean();
    const unchanged = latest !== null && latest.sourceHash === compilation.sourceHash && latest.irVersion === compilation.irVersion;
    if (input.version !== undefined) {
      if (await models.AgentVersion.exists({ ...scope, agentId: agent._id, version: input.version })) {
        throw new DomainError('CONFLICT', `Version ${input.version} of agent "${name}" already exists`);
      }
      if (unchanged) {
        throw new DomainError('CONFLICT', {
          message: `The draft of "${name}" is unchanged since version ${latest.version}; edit it before creating another version`,
          details: { version: latest.version },
        });
      }
    } else if (unchanged) {
      return { version: latest, created: false, diagnostics: JSON.parse(latest.diagnosticsJson) as Diagnostic[] };
    }
    const label = input.version ?? (await nextFreeLabel(models, agent._id, latest?.version ?? null));
    try {
      const doc = await models.AgentVersion.create({
        ...scope,
        agentId: agent._id,
        agentName: name,
        version: label,
        seq: (latest?.seq ?? 0) + 1,
        irVersion: compilation.irVersion,
        irJson: JSON.stringify(compilation.ir),
        sourceHash: compilation.sourceHash,
        dslContent: agent.dslContent,
        toolSources: compilation.toolSources,
        diagnosticsJson: JSON.stringify(compilation.diagnostics),
        changelog: input.changelog ?? null,
        createdBy: input.createdBy ?? null,
      });
      return { version: doc.toObject(), created: true, diagnostics: compilation.diagnostics };
    } catch (err) {
      // A concurrent create took the same seq or label: re-read and decide again.
      if (!isDuplicateKey(err) || attempt >= 3) {
        if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `Another version of "${name}" was created at the same time; retry`);
        throw err;
      }
    }
  }
}

const VERSION_SUMMARY = { irJson: 0, dslContent: 0, toolSources: 0, diagnosticsJson: 0 } as const;

export async function listVersions(models: Models, scope: ProjectScope, name: string, page: { limit: number; offset: number }) {
  const agent = await getAgent(models, scope, name);
  const filter = { ...scope, agentId: agent._id };
  const [total, versions] = await Promise.all([
    models.AgentVersion.countDocuments(filter),
    models.AgentVersion.find(filter).select(VERSION_SUMMARY).sort({ seq: -1 }).skip(page.offset).limit(page.limit).lean(),
  ]);
  return { total, versions };
}

export async function getVersion(models: Models, scope: ProjectScope, name: string, version: string): Promise<AgentVersionDoc> {
  const agent = await getAgent(models, scope, name);
  const doc = await models.AgentVersion.findOne({ ...scope, agentId: agent._id, version }).lean();
  if (!doc) throw DomainError.notFound('Version');
  return doc;
}

// ---------------------------------------------------------------- tool library files

export async function listToolFiles(models: Models, scope: ProjectScope) {
  return models.ToolFile.find(scope).select({ dslContent: 0 }).sort({ name: 1 }).limit(MAX_TOOL_FILES_PER_PROJECT).lean();
}

export async function getToolFile(models: Models, scope: ProjectScope, name: string) {
  const doc = await models.ToolFile.findOne({ ...scope, name }).lean();
  if (!doc) throw DomainError.notFound('Tool file');
  return doc;
}

/** Creates or replaces a tool library file; saved without compilation (like drafts). */
export async function putToolFile(models: Models, scope: ProjectScope, name: string, dslContent: string, updatedBy: string | null) {
  const existing = await models.ToolFile.findOne({ ...scope, name }).select({ _id: 1 }).lean();
  if (!existing && (await models.ToolFile.countDocuments(scope)) >= MAX_TOOL_FILES_PER_PROJECT) {
    throw new DomainError('CONFLICT', `A project holds at most ${MAX_TOOL_FILES_PER_PROJECT} tool files`);
  }
  try {
    const doc = await models.ToolFile.findOneAndUpdate(
      { ...scope, name },
      { $set: { dslContent, updatedBy }, $setOnInsert: { _id: newId() } },
      { upsert: true, new: true },
    ).lean();
    return { tool: doc, created: !existing };
  } catch (err) {
    // Two concurrent first writes: the loser retries as an update.
    if (!isDuplicateKey(err)) throw err;
    const doc = await models.ToolFile.findOneAndUpdate({ ...scope, name }, { $set: { dslContent, updatedBy } }, { new: true }).lean();
    if (!doc) throw err;
    return { tool: doc, created: false };
  }
}

export async function deleteToolFile(models: Models, scope: ProjectScope, name: string): Promise<void> {
  const res = await models.ToolFile.deleteOne({ ...scope, name });
  if (res.deletedCount === 0) throw DomainError.notFound('Tool file');
}
