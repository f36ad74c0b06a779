// Long sessions continue-as-new without losing state, counters or retried-turn answers.
import { Client, Connection } from '@temporalio/client';
import { switchboardDataConverter } from '../../../lib/payload-codec';
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';
import { sessionHistory } from '../../support/workflow-history';

let stack: TestStack;
let t: SeededTenant;
let temporal: Client;

beforeAll(async () => {
  // Roll over after a few turns instead of thousands.
  stack = await startTestStack({ worker: true, env: { SESSION_MAX_HISTORY_EVENTS: '40' } });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  temporal = new Client({ connection: await Connection.connect({ address: stack.config.TEMPORAL_ADDRESS }), dataConverter: switchboardDataConverter(stack.ctx.payloadCodec) });
});
afterAll(async () => {
  await temporal.connection.close();
  await stack.close();
});

it('rolls over to new runs and keeps the conversation, its counters and its retried turns', async () => {
  const api = client(stack.baseUrl);
  const chat = (message: string, sessionId?: string, key?: string) =>
    api.post('/api/v1/chat/agent', {
      key: t.adminKey,
      json: {
        projectId: t.projectId,
        message,
        ...(sessionId ? { sessionId } : {}),
        testContext: { toolMocks: [{ toolName: 'get_invoice', error: 'not found' }] },
      },
      headers: key ? { 'idempotency-key': key } : {},
    });
  const first = await chat('hello', undefined, 'can-0');
  const sessionId: string = first.body.sessionId;
  const handle = temporal.workflow.getHandle(`session/${sessionId}`);
  const firstRun = (await handle.describe()).runId;
  await chat('I have a question about my invoice', sessionId);
  for (let i = 1; i <= 8; i++) {
    const res = await chat(`INV-12345${i}`, sessionId, `can-${i}`);
    expect(res.status).toBe(200);
  }
  const description = await handle.describe();
  expect(description.runId).not.toBe(firstRun);
  expect(description.status.name).toBe('RUNNING');

  // State crossed the boundary: still the billing agent, counters continue.
  const state = await handle.query<{ currentAgent: string; turnCount: number }>('state');
  expect(state.currentAgent).toBe('Billing_Agent');
  expect(state.turnCount).toBeGreaterThanOrEqual(10);
  await flushProjection(stack.ctx, sessionId);
  const summary = await stack.ctx.models.Session.findById(sessionId).lean();
  expect(summary?.messageCount).toBe(20);

  // The next run is handed the answers of turns sent with an Idempotency-Key only: a turn with a
  // generated id cannot be sent again, and its answer is already in the run's history.
  const history = await sessionHistory(stack, sessionId, firstRun);
  const rolled = history.events?.find((e) => e.workflowExecutionContinuedAsNewEventAttributes)?.workflowExecutionContinuedAsNewEventAttributes;
  const data = rolled?.input?.payloads?.[0]?.data;
  expect(data).toBeDefined();
  const carried = (JSON.parse(Buffer.from(data!).toString('utf8')) as { carried: { recentTurns: { clientMessageId: string }[] } }).carried;
  const ids = carried.recentTurns.map((r) => r.clientMessageId);
  expect(ids.length).toBeGreaterThan(0);
  expect(ids.filter((id) => !id.startsWith('can-'))).toEqual([]);
  expect(ids).toContain('can-0');

  // A retry of a turn answered in an earlier run is answered again, not run again.
  const users = await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId, role: 'user' });
  const again = await chat('INV-123458', sessionId, 'can-8');
  expect(again.status).toBe(200);
  await flushProjection(stack.ctx, sessionId);
  expect(await stack.ctx.models.TranscriptMessage.countDocuments({ sessionId, role: 'user' })).toBe(users);
});
