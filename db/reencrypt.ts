// Re-encryption after a master-key rotation (`npm run admin -- reencrypt`): tenant by tenant,
// re-wraps the tenant's data key and re-encrypts each value at rest that is not yet under the
// ring's current master key in the current format. Each write is conditional on the ciphertext it
// read, so a concurrent change is never overwritten; running it again skips what is done, so an
// interrupted run is resumed by running it again.
import { type Model } from 'mongoose';
import { type EncryptedValue, type Encryptor } from '../lib/encryption';
import { type KeyRing } from '../lib/key-ring';
import { type Models } from './models';
import { rewrapTenantDataKeys } from './tenant-data-key';
import { LLM_CREDENTIAL_PURPOSE } from './llm-credential';
import { CALLBACK_PAYLOAD_PURPOSE, CALLBACK_SECRET_PURPOSE } from './suspension';
import { APP_RUN_CALLBACK_TOKEN_PURPOSE } from './app-run';

type ReencryptModels = Pick<Models, 'Tenant' | 'TenantDataKey' | 'LlmCredential' | 'Suspension' | 'AppRun'>;

/** Every field holding a per-tenant value at rest (lib/encryption.ts), with its purpose. */
function encryptedFields(models: ReencryptModels): { model: Model<unknown>; field: string; purpose: string }[] {
  const any = (m: unknown) => m as Model<unknown>;
  return [
    { model: any(models.LlmCredential), field: 'apiKey', purpose: LLM_CREDENTIAL_PURPOSE },
    { model: any(models.Suspension), field: 'secret', purpose: CALLBACK_SECRET_PURPOSE },
    { model: any(models.Suspension), field: 'claimedPayload', purpose: CALLBACK_PAYLOAD_PURPOSE },
    { model: any(models.AppRun), field: 'callbackToken', purpose: APP_RUN_CALLBACK_TOKEN_PURPOSE },
  ];
}

export interface TenantReencryption {
  dataKeys: { rewrapped: number; alreadyCurrent: number };
  values: { reencrypted: number; alreadyCurrent: number };
}

/** One tenant's data key and values, under the current master key. @throws on a value no configured key opens. */
export async function reencryptTenant(models: ReencryptModels, ring: KeyRing, encryptor: Encryptor, tenantId: string): Promise<TenantReencryption> {
  const dataKeys = await rewrapTenantDataKeys(models.TenantDataKey, ring, tenantId);
  const values = { reencrypted: 0, alreadyCurrent: 0 };
  for (const { model, field, purpose } of encryptedFields(models)) {
    const docs = (await model.find({ tenantId, [field]: { $ne: null } }, { _id: 1, [field]: 1 }).lean()) as unknown as (Record<string, EncryptedValue> & { _id: string })[];
    for (const doc of docs) {
      const value = doc[field]!;
      if (encryptor.isCurrent(value)) {
        values.alreadyCurrent++;
        continue;
      }
      const fresh = encryptor.encrypt(tenantId, purpose, encryptor.decrypt(tenantId, purpose, value));
      const result = await model.updateOne({ _id: doc._id, tenantId, [`${field}.data`]: value.data }, { $set: { [field]: fresh } });
      // Not modified: changed meanwhile (written anew, hence under the current key) or gone.
      if (result.modifiedCount > 0) values.reencrypted++;
      else values.alreadyCurrent++;
    }
  }
  return { dataKeys, values };
}

/** Every tenant that has a tenant record or anything encrypted at rest, in a stable order. */
export async function tenantsWithSecrets(models: ReencryptModels): Promise<string[]> {
  const ids = new Set<string>((await models.Tenant.find({}, { _id: 1 }).lean()).map((t) => String(t._id)));
  for (const model of [models.TenantDataKey, ...encryptedFields(models).map((f) => f.model)]) {
    for (const id of await (model as Model<unknown>).distinct('tenantId')) ids.add(String(id));
  }
  return [...ids].sort();
}
