// Voice channel connections of a project: create, list, read, change and delete them, and count
// those routed to a deployment. The auth token is sealed before anything is stored and leaves
// this module in no answer, log line or error message. Every read carries the tenant and the
// project; a connection outside them, or outside a bound key's environments, is 404
// CHANNEL_NOT_FOUND. A refusal is decided before anything is written.
import {
  type AmdMode,
  type ChannelConnectionDoc,
  type ChannelConnectionStatus,
  newChannelConnectionId,
  sealConnectionToken,
  type VoiceMode,
} from '../../db/channel-connection';
import { liveKitConfigured } from '../../lib/config';
import { type DeploymentDoc } from '../../db/deployment';
import { type ProjectDoc } from '../../db/project';
import { DomainError } from '../../lib/errors';
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { isE164 } from '../../lib/phone';
import { type CoreContext } from '../context';
import { requireEnvironment } from '../platform-keys/environments';
import { requireMasterKeys } from '../tool-secrets/secrets';
import { requireChannelConnection } from './connections';
import { auditEvent, emitOperationEvents } from '../analytics/operations';

/** The environment of a connection that names none and pins no deployment. */
export const DEFAULT_CONNECTION_ENVIRONMENT = 'dev';

export interface ChannelConnectionInput {
  name: string;
  accountSid: string;
  /** In clear, only on its way to being sealed. */
  authToken: string;
  callerNumber: string;
  /** Omitted: the pinned deployment's environment, else `dev`. */
  environment?: string;
  /** An agent id, name or `<domain>/<name>`; stored as the agent's id. */
  agentId?: string | null;
  endpointSlug?: string | null;
  amdMode: AmdMode;
  recordingEnabled: boolean;
  voiceMode?: VoiceMode;
  transferNumber?: string | null;
  status: ChannelConnectionStatus;
}

export type ChannelConnectionChanges = Partial<ChannelConnectionInput>;

const scopeOf = (project: ProjectDoc) => ({ tenantId: project.tenantId, projectId: project._id });

/** 400 INVALID_PHONE_NUMBER naming the field, never echoing the value. */
function requirePhoneNumbers(input: { callerNumber?: string; transferNumber?: string | null }): void {
  if (input.callerNumber !== undefined && !isE164(input.callerNumber)) {
    throw new DomainError('INVALID_PHONE_NUMBER', 'body.callerNumber: must be an E.164 number: + then 2 to 15 digits, the first not 0 (e.g. +15551234567)');
  }
  if (input.transferNumber !== undefined && input.transferNumber !== null && !isE164(input.transferNumber)) {
    throw new DomainError('INVALID_PHONE_NUMBER', 'body.transferNumber: must be an E.164 number: + then 2 to 15 digits, the first not 0 (e.g. +15551234567), or null');
  }
}

/** 422 when `realtime` is asked for on a deployment without real-time voice: its calls could not be bridged. */
function requireVoiceMode(ctx: CoreContext, voiceMode: VoiceMode | undefined): void {
  if (voiceMode === 'realtime' && !liveKitConfigured(ctx.config)) {
    throw new DomainError(
      'UNPROCESSABLE_ENTITY',
      'body.voiceMode: realtime needs real-time voice configured on this deployment (LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET); use gather',
    );
  }
}

/** The connection if it is in this project (of this tenant) and the key's environments, else 404 CHANNEL_NOT_FOUND. */
export async function getChannelConnection(ctx: CoreContext, principal: Principal, project: ProjectDoc, id: string): Promise<ChannelConnectionDoc> {
  const doc = await requireChannelConnection(ctx, scopeOf(project), id);
  // One of an environment the key is not bound to is not visible to it, like another project's.
  if (!canActInEnvironment(principal, doc.environment)) throw new DomainError('CHANNEL_NOT_FOUND', 'Channel connection not found');
  return doc;
}

/** A page of the project's connections, newest first; a bound key's list holds its environments' only. */
export async function listChannelConnections(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  page: { limit: number; offset: number },
): Promise<{ total: number; docs: ChannelConnectionDoc[] }> {
  const filter = {
    ...scopeOf(project),
    ...(principal.environments?.length ? { environment: { $in: [...principal.environments] } } : {}),
  };
  const [docs, total] = await Promise.all([
    ctx.models.ChannelConnection.find(filter, { authToken: 0 }).sort({ createdAt: -1, _id: -1 }).skip(page.offset).limit(page.limit).lean(),
    ctx.models.ChannelConnection.countDocuments(filter),
  ]);
  return { total, docs };
}

