// Builds a project's export: the file map (`agents/<name>.abl`, `tools/<name>.tools.abl`, and
// `deployments.json` on request), the manifest, the lockfile and warnings; and the export preview.
// Every query carries the tenant and the project.
import { createHash } from 'node:crypto';
import { type BindingIR } from '../../abl';
import { type Models } from '../../db/models';
import { type ProjectDoc } from '../../db/project';
import { ApiError } from '../../lib/errors';
import { type ProjectScope } from '../agents/compile';
import { compileProjectSources, dependencyEdges } from './compile';
import { listDeploymentRecords } from './deployment-records';
import { DEPLOYMENTS_FILE, exportAgentPath, exportToolPath } from './layout';
import { EXPORT_LIMITS, formatBytes, type ExportLimits } from './limits';

/** The export format's version, written as the manifest's `version`. */
export const EXPORT_FORMAT_VERSION = 1;

export interface ExportManifest {
  name: string;
  version: number;
  entryAgent: string | null;
  agents: Record<string, { sourceHash: string; path: string }>;
  exportedAt: string;
  exportedBy: string;
}

export interface ExportLockfile {
  agents: Record<string, { version: string; hash: string }>;
}

export interface ExportWarning {
  code: 'AGENT_WITHOUT_DSL';
  name: string;
  message: string;
}

export interface ProjectExport {
  manifest: ExportManifest;
  lockfile: ExportLockfile;
  files: Record<string, string>;
  warnings: ExportWarning[];
}

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function tooLarge(what: string, count: number, limit: number): ApiError {
  return new ApiError('UNPROCESSABLE_ENTITY', {
    message: `The project has ${count} ${what}; an export holds at most ${limit}`,
    details: { limit, count },
  });
}

async function readProject(models: Models, scope: ProjectScope, limits: ExportLimits) {
  const [agentCount, toolCount] = await Promise.all([models.Agent.countDocuments(scope), models.ToolFile.countDocuments(scope)]);
  if (agentCount > limits.agents) throw tooLarge('agents', agentCount, limits.agents);
  if (toolCount > limits.tools) throw tooLarge('tool files', toolCount, limits.tools);
  const [agents, tools] = await Promise.all([
    models.Agent.find(scope).select({ name: 1, dslContent: 1 }).lean(),
    models.ToolFile.find(scope).select({ name: 1, dslContent: 1 }).lean(),
  ]);
  return {
    agents: agents.map((a) => ({ _id: a._id, name: a.name, content: a.dslContent ?? '' })).sort(byName),
    tools: tools.map((t) => ({ name: t.name, content: t.dslContent })).sort(byName),
  };
}

/** Agent id → its newest version's label and source hash (one indexed query, no IR read). */
async function latestVersions(models: Models, scope: ProjectScope): Promise<Map<string, { version: string; hash: string }>> {
  const rows = await models.AgentVersion.find(scope).select({ _id: 0, agentId: 1, seq: 1, version: 1, sourceHash: 1 }).sort({ agentId: 1, seq: -1 }).lean();
  const latest = new Map<string, { version: string; hash: string }>();
  for (const row of rows) if (!latest.has(row.agentId)) latest.set(row.agentId, { version: row.version, hash: row.sourceHash });
  return latest;
}

export interface BuildExportOptions {
  exportedBy: string;
  includeDeployments: boolean;
  limits?: ExportLimits;
  now?: Date;
}

