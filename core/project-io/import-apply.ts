// Applies an import plan: deletes, tool libraries, agent drafts, then versions, each kind in as
// few round trips as possible (on FerretDB every query costs a scan of its collection).
// MongoDB/FerretDB give no multi-document transaction here, so the guarantee is built in two
// halves: everything that can refuse the import is checked before the first write
// (import-plan.ts), and before each write an undo for it is recorded; if a later write fails, the
// undos run in reverse order and the project is back as it was before the error is answered.
// A crash of the API process mid-write cannot run them: the lock then expires, and repeating the
// same import converges on its result.
import { type AgentDoc } from '../../db/agent';
import { type AgentVersionDoc } from '../../db/agent-version';
import { driverCollection } from '../../db/driver-collection';
import { type Models } from '../../db/models';
import { type ToolFileDoc } from '../../db/tool-file';
import { ApiError } from '../../lib/errors';
import { type Logger } from '../../lib/logger';
import { newId } from '../../lib/ids';
import { agentCompilationFrom, type ProjectScope } from '../agents/compile';
import { bumpPatch, FIRST_VERSION } from '../agents/agents';
import { type ImportPlan } from './import-plan';

export interface ImportApplied {
  created: number;
  updated: number;
  deleted: number;
  /** Agent name → the version label the import created for it. */
  versions: Record<string, string>;
}

export interface ApplyImportOptions {
  createdBy: string | null;
  logger?: Logger;
  /**
   * Called after each write with what was written. A failure thrown from here is handled like a
   * failed write (tests use it to stop an import half-way and check that it is undone).
   */
  afterWrite?: (step: string) => void | Promise<void>;
}

type Undo = { step: string; run: () => Promise<unknown> };

export async function applyImport(models: Models, plan: ImportPlan, options: ApplyImportOptions): Promise<ImportApplied> {
  const { scope } = plan;
  const undo: Undo[] = [];
  const agents = driverCollection<AgentDoc>(models.Agent);
  const versions = driverCollection<AgentVersionDoc>(models.AgentVersion);
  const toolFiles = driverCollection<ToolFileDoc>(models.ToolFile);
  // The undo is recorded before the write, and every undo may run whether or not its write
  // happened (or happened in part): deletes of our own new ids, upserts of what was there.
  const write = async (step: string, revert: () => Promise<unknown>, run: () => Promise<unknown>) => {
    undo.push({ step, run: revert });
    await run();
    await options.afterWrite?.(step);
  };
  const names = (type: 'create' | 'update' | 'delete', entity: 'agent' | 'tool') =>
    plan.operations.filter((o) => o.type === type && o.entity === entity).map((o) => o.name);
  const agentContent = new Map(plan.agents.map((a) => [a.name, a.content]));
  const toolContent = new Map(plan.tools.map((t) => [t.name, t.content]));
  const applied: ImportApplied = { created: 0, updated: 0, deleted: 0, versions: {} };

  try {
    // Deletes first. (The project ends with exactly the imported agents, at most 500 files, so
    // the 1,000-agent cap cannot be reached on the way.)
    const deletedAgents = names('delete', 'agent').map((name) => plan.existingAgents.get(name)!);
    if (deletedAgents.length > 0) {
      const ids = deletedAgents.map((a) => a._id);
      const kept = await versions.find({ ...scope, agentId: { $in: ids } }).toArray();
      await write(
        'delete agents',
        () => restore(agents, scope, deletedAgents).then(() => restore(versions, scope, kept)),
        async () => {
          await agents.deleteMany({ ...scope, _id: { $in: ids } });
          await versions.deleteMany({ ...scope, agentId: { $in: ids } });
        },
      );
    }
    const deletedTools = names('delete', 'tool').map((name) => plan.existingTools.get(name)!);
    if (deletedTools.length > 0) {
      const ids = deletedTools.map((t) => t._id);
      await write('delete tools', () => restore(toolFiles, scope, deletedTools), () => toolFiles.deleteMany({ ...scope, _id: { $in: ids } }));
    }

    const newTools = names('create', 'tool').map((name) => ({ _id: newId(), ...scope, name, dslContent: toolContent.get(name)!, updatedBy: options.createdBy }));
    if (newTools.length > 0) {
      const ids = newTools.map((t) => t._id);
      await write('create tools', () => toolFiles.deleteMany({ ...scope, _id: { $in: ids } }), () => models.ToolFile.insertMany(newTools));
    }
    for (const name of names('update', 'tool')) {
      const previous = plan.existingTools.get(name)!;
      await write(
        `update tool ${name}`,
        () => restore(toolFiles, scope, [previous]),
        () => models.ToolFile.updateOne({ ...scope, _id: previous._id }, { $set: { dslContent: toolContent.get(name)!, updatedBy: options.createdBy } }),
      );
    }

    const newAgents = names('create', 'agent').map((name) => ({
      _id: newId(),
      ...scope,
      name,
      domain: plan.domain,
      description: null,
      dslContent: agentContent.get(name)!,
      activeVersions: {},
      createdBy: options.createdBy,
    }));
    if (newAgents.length > 0) {
      const ids = newAgents.map((a) => a._id);
      await write('create agents', () => agents.deleteMany({ ...scope, _id: { $in: ids } }), () => models.Agent.insertMany(newAgents));
    }
    for (const name of names('update', 'agent')) {
      const previous = plan.existingAgents.get(name)!;
      await write(
        `update agent ${name}`,
        () => restore(agents, scope, [previous]),
        () => models.Agent.updateOne({ ...scope, _id: previous._id }, { $set: { dslContent: agentContent.get(name)! } }),
      );
    }

    // Versions last, all in one insert. The project now holds exactly the imported files, so
    // each agent's compilation is read from the plan's one compile of them.
    const targets = [...newAgents.map((a) => ({ _id: a._id, name: a.name })), ...names('update', 'agent').map((name) => ({ _id: plan.existingAgents.get(name)!._id, name }))];
    const newVersions = await versionDocs(models, plan, targets, options.createdBy);
    if (newVersions.length > 0) {
      const ids = newVersions.map((v) => v._id);
      await write('create versions', () => versions.deleteMany({ ...scope, _id: { $in: ids } }), () => models.AgentVersion.insertMany(newVersions));
      for (const v of newVersions) applied.versions[v.agentName] = v.version;
    }
  } catch (err) {
    await rollBack(undo, options.logger);
    // A unique index refused a write: someone created the same agent, tool file or version label
    // through another route after the plan was made. A race with the caller's own edits, not a bug.
    if (isDuplicateKey(err)) {
      throw new ApiError('CONFLICT', { message: 'The project changed while the import ran; nothing was applied, retry the import', cause: err });
    }
    throw err;
  }
  for (const op of plan.operations) applied[op.type === 'create' ? 'created' : op.type === 'update' ? 'updated' : 'deleted'] += 1;
  return applied;
}

