// Applies an import plan: deletes, tool libraries, agent drafts, then versions. MongoDB/FerretDB
// give no multi-document transaction here, so the guarantee is built in two halves: everything
// that can refuse the import is checked before the first write (import-plan.ts), and each write
// records how to undo it; if a later write fails, the recorded undos run in reverse order and the
// project is back as it was before the error is answered. A crash of the API process mid-write
// cannot run them: the lock then expires, and repeating the same import converges on its result.
import { type AgentDoc } from '../../db/agent';
import { type AgentVersionDoc } from '../../db/agent-version';
import { driverCollection } from '../../db/driver-collection';
import { type Models } from '../../db/models';
import { type ToolFileDoc } from '../../db/tool-file';
import { type Logger } from '../../lib/logger';
import { newId } from '../../lib/ids';
import { agentCompilationFrom } from '../agents/compile';
import { createAgent, storeVersion } from '../agents/service';
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

export async function applyImport(models: Models, plan: ImportPlan, options: ApplyImportOptions): Promise<ImportApplied> {
  const { scope } = plan;
  const undo: Array<{ step: string; run: () => Promise<unknown> }> = [];
  const agents = driverCollection<AgentDoc>(models.Agent);
  const versions = driverCollection<AgentVersionDoc>(models.AgentVersion);
  const toolFiles = driverCollection<ToolFileDoc>(models.ToolFile);
  const done = async (step: string, run: () => Promise<unknown>) => {
    undo.push({ step, run });
    await options.afterWrite?.(step);
  };
  const ops = (type: 'create' | 'update' | 'delete', entity: 'agent' | 'tool') => plan.operations.filter((o) => o.type === type && o.entity === entity);
  const content = new Map([...plan.agents.map((a) => [`agent:${a.name}`, a.content] as const), ...plan.tools.map((t) => [`tool:${t.name}`, t.content] as const)]);
  const applied: ImportApplied = { created: 0, updated: 0, deleted: 0, versions: {} };

  try {
    // Deletes first: a project at its agent cap can then take the agents that replace them.
    for (const op of ops('delete', 'agent')) {
      const agent = plan.existingAgents.get(op.name)!;
      const kept = await versions.find({ ...scope, agentId: agent._id }).toArray();
      await agents.deleteOne({ ...scope, _id: agent._id });
      await versions.deleteMany({ ...scope, agentId: agent._id });
      await done(`delete agent ${op.name}`, async () => {
        await agents.insertOne(agent);
        if (kept.length > 0) await versions.insertMany(kept);
      });
    }
    for (const op of ops('delete', 'tool')) {
      const tool = plan.existingTools.get(op.name)!;
      await toolFiles.deleteOne({ ...scope, _id: tool._id });
      await done(`delete tool ${op.name}`, () => toolFiles.insertOne(tool));
    }
    for (const op of [...ops('create', 'tool'), ...ops('update', 'tool')]) {
      const dslContent = content.get(`tool:${op.name}`)!;
      const previous = plan.existingTools.get(op.name);
      if (previous) {
        await models.ToolFile.updateOne({ ...scope, _id: previous._id }, { $set: { dslContent, updatedBy: options.createdBy } });
        await done(`update tool ${op.name}`, () => toolFiles.replaceOne({ ...scope, _id: previous._id }, previous));
      } else {
        const created = await models.ToolFile.create({ _id: newId(), ...scope, name: op.name, dslContent, updatedBy: options.createdBy });
        await done(`create tool ${op.name}`, () => toolFiles.deleteOne({ ...scope, _id: created._id }));
      }
    }
    for (const op of [...ops('create', 'agent'), ...ops('update', 'agent')]) {
      const dslContent = content.get(`agent:${op.name}`)!;
      const previous = plan.existingAgents.get(op.name);
      if (previous) {
        await models.Agent.updateOne({ ...scope, _id: previous._id }, { $set: { dslContent } });
        await done(`update agent ${op.name}`, () => agents.replaceOne({ ...scope, _id: previous._id }, previous));
      } else {
        const created = await createAgent(models, scope, { name: op.name, domain: plan.domain, dslContent, createdBy: options.createdBy });
        await done(`create agent ${op.name}`, () => agents.deleteOne({ ...scope, _id: created._id }));
      }
    }
    // Versions last, once every draft is in place. The project now holds exactly the imported
    // files, so each agent's compilation is read from the plan's one compile of them, not redone.
    for (const op of [...ops('create', 'agent'), ...ops('update', 'agent')]) {
      const agent = await models.Agent.findOne({ ...scope, name: op.name }).lean();
      if (!agent) throw new Error(`agent ${op.name} vanished during the import`);
      const compilation = agentCompilationFrom(plan.compiled.output, plan.compiled.files, op.name, agent.dslContent);
      const label = await lockedLabel(models, plan, agent._id, op.name);
      const made = await storeVersion(models, scope, agent, compilation, { version: label, createdBy: options.createdBy });
      if (!made.created) continue;
      applied.versions[op.name] = made.version.version;
      await done(`create version ${op.name}@${made.version.version}`, () => versions.deleteOne({ ...scope, _id: made.version._id }));
    }
  } catch (err) {
    await rollBack(undo, options.logger);
    throw err;
  }
  for (const op of plan.operations) applied[op.type === 'create' ? 'created' : op.type === 'update' ? 'updated' : 'deleted'] += 1;
  return applied;
}

/**
 * The lockfile's label for this agent when its imported draft compiles to the locked hash and the
 * label is free (so an export imported elsewhere keeps its version labels); otherwise none, and the
 * version service picks the next label (or keeps the latest version when nothing changed).
 */
async function lockedLabel(models: Models, plan: ImportPlan, agentId: string, name: string): Promise<string | undefined> {
  const locked = plan.lock[name];
  if (!locked || locked.hash !== plan.hashes.get(name)) return undefined;
  const latest = await models.AgentVersion.findOne({ ...plan.scope, agentId }).sort({ seq: -1 }).select({ sourceHash: 1 }).lean();
  if (latest?.sourceHash === locked.hash) return undefined;
  return (await models.AgentVersion.exists({ ...plan.scope, agentId, version: locked.version })) ? undefined : locked.version;
}

async function rollBack(undo: Array<{ step: string; run: () => Promise<unknown> }>, logger: Logger | undefined): Promise<void> {
  for (const { step, run } of undo.reverse()) {
    try {
      await run();
    } catch (err) {
      // Keep undoing the rest: one failed undo must not leave every earlier write in place.
      logger?.error({ err, step }, 'project import: undo failed');
    }
  }
}
