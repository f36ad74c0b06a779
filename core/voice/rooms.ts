// Real-time voice sessions (docs/voice.md): making one (a place among the open rooms, the session,
// the LiveKit room, its record, its VoiceRoom workflow, the caller's token), reading and ending
// one, and closing rooms: what the VoiceRoom workflow's close activity does, and what a project's
// or tenant's deletion does for the rooms still open.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { type Models } from '../../db/models';
import { findOwned } from '../../db/owned';
import { acquireVoiceRoomPlace, discardVoiceRoomRecord, endVoiceRoomRecord, releaseVoiceRoomPlace, type VoiceRoomDoc } from '../../db/voice-room';
import { liveKitConfigured, type Config } from '../../lib/config';
import { DomainError } from '../../lib/errors';
import { type Logger } from '../../lib/logger';
import { sdkChannelUId, type Principal } from '../../lib/permissions';
import { endSignal, VOICE_ROOM_WORKFLOW_TYPE, voiceRoomWorkflowId, type VoiceConfig, type VoiceRoomInput, type VoiceRoomWorkflow } from '../../workflows/definitions';
import { ProjectIdKey, SessionIdKey, TenantIdKey } from '../../workflows/search-attributes';
import type { AgentIR } from '../../abl/ir';
import { sdkUserCaller } from '../contacts/linking';
import { type CoreContext } from '../context';
import { requireEnvironment } from '../platform-keys/environments';
import { deleteSession, endSessionWorkflow } from '../sessions/end';
import { startSession } from '../sessions/start';
import { resolveNewSessionTarget, type ResolvedAgent } from '../sessions/target';
import { refuseSdkDeploymentChoice, requireSdkMayStartAgent } from '../sdk/start-agents';
import { isWorkflowAlreadyStarted, isWorkflowNotFound, sessionWorkflowId, TEMPORAL_CALL_TIMEOUT_MS, temporalClient, temporalErrorToDomainError, withDeadline } from '../sessions/workflow-client';
import { signalVoiceRoomEnd } from './room-signal';
import { requireRecordingAllowed } from './recording-policy';
import { createLiveKitRoom, deleteLiveKitRoom, liveKitClientUrl, participantToken, requireLiveKit, roomService, voiceRoomName } from './livekit';
import { type DeploymentDoc } from '../../db/deployment';

/** The session's end reason when its room closed first (the caller left, the room stayed empty, no voice agent). */
export const ROOM_CLOSED_SESSION_REASON = 'voice_room_closed';
/** Room end reasons that come from the session itself: its room closes, the session is already ending. */
const SESSION_DRIVEN = new Set(['session_ended', 'deleted']);

export interface CreateVoiceSessionRequest {
  projectId: string;
  agentId?: string;
  deploymentId?: string;
  environment?: string;
  participantName?: string;
  recording?: boolean;
}

export interface VoiceSessionCreated {
  sessionId: string;
  room: string;
  url: string;
  token: string;
  expiresAt: string;
  identity: string;
  agentId: string | null;
  agentName: string;
  environment: string;
  voiceConfig: VoiceConfig;
  recording: boolean;
}

