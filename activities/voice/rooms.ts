// The voice room workflow's activities on the main task queue: closing the room (core/voice/rooms.ts)
// with the room's `voice.call_ended` row, and, when it was recorded, finishing its recording
// (core/voice/recordings.ts). The attend activity it schedules is the voice agent's, on the voice
// task queue (./types.ts).
import { ApplicationFailure } from '@temporalio/activity';
import { type ActivityDeps } from '..';
import { closeVoiceRoom, type CloseVoiceRoomInput } from '../../core/voice/rooms';
import { finishVoiceRoomRecording } from '../../core/voice/recordings';
import { recordCallEnded } from '../../core/telephony/voice-metrics';

/**
 * The call status a room's end reason stands for in its `voice.call_ended` row, whose outcome is
 * worked out from the room's rows first (the agent ended it, silence) and from this after.
 */
const CALL_STATUS_OF_REASON: Record<string, string> = {
  caller_left: 'completed',
  session_ended: 'completed',
  empty_timeout: 'no-answer',
  no_voice_agent: 'failed',
  voice_agent_failed: 'failed',
};

export function createVoiceRoomActivities(deps: ActivityDeps) {
  return {
    /** Deletes the LiveKit room (gone already is fine), ends its record with the reason and gives its place back. */
    async closeVoiceRoom(input: CloseVoiceRoomInput): Promise<{ ended: boolean }> {
      const result = await closeVoiceRoom({ config: deps.config, models: deps.models, temporalClient: deps.temporalClient ?? null }, input);
      if (result.ended) deps.logger.info({ sessionId: input.sessionId, room: input.roomName, reason: input.reason }, 'voice room closed');
      // The room's totals and outcome, once it is ended (a retry writes the same row again: its id is fixed).
      const room = await deps.models.VoiceRoom.findOne({ _id: input.sessionId, tenantId: input.tenantId, status: 'ended' }).lean();
      if (room) {
        const ref = { tenantId: room.tenantId, projectId: room.projectId, connectionId: null, callSid: room.roomName, sessionId: room.sessionId };
        const durationSec = Math.round(((room.endedAt ?? new Date()).getTime() - room.createdAt.getTime()) / 1000);
        await recordCallEnded(deps, ref, CALL_STATUS_OF_REASON[room.endReason ?? ''] ?? 'canceled', durationSec);
      }
      return result;
    },

    /**
     * Makes a closed room's recording available once every file is finished: a file whose voice
     * agent is still closing it fails this attempt (retried shortly); one whose voice agent died is
     * finished from what it stored.
     */
    async finishVoiceRoomRecording(input: { tenantId: string; sessionId: string; roomName: string }): Promise<{ state: string; files: number }> {
      const outcome = await finishVoiceRoomRecording(deps.models, input);
      if (outcome.state === 'writing') throw ApplicationFailure.retryable(`${outcome.files} recording file(s) of the room are still being written`, 'VOICE_RECORDING_WRITING');
      if (outcome.state === 'finished') deps.logger.info({ sessionId: input.sessionId, room: input.roomName, availability: outcome.availability, files: outcome.files }, 'voice room recording finished');
      return { state: outcome.state, files: outcome.state === 'finished' ? outcome.files : 0 };
    },
  };
}
