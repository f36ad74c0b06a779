// Gives the dev project an HTTP-async webhook subscription that delivers to the sample back-end's
// receiver (infra/sample-backend.ts), so a message sent to POST /api/v1/channels/http-async/message
// is answered there with no server of one's own. Created once; an existing one is reused.
import { type Models } from '../db/models';
import { newSubscriptionId, sealSubscriptionSecret } from '../db/http-async-subscription';
import { type KeyRing } from '../lib/key-ring';
import { newSigningSecret } from '../lib/http-async/signing';
import { type DevCredentials } from './seed';

export const DEV_SUBSCRIPTION_NAME = 'Sample receiver (dev stack)';

/** The subscription's Source ID; null when there is no master key to seal its secret with. */
export async function ensureDevSubscription(
  models: Models,
  ring: KeyRing | null,
  credentials: Pick<DevCredentials, 'tenantId' | 'projectId'>,
  callbackUrl: string,
): Promise<string | null> {
  const scope = { tenantId: credentials.tenantId, projectId: credentials.projectId };
  const existing = await models.HttpAsyncSubscription.findOne({ ...scope, name: DEV_SUBSCRIPTION_NAME, callbackUrl }, { _id: 1 }).lean();
  if (existing) return existing._id;
  if (!ring) return null;
  const _id = newSubscriptionId();
  const secret = await sealSubscriptionSecret(models.TenantDataKey, ring, { _id, ...scope }, newSigningSecret());
  await models.HttpAsyncSubscription.create({
    _id,
    ...scope,
    name: DEV_SUBSCRIPTION_NAME,
    callbackUrl,
    events: ['agent.response', 'agent.status', 'agent.media'],
    environment: 'dev',
    status: 'active',
    secret,
    createdBy: { type: 'system', id: 'dev-seed' },
  });
  return _id;
}
