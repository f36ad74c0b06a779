// Human tasks: lists and reads from the MongoDB projection, transitions as updates to
// the task's workflow (the truth), which answers with the task once its projection is written.
// A refused transition is the validator's error (409, 400); a task whose workflow has finished
// answers from the projection, so a late resolve still gets 409 with the winning resolution.
import { createHash, randomUUID } from 'node:crypto';
import { canonicalJson } from '../../lib/canonical-json';
import { TypedSearchAttributes } from '@temporalio/common';
import { DomainError } from '../../lib/errors';
import { linkToTraceparent, withSpan } from '../../lib/tracing';
import { isErrorCode } from '../../lib/error-codes';
import { countOpenTasks, humanTaskRow, type HumanTaskDoc } from '../../db/human-task';
import { findOwned } from '../../db/owned';
import {
  assignTaskUpdate,
  cancelTaskUpdate,
  claimTaskUpdate,
  resolveTaskUpdate,
  TERMINAL_TASK_STATUSES,
  type HumanTaskStartInput,
  type HumanTaskPriority,
  type HumanTaskResolution,
  type ResolveIdempotency,
  type HumanTaskStatus,
  type HumanTaskView,
  type HumanTaskWorkflow,
} from '../../workflows/definitions';
import { initialTaskView } from '../../workflows/human-task-rules';
import { AssigneeKey, EnvironmentKey, ProjectIdKey, TaskPriorityKey, TaskStatusKey, TaskTypeKey, TenantIdKey } from '../../workflows/search-attributes';
import { type CoreContext } from '../context';
import { isWorkflowNotFound, temporalClient, temporalErrorToDomainError, withDeadline, TEMPORAL_CALL_TIMEOUT_MS } from '../sessions/workflow-client';

/** The shape of a task id this service issues. */
export const TASK_ID_PATTERN = /^ht_[0-9a-f]{32}$/;

/** A list's filters (all optional, combined) and page. */
export interface TaskListQuery {
  limit: number;
  offset: number;
  status?: HumanTaskStatus;
  type?: string;
  priority?: HumanTaskPriority;
  assignedTo?: string;
  assignedToTeam?: string;
  sessionId?: string;
  agentName?: string;
  /** ISO 8601: created at or after. */
  createdFrom?: string;
  /** ISO 8601: created before. */
  createdTo?: string;
}

/** A task created by a caller rather than an agent's escalation. */
export interface NewTaskInput extends Pick<HumanTaskStartInput, 'type' | 'title' | 'priority' | 'tags' | 'context' | 'fields'> {
  /** ISO 8601 SLA deadline; must be in the future. */
  dueAt?: string;
  /** The team (queue) the task waits with. */
  assignedToTeam?: string;
}

export interface TaskScope {
  tenantId: string;
  projectId: string;
  /**
   * An environment-bound credential's environments: tasks of other environments, and tasks
   * recorded without one, are invisible to it (404, left out of lists). Absent or empty: all.
   */
  environments?: readonly string[] | null;
}

/** The owner part of a scope, as filters and start inputs carry it. */
const ownerOf = (scope: TaskScope) => ({ tenantId: scope.tenantId, projectId: scope.projectId });
const boundTo = (scope: TaskScope): readonly string[] | null => (scope.environments?.length ? scope.environments : null);

/** Whether an environment-bound credential may see the task; a task without an environment only unbound ones. */
function visibleTo(scope: TaskScope, task: Pick<HumanTaskDoc, 'environment'>): boolean {
  const bound = boundTo(scope);
  return !bound || (typeof task.environment === 'string' && bound.includes(task.environment));
}

const PRIORITY_NUMBER = { low: 1, medium: 2, high: 3, critical: 4 } as const;

/** The workflow id of a task; only ids this service issued name a workflow. */
export function taskWorkflowId(taskId: string): string {
  if (!TASK_ID_PATTERN.test(taskId)) throw new Error('taskWorkflowId: not a task id this service issued');
  return `human-task/${taskId}`;
}

/** The projection filter of a list: the scope and every filter given (the bench reuses it for its floor). */
export function taskListFilter(scope: TaskScope, q: TaskListQuery): Record<string, unknown> {
  const created = { ...(q.createdFrom ? { $gte: new Date(q.createdFrom) } : {}), ...(q.createdTo ? { $lt: new Date(q.createdTo) } : {}) };
  const bound = boundTo(scope);
  return {
    ...ownerOf(scope),
    ...(bound ? { environment: { $in: [...bound] } } : {}),
    ...(q.status ? { status: q.status } : {}),
    ...(q.type ? { type: q.type } : {}),
    ...(q.priority ? { priority: q.priority } : {}),
    ...(q.assignedTo ? { assignedTo: q.assignedTo } : {}),
    ...(q.assignedToTeam ? { assignedToTeam: q.assignedToTeam } : {}),
    ...(q.sessionId ? { sessionId: q.sessionId } : {}),
    ...(q.agentName ? { agentName: q.agentName } : {}),
    ...(Object.keys(created).length > 0 ? { createdAt: created } : {}),
  };
}