export async function buildProjectExport(models: Models, project: ProjectDoc, options: BuildExportOptions): Promise<ProjectExport> {
  const limits = options.limits ?? EXPORT_LIMITS;
  const scope = { tenantId: project.tenantId, projectId: project._id };
  const [{ agents, tools }, latest] = await Promise.all([readProject(models, scope, limits), latestVersions(models, scope)]);

  const files: Record<string, string> = {};
  const warnings: ExportWarning[] = [];
  const manifestAgents: ExportManifest['agents'] = {};
  const lockAgents: ExportLockfile['agents'] = {};
  const exported = agents.filter((a) => {
    if (a.content.trim() !== '') return true;
    warnings.push({ code: 'AGENT_WITHOUT_DSL', name: a.name, message: `Agent "${a.name}" has no DSL content; it is not exported` });
    return false;
  });
  for (const a of exported) {
    const path = exportAgentPath(a.name);
    files[path] = a.content;
    manifestAgents[a.name] = { sourceHash: sha256(a.content), path };
    const locked = latest.get(a._id);
    if (locked) lockAgents[a.name] = locked;
  }
  for (const t of tools) files[exportToolPath(t.name)] = t.content;
  if (options.includeDeployments) {
    files[DEPLOYMENTS_FILE] = `${JSON.stringify({ deployments: await listDeploymentRecords(models, scope) }, null, 2)}\n`;
  }

  const bytes = Object.values(files).reduce((sum, content) => sum + Buffer.byteLength(content, 'utf8'), 0);
  if (bytes > limits.responseBytes) {
    throw new ApiError('UNPROCESSABLE_ENTITY', {
      message: `The project's files come to ${bytes} bytes; an export response holds at most ${formatBytes(limits.responseBytes)}`,
      details: { limit: limits.responseBytes, bytes },
    });
  }

  return {
    manifest: {
      name: project.name,
      version: EXPORT_FORMAT_VERSION,
      entryAgent: entryAgentOf(exported),
      agents: manifestAgents,
      exportedAt: (options.now ?? new Date()).toISOString(),
      exportedBy: options.exportedBy,
    },
    lockfile: { agents: lockAgents },
    files: sortedKeys(files),
    warnings,
  };
}

/**
 * The agent a session of the project starts with, as the compiler picks it without a manifest:
 * the first supervisor by name, else the first agent by name. Read from each draft's first
 * section header rather than by compiling the project, which would cost an export most of its time.
 */
export function entryAgentOf(agents: Array<{ name: string; content: string }>): string | null {
  const supervisor = agents.find((a) => firstSectionKey(a.content) === 'SUPERVISOR');
  return supervisor?.name ?? agents[0]?.name ?? null;
}

/** The key of the first line that is not blank or a comment, upper-cased (`supervisor:` counts). */
function firstSectionKey(source: string): string | null {
  for (const line of source.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/)) {
    const text = line.trim();
    if (text === '' || text.startsWith('#')) continue;
    const colon = text.indexOf(':');
    return colon > 0 ? text.slice(0, colon).trim().toUpperCase() : null;
  }
  return null;
}

/** Checks the serialized size of a response against the export limit. */
export function assertResponseSize(bytes: number, limits: ExportLimits = EXPORT_LIMITS): void {
  if (bytes > limits.responseBytes) {
    throw new ApiError('UNPROCESSABLE_ENTITY', {
      message: `The export comes to ${bytes} bytes; an export response holds at most ${formatBytes(limits.responseBytes)}`,
      details: { limit: limits.responseBytes, bytes },
    });
  }
}

function sortedKeys(files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `async_webhook` for an HTTP tool that suspends until a callback, else the binding's type. */
function toolType(binding: BindingIR): string {
  return binding.type === 'http' && binding.async ? 'async_webhook' : binding.type;
}

export async function buildExportPreview(models: Models, project: ProjectDoc) {
  const scope = { tenantId: project.tenantId, projectId: project._id };
  const { agents, tools } = await readProject(models, scope, EXPORT_LIMITS);
  const compiled = compileProjectSources(agents, tools);
  // Library tools (the compiler's library paths are the export layout's), then the tools agents
  // declare inline, each with the file that declares it.
  const libraryTools = Object.values(compiled.output.tool_libraries).flatMap((library) =>
    library.tools.map((t) => ({ name: t.name, toolType: toolType(t.binding), path: library.path })),
  );
  const inlineTools = [...compiled.agents].flatMap(([name, ir]) =>
    ir.tools.filter((t) => !t.imported_from).map((t) => ({ name: t.name, toolType: toolType(t.binding), path: exportAgentPath(name) })),
  );
  const allTools = [...libraryTools, ...inlineTools].sort((a, b) =>
    a.path < b.path ? -1 : a.path > b.path ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  return {
    project: { name: project.name, slug: project.slug },
    agents: agents.map((a) => ({ name: a.name, hasDslContent: a.content.trim() !== '' })),
    tools: allTools,
    dependencies: {
      edges: dependencyEdges(compiled.agents),
      validation: { valid: compiled.errors.length === 0, errors: compiled.errors },
    },
  };
}
