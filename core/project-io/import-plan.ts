// Judges an import's file map and works out what it would change, without writing anything:
// path safety, the size limits, the file layout, the lockfile, a compile of the whole imported
// project, and the agents it would delete. Both the dry run and the import itself use it.
// A path outside the documented pattern is 400; well-formed files whose content cannot be
// imported (ABL that does not compile, a broken lockfile) are 422, as for agent versions.
import { z } from 'zod';
import { type Diagnostic, formatDiagnostic } from '../../abl';
import { type AgentDoc } from '../../db/agent';
import { type Models } from '../../db/models';
import { type ProjectDoc } from '../../db/project';
import { type ToolFileDoc } from '../../db/tool-file';
import { ApiError } from '../../lib/errors';
import { type ProjectScope } from '../agents/compile';
import { VERSION_PATTERN } from '../agents/names';
import { compileProjectSources, type ProjectCompilation, type SourceFile } from './compile';
import { classifyImportPath, unsafePathReason } from './layout';
import { formatScenarioError, parseScenarioFile } from '../abl-tests/schema';
import { formatBytes, IMPORT_LIMITS } from './limits';

export type OperationType = 'create' | 'update' | 'delete';

export interface ImportOperation {
  type: OperationType;
  entity: 'agent' | 'tool';
  name: string;
  reason: string;
}

export interface ImportPlan {
  scope: ProjectScope;
  /** agentPath domain of the agents the import creates: the project's slug. */
  domain: string;
  operations: ImportOperation[];
  summary: Record<OperationType, number>;
  agents: SourceFile[];
  tools: SourceFile[];
  /** Agent name → `{ version, hash }` from the imported `lockfile.json`. */
  lock: Record<string, { version: string; hash: string }>;
  /** Agent name → source hash of its imported draft as a version would compile it. */
  hashes: Map<string, string>;
  /** The imported project compiled once: the versions the import makes are read from it. */
  compiled: ProjectCompilation;
  existingAgents: Map<string, AgentDoc>;
  existingTools: Map<string, ToolFileDoc>;
}

const ZLockfile = z.object({
  agents: z.record(
    z.string(),
    z.object({ version: z.string().regex(VERSION_PATTERN, 'must be a version label such as 1.0.0'), hash: z.string().max(128) }),
  ),
});

const listed = (items: string[]) => items.slice(0, 10).join('; ') + (items.length > 10 ? `; and ${items.length - 10} more` : '');
const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function parseJsonFile(path: string, content: string): unknown {
  try {
    return JSON.parse(content) as unknown;
  } catch {
    throw new ApiError('UNPROCESSABLE_ENTITY', `files.${path}: is not valid JSON`);
  }
}

export interface CheckedFiles {
  agents: SourceFile[];
  tools: SourceFile[];
  lock: ImportPlan['lock'];
}

