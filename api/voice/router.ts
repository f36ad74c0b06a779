// Real-time voice sessions over LiveKit (docs/voice.md): POST /api/v1/voice/sessions makes the
// session, its room and the caller's token; GET …/:sessionId reads the room's state; POST
// …/:sessionId/end ends both (the record stays readable, so it is an action, not a DELETE).
// An API key or an embedded widget's SDK token may call them.
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { readIdempotencyKey } from '../http/idempotency-key';
import { createVoiceSession, endVoiceSession, findVoiceSession, presentVoiceSession } from '../../core/voice/rooms';
import { ZCreateVoiceSessionRequest, ZVoiceSessionCreatedResponse, ZVoiceSessionParams, ZVoiceSessionResponse } from './schemas';

const TAGS = ['Voice'];
const SDK_NOTE =
  "An embedded widget may send `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): its sessions run in the public key's project and environment, and it sees only the voice sessions its end user started (another's is 404).";

export const voiceRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v1/voice/sessions',
    operationId: 'createVoiceSession',
    summary: 'Start a real-time voice session: a session with the agent, its LiveKit room and a token to join it',
    description:
      'Starts a session (channel `voice_realtime`) with the agent, makes its LiveKit room and answers the server `url` and a participant `token` for that room only; ' +
      'connect with a LiveKit client (the widget uses `livekit-client`) and talk: a voice agent joins the room and answers in the agent\'s voice (`voiceConfig`). ' +
      'The room closes when the session ends (POST …/end of this voice session, DELETE the session, the agent ending it), when the caller leaves, or when it stays empty for VOICE_EMPTY_ROOM_TIMEOUT_SECONDS. ' +
      'With `recording: true` the room is recorded (caller left, agent right, one WAV per voice agent attendance) and listed, once the room closes, by the session\'s recordings list like a call recording; an SDK token cannot ask for it (403). ' +
      'Send `Idempotency-Key` to make a retried request count once: the same key answers the same session with a fresh token (409 once that session has ended). ' +
      `${SDK_NOTE} ` +
      '404 for a project the credential cannot see or with no agents, or an unknown agent; 429 when VOICE_MAX_ROOMS rooms are open across the deployment (`retryAfterMs`, `Retry-After`) or the tenant is at its concurrent session limit; ' +
      '503 when real-time voice is not configured (LIVEKIT_URL) or the voice server or the runtime is unavailable. A refused request leaves nothing behind.',
    tags: TAGS,
    auth: 'session:execute',
    sdkToken: true,
    body: ZCreateVoiceSessionRequest,
    bodyExample: { projectId: 'jqmvff06cp7cvm69y75r2r1x', agentId: 'Support_Hub' },
    successStatus: 201,
    links: linksTo(['getVoiceSession', 'endVoiceSession'], { sessionId: '$response.body#/sessionId' }),
    errorStatuses: [403, 404, 409, 410, 429, 503],
    response: ZVoiceSessionCreatedResponse,
    async handler({ ctx, principal, body, req }) {
      const idempotencyKey = readIdempotencyKey(req);
      return { success: true, ...(await createVoiceSession(ctx, principal, body, idempotencyKey)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/voice/sessions/:sessionId',
    operationId: 'getVoiceSession',
    summary: "A voice session's room: open or closed, why, and who is in it",
    description: `404 for a session that is not a voice session the credential can see. ${SDK_NOTE}`,
    tags: TAGS,
    auth: 'session:read',
    sdkToken: true,
    params: ZVoiceSessionParams,
    errorStatuses: [404],
    response: ZVoiceSessionResponse,
    async handler({ ctx, principal, params }) {
      const room = await findVoiceSession(ctx, principal, params.sessionId);
      return { success: true, voiceSession: await presentVoiceSession(ctx, room) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/voice/sessions/:sessionId/end',
    operationId: 'endVoiceSession',
    summary: 'End a voice session: its session ends and its room closes (the voice agent and the caller are let go)',
    description:
      'Waits a few seconds for the room to close and answers its state (`status` may still be `active` when the runtime is slow; it closes all the same). ' +
      `Ending one that has ended answers it unchanged. 404 as for GET. ${SDK_NOTE}`,
    tags: TAGS,
    auth: 'session:execute',
    sdkToken: true,
    params: ZVoiceSessionParams,
    errorStatuses: [404, 503],
    response: ZVoiceSessionResponse,
    async handler({ ctx, principal, params }) {
      const room = await endVoiceSession(ctx, await findVoiceSession(ctx, principal, params.sessionId));
      return { success: true, voiceSession: await presentVoiceSession(ctx, room) };
    },
  }),
];
