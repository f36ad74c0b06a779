// The HumanTask workflow's projection write: the whole task after a transition, replacing an
// older revision only (a retried write of an earlier transition never undoes a later one); and the
// room check a session makes before it starts a task (the per-project bound on open tasks).
import { type ActivityDeps } from '..';
import { countOpenTasks, humanTaskRow } from '../../db/human-task';
import { isDuplicateKey } from '../../db/duplicate-key';
import { currentTraceparent } from '../../lib/tracing';
import type { HumanTaskView } from '../../workflows/definitions';

function traceparentOnInsert(): { $setOnInsert?: { traceparent: string } } {
  const traceparent = currentTraceparent();
  return traceparent ? { $setOnInsert: { traceparent } } : {};
}

export function createRecordHumanTask(deps: Pick<ActivityDeps, 'models'>) {
  return async function recordHumanTask(task: HumanTaskView): Promise<void> {
    const doc = humanTaskRow(task);
    // One conditional upsert. The filter carries the owner (db/owned.ts: ownership is in the
    // filter, never a comparison after a read) and the older-revision guard, so a row of another
    // tenant or project, or a newer revision of this task, matches nothing: the upsert then tries
    // to insert the same `_id` and the store refuses it as a duplicate, which is the no-op wanted.
    try {
      await deps.models.HumanTask.updateOne(
        { _id: task.taskId, tenantId: task.tenantId, projectId: task.projectId, revision: { $lt: task.revision } },
        // The first write, in the trace of the turn that opened the task, keeps its context.
        { $set: doc, ...traceparentOnInsert() },
        { upsert: true },
      );
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
  };
}

/**
 * Whether the project has room for one more open task (HUMAN_TASK_MAX_OPEN_PER_PROJECT). Counted,
 * then started: escalations racing each other may pass the bound by as many as are in flight at once.
 */
export function createHumanTaskRoom(deps: Pick<ActivityDeps, 'models' | 'config'>) {
  return async function humanTaskRoom(owner: { tenantId: string; projectId: string }): Promise<boolean> {
    const limit = deps.config.HUMAN_TASK_MAX_OPEN_PER_PROJECT;
    return (await countOpenTasks(deps.models.HumanTask, { tenantId: owner.tenantId, projectId: owner.projectId }, limit)) < limit;
  };
}
