// A turn whose update the server dropped (the workflow task carrying it failed, typically because
// it raced a continue-as-new) is sent again with the same update id; anything else is not.
import { ServiceError } from '@temporalio/client';
import { isDroppedUpdate, sendUpdateResendingDropped } from '../../../core/sessions/workflow-client';

/** Protobuf bytes of a length-delimited field. */
const field = (number: number, bytes: Buffer) => Buffer.concat([Buffer.from([(number << 3) | 2, bytes.length]), bytes]);

/** `grpc-status-details-bin`: a google.rpc.Status whose one detail is an Any of this type. */
function statusDetails(code: number, typeName: string): Buffer {
  const any = field(1, Buffer.from(`type.googleapis.com/${typeName}`));
  return Buffer.concat([Buffer.from([0x08, code]), field(3, any)]);
}

/** What the client throws: the server's gRPC status (with its metadata) wrapped in a ServiceError. */
function grpcError(code: number, details: string, detailType?: string): ServiceError {
  const metadata = { get: (key: string) => (key === 'grpc-status-details-bin' && detailType ? [statusDetails(code, detailType)] : []) };
  const cause = Object.assign(new Error(`${code} ${details}`), { code, details, metadata });
  return new ServiceError('Workflow Update failed', { cause });
}
const NOT_READY = 'temporal.api.errordetails.v1.WorkflowNotReadyFailure';
const dropped = () => grpcError(9, 'FAILED_PRECONDITION: Unable to perform workflow execution update due to unexpected workflow task failure.', NOT_READY);
const noSleep = async () => undefined;

it('recognises a dropped update by its gRPC code and status detail, and nothing else', () => {
  expect(isDroppedUpdate(dropped())).toBe(true);
  // The type decides, not the words: any message with the detail, none without it.
  expect(isDroppedUpdate(grpcError(9, 'FAILED_PRECONDITION: Workflow task is not scheduled yet.', NOT_READY))).toBe(true);
  expect(isDroppedUpdate(grpcError(9, 'FAILED_PRECONDITION: unexpected workflow task failure'))).toBe(false);
  expect(isDroppedUpdate(grpcError(9, 'FAILED_PRECONDITION: workflow execution already completed', 'temporal.api.errordetails.v1.WorkflowExecutionAlreadyStartedFailure'))).toBe(false);
  expect(isDroppedUpdate(grpcError(14, 'UNAVAILABLE: unexpected workflow task failure', NOT_READY))).toBe(false);
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

// The backoff is judged on a fake clock: Date.now() and setTimeout only move when the test
// moves them, so what is sent when does not depend on how busy the machine is.
describe('on a fake clock', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  /** Runs a send that is always dropped against `budgetMs`; returns when each send happened (ms after the start). */
  async function alwaysDropped(budgetMs: number) {
    const start = Date.now();
    const sentAt: number[] = [];
    const outcome = sendUpdateResendingDropped(start + budgetMs, async () => {
      sentAt.push(Date.now() - start);
      throw dropped();
    });
    const refused = expect(outcome).rejects.toThrow('Workflow Update failed');
    await jest.runAllTimersAsync();
    await refused;
    return { sentAt, elapsed: Date.now() - start };
  }

  it('gives up with the dropped error once the deadline leaves no room', async () => {
    // 20 ms of backoff fits in 60; the next wait, 50 ms, would pass the deadline: no third send.
    expect(await alwaysDropped(60)).toEqual({ sentAt: [0, 20], elapsed: 20 });
  });

  it('backs off 20, 50, 100, 200, 400 ms between sends, and never waits past the deadline', async () => {
    // After the sixth send the next wait (800 ms) would end at 1570 ms, past the 1000 ms deadline.
    expect(await alwaysDropped(1000)).toEqual({ sentAt: [0, 20, 70, 170, 370, 770], elapsed: 770 });
  });
});
