// The HumanTask workflow's projection write: the whole task after a transition, replacing an
// older revision only (a retried write of an earlier transition never undoes a later one).
import { type ActivityDeps } from '..';
import { PRIORITY_RANK } from '../../db/human-task';
import { isDuplicateKey } from '../../db/duplicate-key';
import type { HumanTaskView } from '../../workflows/definitions';

export function createRecordHumanTask(deps: Pick<ActivityDeps, 'models'>) {
  return async function recordHumanTask(task: HumanTaskView): Promise<void> {
    const { taskId, dueAt, claimedAt, createdAt, updatedAt, ...rest } = task;
    const doc = {
      ...rest,
      priorityRank: PRIORITY_RANK[task.priority],
      dueAt: dueAt ? new Date(dueAt) : null,
      claimedAt: claimedAt ? new Date(claimedAt) : null,
      createdAt: new Date(createdAt),
      updatedAt: new Date(updatedAt),
    };
    // Filters name `_id` alone: FerretDB answers those from its key and scans for anything else.
    // One task's writes come one after another (its workflow serialises them), so reading the
    // stored revision first is enough to skip a retried, older write.
    const stored = await deps.models.HumanTask.findOne({ _id: taskId }, { revision: 1, tenantId: 1 }).lean();
    if (stored && (stored.tenantId !== task.tenantId || stored.revision >= task.revision)) return;
    try {
      await deps.models.HumanTask.updateOne({ _id: taskId }, { $set: doc }, { upsert: true });
    } catch (err) {
      // Written meanwhile by the task's other writer (the session's first write and the workflow's are the same revision).
      if (!isDuplicateKey(err)) throw err;
    }
  };
}
