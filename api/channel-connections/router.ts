// Voice channel connections (/api/projects/:projectId/channel-connections): a project's Twilio
// account and number, and what answers its calls. Reads need channel_connection:read, changes
// channel_connection:write. The auth token is write-only. docs/telephony/connections.md.
import { type ChannelConnectionDoc } from '../../db/channel-connection';
import { maskPhoneNumber } from '../../lib/phone';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam, ZSuccessOnly } from '../http/schemas';
import {
  ZChannelConnectionParams,
  ZChannelConnectionResponse,
  ZCreateChannelConnectionRequest,
  ZListChannelConnectionsQuery,
  ZListChannelConnectionsResponse,
  ZUpdateChannelConnectionRequest,
} from './schemas';
import {
  createChannelConnection,
  deleteChannelConnection,
  getChannelConnection,
  listChannelConnections,
  updateChannelConnection,
} from '../../core/telephony/channel-connections';

const TAGS = ['Channel connections'];
const BASE = '/api/projects/:projectId/channel-connections';
const ONE = `${BASE}/:channelConnectionId`;
const SELF = { projectId: '$request.path.projectId', channelConnectionId: '$request.path.channelConnectionId' };

/**
 * Every field but the auth token, which no answer carries; phone numbers masked, as everywhere
 * they leave the API (lib/phone.ts): the full numbers are what was sent at creation.
 */
function present(doc: ChannelConnectionDoc) {
  return {
    id: doc._id,
    projectId: doc.projectId,
    provider: doc.provider,
    name: doc.name,
    accountSid: doc.accountSid,
    callerNumber: maskPhoneNumber(doc.callerNumber),
    environment: doc.environment,
    agentId: doc.agentId ?? null,
    endpointSlug: doc.endpointSlug ?? null,
    amdMode: doc.amdMode,
    recordingEnabled: doc.recordingEnabled,
    voiceMode: doc.voiceMode ?? 'gather',
    transferNumber: doc.transferNumber ? maskPhoneNumber(doc.transferNumber) : null,
    status: doc.status,
    createdAt: doc.createdAt.toISOString(),
    updatedAt: doc.updatedAt.toISOString(),
  };
}

export const channelConnectionRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: BASE,
    operationId: 'createChannelConnection',
    summary: 'Connect a Twilio account and number to the project (the auth token is stored encrypted and never returned)',
    description:
      "`data.id` is the `channelConnectionId` outbound calls name. 400 INVALID_PHONE_NUMBER when callerNumber or transferNumber is not E.164; 403 when the key is bound to other environments than the connection's; " +
      '422 when agentId names no agent of the project with a version (or none of the pinned deployment), endpointSlug no active deployment of the project, or a deployment of another environment than `environment`; ' +
      '429 CHANNEL_CONNECTION_LIMIT_REACHED when the project holds CHANNEL_CONNECTIONS_MAX_PER_PROJECT connections; 503 when encryption is not configured.',
    tags: TAGS,
    auth: 'channel_connection:write',
    params: ZProjectIdParam,
    body: ZCreateChannelConnectionRequest,
    bodyExample: {
      name: 'Support line',
      accountSid: 'AC0123456789abcdef0123456789abcdef',
      authToken: 'your_twilio_auth_token',
      callerNumber: '+15551234567',
      environment: 'dev',
      amdMode: 'continue',
      recordingEnabled: true,
    },
    successStatus: 201,
    response: ZChannelConnectionResponse,
    links: linksTo(['getChannelConnection', 'updateChannelConnection', 'deleteChannelConnection'], {
      projectId: '$request.path.projectId',
      channelConnectionId: '$response.body#/data/id',
    }),
    errorStatuses: [400, 403, 404, 422, 429, 503],
    async handler({ ctx, principal, project, body }) {
      return { success: true, data: present(await createChannelConnection(ctx, principal, project!, body)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: BASE,
    operationId: 'listChannelConnections',
    summary: "A project's voice channel connections, newest first (never the auth tokens)",
    description: 'A key bound to environments lists only the connections of its environments.',
    tags: TAGS,
    auth: 'channel_connection:read',
    params: ZProjectIdParam,
    query: ZListChannelConnectionsQuery,
    response: ZListChannelConnectionsResponse,
    async handler({ ctx, principal, project, query }) {
      const { total, docs } = await listChannelConnections(ctx, principal, project!, query);
      return { success: true, data: docs.map(present), total, offset: query.offset, limit: query.limit };
    },
  }),
  defineRoute({
    method: 'get',
    path: ONE,
    operationId: 'getChannelConnection',
    summary: 'One voice channel connection (never its auth token)',
    description: "404 CHANNEL_NOT_FOUND for one that does not exist, is another project's or tenant's, or is of an environment the key is not bound to.",
    tags: TAGS,
    auth: 'channel_connection:read',
    params: ZChannelConnectionParams,
    response: ZChannelConnectionResponse,
    links: linksTo(['updateChannelConnection', 'deleteChannelConnection'], SELF),
    errorStatuses: [404],
    async handler({ ctx, principal, project, params }) {
      return { success: true, data: present(await getChannelConnection(ctx, principal, project!, params.channelConnectionId)) };
    },
  }),
  defineRoute({
    method: 'patch',
    path: ONE,
    operationId: 'updateChannelConnection',
    summary: 'Change a voice channel connection: only the fields given change',
    description:
      'Checked as on create (400 INVALID_PHONE_NUMBER, 403, 422, 503). A new accountSid needs its authToken in the same request (422). ' +
      '404 CHANNEL_NOT_FOUND as for a read.',
    tags: TAGS,
    auth: 'channel_connection:write',
    params: ZChannelConnectionParams,
    body: ZUpdateChannelConnectionRequest,
    bodyExample: { status: 'disabled', recordingEnabled: false },
    response: ZChannelConnectionResponse,
    links: linksTo(['getChannelConnection', 'deleteChannelConnection'], SELF),
    errorStatuses: [400, 403, 404, 422, 503],
    async handler({ ctx, principal, project, params, body }) {
      return { success: true, data: present(await updateChannelConnection(ctx, principal, project!, params.channelConnectionId, body)) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: ONE,
    operationId: 'deleteChannelConnection',
    summary: "Delete a voice channel connection: calls can no longer name it, and Twilio's webhooks for it are refused",
    tags: TAGS,
    auth: 'channel_connection:write',
    params: ZChannelConnectionParams,
    response: ZSuccessOnly,
    errorStatuses: [404],
    async handler({ ctx, principal, project, params }) {
      await deleteChannelConnection(ctx, principal, project!, params.channelConnectionId);
      return { success: true };
    },
  }),
];
