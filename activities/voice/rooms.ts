// The voice room workflow's activities on the main task queue: closing the room (core/voice/rooms.ts)
// and, when it was recorded, finishing its recording (core/voice/recordings.ts). The attend
// activity it schedules is the voice agent's, on the voice task queue (./types.ts).
import { ApplicationFailure } from '@temporalio/activity';
import { type ActivityDeps } from '..';
import { closeVoiceRoom, type CloseVoiceRoomInput } from '../../core/voice/rooms';
import { finishVoiceRoomRecording } from '../../core/voice/recordings';

export function createVoiceRoomActivities(deps: ActivityDeps) {
  return {
    /** Deletes the LiveKit room (gone already is fine), ends its record with the reason and gives its place back. */
    async closeVoiceRoom(input: CloseVoiceRoomInput): Promise<{ ended: boolean }> {
      const result = await closeVoiceRoom({ config: deps.config, models: deps.models, temporalClient: deps.temporalClient ?? null }, input);
      if (result.ended) deps.logger.info({ sessionId: input.sessionId, room: input.roomName, reason: input.reason }, 'voice room closed');
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
