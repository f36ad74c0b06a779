// The bare form of the HTTP-async design, for bench/http-async.ts: an update is taken by one
// workflow task, which schedules an activity that POSTs the reply; the activity's completion is a
// second workflow task. Beside it, an update answered by one task (the bare form of a chat turn).
// Nothing of the platform runs in it.
import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import { floorMessageUpdate, floorTurnUpdate } from './definitions';
import type * as activities from './activities';

const { postFloorReply } = proxyActivities<typeof activities>({ startToCloseTimeout: '30 seconds' });

export async function twoTaskFloorWorkflow(): Promise<void> {
  let posted = 0;
  setHandler(floorMessageUpdate, ({ n, url }) => {
    void postFloorReply(url).then(() => posted++);
    return { n };
  });
  setHandler(floorTurnUpdate, ({ n }) => ({ n }));
  // Runs until the bench's stack is torn down.
  await condition(() => posted < 0);
}
