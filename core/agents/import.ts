// Imports a project file map (`project.json`, `agents/<Name>.agent.abl` or `agents/<Name>.abl`, or a
// YAML agent `agents/<Name>.agent.yaml` / `agents/<Name>.yaml` (`.yml` too),
// `tools/<name>.tools.abl`) into a project: tool files, agent drafts, then a first version of
// each agent. Used by the dev seed now and meant for the project-import route later.
import { type Diagnostic } from '../../abl';
import { type Models } from '../../db/models';
import { slugify } from '../../lib/ids';
import { DomainError } from '../../lib/errors';
import { type ProjectScope } from './compile';
import { AGENT_NAME_PATTERN, TOOL_NAME_PATTERN } from './names';
import { createAgent, createVersion, putToolFile } from './agents';

export interface ParsedProjectFiles {
  manifest: { name: string | null; entryAgent: string | null; description: string | null } | null;
  agents: Array<{ name: string; path: string; content: string }>;
  tools: Array<{ name: string; path: string; content: string }>;
  /** Paths that are neither an agent, a tool library nor project.json. */
  ignored: string[];
}

/** Sorts a file map into agents, tool files and the manifest (names come from file names). */
export function parseProjectFiles(files: Record<string, string>): ParsedProjectFiles {
  const out: ParsedProjectFiles = { manifest: null, agents: [], tools: [], ignored: [] };
  for (const [path, content] of Object.entries(files).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const agent = /^agents\/([^/]+?)(?:\.agent)?\.(?:abl|ya?ml)$/.exec(path);
    const tool = /^tools\/([^/]+)\.tools\.abl$/.exec(path);
    if (path === 'project.json') {
      try {
        const data = JSON.parse(content) as Record<string, unknown>;
        const s = (k: string) => (typeof data[k] === 'string' ? (data[k] as string) : null);
        out.manifest = { name: s('name'), entryAgent: s('entryAgent'), description: s('description') };
      } catch {
        throw new DomainError('VALIDATION_ERROR', 'files.project.json: is not valid JSON');
      }
    } else if (agent?.[1] && AGENT_NAME_PATTERN.test(agent[1])) out.agents.push({ name: agent[1], path, content });
    else if (tool?.[1] && TOOL_NAME_PATTERN.test(tool[1])) out.tools.push({ name: tool[1], path, content });
    else out.ignored.push(path);
  }
  return out;
}

export interface ImportOptions {
  /** agentPath domain of created agents; defaults to the manifest's name (slugified), then `fallbackDomain`. */
  domain?: string;
  fallbackDomain: string;
  /** `create-missing` leaves existing agents and tool files untouched (the seed); `overwrite` replaces their content. */
  mode: 'create-missing' | 'overwrite';
  /** Label of the first version created for agents that have none. @default "1.0.0" */
  firstVersion?: string;
  createdBy: string | null;
}

export interface ImportResult {
  createdAgents: string[];
  updatedAgents: string[];
  createdTools: string[];
  updatedTools: string[];
  /** Agent name → version label created by this import. */
  versions: Record<string, string>;
  /** Agent name → diagnostics of agents whose draft did not compile (no version made). */
  failed: Record<string, Diagnostic[]>;
  ignored: string[];
}

/**
 * Writes tool files, then every agent draft, then a first version of each agent that has none:
 * versions compile against the other drafts, so all drafts must be in place first.
 * Re-running with the same files and `create-missing` changes nothing.
 */
export async function importProjectFiles(models: Models, scope: ProjectScope, files: Record<string, string>, options: ImportOptions): Promise<ImportResult> {
  const parsed = parseProjectFiles(files);
  const domain = options.domain ?? (parsed.manifest?.name ? slugify(parsed.manifest.name) : options.fallbackDomain);
  const result: ImportResult = { createdAgents: [], updatedAgents: [], createdTools: [], updatedTools: [], versions: {}, failed: {}, ignored: parsed.ignored };

  for (const tool of parsed.tools) {
    const existing = await models.ToolFile.findOne({ ...scope, name: tool.name }).select({ dslContent: 1 }).lean();
    if (existing && (options.mode === 'create-missing' || existing.dslContent === tool.content)) continue;
    await putToolFile(models, scope, tool.name, tool.content, options.createdBy);
    (existing ? result.updatedTools : result.createdTools).push(tool.name);
  }

  for (const agent of parsed.agents) {
    const existing = await models.Agent.findOne({ ...scope, name: agent.name }).select({ dslContent: 1 }).lean();
    if (!existing) {
      await createAgent(models, scope, { name: agent.name, domain, dslContent: agent.content, createdBy: options.createdBy });
      result.createdAgents.push(agent.name);
    } else if (options.mode === 'overwrite' && existing.dslContent !== agent.content) {
      await models.Agent.updateOne({ ...scope, _id: existing._id }, { $set: { dslContent: agent.content } });
      result.updatedAgents.push(agent.name);
    }
  }

  for (const agent of parsed.agents) {
    const doc = await models.Agent.findOne({ ...scope, name: agent.name }).select({ _id: 1 }).lean();
    if (!doc || (await models.AgentVersion.exists({ ...scope, agentId: doc._id }))) continue;
    try {
      const made = await createVersion(models, scope, agent.name, { version: options.firstVersion ?? '1.0.0', createdBy: options.createdBy });
      result.versions[agent.name] = made.version.version;
    } catch (err) {
      const details = (err as DomainError).details as { diagnostics?: Diagnostic[] } | undefined;
      if ((err as DomainError).code !== 'UNPROCESSABLE_ENTITY' || !details?.diagnostics) throw err;
      result.failed[agent.name] = details.diagnostics;
    }
  }
  return result;
}