/** The checks that need no database: paths, limits, layout, manifest and lockfile syntax. */
export function checkImportFiles(files: Record<string, string>): CheckedFiles {
  const entries = Object.entries(files);
  const unsafe = entries.flatMap(([path]) => {
    const reason = unsafePathReason(path);
    return reason ? [`${JSON.stringify(path)} ${reason}`] : [];
  });
  if (unsafe.length > 0) throw new ApiError('VALIDATION_ERROR', `files: unsafe path(s): ${listed(unsafe)}`);
  if (entries.length > IMPORT_LIMITS.files) {
    throw new ApiError('PAYLOAD_TOO_LARGE', { message: `files: ${entries.length} files; an import holds at most ${IMPORT_LIMITS.files}`, details: { limit: IMPORT_LIMITS.files, count: entries.length } });
  }
  let total = 0;
  const oversized: string[] = [];
  for (const [path, content] of entries) {
    const bytes = Buffer.byteLength(content, 'utf8');
    total += bytes;
    if (bytes > IMPORT_LIMITS.fileBytes) oversized.push(`${path} (${bytes} bytes)`);
  }
  if (oversized.length > 0) {
    throw new ApiError('PAYLOAD_TOO_LARGE', { message: `files: over the ${formatBytes(IMPORT_LIMITS.fileBytes)} per-file limit: ${listed(oversized)}`, details: { limit: IMPORT_LIMITS.fileBytes } });
  }
  if (total > IMPORT_LIMITS.totalBytes) {
    throw new ApiError('PAYLOAD_TOO_LARGE', { message: `files: ${total} bytes in all; an import holds at most ${formatBytes(IMPORT_LIMITS.totalBytes)}`, details: { limit: IMPORT_LIMITS.totalBytes, bytes: total } });
  }

  const out: CheckedFiles = { agents: [], tools: [], lock: {} };
  const unknown: string[] = [];
  for (const [path, content] of entries) {
    const kind = classifyImportPath(path);
    switch (kind.kind) {
      case 'agent':
        if (content.trim() === '') throw new ApiError('UNPROCESSABLE_ENTITY', `files.${path}: is empty; an agent file defines its agent ("AGENT: ${kind.name}")`);
        if (out.agents.some((a) => a.name === kind.name)) throw new ApiError('UNPROCESSABLE_ENTITY', `files.${path}: agent ${kind.name} is given by another file too (agents/${kind.name}.abl or .yaml); give it once`);
        out.agents.push({ name: kind.name, content });
        break;
      case 'tool':
        out.tools.push({ name: kind.name, content });
        break;
      case 'manifest': {
        const manifest = parseJsonFile(path, content);
        if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) throw new ApiError('UNPROCESSABLE_ENTITY', `files.${path}: must be a JSON object`);
        break;
      }
      case 'lockfile': {
        const parsed = ZLockfile.safeParse(parseJsonFile(path, content));
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new ApiError('UNPROCESSABLE_ENTITY', `files.${path}: ${[...(issue?.path ?? []).map(String)].join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
        }
        out.lock = parsed.data.agents;
        break;
      }
      case 'scenarios': {
        // Scenario tests travel with the project's source; an import checks them and does not store them.
        const parsed = parseScenarioFile(path, content);
        if (!parsed.ok) throw new ApiError('UNPROCESSABLE_ENTITY', `files.${formatScenarioError(parsed.errors[0]!)}`);
        break;
      }
      case 'deployments':
        // Deployment records describe the source project's releases; an import does not apply them.
        parseJsonFile(path, content);
        break;
      default:
        unknown.push(path);
    }
  }
  if (unknown.length > 0) {
    throw new ApiError('VALIDATION_ERROR', `files: not an agent (agents/<Name>.abl, or agents/<Name>.yaml for a YAML agent), a tool library (tools/<name>.tools.abl), an agent's scenario tests (agents/<Name>.scenarios.yaml), manifest.json, lockfile.json or deployments.json: ${listed(unknown)}`);
  }
  out.agents.sort(byName);
  out.tools.sort(byName);
  return out;
}

function compileError(errors: Diagnostic[], diagnostics: Diagnostic[]): ApiError {
  const first = errors[0];
  return new ApiError('UNPROCESSABLE_ENTITY', {
    message: `The imported project does not compile: ${errors.length} error(s)${first ? `; first: ${formatDiagnostic(first)}` : ''}`,
    details: { diagnostics },
  });
}

/** Everything the import would do, or the reason it cannot (400, 409, 413); writes nothing. */
export async function planImport(models: Models, project: ProjectDoc, checked: CheckedFiles): Promise<ImportPlan> {
  const compiled = compileProjectSources(checked.agents, checked.tools);
  if (compiled.errors.length > 0) throw compileError(compiled.errors, compiled.diagnostics);

  const scope = { tenantId: project.tenantId, projectId: project._id };
  const [agents, tools] = await Promise.all([models.Agent.find(scope).lean(), models.ToolFile.find(scope).lean()]);
  const existingAgents = new Map(agents.map((a) => [a.name, a]));
  const existingTools = new Map(tools.map((t) => [t.name, t]));

  const operations: ImportOperation[] = [];
  const importedAgents = new Set(checked.agents.map((a) => a.name));
  const importedTools = new Set(checked.tools.map((t) => t.name));
  for (const a of checked.agents) {
    const existing = existingAgents.get(a.name);
    if (!existing) operations.push({ type: 'create', entity: 'agent', name: a.name, reason: 'not in the project' });
    else if (existing.dslContent !== a.content) operations.push({ type: 'update', entity: 'agent', name: a.name, reason: 'DSL content differs' });
  }
  for (const t of checked.tools) {
    const existing = existingTools.get(t.name);
    if (!existing) operations.push({ type: 'create', entity: 'tool', name: t.name, reason: 'not in the project' });
    else if (existing.dslContent !== t.content) operations.push({ type: 'update', entity: 'tool', name: t.name, reason: 'DSL content differs' });
  }
  const activeDeletes: string[] = [];
  for (const a of [...existingAgents.values()].sort(byName)) {
    if (importedAgents.has(a.name)) continue;
    operations.push({ type: 'delete', entity: 'agent', name: a.name, reason: 'not in the imported files' });
    const active = Object.entries(a.activeVersions ?? {});
    if (active.length > 0) activeDeletes.push(`${a.name} (${active.map(([env, v]) => `${env} ${v}`).join(', ')})`);
  }
  for (const t of [...existingTools.values()].sort(byName)) {
    if (!importedTools.has(t.name)) operations.push({ type: 'delete', entity: 'tool', name: t.name, reason: 'not in the imported files' });
  }
  if (activeDeletes.length > 0) {
    throw new ApiError('CONFLICT', {
      message: `The import would delete agents a deployment runs: ${listed(activeDeletes)}; retire those deployments first or include the agents`,
      details: { agents: activeDeletes },
    });
  }

  const summary = { create: 0, update: 0, delete: 0 };
  for (const op of operations) summary[op.type] += 1;
  const hashes = new Map<string, string>();
  for (const [name, ir] of compiled.agents) hashes.set(name, ir.metadata.source_hash);
  return { scope, domain: project.slug, operations, summary, agents: checked.agents, tools: checked.tools, lock: checked.lock, hashes, compiled, existingAgents, existingTools };
}