/** The deployment an `endpointSlug` names, in this project and visible to the key, else 422. */
async function requirePinnedDeployment(ctx: CoreContext, principal: Principal, project: ProjectDoc, endpointSlug: string): Promise<DeploymentDoc> {
  const deployment = await ctx.models.Deployment.findOne({ ...scopeOf(project), endpointSlug }).lean();
  // A deployment of an environment the key is not bound to is as good as absent for it.
  if (!deployment || !canActInEnvironment(principal, deployment.environment)) {
    throw new DomainError('UNPROCESSABLE_ENTITY', 'body.endpointSlug: no deployment of this project has this endpointSlug');
  }
  return deployment;
}

/**
 * The agent's id: without a deployment, an agent of the project with at least one version (so a
 * call can run it); with one, an agent the deployment pins. 422 otherwise.
 */
async function resolveEntryAgent(ctx: CoreContext, project: ProjectDoc, agentRef: string, deployment: DeploymentDoc | null): Promise<string> {
  const scope = scopeOf(project);
  const candidates = await ctx.models.Agent.find({ ...scope, $or: [{ _id: agentRef }, { name: agentRef }, { name: agentRef.split('/').pop() }] })
    .select({ _id: 1, name: 1, domain: 1 })
    .lean();
  const agent = candidates.find((a) => a._id === agentRef || a.name === agentRef || `${a.domain}/${a.name}` === agentRef);
  if (!agent) throw new DomainError('UNPROCESSABLE_ENTITY', 'body.agentId: no agent of this project has this id or name');
  if (deployment) {
    if (!(agent.name in deployment.agentVersionManifest)) {
      throw new DomainError('UNPROCESSABLE_ENTITY', `body.agentId: agent "${agent.name}" is not part of the deployment with this endpointSlug`);
    }
    return agent._id;
  }
  const versioned = await ctx.models.AgentVersion.exists({ ...scope, agentId: agent._id });
  if (!versioned) throw new DomainError('UNPROCESSABLE_ENTITY', `body.agentId: agent "${agent.name}" has no version yet; save one before routing calls to it`);
  return agent._id;
}

/**
 * What answers the connection's calls, checked as a whole: the pinned deployment (active when
 * newly pinned, of the connection's environment) and the agent (of the project with a version,
 * or of the deployment). Returns the values to store.
 */
async function resolveTarget(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  target: { environment: string | undefined; agentRef: string | null; endpointSlug: string | null; slugChanged: boolean; agentChanged: boolean },
): Promise<{ environment: string; agentId: string | null; endpointSlug: string | null }> {
  const deployment = target.endpointSlug ? await requirePinnedDeployment(ctx, principal, project, target.endpointSlug) : null;
  if (deployment && target.slugChanged && deployment.status !== 'active') {
    throw new DomainError('UNPROCESSABLE_ENTITY', 'body.endpointSlug: the deployment with this endpointSlug is retired; pin an active one');
  }
  const environment = target.environment ?? deployment?.environment ?? DEFAULT_CONNECTION_ENVIRONMENT;
  if (deployment && deployment.environment !== environment) {
    throw new DomainError('UNPROCESSABLE_ENTITY', `body.environment: the deployment with this endpointSlug is in ${deployment.environment}, not ${environment}`);
  }
  requireEnvironment(principal, environment);
  const agentId = target.agentRef && (target.agentChanged || target.slugChanged) ? await resolveEntryAgent(ctx, project, target.agentRef, deployment) : target.agentRef;
  return { environment, agentId, endpointSlug: target.endpointSlug };
}

/** 429 CHANNEL_CONNECTION_LIMIT_REACHED when the project holds CHANNEL_CONNECTIONS_MAX_PER_PROJECT. */
async function requireRoom(ctx: CoreContext, project: ProjectDoc): Promise<void> {
  const limit = ctx.config.CHANNEL_CONNECTIONS_MAX_PER_PROJECT;
  const held = await ctx.models.ChannelConnection.countDocuments(scopeOf(project));
  if (held >= limit) {
    throw new DomainError(
      'CHANNEL_CONNECTION_LIMIT_REACHED',
      `The project has ${limit} channel connections, its limit (CHANNEL_CONNECTIONS_MAX_PER_PROJECT); delete one first`,
    );
  }
}

export async function createChannelConnection(ctx: CoreContext, principal: Principal, project: ProjectDoc, input: ChannelConnectionInput): Promise<ChannelConnectionDoc> {
  requirePhoneNumbers(input);
  requireVoiceMode(ctx, input.voiceMode);
  if (input.environment !== undefined) requireEnvironment(principal, input.environment);
  const ring = requireMasterKeys(ctx);
  const target = await resolveTarget(ctx, principal, project, {
    environment: input.environment,
    agentRef: input.agentId ?? null,
    endpointSlug: input.endpointSlug ?? null,
    slugChanged: true,
    agentChanged: true,
  });
  await requireRoom(ctx, project);
  const place = { _id: newChannelConnectionId(), ...scopeOf(project) };
  const authToken = await sealConnectionToken(ctx.models.TenantDataKey, ring, place, input.authToken);
  const created = await ctx.models.ChannelConnection.create({
    ...place,
    provider: 'twilio',
    name: input.name,
    accountSid: input.accountSid,
    authToken,
    callerNumber: input.callerNumber,
    ...target,
    amdMode: input.amdMode,
    recordingEnabled: input.recordingEnabled,
    voiceMode: input.voiceMode ?? 'gather',
    transferNumber: input.transferNumber ?? null,
    status: input.status,
  });
  await emitOperationEvents(ctx, [connectionAudit(created, 'created', principal, [])]);
  return created.toObject();
}

