// HumanTask (`human-task/<taskId>`): one workflow per task, the truth for its transitions. Claim,
// assign, resolve and cancel are updates whose validators refuse what the state does not allow;
// every transition is written to the MongoDB projection (which serves lists) before the caller
// hears of it. At `dueAt` the task expires, or first goes up one priority level (ABL `ON_DUE:
// raise_priority`). On the outcome (resolved, expired, cancelled, or the waiting session ended)
// the waiting session is signalled, and the workflow ends.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  assignTaskUpdate,
  cancelTaskUpdate,
  claimTaskUpdate,
  humanTaskSignal,
  resolveTaskUpdate,
  sessionEndedSignal,
  taskStateQuery,
  TERMINAL_TASK_STATUSES,
  type HumanTaskStartInput,
  type HumanTaskWorkflow,
  type HumanTaskStatus,
  type HumanTaskTransition,
  type HumanTaskView,
} from './definitions';
import { boostedPriority, checkAssign, checkCancel, checkClaim, checkResolve, initialTaskView, priorityNumber, TransitionRefused } from './human-task-rules';
import { HUMAN_TASK_CANCEL_REQUEST_PATCH, HUMAN_TASK_PROJECTION_ACTIVITY_PATCH } from './patches';
import { finishingOnCancellation, onCancellationRequest, type CancellationRequest } from './cancellation';

/** Why a task cancelled by a cancellation request to its workflow was cancelled. */
export const CANCEL_REQUEST_REASON = 'workflow cancellation requested in Temporal';
import { AssigneeKey, TaskPriorityKey, TaskStatusKey } from './search-attributes';

const PROJECTION_RETRY = { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds', maximumAttempts: 20 } as const;
// Runs recorded before HUMAN_TASK_PROJECTION_ACTIVITY_PATCH wrote the projection as a local activity.
const { recordHumanTask: recordHumanTaskLocally } = wf.proxyLocalActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: PROJECTION_RETRY });
const { recordHumanTask: recordHumanTaskCommitted } = wf.proxyActivities<Activities>({ startToCloseTimeout: '10 seconds', retry: PROJECTION_RETRY });

/** A validator's refusal, as a failure the API maps to its code (and nothing in history). */
function refuse(check: () => void): void {
  try {
    check();
  } catch (err) {
    if (!(err instanceof TransitionRefused)) throw err;
    throw wf.ApplicationFailure.create({ message: err.message, type: err.code, nonRetryable: true, details: err.details ? [err.details] : [] });
  }
}

export async function humanTaskWorkflow(input: HumanTaskStartInput): Promise<HumanTaskView> {
  if (!wf.patched(HUMAN_TASK_CANCEL_REQUEST_PATCH)) return runHumanTask(input, null);
  return finishingOnCancellation((cancellation) => runHumanTask(input, cancellation));
}

