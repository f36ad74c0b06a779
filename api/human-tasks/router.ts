// The human task routes: list and read (human_task:read), create, claim, assign, resolve and
// cancel (human_task:write, which a reviewer holds without agent:write). docs/human-tasks.md.
import { type z } from 'zod';
import { taskContext, type HumanTaskDoc } from '../../db/human-task';
import { type HumanTaskView } from '../../workflows/definitions';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { type Principal } from '../../lib/permissions';
import { requireEnvironment } from '../../core/platform-keys/environments';
import { type ProjectDoc } from '../../db/project';
import {
  checkAssignTask,
  checkCreateTask,
  ZAssignTaskRequest,
  ZCancelTaskRequest,
  ZClaimTaskRequest,
  ZCreateTaskRequest,
  ZListTasksQuery,
  ZListTasksResponse,
  ZResolveTaskRequest,
  ZTaskParams,
  ZTaskResponse,
  type ZTaskDetail,
  type ZTaskListItem,
} from './schemas';
import { assignTask, cancelTask, claimTask, createTask, findTask, listTasks, publicResolution, resolveTask, taskWorkflowId, type TaskScope } from '../../core/human-tasks/tasks';
import { readIdempotencyKey } from '../http/idempotency-key';

const TAGS = ['Human tasks'];
/** The caller's tasks: its project, and for an environment-bound key only its environments' tasks. */
const scopeOf = (principal: Principal, project: ProjectDoc | null): TaskScope => ({ tenantId: principal.tenantId, projectId: project!._id, environments: principal.environments ?? null });
/** Who acts: the credential (a user's id for a JWT, the key's id for an API key), never a body field. */
const actorOf = (principal: Principal): string => principal.subjectId;

