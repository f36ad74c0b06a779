// The projection write of a turn (activities/persistence/record-turn.ts) finds the session summary
// by its id together with the tenant and project it was given: ids of another tenant or another
// project change nothing.
import { createRecordTurn, type RecordTurnInput } from '../../../activities/persistence/record-turn';
import { seedTenant, startTestStack, type SeededTenant, type TestStack } from '../../support/stack';
import { seedSession } from './fixtures';

let stack: TestStack;
let acme: SeededTenant;
let globex: SeededTenant;
beforeAll(async () => {
  stack = await startTestStack();
  acme = await seedTenant(stack.ctx, 'acme-record-turn');
  globex = await seedTenant(stack.ctx, 'globex-record-turn');
});
afterAll(() => stack.close());

const write = (input: Pick<RecordTurnInput, 'tenantId' | 'projectId' | 'sessionId'>) =>
  createRecordTurn({ models: stack.ctx.models })({
    ...input,
    turn: 1,
    messages: [],
    traceEvents: [],
    summary: { messageCount: 7, status: 'ended', lastActivityAt: new Date().toISOString(), endedAt: new Date().toISOString() },
  });

it("leaves a session alone when the write names another tenant or another project", async () => {
  const session = await seedSession(stack.ctx, { tenantId: acme.tenantId, projectId: acme.projectId });
  await write({ tenantId: globex.tenantId, projectId: acme.projectId, sessionId: session._id });
  await write({ tenantId: acme.tenantId, projectId: acme.otherProjectId, sessionId: session._id });
  const unchanged = await stack.ctx.models.Session.findOne({ _id: session._id }).lean();
  expect(unchanged).toMatchObject({ tenantId: acme.tenantId, status: 'active', messageCount: 0, endedAt: null });

  await write({ tenantId: acme.tenantId, projectId: acme.projectId, sessionId: session._id });
  const written = await stack.ctx.models.Session.findOne({ _id: session._id }).lean();
  expect(written).toMatchObject({ status: 'ended', messageCount: 7 });
});