/** A UUID (v4 layout) derived from a string, so the same Idempotency-Key names the same session. */
function uuidFromHash(input: string): string {
  const h = createHash('sha256').update(input).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The agent's VOICE section, as the chat response's `voiceConfig` spells it; `{}` when it has none. */
export async function agentVoiceConfig(models: Models, scope: { tenantId: string; projectId: string }, agent: ResolvedAgent, deployment: DeploymentDoc | null): Promise<VoiceConfig> {
  const pinned = deployment?.agentVersionManifest[agent.agentName];
  const version = pinned
    ? await models.AgentVersion.findOne({ ...scope, agentId: agent.agentId, version: pinned }).select({ irJson: 1 }).lean()
    : await models.AgentVersion.findOne({ ...scope, agentId: agent.agentId }).sort({ seq: -1 }).select({ irJson: 1 }).lean();
  if (!version) return {};
  const voice = (JSON.parse(version.irJson) as Pick<AgentIR, 'voice'>).voice;
  if (!voice) return {};
  const config: VoiceConfig = {};
  if (voice.voice !== undefined) config.voice = voice.voice;
  if (voice.language !== undefined) config.language = voice.language;
  if (voice.barge_in !== undefined) config.bargeIn = voice.barge_in;
  if (voice.speech_timeout !== undefined) config.speechTimeout = voice.speech_timeout;
  if (voice.silence_timeout !== undefined) config.silenceTimeout = voice.silence_timeout;
  return config;
}

/** The room's answer to its caller: where to connect, and a fresh token for that room only. */
async function answerFor(ctx: CoreContext, room: VoiceRoomDoc, voiceConfig: VoiceConfig, name?: string): Promise<VoiceSessionCreated> {
  const { token, expiresAt } = await participantToken(ctx.config, { roomName: room.roomName, identity: room.identity, name, ttlSeconds: ctx.config.VOICE_TOKEN_TTL_SECONDS });
  return {
    sessionId: room.sessionId,
    room: room.roomName,
    url: liveKitClientUrl(ctx.config.LIVEKIT_URL!),
    token,
    expiresAt: expiresAt.toISOString(),
    identity: room.identity,
    agentId: room.agentId,
    agentName: room.agentName,
    environment: room.environment,
    voiceConfig,
    recording: room.recording,
  };
}

/** Runs each undo step, in order, logging (never throwing) what fails: the request's own error is the one to report. */
async function undo(logger: Logger, sessionId: string, steps: Array<[string, () => Promise<unknown>]>): Promise<void> {
  for (const [what, step] of steps) {
    try {
      await step();
    } catch (err) {
      logger.warn({ err, sessionId }, `could not undo a failed voice session create: ${what}`);
    }
  }
}

/**
 * Makes a voice session. Everything that can refuse is checked before anything is written (the
 * project and agent: 404; the environment: 403; LiveKit configured: 503); then, each undone in
 * reverse order if a later one fails, so a refused create leaves nothing behind:
 * 1. a place among the VOICE_MAX_ROOMS open rooms (429 beyond);
 * 2. the session (channel `voice_realtime`; 429 at the tenant's session cap);
 * 3. the LiveKit room (emptyTimeout and departureTimeout VOICE_EMPTY_ROOM_TIMEOUT_SECONDS);
 * 4. the VoiceRoom record;
 * 5. the VoiceRoom workflow, which has the voice agent attend the room.
 * With an Idempotency-Key, a retry answers the session the first request made (a fresh token).
 */
export async function createVoiceSession(ctx: CoreContext, principal: Principal, body: CreateVoiceSessionRequest, idempotencyKey: string | null): Promise<VoiceSessionCreated> {
  requireLiveKit(ctx.config);
  const project = await findOwned(ctx.models.Project, body.projectId, { tenantId: principal.tenantId, deletingAt: null });
  if (!project || (principal.projectId && principal.projectId !== project._id)) throw new DomainError('NOT_FOUND', 'Project not found or has no agents');
  const scope = { tenantId: principal.tenantId, projectId: project._id };
  // A widget's sessions run in its public key's environment, whatever the page asks for.
  const sdkEnvironment = principal.sdk ? principal.environments?.[0] : undefined;
  if (principal.sdk && body.environment && body.environment !== sdkEnvironment) {
    throw new DomainError('FORBIDDEN', `This SDK token is bound to ${principal.environments?.join(', ') ?? 'its environment'}; it cannot act on ${body.environment} resources`);
  }
  refuseSdkDeploymentChoice(principal, body.deploymentId);
  const channelUId = principal.sdk ? sdkChannelUId(principal.sdk) : null;
  const sessionId = idempotencyKey ? uuidFromHash(`voice:${scope.tenantId}:${scope.projectId}:${channelUId ?? ''}:${idempotencyKey}`) : randomUUID();

  const recording = requireRecordingAllowed(principal, body.recording);
  const earlier = idempotencyKey ? await findOwned(ctx.models.VoiceRoom, sessionId, { tenantId: scope.tenantId }) : null;
  if (earlier) return answerEarlier(ctx, earlier);

  const target = await resolveNewSessionTarget(ctx.models, scope, { agentId: body.agentId, deploymentId: body.deploymentId, environment: body.environment ?? sdkEnvironment });
  const environment = target.deployment?.environment ?? body.environment ?? sdkEnvironment ?? 'dev';
  requireEnvironment(principal, environment);
  await requireSdkMayStartAgent(ctx.models, principal, scope, { agentId: body.agentId, environment: body.environment ?? sdkEnvironment }, target.agent);
  const voiceConfig = await agentVoiceConfig(ctx.models, scope, target.agent, target.deployment);
  const identity = principal.sdk ? principal.sdk.endUserId : `caller-${randomBytes(8).toString('hex')}`;
  const roomName = voiceRoomName(sessionId);

  // 1. A place among the open rooms.
  if (!(await acquireVoiceRoomPlace(ctx.models, ctx.config.VOICE_MAX_ROOMS))) {
    throw new DomainError('RATE_LIMIT_EXCEEDED', { message: 'Concurrent voice room limit exceeded', retryAfterMs: 30_000 });
  }
  // 2. The session.
  try {
    await startSession(ctx, {
      ...scope,
      ...target.agent,
      channel: 'voice_realtime',
      environment,
      deploymentId: target.deployment?._id ?? null,
      sessionId,
      identity: channelUId ? { channelUId } : {},
      caller: principal.sdk?.user ? sdkUserCaller(principal.sdk.user) : null,
    });
  } catch (err) {
    await undo(ctx.logger, sessionId, [['the room place', () => releaseVoiceRoomPlace(ctx.models)]]);
    // A concurrent retry with the same Idempotency-Key made it first.
    if (idempotencyKey && err instanceof DomainError && err.code === 'CONFLICT') {
      const made = await findOwned(ctx.models.VoiceRoom, sessionId, { tenantId: scope.tenantId });
      if (made) return answerEarlier(ctx, made);
    }
    throw err;
  }
  const undoSession: [string, () => Promise<unknown>] = ['the session', () => deleteSession(ctx, scope, sessionId)];
  // 3. The room.
  try {
    await createLiveKitRoom(ctx.config, roomName, { sessionId, projectId: scope.projectId, agentName: target.agent.agentName });
  } catch (err) {
    await undo(ctx.logger, sessionId, [undoSession, ['the room place', () => releaseVoiceRoomPlace(ctx.models)]]);
    throw new DomainError('SERVICE_UNAVAILABLE', { message: 'The voice server did not make the room; retry later', cause: err });
  }
  const undoRoom: [string, () => Promise<unknown>] = ['the LiveKit room', () => deleteLiveKitRoom(ctx.config, roomName)];
  // 4. Its record, which holds the place from now on.
  const room: VoiceRoomDoc = {
    _id: sessionId,
    ...scope,
    sessionId,
    roomName,
    agentId: target.agent.agentId,
    agentName: target.agent.agentName,
    environment,
    identity,
    status: 'active',
    endReason: null,
    createdAt: new Date(),
    endedAt: null,
    recording,
  };
  try {
    await ctx.models.VoiceRoom.create(room);
  } catch (err) {
    await undo(ctx.logger, sessionId, [undoRoom, undoSession, ['the room place', () => releaseVoiceRoomPlace(ctx.models)]]);
    throw err;
  }
  // 5. Its workflow.
  try {
    await startVoiceRoomWorkflow(ctx, {
      ...scope,
      sessionId,
      roomName,
      voiceConfig: voiceConfig as Record<string, unknown>,
      recording,
      voiceTaskQueue: ctx.config.voiceTaskQueue,
      agentWaitSeconds: ctx.config.VOICE_EMPTY_ROOM_TIMEOUT_SECONDS,
    });
  } catch (err) {
    await undo(ctx.logger, sessionId, [undoRoom, undoSession, ['the room record and its place', () => discardVoiceRoomRecord(ctx.models, room)]]);
    throw err;
  }
  return answerFor(ctx, room, voiceConfig, body.participantName);
}

/** A retried create: the room it made, with a fresh token; 409 once that room has closed. */
async function answerEarlier(ctx: CoreContext, room: VoiceRoomDoc): Promise<VoiceSessionCreated> {
  if (room.status !== 'active') throw new DomainError('CONFLICT', 'This voice session has ended; start a new one');
  const scope = { tenantId: room.tenantId, projectId: room.projectId };
  const target = await resolveNewSessionTarget(ctx.models, scope, { agentId: room.agentId ?? room.agentName }).catch(() => null);
  const voiceConfig = target ? await agentVoiceConfig(ctx.models, scope, target.agent, target.deployment) : {};
  return answerFor(ctx, room, voiceConfig);
}

export async function startVoiceRoomWorkflow(ctx: CoreContext, input: VoiceRoomInput): Promise<void> {
  const client = await temporalClient(ctx);
  try {
    await withDeadline(client, TEMPORAL_CALL_TIMEOUT_MS, () =>
      client.workflow.start<VoiceRoomWorkflow>(VOICE_ROOM_WORKFLOW_TYPE, {
        workflowId: voiceRoomWorkflowId(input.sessionId),
        taskQueue: ctx.config.TEMPORAL_TASK_QUEUE,
        args: [input],
        typedSearchAttributes: new TypedSearchAttributes([
          { key: TenantIdKey, value: input.tenantId },
          { key: ProjectIdKey, value: input.projectId },
          { key: SessionIdKey, value: input.sessionId },
        ]),
        staticSummary: `voice room ${input.roomName}`,
      }),
    );
  } catch (err) {
    if (isWorkflowAlreadyStarted(err)) return;
    throw temporalErrorToDomainError(err, 'The voice room runtime');
  }
}

// ------------------------------------------------------------------ reading and ending

export interface VoiceSessionView {
  sessionId: string;
  room: string;
  status: VoiceRoomDoc['status'];
  endReason: string | null;
  identity: string;
  agentName: string;
  environment: string;
  createdAt: string;
  endedAt: string | null;
  /** Participants in the room now (the caller and the voice agent); null once it is closed. */
  participants: number | null;
  recording: boolean;
}

/**
 * The caller's voice session: another tenant's or project's (for a project-bound key), another
 * environment's (for an environment-bound key) or another SDK end user's is 404.
 */
export async function findVoiceSession(ctx: CoreContext, principal: Principal, sessionId: string): Promise<VoiceRoomDoc> {
  const room = await findOwned(ctx.models.VoiceRoom, sessionId, { tenantId: principal.tenantId });
  const hidden =
    !room ||
    (principal.projectId !== null && principal.projectId !== room.projectId) ||
    (principal.environments?.length ? !principal.environments.includes(room.environment) : false) ||
    (principal.sdk ? room.identity !== principal.sdk.endUserId : false);
  if (hidden) throw new DomainError('NOT_FOUND', 'Voice session not found');
  return room;
}

export async function presentVoiceSession(ctx: CoreContext, room: VoiceRoomDoc): Promise<VoiceSessionView> {
  let participants: number | null = null;
  if (room.status === 'active') {
    const [live] = await roomService(ctx.config)
      .listRooms([room.roomName])
      .catch(() => []);
    participants = live ? live.numParticipants : null;
  }
  return {
    sessionId: room.sessionId,
    room: room.roomName,
    status: room.status,
    endReason: room.endReason,
    identity: room.identity,
    agentName: room.agentName,
    environment: room.environment,
    createdAt: room.createdAt.toISOString(),
    endedAt: room.endedAt ? room.endedAt.toISOString() : null,
    participants,
    recording: room.recording,
  };
}

/** How long ending a voice session waits for the room to close before it answers with what it has. */
const END_WAIT_MS = 5_000;

/**
 * Ends a voice session: its session (the `end` signal; it then tells its room) and its room
 * (`endVoiceRoom`, in case the session had ended already), then waits up to END_WAIT_MS for the
 * room to close. Ending one that has ended changes nothing.
 */
export async function endVoiceSession(ctx: CoreContext, room: VoiceRoomDoc): Promise<VoiceRoomDoc> {
  if (room.status === 'ended') return room;
  const owned = { tenantId: room.tenantId, sessionId: room.sessionId };
  await endSessionWorkflow(ctx, owned, 'voice_session_ended');
  const client = await temporalClient(ctx);
  await signalVoiceRoomEnd(client, room.sessionId, 'session_ended');
  try {
    await withDeadline(client, END_WAIT_MS, () => client.workflow.getHandle(voiceRoomWorkflowId(room.sessionId)).result());
  } catch {
    // Still closing (or closed some other way): the record says where it is.
  }
  return (await findOwned(ctx.models.VoiceRoom, room.sessionId, { tenantId: room.tenantId })) ?? room;
}

// ------------------------------------------------------------------ closing rooms

export interface CloseVoiceRoomInput {
  tenantId: string;
  sessionId: string;
  roomName: string;
  reason: string;
}

/**
 * Closes a room: deletes it on LiveKit (one that is gone already is fine), marks its record ended
 * with the reason and gives its place back (once, however often this runs). A room that closed
 * before its session ended (the caller left, it stayed empty, no voice agent came) ends the
 * session too. Idempotent: the VoiceRoom workflow's close activity retries it.
 */
export async function closeVoiceRoom(deps: { config: Config; models: Models; temporalClient?: Client | null }, input: CloseVoiceRoomInput): Promise<{ ended: boolean }> {
  // Without LiveKit configured (any more) there is no room to delete, only the record to end.
  if (liveKitConfigured(deps.config)) await deleteLiveKitRoom(deps.config, input.roomName);
  const ended = await endVoiceRoomRecord(deps.models, input, input.reason);
  if (!SESSION_DRIVEN.has(input.reason) && deps.temporalClient) {
    try {
      await deps.temporalClient.workflow.getHandle(sessionWorkflowId(input.sessionId)).signal(endSignal, { reason: ROOM_CLOSED_SESSION_REASON });
    } catch (err) {
      if (!isWorkflowNotFound(err)) throw err;
    }
  }
  return { ended };
}

/**
 * Closes every open room of a project or tenant being deleted, before its workflows are
 * terminated and its records deleted (core/lifecycle/cascade.ts): each room's workflow is told to
 * end, and the room is closed here too, so its place is given back even though its workflow is
 * about to be terminated. Returns how many it closed.
 */
export async function closeScopeVoiceRooms(deps: { config: Config; models: Models; temporalClient: Client }, scope: { tenantId: string; projectId: string | null }): Promise<number> {
  const filter = { tenantId: scope.tenantId, ...(scope.projectId ? { projectId: scope.projectId } : {}), status: 'active' as const };
  let closed = 0;
  for (const room of await deps.models.VoiceRoom.find(filter).select({ _id: 1, tenantId: 1, sessionId: 1, roomName: 1 }).lean()) {
    await signalVoiceRoomEnd(deps.temporalClient, room.sessionId, 'deleted').catch(() => undefined);
    if ((await closeVoiceRoom({ config: deps.config, models: deps.models }, { tenantId: room.tenantId, sessionId: room.sessionId, roomName: room.roomName, reason: 'deleted' })).ended) closed++;
  }
  return closed;
}
