// A task an API process runs every so often (reconciliations, sweeps): first after `firstDelayMs`,
// then `everyMs` after the previous run finished, never two at once; a failed run is logged and
// the next one comes as planned. `everyMs <= 0` turns it off.
export function runPeriodically(
  everyMs: number,
  firstDelayMs: number,
  task: () => Promise<unknown>,
  onError: (err: unknown) => void,
): () => void {
  if (everyMs <= 0) return () => undefined;
  let stopped = false;
  let timer: NodeJS.Timeout;
  const schedule = (ms: number) => {
    timer = setTimeout(() => void run(), ms);
    timer.unref();
  };
  const run = async () => {
    try {
      await task();
    } catch (err) {
      onError(err);
    }
    if (!stopped) schedule(everyMs);
  };
  schedule(firstDelayMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
