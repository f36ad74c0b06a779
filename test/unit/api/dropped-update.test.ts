// A turn whose update the server dropped (the workflow task carrying it failed, typically because
// it raced a continue-as-new) is sent again with the same update id; anything else is not.
import { ServiceError } from '@temporalio/client';
import { isDroppedUpdate, sendUpdateResendingDropped } from '../../../api/sessions/workflow-client';

/** What the client throws: the server's gRPC status wrapped in a ServiceError. */
function grpcError(code: number, details: string): ServiceError {
  const cause = Object.assign(new Error(`${code} ${details}`), { code, details });
  return new ServiceError('Workflow Update failed', { cause });
}
const dropped = () => grpcError(9, 'FAILED_PRECONDITION: Unable to perform workflow execution update due to unexpected workflow task failure.');
const noSleep = async () => undefined;

it('recognises a dropped update and nothing else', () => {
  expect(isDroppedUpdate(dropped())).toBe(true);
  expect(isDroppedUpdate(grpcError(9, 'FAILED_PRECONDITION: workflow execution already completed'))).toBe(false);
  expect(isDroppedUpdate(grpcError(14, 'UNAVAILABLE: unexpected workflow task failure'))).toBe(false);
  expect(isDroppedUpdate(new Error('unexpected workflow task failure'))).toBe(false);
});

it('sends a dropped update again until it is answered', async () => {
  let sends = 0;
  const answer = await sendUpdateResendingDropped(Date.now() + 10_000, async () => {
    sends += 1;
    if (sends < 3) throw dropped();
    return 'answered';
  }, noSleep);
  expect(answer).toBe('answered');
  expect(sends).toBe(3);
});

it('passes other failures through at once', async () => {
  let sends = 0;
  const failure = grpcError(9, 'FAILED_PRECONDITION: workflow execution already completed');
  await expect(sendUpdateResendingDropped(Date.now() + 10_000, async () => {
    sends += 1;
    throw failure;
  }, noSleep)).rejects.toBe(failure);
  expect(sends).toBe(1);
});

it('gives up with the dropped error once the deadline leaves no room', async () => {
  let sends = 0;
  await expect(sendUpdateResendingDropped(Date.now() + 60, async () => {
    sends += 1;
    throw dropped();
  }, (ms) => new Promise((r) => setTimeout(r, ms)))).rejects.toThrow('Workflow Update failed');
  // 20 ms and then 50 ms of backoff: the third wait would pass the deadline.
  expect(sends).toBeGreaterThanOrEqual(2);
  expect(sends).toBeLessThanOrEqual(3);
});
