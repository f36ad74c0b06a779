// A phone call held in a voice room (docs/voice.md, "Phone callers"): the call's LiveKit room, its
// record and its VoiceRoom workflow, made once per call when Twilio asks the `voice` webhook of a
// `realtime` channel connection, and the Media Stream URL the call's audio is sent to (the phone
// bridge in a voice agent process, core/voice/phone-bridge.ts). The session itself is the call's
// (channel `voice`, started by core/telephony/voice.ts); the voice agent greets and holds it.
// When the call's stream ends, `phoneRoomOpen` tells whether the call goes on (its stream is
// connected again) or is over.
import { type ChannelConnectionDoc } from '../../db/channel-connection';
import { acquireVoiceRoomPlace, discardVoiceRoomRecord, type VoiceRoomDoc } from '../../db/voice-room';
import { driverCollection } from '../../db/driver-collection';
import { liveKitConfigured, type Config } from '../../lib/config';
import { DomainError } from '../../lib/errors';
import { type CoreContext } from '../context';
import { resolveNewSessionTarget } from '../sessions/target';
import { createLiveKitRoom, deleteLiveKitRoom, roomService, voiceRoomName } from './livekit';
import { agentVoiceConfig, startVoiceRoomWorkflow } from './rooms';

/** The room participant of a phone caller: one identity per call, so a second stream of the call replaces the first. */
export const phoneIdentity = (callSid: string): string => `phone:${callSid}`;

/**
 * The phone bridge's address as Twilio reaches it: VOICE_BRIDGE_PUBLIC_URL, else PUBLIC_BASE_URL
 * with ws(s) and the path `/media-stream`. No trailing slash.
 */
export function phoneBridgeBaseUrl(config: Pick<Config, 'VOICE_BRIDGE_PUBLIC_URL' | 'PUBLIC_BASE_URL'>): string {
  const base = config.VOICE_BRIDGE_PUBLIC_URL ?? `${config.PUBLIC_BASE_URL.replace(/^http(s?):\/\//, 'ws$1://').replace(/\/+$/, '')}/media-stream`;
  return base.replace(/\/+$/, '');
}

/**
 * The <Stream url> of a call: the bridge's address, the connection and the call's session. Twilio
 * signs the WebSocket upgrade over this URL under the connection's auth token, so the session in
 * it is one Twilio was told, and the signature differs for every call.
 */
export const phoneStreamUrl = (config: Pick<Config, 'VOICE_BRIDGE_PUBLIC_URL' | 'PUBLIC_BASE_URL'>, connectionId: string, sessionId: string): string =>
  `${phoneBridgeBaseUrl(config)}/${encodeURIComponent(connectionId)}/${encodeURIComponent(sessionId)}`;

const isDuplicateKey = (err: unknown) => typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;

/**
 * The call's voice room, made if it is not there yet: a place among the VOICE_MAX_ROOMS open
 * rooms (429 beyond), the LiveKit room (at most the caller and the voice agent), its record
 * (identity `phone:<CallSid>`) and its VoiceRoom workflow, each undone if a later one fails.
 * Idempotent per call: Twilio asking again, even at once, finds the room the first request made
 * (the record is written first, unique by the session id; only the request that wrote it takes a
 * place and makes the room).
 */
export function openPhoneRoom(ctx: CoreContext, conn: ChannelConnectionDoc, call: { sessionId: string; callSid: string }): Promise<VoiceRoomDoc> {
  // Requests for the same call in this process share one attempt: each would otherwise take a place
  // of its own until the record tells the losers apart, and near the cap a loser could be refused.
  const pending = opening.get(call.sessionId);
  if (pending) return pending;
  const attempt = openPhoneRoomOnce(ctx, conn, call).finally(() => opening.delete(call.sessionId));
  opening.set(call.sessionId, attempt);
  return attempt;
}

/** The attempts to open a call's room under way in this process, by session id. */
const opening = new Map<string, Promise<VoiceRoomDoc>>();

