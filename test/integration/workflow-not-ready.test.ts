// The real server's "not ready, try again" answer to an update (gRPC FAILED_PRECONDITION with a
// WorkflowNotReady status detail) is recognised by that detail, as the chat turn's resend relies
// on (core/sessions/workflow-client.ts), whatever its message says. Provoked here with a workflow
// whose tasks keep failing: the worker has no workflow of its type. A chat turn still refused so
// when its resends run out answers 503 with Retry-After.
import { defineUpdate } from '@temporalio/workflow';
import { isDroppedUpdate, isTemporalUnavailable } from '../../core/sessions/workflow-client';
import { toApiError } from '../../core/chat/turns';
import { eventually } from '../support/eventually';
import { startTestStack, type TestStack } from '../support/stack';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ worker: true });
});
afterAll(() => stack.close());

it('recognises the server refusing an update because the workflow is not ready', async () => {
  const client = await stack.ctx.temporal.client();
  const handle = await client.workflow.start('noWorkflowOfThisType', { taskQueue: stack.config.TEMPORAL_TASK_QUEUE, workflowId: `not-ready-${Date.now()}` });
  try {
    const ping = defineUpdate<void>('ping');
    const refusal = await eventually(
      () => client.withDeadline(Date.now() + 2000, () => handle.executeUpdate(ping)).then(() => null, (err: unknown) => err),
      (err) => (err as { cause?: { code?: unknown } } | null)?.cause?.code === 9,
      60_000,
      250,
    );
    expect((refusal as { cause: { code: number } }).cause.code).toBe(9);
    expect(isDroppedUpdate(refusal)).toBe(true);
    expect(isTemporalUnavailable(refusal)).toBe(false);
    // A turn still refused when its resends run out is told to come again, not a 500.
    const answer = toApiError(refusal);
    expect(answer.code).toBe('SERVICE_UNAVAILABLE');
    expect(answer.headers).toEqual({ 'Retry-After': '1' });
  } finally {
    await handle.terminate();
  }
});
