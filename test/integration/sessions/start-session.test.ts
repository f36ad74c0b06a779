// startSession (core/sessions/start.ts), the one way a session is created and started, on the
// real stack: a retry-safe start run twice for one session id makes one session (one record, one
// place in the tenant's count, one workflow), and a plain start refused at the cap writes nothing.
import { randomUUID } from 'node:crypto';
import { seedDevProject } from '../../../infra/seed-project';
import { readCapacity } from '../../../db/session-capacity';
import { startSession } from '../../../core/sessions/start';
import { resolveNewSessionTarget } from '../../../core/sessions/target';
import { sessionWorkflowId } from '../../../core/sessions/workflow-client';
import { isDomainError } from '../../../lib/errors';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';

let stack: TestStack;
let t: SeededTenant;

beforeAll(async () => {
  // No worker: a started workflow waits on its task queue, which is all these tests look at.
  stack = await startTestStack({ worker: false, env: { MAX_CONCURRENT_SESSIONS: '2' } });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
});
afterAll(async () => {
  await stack?.close();
});

async function newSessionInput(sessionId: string) {
  const scope = { tenantId: t.tenantId, projectId: t.projectId };
  const { agent } = await resolveNewSessionTarget(stack.ctx.models, scope, {});
  return { ...scope, ...agent, channel: 'api' as const, sessionId };
}

it('a retry-safe start run twice for one session id makes one session, counted once', async () => {
  const sessionId = randomUUID();
  const input = await newSessionInput(sessionId);
  const first = await startSession(stack.ctx, input, { retrySafe: true });
  const again = await startSession(stack.ctx, input, { retrySafe: true });

  expect(first.runId).toEqual(expect.any(String));
  expect(again.runId).toBeNull();
  expect(again.session._id).toBe(sessionId);
  expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId, _id: sessionId })).toBe(1);
  expect(await stack.ctx.models.SessionSlot.countDocuments({ tenantId: t.tenantId, sessionId })).toBe(1);
  expect((await readCapacity(stack.ctx.models, t.tenantId)).active).toBe(1);
  const client = await stack.ctx.temporal.client();
  const description = await client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
  expect(description.status.name).toBe('RUNNING');
  expect(description.runId).toBe(first.runId);
});

it('at the cap a start is refused with a domain error that says when to retry, and writes nothing', async () => {
  await startSession(stack.ctx, await newSessionInput(randomUUID()));
  const refusedId = randomUUID();
  const refused = await startSession(stack.ctx, await newSessionInput(refusedId)).then(
    () => null,
    (err: unknown) => err,
  );

  expect(isDomainError(refused)).toBe(true);
  expect(refused).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', message: 'Concurrent session limit exceeded', retryAfterMs: 60_000 });
  expect(await stack.ctx.models.Session.countDocuments({ tenantId: t.tenantId, _id: refusedId })).toBe(0);
  expect((await readCapacity(stack.ctx.models, t.tenantId)).active).toBe(2);
});
