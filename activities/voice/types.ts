// The contract between the voice room workflow and the voice agent process: the one long-running
// activity the voice agent serves on its own task queue. It joins the room, holds the conversation
// (one turn of the session's AgentSession workflow per utterance) and heartbeats; when its process
// dies the activity is retried on another voice agent, which rejoins the same room and session.

export interface AttendVoiceRoomInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  roomName: string;
  /** The agent's voiceConfig as the session's agent states it (voice, language, timeouts, greeting). */
  voiceConfig: Record<string, unknown>;
  /** Whether the room's audio is recorded. */
  recording: boolean;
}

export interface AttendVoiceRoomResult {
  /** Why the agent left: the caller left, the room stayed empty, the session ended, or it was cancelled. */
  reason: 'caller_left' | 'empty_timeout' | 'session_ended' | 'cancelled';
  turns: number;
}

export interface VoiceAgentActivities {
  attendVoiceRoom(input: AttendVoiceRoomInput): Promise<AttendVoiceRoomResult>;
}
