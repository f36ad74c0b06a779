// Agent-assist hook helpers for tests: a bot with its secret, signed JWTs, and the spec's event bodies.
import { SignJWT } from 'jose';
import { createAgentAssistBot } from '../../core/agent-assist/hooks';
import { requireMasterKeys } from '../../core/tool-secrets/secrets';
import { type AppContext } from '../../api/context';
import { request } from './http';

export interface TestBot {
  botId: string;
  secret: string;
}

export async function createTestBot(ctx: AppContext, tenantId: string, projectId: string): Promise<TestBot> {
  const { bot, secret } = await createAgentAssistBot(ctx, requireMasterKeys(ctx), { tenantId, projectId, agentName: 'Support' });
  return { botId: bot._id, secret };
}

/** A hook JWT signed HS256 with `secret`; `expiresIn` in seconds (negative: already expired). */
export async function hookJwt(secret: string, options: { expiresIn?: number; claims?: Record<string, unknown>; alg?: string } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(options.claims ?? {})
    .setProtectedHeader({ alg: options.alg ?? 'HS256' })
    .setIssuedAt(now)
    .setExpirationTime(now + (options.expiresIn ?? 300))
    .sign(Buffer.from(secret, 'base64url'));
}

export const agent = (identity: string) => ({ identity, name: identity, type: 'agent', customFields: { agentEmail: `${identity}@example.com`, queueId: 'q1', queueName: 'Support' } });

export const transfer = (transfertype: string, transition: 'entry' | 'exit', identity: string) => ({
  name: 'INTERNAL_TRANSFER_EVENT',
  transfertype,
  transition,
  isExtAD: 'false',
  language: 'en',
  experience: 'chat',
  participant: agent(identity),
});
export const summary = () => ({ name: 'TRIGGER_SUMMARY_EVENT', data: { language: 'English', locale: 'en', type: 'post' } });
export const end = (identity: string) => ({ name: 'END_OF_CONVERSATION', reason: 'agent_initiated', language: 'en', experience: 'chat', participant: agent(identity) });

export function message(botId: string, conversationId: string, author: 'USER' | 'AGENT', query: string, eventId?: string) {
  return { conversationId, botId, ...(eventId ? { eventId } : {}), query, agentId: 'agent-1', experience: 'chat', author: { type: author }, source: 'smartassist', sendUserMessage: true, sendAgentMessage: true, language: 'en' };
}

export const lifecycle = (botId: string, conversationId: string, ...events: unknown[]) => ({ conversationId, botId, events });

/** POSTs a hook call with the JWT in `auth` (or the header named by `header`). */
export function postHook(baseUrl: string, botId: string, body: unknown, jwt: string | null, header = 'auth') {
  return request(baseUrl, 'POST', `/agentassist/api/v1/hooks/${botId}`, { json: body, headers: jwt === null ? {} : { [header]: jwt } });
}
