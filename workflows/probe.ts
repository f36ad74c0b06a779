// A workflow that does nothing but answer updates: the baseline for Temporal round-trip latency.
import { condition, setHandler } from '@temporalio/workflow';
import { pingUpdate, probeStateQuery, stopProbeUpdate } from './definitions';

export async function probeWorkflow(): Promise<number> {
  let count = 0;
  let stopped = false;
  setHandler(pingUpdate, ({ n }) => ({ n, count: ++count }));
  setHandler(probeStateQuery, () => ({ count }));
  setHandler(stopProbeUpdate, () => {
    stopped = true;
  });
  await condition(() => stopped);
  return count;
}
