// A workflow that does nothing but answer updates and count signals: the baseline for Temporal
// round-trip latency (an update answered; a signal seen by an update waiting for it).
import { allHandlersFinished, condition, setHandler } from '@temporalio/workflow';
import { nudgeProbeSignal, pingUpdate, probeStateQuery, stopProbeUpdate, waitProbeUpdate } from './definitions';

export async function probeWorkflow(): Promise<number> {
  let count = 0;
  let stopped = false;
  let nudges = 0;
  setHandler(nudgeProbeSignal, () => {
    nudges++;
  });
  setHandler(waitProbeUpdate, async ({ after }) => {
    await condition(() => nudges > after || stopped);
    return { nudges };
  });
  setHandler(pingUpdate, ({ n }) => ({ n, count: ++count }));
  setHandler(probeStateQuery, () => ({ count }));
  setHandler(stopProbeUpdate, () => {
    stopped = true;
  });
  await condition(() => stopped);
  await condition(allHandlersFinished);
  return count;
}
