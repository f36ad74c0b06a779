// Voice test setup: a channel connection inserted as its row (the auth token sealed as the
// connection routes seal it), and Twilio-signed form posts to the voice webhooks.
import { newChannelConnectionId, sealConnectionToken, type ChannelConnectionDoc } from '../../db/channel-connection';
import { requireMasterKeys } from '../../core/tool-secrets/secrets';
import { twilioSignature } from '../../providers/telephony/twilio-client';
import { type TestStack } from './stack';

export const ACCOUNT_SID = 'AC' + 'b2'.repeat(16);
export const AUTH_TOKEN = 'voice-test-auth-token';

export async function insertConnection(
  stack: TestStack,
  owner: { tenantId: string; projectId: string },
  fields: Partial<Omit<ChannelConnectionDoc, '_id' | 'tenantId' | 'projectId' | 'authToken'>> = {},
): Promise<string> {
  const _id = newChannelConnectionId();
  const place = { _id, tenantId: owner.tenantId, projectId: owner.projectId };
  const authToken = await sealConnectionToken(stack.ctx.models.TenantDataKey, requireMasterKeys(stack.ctx), place, AUTH_TOKEN);
  await stack.ctx.models.ChannelConnection.create({
    ...place,
    provider: 'twilio',
    name: 'Main line',
    accountSid: ACCOUNT_SID,
    authToken,
    callerNumber: '+15550001000',
    environment: 'dev',
    agentId: null,
    endpointSlug: null,
    amdMode: 'off',
    recordingEnabled: false,
    transferNumber: null,
    status: 'active',
    ...fields,
  });
  return _id;
}

/** `/api/telephony/twilio/<id>/<route>` (with its query) on the test API. */
export const webhookPath = (connectionId: string, route: string, query = ''): string => `/api/telephony/twilio/${connectionId}/${route}${query ? `?${query}` : ''}`;

/**
 * Posts `form` to `path` as Twilio would: form-encoded and signed with X-Twilio-Signature over the
 * full URL under `token` (null: no signature at all).
 */
export async function postSigned(stack: TestStack, path: string, form: Record<string, string>, token: string | null = AUTH_TOKEN): Promise<{ status: number; text: string }> {
  const url = stack.baseUrl + path;
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(token !== null ? { 'x-twilio-signature': twilioSignature(token, url, form) } : {}),
    },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, text: await res.text() };
}

/** A call's form as Twilio posts it to a voice URL. */
export function callForm(callSid: string, extra: Record<string, string> = {}): Record<string, string> {
  return { CallSid: callSid, AccountSid: ACCOUNT_SID, From: '+15557654321', To: '+15550001000', CallStatus: 'in-progress', Direction: 'inbound', ApiVersion: '2010-04-01', ...extra };
}
