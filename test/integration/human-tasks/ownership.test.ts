// Every read and write of a human task carries its owner in the filter (db/owned.ts): the API's
// task read, the create call's wait for the projection, and the task workflow's projection write.
// The commands reaching the store are watched; a row of another tenant under the same id is
// neither returned nor overwritten.
import type { CommandStartedEvent } from 'mongodb';
import type { Connection } from 'mongoose';
import { createRecordHumanTask } from '../../../activities/persistence/human-tasks';
import { type AppContext } from '../../../api/context';
import { claimTask, createTask, findTask } from '../../../core/human-tasks/tasks';
import { connectMongo } from '../../../db/connection';
import { createModels } from '../../../db/models';
import { initialTaskView } from '../../../workflows/human-task-rules';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

jest.setTimeout(120_000);

let stack: TestStack;
let t: SeededTenant;
let other: SeededTenant;
let counted: Connection;
let ctx: AppContext;
/** The filters of every command on human_tasks, as the store received them. */
const filters: Record<string, unknown>[] = [];

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  other = await seedTenant(stack.ctx);
  counted = await connectMongo(`${stack.config.MONGODB_URI}?monitorCommands=true`);
  counted.getClient().on('commandStarted', (e: CommandStartedEvent) => {
    if (e.command[e.commandName] !== 'human_tasks') return;
    if (e.commandName === 'find' || e.commandName === 'count') filters.push(e.command.filter ?? e.command.query ?? {});
    if (e.commandName === 'update') for (const u of e.command.updates as { q: Record<string, unknown> }[]) filters.push(u.q);
    if (e.commandName === 'aggregate') filters.push((e.command.pipeline as { $match?: Record<string, unknown> }[])[0]?.$match ?? {});
  });
  ctx = { ...stack.ctx, models: createModels(counted) };
});
afterAll(async () => {
  await counted.close();
  await stack.close();
});

it('reads a task with its tenant and project in the filter, through create, read and a transition', async () => {
  const scope = { tenantId: t.tenantId, projectId: t.projectId };
  filters.length = 0;
  const created = await createTask(ctx, scope, { type: 'review', title: 'Check the reply', priority: 'medium', tags: [], context: {}, fields: [] }, 'user:u1', 'dev');
  await findTask(ctx, scope, created._id);
  await claimTask(ctx, scope, created._id, 'ada');
  // Create counts the project's open tasks (the bound) and inserts its row; the read and the
  // claim's read filter on the owner and the id.
  for (const f of filters) expect(f).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId });
  const reads = filters.filter((f) => '_id' in f);
  expect(reads.length).toBeGreaterThanOrEqual(2);
  for (const f of reads) expect(f).toMatchObject({ _id: created._id });

  await expect(findTask(ctx, { tenantId: other.tenantId, projectId: other.projectId }, created._id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  // The right tenant with another of its projects is not the task's owner either.
  await expect(findTask(ctx, { tenantId: t.tenantId, projectId: other.projectId }, created._id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
});

it('writes the projection only over a row of the same owner, and never over a newer revision', async () => {
  const record = createRecordHumanTask({ models: createModels(counted) });
  const taskId = `ht_${'a'.repeat(32)}`;
  const base = { taskId, sessionId: null, agentName: null, type: 'review', title: 'Ours', priority: 'low' as const, tags: [], context: {}, fields: [], dueAtMs: null, routing: null, createdBy: 'user:u1' };
  const mine = initialTaskView({ ...base, tenantId: t.tenantId, projectId: t.projectId }, Date.now());
  filters.length = 0;
  await record(mine);
  expect(filters).toEqual([expect.objectContaining({ _id: taskId, tenantId: t.tenantId, projectId: t.projectId })]);

  // Another tenant's write under the same id changes nothing.
  await record({ ...initialTaskView({ ...base, title: 'Theirs', tenantId: other.tenantId, projectId: other.projectId }, Date.now()), revision: 9 });
  // A newer revision is kept against a retried older one.
  await record({ ...mine, title: 'Ours, revised', revision: 3 });
  await record({ ...mine, title: 'Ours, stale', revision: 2 });
  const row = await stack.ctx.models.HumanTask.findById(taskId).lean();
  expect(row).toMatchObject({ tenantId: t.tenantId, projectId: t.projectId, title: 'Ours, revised', revision: 3 });
  for (const f of filters) expect(f).toMatchObject({ _id: taskId, tenantId: expect.any(String), projectId: expect.any(String) });
});
