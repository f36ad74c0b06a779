// How far the voice agent attending a room has got, as its activity heartbeats it (AttendProgress,
// activities/voice/attend.ts): tests that kill or stop a voice agent mid-call wait until the turns
// they want carried over are in the heartbeat, where a replacement reads them.
import { type WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { eventually } from '../eventually';
import { type TestStack } from '../stack';

/** Waits until the room workflow's attend activity has heartbeated at least `turns` answered turns. */
export function attendedTurns(stack: TestStack, room: WorkflowHandle, turns: number): Promise<number> {
  return eventually(
    async () => {
      const payloads = (await room.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads ?? [];
      const decoded = stack.ctx.payloadCodec ? await stack.ctx.payloadCodec.decode(payloads) : payloads;
      return decoded.length ? (defaultPayloadConverter.fromPayload(decoded[0]!) as { turns: number }).turns : 0;
    },
    (n) => n >= turns,
    30_000,
    200,
  );
}
