// Telling a voice room's workflow to end (docs/voice.md): sent by whatever ends its session from
// outside the session's own workflow (a session's deletion, the voice session route, a project's
// deletion). A room whose workflow has closed, or never ran, is fine.
import { type Client } from '@temporalio/client';
import { endVoiceRoomSignal, voiceRoomWorkflowId } from '../../workflows/definitions';
import { isWorkflowNotFound, TEMPORAL_CALL_TIMEOUT_MS, temporalErrorToDomainError, withDeadline } from '../sessions/workflow-client';

export async function signalVoiceRoomEnd(client: Client, sessionId: string, reason: string): Promise<void> {
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () => client.workflow.getHandle(voiceRoomWorkflowId(sessionId)).signal(endVoiceRoomSignal, { reason }));
  } catch (err) {
    if (!isWorkflowNotFound(err)) throw temporalErrorToDomainError(err, 'The voice room runtime');
  }
}