/** List order: most urgent first, and within a priority the one waiting longest. */
export const TASK_LIST_SORT = { priorityRank: 1, createdAt: 1, _id: 1 } as const;
/** What a list item leaves out. */
export const TASK_LIST_PROJECTION = { contextJson: 0, context: 0, history: 0, fields: 0 } as const;

export async function listTasks(ctx: CoreContext, scope: TaskScope, q: TaskListQuery): Promise<{ total: number; tasks: HumanTaskDoc[] }> {
  const filter = taskListFilter(scope, q);
  const [total, tasks] = await Promise.all([
    ctx.models.HumanTask.countDocuments(filter),
    ctx.models.HumanTask.find(filter, TASK_LIST_PROJECTION).sort(TASK_LIST_SORT).skip(q.offset).limit(q.limit).lean(),
  ]);
  return { total, tasks };
}

export async function findTask(ctx: CoreContext, scope: TaskScope, taskId: string): Promise<HumanTaskDoc> {
  // The tenant and project are in the filter (db/owned.ts): another tenant's task is never read.
  // A task of an environment the credential is not bound to is not there for it, like another project's.
  const task = TASK_ID_PATTERN.test(taskId) ? await findOwned(ctx.models.HumanTask, taskId, ownerOf(scope)) : null;
  if (!task || !visibleTo(scope, task)) throw new DomainError('NOT_FOUND', 'Human task not found');
  return task;
}

/** A validator's refusal keeps its code and details (the winner's resolution on a lost race). */
function transitionError(err: unknown): DomainError {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    const failure = e as { name?: string; type?: unknown; message?: string; details?: unknown[] };
    if (failure.name === 'ApplicationFailure' && isErrorCode(failure.type)) {
      const details = failure.details?.[0];
      return new DomainError(failure.type, { message: failure.message ?? 'Refused', ...(details && typeof details === 'object' ? { details: details as Record<string, unknown> } : {}), cause: err });
    }
  }
  return temporalErrorToDomainError(err, 'Human task runtime');
}

/**
 * Bound on one transition. Longer than other Temporal calls: a task whose worker died is picked up
 * by another only once the dead worker's sticky queue times out (about ten seconds).
 */
export const TASK_UPDATE_TIMEOUT_MS = 20_000;

type Transition = 'claim' | 'assign' | 'resolve' | 'cancel';
const VERB: Record<Transition, string> = { claim: 'claim', assign: 'assign', resolve: 'resolve', cancel: 'cancel' };

/**
 * Sends one transition to the task's workflow. When the workflow has already finished (resolved,
 * expired or cancelled a moment ago) the projection holds its final state: 409 with it.
 */
async function transition(
  ctx: CoreContext,
  scope: TaskScope,
  taskId: string,
  kind: Transition,
  send: (handle: ReturnType<Awaited<ReturnType<typeof temporalClient>>['workflow']['getHandle']>) => Promise<HumanTaskView>,
  keyed: ResolveIdempotency | null = null,
): Promise<HumanTaskDoc | HumanTaskView> {
  try {
    return await sendTransition(ctx, scope, taskId, kind, send);
  } catch (err) {
    const refused = err instanceof DomainError && err.code === 'CONFLICT' ? (err.details as { status?: string; resolution?: HumanTaskResolution | null } | undefined) : undefined;
    const made = refused?.status === 'completed' ? refused.resolution?.idempotency : undefined;
    if (!refused?.resolution || !made) throw err;
    // Completed by a resolve sent with an Idempotency-Key: this key's earlier attempt, or another.
    if (keyed && made.key === keyed.key) {
      if (made.request !== keyed.request) throw new DomainError('IDEMPOTENCY_CONFLICT', { message: 'This Idempotency-Key was already used to resolve the task with a different request', cause: err });
      return findTask(ctx, scope, taskId);
    }
    throw new DomainError('CONFLICT', { message: (err as DomainError).message, details: { ...refused, resolution: publicResolution(refused.resolution) }, cause: err });
  }
}

/** A resolution as answers show it: without the hashes a keyed resolve is known by. */
export function publicResolution<T extends HumanTaskResolution | null>(resolution: T): T {
  if (!resolution?.idempotency) return resolution;
  const { idempotency: _hashes, ...shown } = resolution;
  return shown as T;
}