/** Changes the fields given; the others keep their values. An empty change answers the connection as it is. */
export async function updateChannelConnection(
  ctx: CoreContext,
  principal: Principal,
  project: ProjectDoc,
  id: string,
  changes: ChannelConnectionChanges,
): Promise<ChannelConnectionDoc> {
  requirePhoneNumbers(changes);
  requireVoiceMode(ctx, changes.voiceMode);
  if (changes.environment !== undefined) requireEnvironment(principal, changes.environment);
  const ring = changes.authToken !== undefined ? requireMasterKeys(ctx) : null;
  const current = await getChannelConnection(ctx, principal, project, id);
  if (changes.accountSid !== undefined && changes.accountSid !== current.accountSid && changes.authToken === undefined) {
    throw new DomainError('UNPROCESSABLE_ENTITY', 'body.authToken: a new accountSid needs the auth token of that account in the same request');
  }

  const set: Record<string, unknown> = {};
  for (const field of ['name', 'accountSid', 'callerNumber', 'amdMode', 'recordingEnabled', 'voiceMode', 'transferNumber', 'status'] as const) {
    if (changes[field] !== undefined) set[field] = changes[field];
  }
  const slugChanged = changes.endpointSlug !== undefined && changes.endpointSlug !== current.endpointSlug;
  const agentChanged = changes.agentId !== undefined && changes.agentId !== current.agentId;
  const environmentChanged = changes.environment !== undefined && changes.environment !== current.environment;
  if (slugChanged || agentChanged || environmentChanged) {
    Object.assign(
      set,
      await resolveTarget(ctx, principal, project, {
        environment: changes.environment ?? current.environment,
        agentRef: changes.agentId !== undefined ? changes.agentId : current.agentId,
        endpointSlug: changes.endpointSlug !== undefined ? changes.endpointSlug : current.endpointSlug,
        slugChanged,
        agentChanged,
      }),
    );
  }
  if (ring && changes.authToken !== undefined) set.authToken = await sealConnectionToken(ctx.models.TenantDataKey, ring, current, changes.authToken);
  if (Object.keys(set).length === 0) return current;

  const doc = await ctx.models.ChannelConnection.findOneAndUpdate({ _id: current._id, tenantId: current.tenantId, projectId: current.projectId }, { $set: set }, { new: true, lean: true });
  // Deleted between the read and the update.
  if (!doc) throw new DomainError('CHANNEL_NOT_FOUND', 'Channel connection not found');
  await emitOperationEvents(ctx, [connectionAudit(doc, 'updated', principal, Object.keys(changes))]);
  return doc;
}

/** Deletes it; from then on Twilio's webhooks for it are refused (403) and calls cannot name it (404). */
export async function deleteChannelConnection(ctx: CoreContext, principal: Principal, project: ProjectDoc, id: string): Promise<void> {
  const current = await getChannelConnection(ctx, principal, project, id);
  const removed = await ctx.models.ChannelConnection.deleteOne({ _id: current._id, tenantId: current.tenantId, projectId: current.projectId });
  if (removed.deletedCount === 0) throw new DomainError('CHANNEL_NOT_FOUND', 'Channel connection not found');
  await emitOperationEvents(ctx, [connectionAudit(current, 'deleted', principal, [])]);
}

/** A connection's audit event: its id, name, provider and environment, and on a change the names of the fields given (never a value). */
function connectionAudit(doc: Pick<ChannelConnectionDoc, '_id' | 'tenantId' | 'projectId' | 'name' | 'provider' | 'environment'>, action: 'created' | 'updated' | 'deleted', principal: Principal, fields: string[]) {
  return auditEvent(doc, 'channel_connection', action, principal.subjectId, {
    channel_connection_id: doc._id,
    name: doc.name,
    provider: doc.provider,
    environment: doc.environment,
    ...(action === 'updated' ? { fields: [...fields].sort() } : {}),
  });
}

/** A deployment's `channelCount`: the connections that pin it by its endpointSlug (one indexed count). */
export async function deploymentChannelCount(ctx: CoreContext, deployment: Pick<DeploymentDoc, 'tenantId' | 'projectId' | 'endpointSlug'>): Promise<number> {
  return ctx.models.ChannelConnection.countDocuments({ tenantId: deployment.tenantId, endpointSlug: deployment.endpointSlug, projectId: deployment.projectId });
}
