// Request and response schemas of the real-time voice session routes (docs/voice.md).
import { z } from 'zod';
import '../openapi/registry';
import { ZSessionId } from '../sessions/schemas';
import { NOT_BLANK_PATTERN } from '../http/schemas';

export const ZCreateVoiceSessionRequest = z
  .object({
    projectId: z.string().min(1).max(64).describe('Project holding the agents'),
    agentId: z.string().min(1).max(200).optional().describe("Agent to talk to: id, name or `<domain>/<name>` path; default the project's (or the deployment's) entry agent. From an SDK token: the entry agent or one its public key lists in `allowedAgents` (403 otherwise)"),
    deploymentId: z.string().min(1).max(64).optional().describe('Run the versions this deployment pins; not from an SDK token (403)'),
    environment: z
      .enum(['dev', 'staging', 'production'])
      .optional()
      .describe("Run the environment's active deployment (default `dev`; an SDK token's is its public key's)"),
    participantName: z
      .string()
      .min(1)
      .max(128)
      .regex(NOT_BLANK_PATTERN, 'must not be blank')
      .optional()
      .describe("The caller's display name in the room"),
    recording: z
      .boolean()
      .optional()
      .describe(
        'Record the room (default false): both sides of the conversation, stored as a two-channel WAV per voice agent attendance and listed with the session\'s call recordings. An API key or user token only: an SDK token asking for it is 403',
      ),
  })
  .strict();
export type TCreateVoiceSessionRequest = z.infer<typeof ZCreateVoiceSessionRequest>;

const ZVoiceConfig = z
  .object({
    voice: z.string().optional().describe('Text-to-speech voice'),
    language: z.string().optional().describe('BCP 47 language of speech in and out'),
    bargeIn: z.boolean().optional().describe('Whether the caller may interrupt what the agent says'),
    speechTimeout: z.union([z.number(), z.literal('auto')]).optional().describe('Seconds of silence that end an utterance, or auto'),
    silenceTimeout: z.number().optional().describe('Seconds to wait for the caller to start speaking'),
  })
  .describe("The agent's VOICE settings (ABL); `{}` when it has none");

export const ZVoiceSessionCreatedResponse = z.object({
  success: z.literal(true),
  sessionId: z.string().describe('The session (channel `voice_realtime`): its transcript and traces are read like any session'),
  room: z.string().describe('The LiveKit room'),
  url: z.string().describe('The LiveKit server to connect to (`ws://` or `wss://`)'),
  token: z.string().describe('Participant token: joins this room only, as `identity`, publishing audio and data'),
  expiresAt: z.string().describe('When the token stops admitting (join before then; VOICE_TOKEN_TTL_SECONDS)'),
  identity: z.string().describe("The caller's participant identity: the SDK end user, or a generated `caller-…`"),
  agentId: z.string().nullable(),
  agentName: z.string(),
  environment: z.string(),
  voiceConfig: ZVoiceConfig,
  recording: z.boolean().describe("Whether the room is recorded (the session's recordings list has it once the room closes)"),
});

export const ZVoiceSessionParams = z.object({ sessionId: ZSessionId });

export const ZVoiceSessionResponse = z.object({
  success: z.literal(true),
  voiceSession: z
    .object({
      sessionId: z.string(),
      room: z.string(),
      status: z.enum(['active', 'ended']).describe('`ended` once the room is closed'),
      endReason: z
        .string()
        .nullable()
        .describe('Why the room closed: `session_ended`, `deleted`, `caller_left`, `empty_timeout`, `no_voice_agent`, `voice_agent_failed`, `abandoned`, …'),
      identity: z.string(),
      agentName: z.string(),
      environment: z.string(),
      createdAt: z.string(),
      endedAt: z.string().nullable(),
      participants: z.number().nullable().describe('Participants in the room now (the caller and the voice agent); null once it is closed'),
      recording: z.boolean().describe('Whether the room is recorded'),
    })
    .openapi('VoiceSession'),
});
