// A cancellation request sent to a long-lived workflow from the Temporal Web UI ("Request
// Cancellation") or `temporal workflow cancel` is taken as a request to finish the workflow's own
// way (a session ends, a human task is cancelled) instead of cancelling its timers and activities
// under it, which left the workflow failing every task or closed with nothing recorded. The body
// runs in a scope the request does not cancel, and sees the request in `cancellation.requested`.
import * as wf from '@temporalio/workflow';

export interface CancellationRequest {
  readonly requested: boolean;
}

export function finishingOnCancellation<T>(body: (cancellation: CancellationRequest) => Promise<T>): Promise<T> {
  const cancellation = { requested: false };
  wf.CancellationScope.current().cancelRequested.catch(() => {
    cancellation.requested = true;
  });
  return wf.CancellationScope.nonCancellable(() => body(cancellation));
}

/** Runs `then` once the request comes (a condition records nothing until then). */
export function onCancellationRequest(cancellation: CancellationRequest, then: () => void): void {
  void wf.condition(() => cancellation.requested).then(then);
}
