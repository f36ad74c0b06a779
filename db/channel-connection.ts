// Voice channel connections: a project's Twilio account and phone number, which environment and
// agent or deployment answers its calls, and its defaults for answering-machine detection and
// recording. The account's auth token is sealed with the tenant's data key (db/tenant-data-key.ts)
// under additional data naming the connection, so a ciphertext copied onto another row does not
// open; it leaves this module only to call Twilio or to check a webhook's signature.
import { Schema, type Connection, type Model } from 'mongoose';
import { createId } from '@paralleldrive/cuid2';
import { type KeyRing } from '../lib/key-ring';
import { seal, unseal, type Sealed } from '../lib/secret-envelope';
import { SealedSchema, tenantDataKey, type TenantDataKeyModel } from './tenant-data-key';

export const CHANNEL_PROVIDERS = ['twilio'] as const;
export type ChannelProvider = (typeof CHANNEL_PROVIDERS)[number];

export const CHANNEL_CONNECTION_STATUSES = ['active', 'disabled'] as const;
export type ChannelConnectionStatus = (typeof CHANNEL_CONNECTION_STATUSES)[number];

/** Answering-machine detection: off, detect and report, or detect and hang up on a machine. */
export const AMD_MODES = ['off', 'continue', 'disconnect'] as const;
export type AmdMode = (typeof AMD_MODES)[number];

/**
 * How the connection's calls are held: `gather`, turn by turn over TwiML (<Gather input="speech">,
 * Twilio's recogniser and <Say>), or `realtime`, the call's audio bridged into a LiveKit voice room
 * over a Twilio Media Stream and talked to by the voice agent (docs/telephony/voice.md).
 */
export const VOICE_MODES = ['gather', 'realtime'] as const;
export type VoiceMode = (typeof VOICE_MODES)[number];

/** The id prefix; the response's `data.id` is the `channelConnectionId` of outbound calls. */
export const CHANNEL_CONNECTION_ID_PREFIX = 'cc_';
export const newChannelConnectionId = (): string => CHANNEL_CONNECTION_ID_PREFIX + createId();

export interface ChannelConnectionDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  provider: ChannelProvider;
  name: string;
  /** The Twilio account SID (`AC` + 32 hex); not a secret, shown in responses. */
  accountSid: string;
  /** The Twilio auth token, sealed; never returned or logged. */
  authToken: Sealed;
  /** The number calls come from and inbound calls reach, E.164. */
  callerNumber: string;
  /** The deployment environment the connection's calls run in. */
  environment: string;
  /** The agent that answers, by id; null: the entry agent of the deployment or project. */
  agentId: string | null;
  /** Pins the deployment with this `endpointSlug`; null: the environment's active deployment, else the latest versions. */
  endpointSlug: string | null;
  amdMode: AmdMode;
  recordingEnabled: boolean;
  /** `gather` (the default) or `realtime`; documents written before the setting read as `gather`. */
  voiceMode?: VoiceMode;
  /** A number an ESCALATE transfers the caller to (`<Dial>`), E.164; null: escalation stays in the session. */
  transferNumber: string | null;
  status: ChannelConnectionStatus;
  createdAt: Date;
  updatedAt: Date;
}

const ChannelConnectionSchema = new Schema<ChannelConnectionDoc>(
  {
    _id: { type: String, default: newChannelConnectionId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    provider: { type: String, required: true, enum: CHANNEL_PROVIDERS },
    name: { type: String, required: true },
    accountSid: { type: String, required: true },
    authToken: { type: SealedSchema, required: true },
    callerNumber: { type: String, required: true },
    environment: { type: String, required: true },
    agentId: { type: String, default: null },
    endpointSlug: { type: String, default: null },
    amdMode: { type: String, required: true, enum: AMD_MODES, default: 'off' },
    recordingEnabled: { type: Boolean, required: true, default: false },
    voiceMode: { type: String, enum: VOICE_MODES, default: 'gather' },
    transferNumber: { type: String, default: null },
    status: { type: String, required: true, enum: CHANNEL_CONNECTION_STATUSES, default: 'active' },
  },
  { timestamps: true, versionKey: false },
);
ChannelConnectionSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
// A deployment's channelCount and inbound routing by slug.
ChannelConnectionSchema.index({ tenantId: 1, endpointSlug: 1 });

export type ChannelConnectionModel = Model<ChannelConnectionDoc>;
export const channelConnectionModel = (c: Connection): ChannelConnectionModel =>
  c.model<ChannelConnectionDoc>('ChannelConnection', ChannelConnectionSchema, 'channel_connections');

export interface ConnectionPlace {
  _id: string;
  tenantId: string;
  projectId: string;
}

/** Additional data binding a sealed auth token to its connection. */
export function connectionTokenAad(place: ConnectionPlace): string {
  return JSON.stringify(['switchboard/channel-connection-token/v1', place.tenantId, place.projectId, place._id]);
}

export async function sealConnectionToken(keys: TenantDataKeyModel, ring: KeyRing, place: ConnectionPlace, authToken: string): Promise<Sealed> {
  const dataKey = await tenantDataKey(keys, ring, place.tenantId);
  return seal(dataKey, connectionTokenAad(place), Buffer.from(authToken, 'utf8'));
}

/**
 * The auth token in clear, to call Twilio or check a webhook's signature.
 * @throws when the ring lacks the master key or the sealed value was moved or altered.
 */
export async function openConnectionToken(keys: TenantDataKeyModel, ring: KeyRing, doc: ConnectionPlace & { authToken: Sealed }): Promise<string> {
  const dataKey = await tenantDataKey(keys, ring, doc.tenantId);
  return unseal(dataKey, connectionTokenAad(doc), doc.authToken).toString('utf8');
}
