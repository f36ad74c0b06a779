// Zod schemas of the voice channel connection routes (docs/telephony/connections.md). The auth
// token is write-only: it is in the requests, never in a response schema.
import { z } from 'zod';
import '../openapi/registry';
import { AMD_MODES, CHANNEL_CONNECTION_STATUSES, CHANNEL_PROVIDERS, VOICE_MODES } from '../../db/channel-connection';
import { DEPLOYMENT_ENVIRONMENTS } from '../../db/deployment';
import { NOT_BLANK_PATTERN, trimmedText, ZLimitQuery, ZOffsetQuery, ZProjectIdParam } from '../http/schemas';

export const CONNECTION_NAME_MAX = 200;
export const ACCOUNT_SID_PATTERN = /^AC[0-9a-f]{32}$/;
/**
 * E.164 as lib/phone.ts checks it, spelled with [0-9] so that it means the same in every
 * regular-expression dialect. The check itself is the core's (400 INVALID_PHONE_NUMBER, not a
 * validation error), so the schema only states it.
 */
const E164_DOCUMENTED = '^\\+[1-9][0-9]{1,14}$';

const ZPhoneNumber = z.string().min(3).max(16).openapi({ pattern: E164_DOCUMENTED });
const ZName = trimmedText(CONNECTION_NAME_MAX).describe('Display name');
const ZAccountSid = z.string().regex(ACCOUNT_SID_PATTERN, 'must be a Twilio account SID: AC then 32 lowercase hex digits').describe('The Twilio account SID (`AC…`)');
const ZAuthToken = z
  .string()
  .min(1)
  .max(256)
  .regex(NOT_BLANK_PATTERN, 'must not be blank')
  .describe("The Twilio account's auth token: stored encrypted, never returned. It signs the account's webhooks, which the platform checks with it");
const ZCallerNumber = ZPhoneNumber.describe('The number calls come from and inbound calls reach, E.164 (e.g. +15551234567); otherwise 400 INVALID_PHONE_NUMBER');
const ZEnvironment = z.enum(DEPLOYMENT_ENVIRONMENTS).describe('The deployment environment the calls run in');
const ZAgentRef = z
  .string()
  .min(1)
  .max(200)
  .describe('The agent that answers: its id, name or `<domain>/<name>` (stored as its id). Without a pinned deployment it must have a version; with one, it must be part of it');
const ZEndpointSlug = z.string().min(1).max(200).describe("Pins the deployment with this endpointSlug (an active deployment of the project, in the connection's environment)");
const ZAmdMode = z.enum(AMD_MODES).describe('Answering-machine detection by default: `off`, `continue` (detect and report) or `disconnect` (hang up on a machine)');
const ZRecordingEnabled = z.boolean().describe('Whether calls are recorded');
const ZVoiceMode = z
  .enum(VOICE_MODES)
  .describe(
    'How calls are held: `gather` (turn by turn over TwiML, Twilio recognises and speaks) or `realtime` (the call\'s audio is bridged into a LiveKit voice room and the voice agent ' +
      'listens and speaks; needs real-time voice configured, else 422)',
  );
const ZTransferNumber = ZPhoneNumber.describe('Where an escalation transfers the caller (E.164), or null to keep escalations in the session; otherwise 400 INVALID_PHONE_NUMBER');
const ZStatus = z.enum(CHANNEL_CONNECTION_STATUSES).describe('`disabled` keeps the connection but takes it out of service');

export const ZCreateChannelConnectionRequest = z
  .object({
    provider: z.enum(CHANNEL_PROVIDERS).default('twilio').describe('Only `twilio`'),
    name: ZName,
    accountSid: ZAccountSid,
    authToken: ZAuthToken,
    callerNumber: ZCallerNumber,
    environment: ZEnvironment.optional().describe("The deployment environment the calls run in; default: the pinned deployment's, else `dev`"),
    agentId: ZAgentRef.nullable().optional().describe(`${ZAgentRef.description}. Null or omitted: the entry agent of the deployment, else of the project`),
    endpointSlug: ZEndpointSlug.nullable().optional().describe(`${ZEndpointSlug.description}. Null or omitted: the environment's active deployment, else the agents' latest versions`),
    amdMode: ZAmdMode.default('off'),
    recordingEnabled: ZRecordingEnabled.default(false),
    voiceMode: ZVoiceMode.default('gather'),
    transferNumber: ZTransferNumber.nullable().optional(),
    status: ZStatus.default('active'),
  })
  .strict()
  .openapi('CreateChannelConnectionRequest');

export const ZUpdateChannelConnectionRequest = z
  .object({
    name: ZName.optional(),
    accountSid: ZAccountSid.optional().describe('A new account SID; a different one needs its `authToken` in the same request (422 otherwise)'),
    authToken: ZAuthToken.optional().describe('A new auth token, stored encrypted, never returned'),
    callerNumber: ZCallerNumber.optional(),
    environment: ZEnvironment.optional(),
    agentId: ZAgentRef.nullable().optional(),
    endpointSlug: ZEndpointSlug.nullable().optional(),
    amdMode: ZAmdMode.optional(),
    recordingEnabled: ZRecordingEnabled.optional(),
    voiceMode: ZVoiceMode.optional(),
    transferNumber: ZTransferNumber.nullable().optional(),
    status: ZStatus.optional(),
  })
  .strict()
  .openapi('UpdateChannelConnectionRequest', { description: 'Only the fields given change; null clears agentId, endpointSlug or transferNumber' });

export const ZChannelConnectionParams = ZProjectIdParam.extend({
  channelConnectionId: z.string().min(1).max(64).describe('Channel connection id (`cc_…`)'),
});

export const ZListChannelConnectionsQuery = z.object({ limit: ZLimitQuery, offset: ZOffsetQuery });

export const ZChannelConnection = z
  .object({
    id: z.string().describe('The `channelConnectionId` outbound calls name (`cc_…`)'),
    projectId: z.string(),
    provider: z.enum(CHANNEL_PROVIDERS),
    name: z.string(),
    accountSid: z.string(),
    callerNumber: z.string(),
    environment: z.string(),
    agentId: z.string().nullable(),
    endpointSlug: z.string().nullable(),
    amdMode: z.enum(AMD_MODES),
    recordingEnabled: z.boolean(),
    voiceMode: z.enum(VOICE_MODES),
    transferNumber: z.string().nullable(),
    status: z.enum(CHANNEL_CONNECTION_STATUSES),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .strict()
  .openapi('ChannelConnection', { description: 'A voice channel connection; its auth token is never returned' });

export const ZChannelConnectionResponse = z.object({ success: z.literal(true), data: ZChannelConnection });

export const ZListChannelConnectionsResponse = z.object({
  success: z.literal(true),
  data: z.array(ZChannelConnection),
  total: z.number().int().min(0),
  offset: z.number().int().min(0),
  limit: z.number().int().min(1),
});
