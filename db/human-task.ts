// Human tasks as lists see them: the projection each HumanTask workflow writes after every
// transition (the workflow is the truth; this serves filters, sorting and the task's history).
import { Schema, type Connection, type Model } from 'mongoose';

export const PRIORITY_RANK = { critical: 0, high: 1, medium: 2, low: 3 } as const;

export interface HumanTaskDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string | null;
  agentName: string | null;
  /**
   * The environment the task belongs to: its session's, or the creating key's. Null (or absent) on
   * tasks recorded before tasks carried one: only credentials bound to no environment see those.
   */
  environment?: string | null;
  type: string;
  title: string;
  status: string;
  priority: keyof typeof PRIORITY_RANK;
  /** 0 critical … 3 low: lists sort by it, then by age. */
  priorityRank: number;
  tags: string[];
  /**
   * The task's context as JSON text: any JSON a caller or a session sends, which a document cannot
   * always hold (keys with dots, nested arrays). Read it with `taskContext`.
   */
  contextJson: string;
  fields: { name: string; type: string; label: string | null; required: boolean; options: string[] }[];
  routing: Record<string, unknown> | null;
  assignedTo: string | null;
  assignedToTeam: string | null;
  claimedAt: Date | null;
  dueAt: Date | null;
  resolution: { respondedBy: string; displayName?: string | null; decision: string | null; fields: Record<string, unknown>; notes: string | null; resolvedAt: string; idempotency?: { key: string; request: string } } | null;
  cancelReason: string | null;
  history: { action: string; from: string | null; to: string; by: string | null; at: string; note?: string }[];
  createdBy: string;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  /**
   * The W3C trace context of the turn that opened the task, when tracing is on: a transition's
   * span links to it (docs/observability.md, "Traces"). Ids only.
   */
  traceparent?: string;
}

const HumanTaskSchema = new Schema<HumanTaskDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, default: null },
    agentName: { type: String, default: null },
    environment: { type: String, default: null },
    type: { type: String, required: true },
    title: { type: String, required: true },
    status: { type: String, required: true },
    priority: { type: String, required: true },
    priorityRank: { type: Number, required: true },
    tags: { type: [String], default: [] },
    contextJson: { type: String, default: '{}' },
    fields: { type: Schema.Types.Mixed, default: [] },
    routing: { type: Schema.Types.Mixed, default: null },
    assignedTo: { type: String, default: null },
    assignedToTeam: { type: String, default: null },
    claimedAt: { type: Date, default: null },
    dueAt: { type: Date, default: null },
    resolution: { type: Schema.Types.Mixed, default: null },
    cancelReason: { type: String, default: null },
    history: { type: Schema.Types.Mixed, default: [] },
    createdBy: { type: String, required: true },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    traceparent: { type: String },
  },
  { versionKey: false, minimize: false },
);
// The queue: a project's tasks by status, in list order (priority, then oldest first).
HumanTaskSchema.index({ tenantId: 1, projectId: 1, status: 1, priorityRank: 1, createdAt: 1 });
// Without a status filter, and with the other filters narrowing it further.
HumanTaskSchema.index({ tenantId: 1, projectId: 1, priorityRank: 1, createdAt: 1 });
HumanTaskSchema.index({ tenantId: 1, projectId: 1, assignedTo: 1, priorityRank: 1, createdAt: 1 });
HumanTaskSchema.index({ tenantId: 1, projectId: 1, assignedToTeam: 1, priorityRank: 1, createdAt: 1 });
// A session's tasks (its detail, and cancelling them when it is deleted or reset).
HumanTaskSchema.index({ tenantId: 1, sessionId: 1, status: 1 });

export type HumanTaskModel = Model<HumanTaskDoc>;
export const humanTaskModel = (c: Connection): HumanTaskModel => c.model<HumanTaskDoc>('HumanTask', HumanTaskSchema, 'human_tasks');

/**
 * A task as its workflow sees it (workflows/definitions.ts HumanTaskView: dates as ISO strings),
 * turned into its row. Shared by the workflow's projection write and the API's first write.
 */
export type HumanTaskRowSource = Omit<HumanTaskDoc, '_id' | 'priorityRank' | 'dueAt' | 'claimedAt' | 'createdAt' | 'updatedAt' | 'routing' | 'contextJson'> & {
  taskId: string;
  routing: object | null;
  context: Record<string, unknown>;
  dueAt: string | null;
  claimedAt: string | null;
  createdAt: string;
  updatedAt: string;
};

export function humanTaskRow(task: HumanTaskRowSource): Omit<HumanTaskDoc, '_id'> {
  const { taskId: _taskId, dueAt, claimedAt, createdAt, updatedAt, context, ...rest } = task;
  return {
    ...rest,
    contextJson: JSON.stringify(context ?? {}),
    routing: rest.routing as Record<string, unknown> | null,
    priorityRank: PRIORITY_RANK[task.priority],
    dueAt: dueAt ? new Date(dueAt) : null,
    claimedAt: claimedAt ? new Date(claimedAt) : null,
    createdAt: new Date(createdAt),
    updatedAt: new Date(updatedAt),
  };
}

/** A row's context; rows written before `contextJson` hold it as a document. */
export function taskContext(doc: Pick<HumanTaskDoc, 'contextJson'> & { context?: unknown }): Record<string, unknown> {
  if (typeof doc.contextJson === 'string') return JSON.parse(doc.contextJson) as Record<string, unknown>;
  return (doc.context as Record<string, unknown> | undefined) ?? {};
}

/** The statuses of a task still waiting for someone (the others are final). */
export const OPEN_TASK_STATUSES = ['pending', 'assigned', 'in_progress'] as const;

/**
 * A project's open tasks, counted up to `atMost` (enough to compare with a bound, without counting
 * a large queue to its end). Served by the (tenantId, projectId, status, …) index.
 */
export function countOpenTasks(model: HumanTaskModel, owner: { tenantId: string; projectId: string }, atMost: number): Promise<number> {
  return model.countDocuments({ ...owner, status: { $in: [...OPEN_TASK_STATUSES] } }).limit(atMost).exec();
}