async function sendTransition(ctx: CoreContext, scope: TaskScope, taskId: string, kind: Transition, send: (handle: ReturnType<Awaited<ReturnType<typeof temporalClient>>['workflow']['getHandle']>) => Promise<HumanTaskView>): Promise<HumanTaskDoc | HumanTaskView> {
  const stored = await findTask(ctx, scope, taskId);
  if (TERMINAL_TASK_STATUSES.includes(stored.status as HumanTaskStatus)) throw finished(stored, kind);
  const client = await temporalClient(ctx);
  try {
    // In a span linked to the trace of the turn that opened the task (tracing on only): a
    // resolution resumes that turn's session.
    return await withSpan(
      `human_task.${kind}`,
      { attributes: { 'switchboard.human_task.id': taskId, ...(stored.sessionId ? { 'switchboard.session.id': stored.sessionId } : {}) }, links: linkToTraceparent(stored.traceparent) },
      () => withDeadline(client, TASK_UPDATE_TIMEOUT_MS, () => send(client.workflow.getHandle(taskWorkflowId(taskId)))),
    );
  } catch (err) {
    if (!isWorkflowNotFound(err) && !isClosed(err)) throw transitionError(err);
    const latest = await findTask(ctx, scope, taskId);
    if (TERMINAL_TASK_STATUSES.includes(latest.status as HumanTaskStatus)) throw finished(latest, kind);
    throw transitionError(err);
  }
}

/** The server's answer to an update sent to a workflow that has completed. */
function isClosed(err: unknown): boolean {
  for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
    if (/workflow execution already completed/i.test((e as Error).message ?? '')) return true;
  }
  return false;
}

function finished(task: HumanTaskDoc, kind: Transition): DomainError {
  return new DomainError('CONFLICT', { message: `Cannot ${VERB[kind]} a task that is ${task.status}`, details: { status: task.status, resolution: task.resolution } });
}

/**
 * Who acts on a task: the calling credential (a user's id, an API key's id), never a name from the
 * body. The claim lock and "only the claimer resolves" compare these.
 */
export type TaskActor = string;

export function claimTask(ctx: CoreContext, scope: TaskScope, taskId: string, actor: TaskActor, displayName?: string) {
  return transition(ctx, scope, taskId, 'claim', (h) => h.executeUpdate(claimTaskUpdate, { args: [{ userId: actor, ...(displayName ? { displayName } : {}) }] }));
}

export function assignTask(ctx: CoreContext, scope: TaskScope, taskId: string, body: { assignedTo?: string; assignedToTeam?: string }, by: string) {
  return transition(ctx, scope, taskId, 'assign', (h) => h.executeUpdate(assignTaskUpdate, { args: [{ ...body, by }] }));
}

/** The resolve body, as the route takes it. */
export type ResolveTaskBody = { respondedBy?: string; decision?: string; fields: Record<string, unknown>; notes?: string };

/** What a resolve sent with an Idempotency-Key is known by: the key under its credential, and the request. */
export function resolveIdempotency(actor: TaskActor, idempotencyKey: string, taskId: string, body: ResolveTaskBody): ResolveIdempotency {
  return {
    key: createHash('sha256').update(`${actor}\n${idempotencyKey}`).digest('hex'),
    request: createHash('sha256').update(canonicalJson({ taskId, ...body })).digest('hex'),
  };
}

/**
 * Resolves a task. Without an Idempotency-Key each request is its own resolution. With one, the
 * update id comes from the key and the request, so a resend while the first is in flight or after
 * it is the same update (Temporal answers it once), and the resolution keeps the key's and the
 * request's hashes, so a resend after the task's workflow closed is known from the task itself:
 * the same key and body answer with the task as resolved, the same key with another body 409
 * `IDEMPOTENCY_CONFLICT` (transition()).
 */
export function resolveTask(ctx: CoreContext, scope: TaskScope, taskId: string, actor: TaskActor, body: ResolveTaskBody, idempotencyKey: string | null = null) {
  const { respondedBy: displayName, ...rest } = body;
  const keyed = idempotencyKey === null ? null : resolveIdempotency(actor, idempotencyKey, taskId, body);
  const input = { ...rest, respondedBy: actor, displayName: displayName ?? null, ...(keyed ? { idempotency: keyed } : {}) };
  // One update id per resolution: a retried request is the same update, answered once.
  const updateId = keyed ? `resolve-${keyed.key.slice(0, 32)}-${keyed.request.slice(0, 32)}` : `resolve-${randomUUID()}`;
  return transition(ctx, scope, taskId, 'resolve', (h) => h.executeUpdate(resolveTaskUpdate, { args: [input], updateId }), keyed);
}

