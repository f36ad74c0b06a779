// The voice room workflow's activity on the main task queue: closing the room (core/voice/rooms.ts).
// The attend activity it schedules is the voice agent's, on the voice task queue (./types.ts).
import { type ActivityDeps } from '..';
import { closeVoiceRoom, type CloseVoiceRoomInput } from '../../core/voice/rooms';

export function createVoiceRoomActivities(deps: ActivityDeps) {
  return {
    /** Deletes the LiveKit room (gone already is fine), ends its record with the reason and gives its place back. */
    async closeVoiceRoom(input: CloseVoiceRoomInput): Promise<{ ended: boolean }> {
      const result = await closeVoiceRoom({ config: deps.config, models: deps.models, temporalClient: deps.temporalClient ?? null }, input);
      if (result.ended) deps.logger.info({ sessionId: input.sessionId, room: input.roomName, reason: input.reason }, 'voice room closed');
      return result;
    },
  };
}
