// Combines the caller's AbortSignal with our own timeout, so a failure can be told apart as
// "the caller aborted" or "we gave up waiting" without trusting SDK error classes.

/** Per-request timeout when none is configured. @default 60000 */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** The SDKs' own timeouts sit this far behind ours, as a backstop only. */
export const SDK_TIMEOUT_SLACK_MS = 5_000;

export interface Deadline {
  /** Fires on the caller's abort or when the time is up. */
  readonly signal: AbortSignal;
  /** True when our timer (not the caller) fired. */
  timedOut(): boolean;
  /** Stops the timer (e.g. once a stream's headers arrived). */
  clear(): void;
}

export function startDeadline(timeoutMs: number, callerSignal?: AbortSignal): Deadline {
  const timer = new AbortController();
  let fired = false;
  const handle = setTimeout(() => {
    fired = true;
    timer.abort();
  }, timeoutMs);
  // Do not keep a process alive just to time out a request nobody waits for.
  handle.unref?.();
  const signal = callerSignal ? AbortSignal.any([callerSignal, timer.signal]) : timer.signal;
  return {
    signal,
    timedOut: () => fired && callerSignal?.aborted !== true,
    clear: () => clearTimeout(handle),
  };
}