async function runHumanTask(input: HumanTaskStartInput, cancellation: CancellationRequest | null): Promise<HumanTaskView> {
  const task = initialTaskView(input, Date.now());
  const terminal = () => TERMINAL_TASK_STATUSES.includes(task.status);
  const recordHumanTask = wf.patched(HUMAN_TASK_PROJECTION_ACTIVITY_PATCH) ? recordHumanTaskCommitted : recordHumanTaskLocally;

  // Projection writes go one after another, each with the whole task as it stood.
  let writes: Promise<void> = Promise.resolve();
  const persist = (): Promise<void> => {
    const snapshot = JSON.parse(JSON.stringify(task)) as HumanTaskView;
    writes = writes.catch(() => undefined).then(() => recordHumanTask(snapshot));
    return writes;
  };

  function transition(action: HumanTaskTransition['action'], to: HumanTaskStatus, by: string | null, note?: string): void {
    const at = new Date().toISOString();
    task.history.push({ action, from: task.status, to, by, at, ...(note ? { note } : {}) });
    task.status = to;
    task.updatedAt = at;
    task.revision++;
    const holders = [task.assignedTo, task.assignedToTeam ? `team:${task.assignedToTeam}` : null].filter((x): x is string => x !== null);
    wf.upsertSearchAttributes([
      { key: TaskStatusKey, value: to },
      { key: AssigneeKey, value: holders.length > 0 ? holders : null },
    ]);
  }

  /** The SLA's first step at DUE: the priority one level up (its search attribute too), a new deadline. */
  function raisePriority(thenExpireAfterMs: number | null): void {
    const from = task.priority;
    const at = new Date().toISOString();
    task.priority = boostedPriority(from, 1);
    task.dueAt = thenExpireAfterMs !== null ? new Date(Date.now() + thenExpireAfterMs).toISOString() : null;
    task.history.push({ action: 'priority_raised', from: task.status, to: task.status, by: null, at, note: `${from} → ${task.priority}` });
    task.updatedAt = at;
    task.revision++;
    wf.upsertSearchAttributes([{ key: TaskPriorityKey, value: priorityNumber(task.priority) }]);
  }

  /** Runs a transition and answers the task as it stood right after it, once written. */
  async function answer(apply: () => void): Promise<HumanTaskView> {
    apply();
    const view = JSON.parse(JSON.stringify(task)) as HumanTaskView;
    await persist();
    return view;
  }

  wf.setHandler(taskStateQuery, () => task);
  wf.setHandler(
    claimTaskUpdate,
    ({ userId, displayName }) =>
      answer(() => {
        if (task.status === 'in_progress') return; // the claimer again: nothing changes
        task.assignedTo = userId;
        task.claimedAt = new Date().toISOString();
        transition('claimed', 'in_progress', userId, displayName ? `as ${displayName}` : undefined);
      }),
    { validator: (i) => refuse(() => checkClaim(task, i.userId)) },
  );
  wf.setHandler(
    assignTaskUpdate,
    (i) =>
      answer(() => {
        if (i.assignedTo) task.assignedTo = i.assignedTo;
        else {
          task.assignedTo = null;
          task.assignedToTeam = i.assignedToTeam ?? null;
        }
        task.claimedAt = null;
        transition('assigned', 'assigned', i.by, i.assignedTo ? `to ${i.assignedTo}` : `to team ${i.assignedToTeam}`);
      }),
    { validator: (i) => refuse(() => checkAssign(task, i)) },
  );
  wf.setHandler(
    resolveTaskUpdate,
    (i) =>
      answer(() => {
        // `displayName` only when the update carried one (a display field; older histories have none).
        task.resolution = {
          respondedBy: i.respondedBy,
          ...('displayName' in i ? { displayName: i.displayName ?? null } : {}),
          decision: i.decision ?? null,
          fields: i.fields ?? {},
          notes: i.notes ?? null,
          resolvedAt: new Date().toISOString(),
          // State only, no command: histories without it replay the same.
          ...(i.idempotency ? { idempotency: i.idempotency } : {}),
        };
        transition('resolved', 'completed', i.respondedBy, i.decision);
      }),
    { validator: (i) => refuse(() => checkResolve(task, i)) },
  );
  wf.setHandler(
    cancelTaskUpdate,
    (i) =>
      answer(() => {
        task.cancelReason = i.reason ?? null;
        transition('cancelled', 'cancelled', i.by, i.reason);
      }),
    { validator: (_i) => refuse(() => checkCancel(task)) },
  );

  // The waiting session ended: nobody will act on the answer. Only from that session.
  wf.setHandler(sessionEndedSignal, ({ sessionId, reason }) => {
    if (terminal() || sessionId !== input.sessionId) return;
    task.cancelReason = reason;
    transition('cancelled', 'cancelled', 'system', reason);
  });

  // A cancellation request from Temporal cancels the task like the cancel update.
  if (cancellation) {
    onCancellationRequest(cancellation, () => {
      if (terminal()) return;
      task.cancelReason = CANCEL_REQUEST_REASON;
      transition('cancelled', 'cancelled', 'system', CANCEL_REQUEST_REASON);
    });
  }

  await persist();
  /** Waits for an outcome until `dueAt` (for ever without one); false when it passed first. */
  const untilDue = async (): Promise<boolean> => {
    const dueInMs = task.dueAt !== null ? Date.parse(task.dueAt) - Date.now() : null;
    if (dueInMs === null) return wf.condition(terminal).then(() => true);
    return wf.condition(terminal, Math.max(1, dueInMs));
  };
  let done = await untilDue();
  if (!done && input.onDue?.action === 'raise_priority') {
    // ON_DUE: raise_priority: one level up, and the task waits on until THEN_EXPIRE_AFTER (if any).
    raisePriority(input.onDue.thenExpireAfterMs);
    await persist().catch(() => undefined);
    done = await untilDue();
  }
  if (!done) transition('expired', 'expired', null);
  await persist().catch(() => undefined);

  if (input.sessionId) {
    const outcome = task.status === 'completed' ? 'completed' : task.status === 'expired' ? 'expired' : 'cancelled';
    try {
      await wf.getExternalWorkflowHandle(`session/${input.sessionId}`).signal(humanTaskSignal, { taskId: task.taskId, outcome, resolution: task.resolution });
    } catch {
      // The session has ended or was deleted: nobody waits for the outcome any more.
    }
  }
  await wf.condition(wf.allHandlersFinished);
  return task;
}

/** Compile-time check: clients start this workflow by the signature in definitions.ts. */
type _SignatureIsTheContract = Assert<Same<typeof humanTaskWorkflow, HumanTaskWorkflow>>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