export function cancelTask(ctx: CoreContext, scope: TaskScope, taskId: string, reason: string | undefined, by: string) {
  return transition(ctx, scope, taskId, 'cancel', (h) => h.executeUpdate(cancelTaskUpdate, { args: [{ ...(reason ? { reason } : {}), by }] }));
}

/**
 * A task with no session (POST .../human-tasks): its row is written first (revision 1, exactly
 * what the workflow's first projection write would write, which then finds it and does nothing),
 * then its workflow starts. A start that fails removes the row again: no task is listed without
 * a workflow, and the call answers with the task as listed.
 */
export async function createTask(ctx: CoreContext, scope: TaskScope, body: NewTaskInput, createdBy: string, environment: string): Promise<HumanTaskDoc> {
  const taskId = `ht_${randomUUID().replace(/-/g, '')}`;
  const createdAtMs = Date.now();
  const input: HumanTaskStartInput = {
    taskId,
    ...ownerOf(scope),
    environment,
    sessionId: null,
    agentName: null,
    type: body.type,
    title: body.title,
    priority: body.priority,
    tags: body.tags,
    context: body.context,
    fields: body.fields,
    dueAtMs: body.dueAt ? Date.parse(body.dueAt) : null,
    routing: body.assignedToTeam ? { queue: body.assignedToTeam, skills: [], priority_boost: 0, extra: {} } : null,
    createdBy,
    createdAtMs,
  };
  if (input.dueAtMs !== null && input.dueAtMs <= createdAtMs) throw new DomainError('UNPROCESSABLE_ENTITY', 'body.dueAt: must be in the future');
  await requireTaskRoom(ctx, scope);
  const client = await temporalClient(ctx);
  const created = await ctx.models.HumanTask.create({ _id: taskId, ...humanTaskRow(initialTaskView(input, createdAtMs)) });
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start<HumanTaskWorkflow>('humanTaskWorkflow', {
        workflowId: taskWorkflowId(taskId),
        taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
        args: [input],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TenantIdKey, value: scope.tenantId },
          { key: ProjectIdKey, value: scope.projectId },
          { key: EnvironmentKey, value: environment },
          { key: TaskStatusKey, value: 'pending' },
          { key: TaskTypeKey, value: body.type },
          { key: TaskPriorityKey, value: PRIORITY_NUMBER[body.priority] },
          ...(body.assignedToTeam ? [{ key: AssigneeKey, value: [`team:${body.assignedToTeam}`] }] : []),
        ]),
        staticSummary: `${body.type} · ${body.priority} · ${body.title.slice(0, 80)}`,
      }),
    );
  } catch (err) {
    await ctx.models.HumanTask.deleteOne({ _id: taskId, ...ownerOf(scope) }).catch((cleanupErr: unknown) =>
      ctx.logger.warn({ err: cleanupErr, taskId }, 'could not remove the row of a task whose workflow did not start'),
    );
    throw temporalErrorToDomainError(err, 'Human task runtime');
  }
  return created.toObject();
}

/**
 * The bound on a project's open tasks (HUMAN_TASK_MAX_OPEN_PER_PROJECT): 429 QUEUE_FULL when it is
 * reached. Counted, then created: creates racing each other may pass it by as many as are in flight at once.
 */
async function requireTaskRoom(ctx: CoreContext, scope: TaskScope): Promise<void> {
  const limit = ctx.config.HUMAN_TASK_MAX_OPEN_PER_PROJECT;
  const open = await countOpenTasks(ctx.models.HumanTask, ownerOf(scope), limit);
  if (open >= limit) {
    throw new DomainError('QUEUE_FULL', `The project has ${limit} open human tasks, its limit (HUMAN_TASK_MAX_OPEN_PER_PROJECT); resolve or cancel some first`);
  }
}

/**
 * Cancels a session's open tasks (the session was deleted or reset). Best effort: a task already
 * finishing is left to finish. Returns the ids cancelled.
 */
export async function cancelSessionTasks(ctx: CoreContext, scope: { tenantId: string }, sessionId: string, reason: string): Promise<string[]> {
  const open = await ctx.models.HumanTask.find({ tenantId: scope.tenantId, sessionId, status: { $nin: TERMINAL_TASK_STATUSES } }, { _id: 1 }).lean();
  if (open.length === 0) return [];
  const client = await temporalClient(ctx);
  const done = await Promise.all(
    open.map(async ({ _id }) => {
      try {
        await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => client.workflow.getHandle(taskWorkflowId(_id)).executeUpdate(cancelTaskUpdate, { args: [{ reason, by: 'system' }] }));
        return _id;
      } catch (err) {
        ctx.logger.warn({ err, taskId: _id, sessionId }, 'could not cancel a human task of the session');
        return null;
      }
    }),
  );
  return done.filter((x): x is string => x !== null);
}
