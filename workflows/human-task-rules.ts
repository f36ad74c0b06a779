// What a human task's transitions allow, as pure checks over the task: the HumanTask workflow's
// update validators call them, so a refused claim, assign, resolve or cancel never reaches history.
import { HUMAN_TASK_RESERVED_FIELDS, type HumanTaskFieldIR } from '../abl/ir';
import {
  HUMAN_TASK_PRIORITIES,
  TERMINAL_TASK_STATUSES,
  type AssignTaskInput,
  type HumanTaskPriority,
  type HumanTaskStartInput,
  type HumanTaskView,
  type ResolveTaskInput,
} from './definitions';

/** A refused transition: `code` is the API error code, `details` go into the error body. */
export class TransitionRefused extends Error {
  constructor(
    readonly code: 'CONFLICT' | 'VALIDATION_ERROR' | 'UNPROCESSABLE_ENTITY',
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'TransitionRefused';
  }
}

/** Types whose resolution must carry a `decision`. */
const DECISION_TYPES = new Set(['approval', 'decision']);
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/;

function refuseTerminal(task: HumanTaskView, what: string): void {
  if (!TERMINAL_TASK_STATUSES.includes(task.status)) return;
  throw new TransitionRefused('CONFLICT', `Cannot ${what} a task that is ${task.status}`, {
    status: task.status,
    resolution: task.resolution,
  });
}

export function checkClaim(task: HumanTaskView, userId: string): void {
  refuseTerminal(task, 'claim');
  if (task.status === 'in_progress' && task.assignedTo !== userId) {
    throw new TransitionRefused('CONFLICT', `The task is claimed by ${task.assignedTo}`, { status: task.status, assignedTo: task.assignedTo });
  }
  if (task.status === 'assigned' && task.assignedTo !== null && task.assignedTo !== userId) {
    throw new TransitionRefused('CONFLICT', `The task is assigned to ${task.assignedTo}`, { status: task.status, assignedTo: task.assignedTo });
  }
}

export function checkAssign(task: HumanTaskView, input: AssignTaskInput): void {
  refuseTerminal(task, 'assign');
  if (Boolean(input.assignedTo) === Boolean(input.assignedToTeam)) {
    throw new TransitionRefused('VALIDATION_ERROR', 'body: give exactly one of assignedTo and assignedToTeam');
  }
}

export function checkCancel(task: HumanTaskView): void {
  refuseTerminal(task, 'cancel');
}

const RESERVED = new Set<string>(HUMAN_TASK_RESERVED_FIELDS);

/**
 * Problems with one resolution's fields against the task's form, as `fields.<name>: why`. A value
 * for a field the form does not have is refused, and so is one named after an outcome (`approved`,
 * `rejected` …, which only the decision and the outcome set) even on a form that declares it.
 */
export function fieldProblems(form: readonly HumanTaskFieldIR[], values: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const known = new Set(form.map((f) => f.name));
  for (const name of Object.keys(values)) {
    if (RESERVED.has(name)) problems.push(`fields.${name}: is set by the decision and the outcome, not by a field`);
    else if (!known.has(name)) problems.push(`fields.${name}: is not a field of this task's form`);
  }
  for (const field of form) {
    if (RESERVED.has(field.name)) continue;
    const value = values[field.name];
    const at = `fields.${field.name}`;
    if (value === undefined || value === null || value === '') {
      if (field.required) problems.push(`${at}: is required`);
      continue;
    }
    switch (field.type) {
      case 'text':
      case 'textarea':
        if (typeof value !== 'string') problems.push(`${at}: must be a string`);
        break;
      case 'number':
        if (typeof value !== 'number' || !Number.isFinite(value)) problems.push(`${at}: must be a number`);
        break;
      case 'boolean':
        if (typeof value !== 'boolean') problems.push(`${at}: must be true or false`);
        break;
      case 'select':
        if (typeof value !== 'string' || !field.options.includes(value)) problems.push(`${at}: must be one of ${field.options.join(', ')}`);
        break;
      case 'date':
        if (typeof value !== 'string' || !ISO_DATE.test(value) || Number.isNaN(Date.parse(value))) problems.push(`${at}: must be an ISO 8601 date such as 2026-01-31`);
        break;
    }
  }
  return problems;
}

export function checkResolve(task: HumanTaskView, input: ResolveTaskInput): void {
  refuseTerminal(task, 'resolve');
  if (task.status === 'in_progress' && task.assignedTo !== input.respondedBy) {
    throw new TransitionRefused('CONFLICT', `The task is claimed by ${task.assignedTo}; only they can resolve it`, { status: task.status, assignedTo: task.assignedTo });
  }
  const problems = fieldProblems(task.fields, input.fields ?? {});
  if (DECISION_TYPES.has(task.type) && !input.decision) problems.unshift(`decision: is required for a${task.type === 'approval' ? 'n' : ''} ${task.type} task`);
  // The body was well formed; what it lacks is what this task's form asks for: 422.
  if (problems.length > 0) throw new TransitionRefused('UNPROCESSABLE_ENTITY', problems.join('; '), { fields: problems });
}

/** A priority raised by `boost` levels (routing's priority_boost), capped at critical. */
export function boostedPriority(priority: HumanTaskPriority, boost: number): HumanTaskPriority {
  const at = HUMAN_TASK_PRIORITIES.indexOf(priority) + Math.max(0, Math.trunc(boost));
  return HUMAN_TASK_PRIORITIES[Math.min(at, HUMAN_TASK_PRIORITIES.length - 1)]!;
}

/** 1 low … 4 critical: the `TaskPriority` search attribute. */
export function priorityNumber(priority: HumanTaskPriority): number {
  return HUMAN_TASK_PRIORITIES.indexOf(priority) + 1;
}

/** The task as created: pending, nobody on it, its first history entry. Its row is this until the first transition. */
export function initialTaskView(input: HumanTaskStartInput, nowMs: number): HumanTaskView {
  const { dueAtMs, createdAtMs, ...rest } = input;
  const at = new Date(createdAtMs ?? nowMs).toISOString();
  return {
    ...rest,
    priority: boostedPriority(input.priority, input.routing?.priority_boost ?? 0),
    status: 'pending',
    assignedTo: null,
    // A routing queue is the team the task waits with.
    assignedToTeam: input.routing?.queue ?? null,
    claimedAt: null,
    dueAt: dueAtMs !== null ? new Date(dueAtMs).toISOString() : null,
    resolution: null,
    cancelReason: null,
    history: [{ action: 'created', from: null, to: 'pending', by: input.createdBy, at }],
    createdAt: at,
    updatedAt: at,
    revision: 1,
  };
}
