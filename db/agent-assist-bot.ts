// Agent-assist bots: what a contact centre's hook URL names (`/agentassist/api/v1/hooks/<botId>`),
// bound to a tenant, a project and the project's agent that assists. Each holds the HS256 secret
// that signs the hook's JWTs, sealed with the tenant's data key; the additional data names the
// tenant and bot, so a ciphertext copied onto another bot does not open. A bot may name a webhook
// that assist mode's suggestions and summaries are pushed to, signed with its own sealed secret.
import { Schema, type Connection, type Model } from 'mongoose';
import { type KeyRing } from '../lib/key-ring';
import { seal, unseal, type Sealed } from '../lib/secret-envelope';
import { SealedSchema, tenantDataKey, type TenantDataKeyModel } from './tenant-data-key';

export interface AgentAssistBotDoc {
  /** The bot id: `aab-` and random hex, unique across tenants (the hook URL carries no tenant). */
  _id: string;
  tenantId: string;
  projectId: string;
  agentName: string;
  name: string;
  secret: Sealed;
  /** Where suggestions and summaries are pushed (docs/agent-assist.md); absent: not pushed. */
  webhookUrl?: string | null;
  /** The push's signing secret (`whsec_…`, the HTTP-async scheme), sealed like `secret`. */
  webhookSecret?: Sealed | null;
  createdAt: Date;
  updatedAt: Date;
}

const AgentAssistBotSchema = new Schema<AgentAssistBotDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    agentName: { type: String, required: true },
    name: { type: String, required: true },
    secret: { type: SealedSchema, required: true },
    webhookUrl: { type: String, default: null },
    webhookSecret: { type: SealedSchema, default: null },
  },
  { timestamps: true, versionKey: false },
);
AgentAssistBotSchema.index({ tenantId: 1, projectId: 1 });

export type AgentAssistBotModel = Model<AgentAssistBotDoc>;
export const agentAssistBotModel = (c: Connection): AgentAssistBotModel => c.model<AgentAssistBotDoc>('AgentAssistBot', AgentAssistBotSchema, 'agent_assist_bots');

function botAad(tenantId: string, botId: string): string {
  return JSON.stringify(['switchboard/agent-assist-bot/v1', tenantId, botId]);
}

export async function sealBotSecret(keys: TenantDataKeyModel, ring: KeyRing, tenantId: string, botId: string, secret: Buffer): Promise<Sealed> {
  return seal(await tenantDataKey(keys, ring, tenantId), botAad(tenantId, botId), secret);
}

export async function unsealBotSecret(keys: TenantDataKeyModel, ring: KeyRing, bot: Pick<AgentAssistBotDoc, '_id' | 'tenantId' | 'secret'>): Promise<Buffer> {
  return unseal(await tenantDataKey(keys, ring, bot.tenantId), botAad(bot.tenantId, bot._id), bot.secret);
}

function webhookAad(tenantId: string, botId: string): string {
  return JSON.stringify(['switchboard/agent-assist-bot-webhook/v1', tenantId, botId]);
}

export async function sealBotWebhookSecret(keys: TenantDataKeyModel, ring: KeyRing, tenantId: string, botId: string, secret: string): Promise<Sealed> {
  return seal(await tenantDataKey(keys, ring, tenantId), webhookAad(tenantId, botId), Buffer.from(secret, 'utf8'));
}

export async function unsealBotWebhookSecret(keys: TenantDataKeyModel, ring: KeyRing, bot: Pick<AgentAssistBotDoc, '_id' | 'tenantId'> & { webhookSecret: Sealed }): Promise<string> {
  return (await unseal(await tenantDataKey(keys, ring, bot.tenantId), webhookAad(bot.tenantId, bot._id), bot.webhookSecret)).toString('utf8');
}
