// VoiceRoom: the life of one real-time voice room. A voice agent process (on the voice task
// queue) attends it in one long heartbeating activity, retried on another voice agent when its
// process dies; when that activity returns, or the room is told to end (`endVoiceRoom`), the
// activity is cancelled if it still runs and the room is closed on LiveKit, its record ended and
// its place among the open rooms given back; a recorded room's recording is then finished and made
// available (docs/voice.md).
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { VoiceAgentActivities } from '../activities/voice/types';
import { endVoiceRoomSignal, type VoiceRoomInput, type VoiceRoomResult, type VoiceRoomWorkflow } from './definitions';
import { finishingOnCancellation, onCancellationRequest, type CancellationRequest } from './cancellation';
import { VOICE_ROOM_CANCEL_REQUEST_PATCH } from './patches';

const { closeVoiceRoom } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
});
// Waits, by retrying, for voice agents to close their recording files (a dead one's is finished
// from its chunks after ORPHANED_AFTER_MS): a few minutes in all.
const { finishVoiceRoomRecording } = wf.proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', backoffCoefficient: 1.5, maximumInterval: '15 seconds', maximumAttempts: 30 },
});

/** Why a failed attend ended the room: no voice agent took it in time, or it kept failing. */
function failureReason(err: unknown): string {
  const cause = err instanceof wf.ActivityFailure ? err.cause : err;
  if (cause instanceof wf.TimeoutFailure && cause.timeoutType === 'SCHEDULE_TO_START') return 'no_voice_agent';
  return 'voice_agent_failed';
}

/** The reason a room closed on a cancellation request to its workflow (the Temporal Web UI, the CLI). */
export const ROOM_CANCELLED_REASON = 'workflow_canceled';

export const voiceRoom: VoiceRoomWorkflow = async (input: VoiceRoomInput): Promise<VoiceRoomResult> => {
  if (!wf.patched(VOICE_ROOM_CANCEL_REQUEST_PATCH)) return runVoiceRoom(input, null);
  return finishingOnCancellation((cancellation) => runVoiceRoom(input, cancellation));
};

async function runVoiceRoom(input: VoiceRoomInput, cancellation: CancellationRequest | null): Promise<VoiceRoomResult> {
  // What the end signal asked, and how the room's attendance ended, whichever comes first.
  const state: { endRequested: string | null; outcome: VoiceRoomResult | null } = { endRequested: null, outcome: null };
  wf.setHandler(endVoiceRoomSignal, ({ reason }) => {
    state.endRequested ??= reason;
  });
  // A cancellation request from Temporal closes the room as the end signal does.
  if (cancellation) {
    onCancellationRequest(cancellation, () => {
      state.endRequested ??= ROOM_CANCELLED_REASON;
    });
  }
  const { attendVoiceRoom } = wf.proxyActivities<VoiceAgentActivities>({
    taskQueue: input.voiceTaskQueue,
    // A call lasts at most this long.
    startToCloseTimeout: '4 hours',
    scheduleToStartTimeout: `${input.agentWaitSeconds} seconds`,
    // A voice agent that died is noticed within this, and the attempt goes to another one.
    heartbeatTimeout: '15 seconds',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 30 },
  });

  const attending = new wf.CancellationScope();
  void attending
    .run(() =>
      attendVoiceRoom({
        tenantId: input.tenantId,
        projectId: input.projectId,
        sessionId: input.sessionId,
        roomName: input.roomName,
        voiceConfig: input.voiceConfig,
        recording: input.recording,
      }),
    )
    .then(
      (result) => {
        state.outcome ??= { reason: result.reason, turns: result.turns };
      },
      (err: unknown) => {
        state.outcome ??= { reason: wf.isCancellation(err) ? (state.endRequested ?? 'cancelled') : failureReason(err), turns: null };
      },
    );
  await wf.condition(() => state.outcome !== null || state.endRequested !== null);
  if (state.outcome === null) {
    // Told to end while the voice agent is in the room (or none has taken it yet): it is asked to leave.
    state.outcome = { reason: state.endRequested!, turns: null };
    attending.cancel();
  }
  const result = state.outcome;
  await closeVoiceRoom({ tenantId: input.tenantId, sessionId: input.sessionId, roomName: input.roomName, reason: result.reason });
  if (input.recording) {
    try {
      await finishVoiceRoomRecording({ tenantId: input.tenantId, sessionId: input.sessionId, roomName: input.roomName });
    } catch (err) {
      // The room is closed all the same; the recording stays `media_in_progress` (docs/voice.md).
      wf.log.error('the voice room recording could not be finished', { sessionId: input.sessionId, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return result;
}

/** Compile-time check: clients start this workflow by the signature in definitions.ts. */
type _SignatureIsTheContract = Assert<Same<typeof voiceRoom, VoiceRoomWorkflow>>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Assert<T extends true> = T;