/**
 * The version each created or updated agent gets, as `POST …/versions` would make it: none when
 * its draft compiles to the same source as its newest version; else the lockfile's label when the
 * draft compiles to the locked hash and the label is free (so an export imported elsewhere keeps
 * its labels), otherwise the next free patch label (`1.0.0` for a new agent).
 */
async function versionDocs(models: Models, plan: ImportPlan, targets: Array<{ _id: string; name: string }>, createdBy: string | null) {
  const existing = await models.AgentVersion.find({ ...plan.scope, agentId: { $in: targets.map((t) => t._id) } })
    .select({ _id: 0, agentId: 1, seq: 1, version: 1, sourceHash: 1, irVersion: 1 })
    .lean();
  const docs: Array<Omit<AgentVersionDoc, 'createdAt'>> = [];
  for (const target of targets) {
    const own = existing.filter((v) => v.agentId === target._id);
    const latest = own.reduce<(typeof own)[number] | null>((best, v) => (!best || v.seq > best.seq ? v : best), null);
    const content = plan.agents.find((a) => a.name === target.name)!.content;
    const compilation = agentCompilationFrom(plan.compiled.output, plan.compiled.files, target.name, content);
    if (!compilation.ok || !compilation.ir || !compilation.sourceHash) throw new Error(`agent ${target.name} did not compile on import after passing the plan`);
    if (latest && latest.sourceHash === compilation.sourceHash && latest.irVersion === compilation.irVersion) continue;
    const used = new Set(own.map((v) => v.version));
    const locked = plan.lock[target.name];
    let label = locked && locked.hash === compilation.sourceHash && !used.has(locked.version) ? locked.version : latest ? bumpPatch(latest.version) : FIRST_VERSION;
    while (used.has(label)) label = bumpPatch(label);
    docs.push({
      _id: newId(),
      ...plan.scope,
      agentId: target._id,
      agentName: target.name,
      version: label,
      seq: (latest?.seq ?? 0) + 1,
      irVersion: compilation.irVersion,
      irJson: JSON.stringify(compilation.ir),
      sourceHash: compilation.sourceHash,
      dslContent: content,
      toolSources: compilation.toolSources,
      diagnosticsJson: JSON.stringify(compilation.diagnostics),
      changelog: null,
      createdBy,
    });
  }
  return docs;
}

function isDuplicateKey(err: unknown): boolean {
  const e = err as { code?: number; writeErrors?: Array<{ code?: number; err?: { code?: number } }> } | null;
  return typeof e === 'object' && e !== null && (e.code === 11000 || (e.writeErrors ?? []).some((w) => w.code === 11000 || w.err?.code === 11000));
}

/** Puts documents back as they were (whether or not they are still there). */
async function restore<T extends { _id: string }>(collection: ReturnType<typeof driverCollection<T>>, scope: ProjectScope, docs: T[]): Promise<void> {
  for (const doc of docs) await collection.replaceOne({ ...scope, _id: doc._id } as never, doc, { upsert: true });
}

async function rollBack(undo: Undo[], logger: Logger | undefined): Promise<void> {
  for (const { step, run } of undo.reverse()) {
    try {
      await run();
    } catch (err) {
      // Keep undoing the rest: one failed undo must not leave every earlier write in place.
      logger?.error({ err, step }, 'project import: undo failed');
    }
  }
}