async function openPhoneRoomOnce(ctx: CoreContext, conn: ChannelConnectionDoc, call: { sessionId: string; callSid: string }): Promise<VoiceRoomDoc> {
  const scope = { tenantId: conn.tenantId, projectId: conn.projectId };
  const existing = await ctx.models.VoiceRoom.findOne({ _id: call.sessionId, tenantId: conn.tenantId }).lean();
  if (existing) {
    if (existing.status !== 'active') throw new DomainError('CONFLICT', 'This call\'s voice room has closed');
    return existing;
  }
  const session = await ctx.models.Session.findOne({ _id: call.sessionId, tenantId: conn.tenantId }, { agentId: 1, agentName: 1, deploymentId: 1, environment: 1 }).lean();
  if (!session) throw new DomainError('NOT_FOUND', 'The call has no session');
  const { agent, deployment } = await resolveNewSessionTarget(ctx.models, scope, {
    agentId: session.agentId ?? session.agentName,
    ...(session.deploymentId ? { deploymentId: session.deploymentId } : { environment: session.environment }),
  });
  const voiceConfig = await agentVoiceConfig(ctx.models, scope, agent, deployment);
  const roomName = voiceRoomName(call.sessionId);

  const room: VoiceRoomDoc = {
    _id: call.sessionId,
    ...scope,
    sessionId: call.sessionId,
    roomName,
    agentId: agent.agentId,
    agentName: agent.agentName,
    environment: session.environment,
    identity: phoneIdentity(call.callSid),
    status: 'active',
    endReason: null,
    createdAt: new Date(),
    endedAt: null,
    recording: false,
  };
  // The record first, before the place: of requests for the same call at once (Twilio asking
  // again), one makes the room and the others answer with it, taking no place of their own (they
  // would otherwise count against VOICE_MAX_ROOMS, be refused, and end the call's session).
  try {
    await ctx.models.VoiceRoom.create(room);
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const made = await ctx.models.VoiceRoom.findOne({ _id: call.sessionId, tenantId: conn.tenantId }).lean();
    if (!made || made.status !== 'active') throw new DomainError('CONFLICT', "This call's voice room has closed");
    return made;
  }
  const forget = () => driverCollection(ctx.models.VoiceRoom).deleteOne({ _id: call.sessionId, tenantId: conn.tenantId, status: 'active' });
  if (!(await acquireVoiceRoomPlace(ctx.models, ctx.config.VOICE_MAX_ROOMS))) {
    await forget().catch((err: unknown) => ctx.logger.warn({ err, sessionId: call.sessionId }, 'could not undo a failed phone room'));
    throw new DomainError('RATE_LIMIT_EXCEEDED', { message: 'Concurrent voice room limit exceeded', retryAfterMs: 30_000 });
  }
  try {
    await createLiveKitRoom(ctx.config, roomName, { sessionId: call.sessionId, projectId: scope.projectId, agentName: agent.agentName, channelConnectionId: conn._id });
  } catch (err) {
    // The record and its place go together.
    await discardVoiceRoomRecord(ctx.models, room).catch((e: unknown) => ctx.logger.warn({ err: e, sessionId: call.sessionId }, 'could not undo a failed phone room'));
    throw new DomainError('SERVICE_UNAVAILABLE', { message: 'The voice server did not make the room; retry later', cause: err });
  }
  try {
    await startVoiceRoomWorkflow(ctx, {
      ...scope,
      sessionId: call.sessionId,
      roomName,
      voiceConfig: voiceConfig as Record<string, unknown>,
      recording: false,
      voiceTaskQueue: ctx.config.voiceTaskQueue,
      agentWaitSeconds: ctx.config.VOICE_EMPTY_ROOM_TIMEOUT_SECONDS,
    });
  } catch (err) {
    await deleteLiveKitRoom(ctx.config, roomName).catch(() => undefined);
    await discardVoiceRoomRecord(ctx.models, room).catch(() => undefined);
    throw err;
  }
  return room;
}

/**
 * Whether a call's room is still open for its stream to come back to: the call's session is
 * running, its record is active and the call's own, and LiveKit still has the room. LiveKit's
 * room is deleted before the record is ended (closeVoiceRoom), so a stream the bridge ended because
 * the room closed finds it gone even while the record says `active`. A LiveKit that cannot be asked
 * is taken to have the room: the stream's next attempt finds out, and reconnects are bounded.
 */
export async function phoneRoomOpen(ctx: CoreContext, conn: ChannelConnectionDoc, call: { sessionId: string; callSid: string }): Promise<boolean> {
  const [session, room] = await Promise.all([
    ctx.models.Session.findOne({ _id: call.sessionId, tenantId: conn.tenantId }, { status: 1 }).lean(),
    ctx.models.VoiceRoom.findOne({ _id: call.sessionId, tenantId: conn.tenantId }, { status: 1, identity: 1, roomName: 1 }).lean(),
  ]);
  if (!session || session.status === 'ended' || !room || room.status !== 'active' || room.identity !== phoneIdentity(call.callSid)) return false;
  // Without LiveKit configured (any more) there is nothing to ask; the caller cannot get back in either.
  if (!liveKitConfigured(ctx.config)) return true;
  try {
    return (await roomService(ctx.config).listRooms([room.roomName])).some((r) => r.name === room.roomName);
  } catch (err) {
    ctx.logger.warn({ err, sessionId: call.sessionId }, 'could not ask LiveKit whether a call\'s room is open');
    return true;
  }
}
