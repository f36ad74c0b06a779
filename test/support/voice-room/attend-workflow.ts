// A test workflow that runs `attendVoiceRoom` on the voice agents' task queue as the room workflow
// does (a short heartbeat timeout and retries), so a test can kill a voice agent and watch another
// take the room over.
import { ActivityCancellationType, proxyActivities } from '@temporalio/workflow';
import type { AttendVoiceRoomInput, AttendVoiceRoomResult, VoiceAgentActivities } from '../../../activities/voice/types';

export async function attendRoomForTest(input: AttendVoiceRoomInput, taskQueue: string): Promise<AttendVoiceRoomResult> {
  const { attendVoiceRoom } = proxyActivities<VoiceAgentActivities>({
    taskQueue,
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '6 seconds',
    // Cancelled with its room, the activity leaves the room before the workflow ends.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '200 milliseconds', maximumAttempts: 5 },
  });
  return attendVoiceRoom(input);
}