/** A created task's environment: the one named, else the key's when it is bound to exactly one, else `dev`. */
function createEnvironment(principal: Principal, named: string | undefined): string {
  const environment = named ?? (principal.environments?.length === 1 ? principal.environments[0]! : 'dev');
  requireEnvironment(principal, environment);
  return environment;
}
const iso = (d: Date | string | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

/** The operations on one task, linked from every answer that names it. */
const taskLinks = (taskId: string) =>
  linksTo(['getHumanTask', 'claimHumanTask', 'assignHumanTask', 'resolveHumanTask', 'cancelHumanTask'], { projectId: '$request.path.projectId', taskId });

type Task = HumanTaskDoc | (HumanTaskView & { _id?: string });

function presentListItem(t: Task): z.infer<typeof ZTaskListItem> {
  return {
    id: '_id' in t && t._id ? t._id : (t as HumanTaskView).taskId,
    type: t.type as z.infer<typeof ZTaskListItem>['type'],
    status: t.status as z.infer<typeof ZTaskListItem>['status'],
    priority: t.priority,
    title: t.title,
    tags: t.tags,
    sessionId: t.sessionId,
    agentName: t.agentName,
    environment: t.environment ?? null,
    assignedTo: t.assignedTo,
    assignedToTeam: t.assignedToTeam,
    dueAt: iso(t.dueAt),
    createdAt: iso(t.createdAt)!,
    updatedAt: iso(t.updatedAt)!,
  };
}

function presentTask(t: Task): z.infer<typeof ZTaskDetail> {
  const item = presentListItem(t);
  return {
    ...item,
    context: 'taskId' in t ? t.context : taskContext(t),
    fields: t.fields as z.infer<typeof ZTaskDetail>['fields'],
    routing: (t.routing as Record<string, unknown> | null) ?? null,
    claimedAt: iso(t.claimedAt),
    resolution: t.resolution ? { ...publicResolution(t.resolution), displayName: t.resolution.displayName ?? null } : null,
    cancelReason: t.cancelReason,
    createdBy: t.createdBy,
    session: t.sessionId ? { id: t.sessionId, href: `/api/projects/${t.projectId}/sessions/${t.sessionId}` } : null,
    workflowId: taskWorkflowId(item.id),
    history: t.history as z.infer<typeof ZTaskDetail>['history'],
  };
}

export const humanTaskRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/human-tasks',
    operationId: 'listHumanTasks',
    summary: "List the project's human tasks, most urgent first (priority, then oldest)",
    description: 'Filters combine (AND). `createdFrom`/`createdTo` bound the creation time. Sorted by priority (critical first), then by age (oldest first).',
    tags: TAGS,
    auth: 'human_task:read',
    params: ZProjectIdParam,
    query: ZListTasksQuery,
    errorStatuses: [400, 404],
    response: ZListTasksResponse,
    async handler({ ctx, principal, project, query }) {
      const { total, tasks } = await listTasks(ctx, scopeOf(principal, project), query);
      return { success: true, total, offset: query.offset, limit: query.limit, tasks: tasks.map(presentListItem) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/human-tasks',
    operationId: 'createHumanTask',
    summary: 'Create a human task with no session (status pending)',
    description:
      'The task workflow starts and the answer is the task as listed. A `dueAt` in the past is 422. The task belongs to `environment`, by default ' +
      'the key’s when it is bound to exactly one, else `dev`; an environment the key is not bound to is 403. 429 `QUEUE_FULL` when the project ' +
      'has HUMAN_TASK_MAX_OPEN_PER_PROJECT open tasks.',
    tags: TAGS,
    auth: 'human_task:write',
    params: ZProjectIdParam,
    body: ZCreateTaskRequest,
    bodyExample: {
      type: 'data_entry',
      title: 'Confirm the customer’s address',
      priority: 'high',
      fields: [{ name: 'street', type: 'text', required: true }],
      context: { customerId: 'C-42' },
    },
    successStatus: 201,
    errorStatuses: [400, 403, 404, 422, 429, 503],
    links: taskLinks('$response.body#/task/id'),
    response: ZTaskResponse,
    async handler({ ctx, principal, project, body }) {
      checkCreateTask(body);
      const environment = createEnvironment(principal, body.environment);
      return { success: true, task: presentTask(await createTask(ctx, scopeOf(principal, project), body, `${principal.kind}:${principal.subjectId}`, environment)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/human-tasks/:taskId',
    operationId: 'getHumanTask',
    summary: 'Get a human task: context, form, resolution, session link and every transition',
    tags: TAGS,
    auth: 'human_task:read',
    params: ZTaskParams,
    errorStatuses: [404],
    response: ZTaskResponse,
    async handler({ ctx, principal, project, params }) {
      return { success: true, task: presentTask(await findTask(ctx, scopeOf(principal, project), params.taskId)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/human-tasks/:taskId/claim',
    operationId: 'claimHumanTask',
    summary: 'Claim a task: it becomes in_progress with the calling credential as assignee',
    description:
      'The claimer is the calling credential: the user id of a user token, the key id of an API key (`userId` in the body is only a display name). ' +
      'From pending, or assigned (to this credential or to a team). Claiming again by the same credential answers the task unchanged. 409 when ' +
      'another credential claimed it or it is assigned to another, or it is completed, expired or cancelled.',
    tags: TAGS,
    auth: 'human_task:write',
    params: ZTaskParams,
    body: ZClaimTaskRequest,
    bodyOptional: true,
    bodyExample: { userId: 'Ada Lovelace' },
    errorStatuses: [400, 404, 409, 503],
    links: taskLinks('$request.path.taskId'),
    response: ZTaskResponse,
    async handler({ ctx, principal, project, params, body }) {
      return { success: true, task: presentTask(await claimTask(ctx, scopeOf(principal, project), params.taskId, actorOf(principal), body.userId)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/human-tasks/:taskId/assign',
    operationId: 'assignHumanTask',
    summary: 'Assign a task to a user or a team: it becomes assigned (any claim is dropped)',
    tags: TAGS,
    auth: 'human_task:write',
    params: ZTaskParams,
    body: ZAssignTaskRequest,
    bodyExample: { assignedToTeam: 'billing' },
    errorStatuses: [400, 404, 409, 422, 503],
    links: taskLinks('$request.path.taskId'),
    response: ZTaskResponse,
    async handler({ ctx, principal, project, params, body }) {
      checkAssignTask(body);
      return { success: true, task: presentTask(await assignTask(ctx, scopeOf(principal, project), params.taskId, body, `${principal.kind}:${principal.subjectId}`)) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/human-tasks/:taskId/resolve',
    operationId: 'resolveHumanTask',
    summary: 'Resolve a task: it becomes completed and the waiting session resumes with the decision',
    description:
      'The resolver is the calling credential (`resolution.respondedBy`: the user id or key id); `respondedBy` in the body is only a display ' +
      'name (`resolution.displayName`). Exactly once: of concurrent resolves one wins; the others get 409 with `error.details.resolution` (the ' +
      'winner’s). 422 names every missing or mistyped form field, every field the form does not have and every outcome name (`approved`, ' +
      '`rejected`, `resolved`, `expired`, `cancelled` …: only `decision` and the outcome set those); `decision` is required for approval and ' +
      'decision tasks. 409 also when another credential claimed it. ' +
      'Send `Idempotency-Key` (1-128 letters, digits and `._:-`) to make a resent request count once: the same key with the same body ' +
      'answers 200 with the task as that request resolved it, even after the task completed; the same key with another body is 409 ' +
      '`IDEMPOTENCY_CONFLICT`. A key is the calling credential\'s own (another credential\'s same key is another key).',
    tags: TAGS,
    auth: 'human_task:write',
    params: ZTaskParams,
    body: ZResolveTaskRequest,
    bodyExample: { respondedBy: 'Ada Lovelace', decision: 'approved', fields: { approved_amount: 120 }, notes: 'Customer in good standing' },
    errorStatuses: [400, 404, 409, 422, 503],
    links: taskLinks('$request.path.taskId'),
    response: ZTaskResponse,
    async handler({ ctx, principal, project, params, body, req }) {
      const task = await resolveTask(ctx, scopeOf(principal, project), params.taskId, actorOf(principal), body, readIdempotencyKey(req));
      return { success: true, task: presentTask(task) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/human-tasks/:taskId/cancel',
    operationId: 'cancelHumanTask',
    summary: 'Cancel a task: it becomes cancelled and the waiting session resumes with human.cancelled',
    tags: TAGS,
    auth: 'human_task:write',
    params: ZTaskParams,
    body: ZCancelTaskRequest,
    bodyOptional: true,
    bodyExample: { reason: 'Customer withdrew the request' },
    errorStatuses: [400, 404, 409, 503],
    links: taskLinks('$request.path.taskId'),
    response: ZTaskResponse,
    async handler({ ctx, principal, project, params, body }) {
      return { success: true, task: presentTask(await cancelTask(ctx, scopeOf(principal, project), params.taskId, body.reason, `${principal.kind}:${principal.subjectId}`)) };
    },
  }),
];
