// Request and response schemas of the human task routes (docs/human-tasks.md).
import { ApiError } from '../../lib/errors';
import { z } from 'zod';
import '../openapi/registry';
import { HUMAN_TASK_FIELD_TYPES, HUMAN_TASK_RESERVED_FIELDS, HUMAN_TASK_TYPES } from '../../abl/ir';
import { SESSION_ENVIRONMENTS } from '../sessions/schemas';
import { HUMAN_TASK_PRIORITIES, HUMAN_TASK_STATUSES } from '../../workflows/definitions';
import { NOT_BLANK_PATTERN, ZDateTime, ZLimitQuery, ZOffsetQuery } from '../http/schemas';

/** Task ids this service issues: `ht_` and 32 hex digits; the workflow id is `human-task/<id>`. */
export { TASK_ID_PATTERN } from '../../core/human-tasks/tasks';

const ZProjectId = z.string().min(1).max(64).describe('Project id (a CUID)');
const ZTaskId = z.string().min(1).max(128).describe('Task id, `ht_` and 32 hex digits; an unknown id is 404');
export const ZTaskParams = z.object({ projectId: ZProjectId, taskId: ZTaskId });

/** A person or team name as callers send it: 1-200 characters, not blank. */
const who = (what: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(1, 'must not be empty')
    .max(200)
    .regex(NOT_BLANK_PATTERN, 'must not be blank')
    .trim()
    .describe(what);

export const ZListTasksQuery = z.object({
  limit: ZLimitQuery,
  offset: ZOffsetQuery,
  status: z.enum(HUMAN_TASK_STATUSES).optional(),
  type: z.enum(HUMAN_TASK_TYPES).optional(),
  priority: z.enum(HUMAN_TASK_PRIORITIES).optional(),
  assignedTo: z.string().min(1).max(200).optional().describe('User id the task is assigned to or claimed by'),
  assignedToTeam: z.string().min(1).max(200).optional().describe('Team the task waits with'),
  sessionId: z.string().min(1).max(128).optional().describe('Tasks of this session'),
  agentName: z.string().min(1).max(200).optional().describe('Tasks created by this agent'),
  createdFrom: ZDateTime.optional().describe('Created at or after (ISO 8601)'),
  createdTo: ZDateTime.optional().describe('Created before (ISO 8601)'),
});
export type TListTasksQuery = z.infer<typeof ZListTasksQuery>;

const ZField = z
  .object({
    name: z.string().min(1).max(100).regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a name such as refund_amount'),
    type: z.enum(HUMAN_TASK_FIELD_TYPES).default('text'),
    label: z.string().max(200).nullable().default(null),
    required: z.boolean().default(false),
    options: z.array(z.string().min(1).max(200)).max(50).default([]).describe('The choices of a `select`'),
  })
  .openapi('HumanTaskField');

export const ZCreateTaskRequest = z
  .object({
    type: z.enum(HUMAN_TASK_TYPES).default('approval'),
    title: who('What needs attention'),
    priority: z.enum(HUMAN_TASK_PRIORITIES).default('medium'),
    tags: z.array(z.string().min(1).max(100)).max(20).default([]),
    fields: z.array(ZField).max(50).default([]).describe('The form to fill in when resolving'),
    context: z.record(z.string(), z.unknown()).default({}).describe('Data the person needs'),
    dueAt: ZDateTime.optional().describe('SLA deadline: past it the task expires'),
    assignedToTeam: z.string().min(1).max(200).optional().describe('The team (queue) the task waits with'),
    environment: z
      .enum(SESSION_ENVIRONMENTS)
      .optional()
      .describe('The environment the task belongs to; default the key’s environment when it is bound to one, else `dev`'),
  })
  .openapi('CreateHumanTaskRequest');
export type TCreateTaskRequest = z.infer<typeof ZCreateTaskRequest>;

/**
 * Rules across a create body's fields, which the schema cannot state: 422 (each part is valid
 * on its own). A `select` needs options; field names are unique.
 */
export function checkCreateTask(body: TCreateTaskRequest): void {
  const problems: string[] = [];
  for (const f of body.fields) if (f.type === 'select' && f.options.length === 0) problems.push(`body.fields.${f.name}: a select needs options`);
  if (new Set(body.fields.map((f) => f.name)).size !== body.fields.length) problems.push('body.fields: field names must be unique');
  for (const f of body.fields) if ((HUMAN_TASK_RESERVED_FIELDS as readonly string[]).includes(f.name)) problems.push(`body.fields.${f.name}: is a name the outcome uses (${HUMAN_TASK_RESERVED_FIELDS.join(', ')})`);
  if (problems.length > 0) throw new ApiError('UNPROCESSABLE_ENTITY', problems.join('; '));
}

export const ZClaimTaskRequest = z
  .object({ userId: who('A display name for the claimer; the claimer is always the calling credential (user id or API key id)').optional() })
  .openapi('ClaimHumanTaskRequest');
export const ZAssignTaskRequest = z
  .object({
    assignedTo: z.string().min(1).max(200).regex(NOT_BLANK_PATTERN, 'must not be blank').optional().describe('User id'),
    assignedToTeam: z.string().min(1).max(200).regex(NOT_BLANK_PATTERN, 'must not be blank').optional().describe('Team name'),
  })
  .openapi('AssignHumanTaskRequest');

/** Exactly one of `assignedTo` and `assignedToTeam`: 422, as both are optional in the schema. */
export function checkAssignTask(body: { assignedTo?: string; assignedToTeam?: string }): void {
  if (Boolean(body.assignedTo) === Boolean(body.assignedToTeam)) throw new ApiError('UNPROCESSABLE_ENTITY', 'body: give exactly one of assignedTo and assignedToTeam');
}
export const ZResolveTaskRequest = z
  .object({
    respondedBy: who('A display name for the resolver; the resolver is always the calling credential (user id or API key id)').optional(),
    decision: z.string().min(1).max(200).optional().describe('e.g. `approved` or `rejected`; required for approval and decision tasks'),
    fields: z
      .record(z.string(), z.unknown())
      .default({})
      .describe('Values of the task’s form, by field name; a name the form does not have, or an outcome name (`approved`, `rejected` …), is 422'),
    notes: z.string().max(10_000).optional(),
  })
  .openapi('ResolveHumanTaskRequest');
export const ZCancelTaskRequest = z.object({ reason: z.string().min(1).max(1000).optional() }).openapi('CancelHumanTaskRequest');

const ZTransition = z
  .object({
    action: z.enum(['created', 'claimed', 'assigned', 'resolved', 'expired', 'cancelled', 'priority_raised']),
    from: z.enum(HUMAN_TASK_STATUSES).nullable(),
    to: z.enum(HUMAN_TASK_STATUSES),
    by: z.string().nullable().describe('Who made it (`agent:<name>` for an escalation; null for an expiry)'),
    at: z.string(),
    note: z.string().optional(),
  })
  .openapi('HumanTaskTransition');

const ZResolution = z
  .object({
    respondedBy: z.string().describe('The credential that resolved it: a user id or an API key id'),
    displayName: z.string().nullable().describe('The name the resolver gave, for display only (null when none, or on older tasks)'),
    decision: z.string().nullable(),
    fields: z.record(z.string(), z.unknown()),
    notes: z.string().nullable(),
    resolvedAt: z.string(),
  })
  .openapi('HumanTaskResolution');

export const ZTaskListItem = z
  .object({
    id: z.string().openapi({ example: 'ht_5f0c8e4a9b2d4c1e8f7a6b5c4d3e2f10' }),
    type: z.enum(HUMAN_TASK_TYPES),
    status: z.enum(HUMAN_TASK_STATUSES),
    priority: z.enum(HUMAN_TASK_PRIORITIES),
    title: z.string(),
    tags: z.array(z.string()),
    sessionId: z.string().nullable().describe('The session waiting on the task (null for a task created through the API)'),
    agentName: z.string().nullable(),
    environment: z.string().nullable().describe('The session’s environment, or the creating key’s; null on tasks recorded before tasks carried one'),
    assignedTo: z.string().nullable().describe('The user id or API key id the task is assigned to or claimed by'),
    assignedToTeam: z.string().nullable(),
    dueAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('HumanTaskListItem');

export const ZTaskDetail = ZTaskListItem.extend({
  context: z.record(z.string(), z.unknown()).describe('The `context_for_human` values (conversation_history when asked)'),
  fields: z.array(ZField),
  routing: z.record(z.string(), z.unknown()).nullable(),
  claimedAt: z.string().nullable(),
  resolution: ZResolution.nullable(),
  cancelReason: z.string().nullable(),
  createdBy: z.string(),
  session: z
    .object({ id: z.string(), href: z.string().describe('The session’s detail route') })
    .nullable()
    .describe('Link to the waiting session'),
  workflowId: z.string().describe('`human-task/<id>`: the task’s workflow in the Temporal Web UI'),
  history: z.array(ZTransition).describe('Every transition, oldest first'),
}).openapi('HumanTask');

export const ZListTasksResponse = z.object({ success: z.literal(true), total: z.number(), offset: z.number(), limit: z.number(), tasks: z.array(ZTaskListItem) });
export const ZTaskResponse = z.object({ success: z.literal(true), task: ZTaskDetail });
