// The platform's side of LiveKit (docs/voice.md): rooms made and closed through the server API
// (`RoomServiceClient`), and the participant tokens a caller joins one room with (`AccessToken`).
// The same code talks to the dev stack's LiveKit server, LiveKit Cloud or a cluster of one's own.
import { AccessToken, RoomServiceClient } from 'livekit-server-sdk';
import { liveKitConfigured, type Config } from '../../lib/config';
import { DomainError } from '../../lib/errors';

type LiveKitConfig = Pick<Config, 'LIVEKIT_URL' | 'LIVEKIT_API_KEY' | 'LIVEKIT_API_SECRET'>;

/** How long a call to LiveKit's server API may take (s). */
const REQUEST_TIMEOUT_SECONDS = 10;

/** The room of a voice session: one per session, named after it. */
export const voiceRoomName = (sessionId: string): string => `voice-${sessionId}`;

/** The server API's base URL: LIVEKIT_URL with ws(s) as http(s). */
export function liveKitHttpUrl(url: string): string {
  return url.replace(/^ws(s?):\/\//, 'http$1://');
}

/** The client URL a browser or an rtc-node participant connects to: LIVEKIT_URL with http(s) as ws(s). */
export function liveKitClientUrl(url: string): string {
  return url.replace(/^http(s?):\/\//, 'ws$1://');
}

/** 503 when real-time voice is not configured (no LIVEKIT_URL, key and secret). */
export function requireLiveKit(config: LiveKitConfig): Required<LiveKitConfig> {
  if (!liveKitConfigured(config)) {
    throw new DomainError('SERVICE_UNAVAILABLE', 'Real-time voice is not configured on this deployment (LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET)');
  }
  return config as Required<LiveKitConfig>;
}

export function roomService(config: LiveKitConfig): RoomServiceClient {
  const lk = requireLiveKit(config);
  return new RoomServiceClient(liveKitHttpUrl(lk.LIVEKIT_URL), lk.LIVEKIT_API_KEY, lk.LIVEKIT_API_SECRET, { requestTimeout: REQUEST_TIMEOUT_SECONDS });
}

/** LiveKit's "no such room" (HTTP 404 from its server API). */
export function isRoomNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && ((err as { status?: number }).status === 404 || (err as { code?: string }).code === 'not_found');
}

/**
 * Makes a voice session's room: the caller and the voice agent, nobody else; it closes itself once
 * empty for the empty-room timeout. The metadata is read by the voice agent and visible to the
 * participants: ids only, never a secret.
 */
export async function createLiveKitRoom(config: LiveKitConfig & Pick<Config, 'VOICE_EMPTY_ROOM_TIMEOUT_SECONDS'>, roomName: string, metadata: Record<string, string>): Promise<void> {
  await roomService(config).createRoom({
    name: roomName,
    emptyTimeout: config.VOICE_EMPTY_ROOM_TIMEOUT_SECONDS,
    departureTimeout: config.VOICE_EMPTY_ROOM_TIMEOUT_SECONDS,
    maxParticipants: 2,
    metadata: JSON.stringify(metadata),
  });
}

/** Deletes a room; one that is gone already is fine. */
export async function deleteLiveKitRoom(config: LiveKitConfig, roomName: string): Promise<void> {
  try {
    await roomService(config).deleteRoom(roomName);
  } catch (err) {
    if (!isRoomNotFound(err)) throw err;
  }
}

export interface ParticipantToken {
  token: string;
  expiresAt: Date;
}

/**
 * A token that joins `roomName` and no other room, as `identity`: it may publish audio, subscribe
 * and send data (captions, typed fallback), nothing of the room's administration.
 */
export async function participantToken(config: LiveKitConfig, input: { roomName: string; identity: string; name?: string; ttlSeconds: number }): Promise<ParticipantToken> {
  const lk = requireLiveKit(config);
  const at = new AccessToken(lk.LIVEKIT_API_KEY, lk.LIVEKIT_API_SECRET, { identity: input.identity, ttl: input.ttlSeconds, ...(input.name ? { name: input.name } : {}) });
  at.addGrant({ roomJoin: true, room: input.roomName, canPublish: true, canSubscribe: true, canPublishData: true });
  const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + input.ttlSeconds * 1000);
  return { token: await at.toJwt(), expiresAt };
}
