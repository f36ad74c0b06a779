// Each tenant's data key (tool secrets, HTTP-async signing secrets), stored only wrapped under a
// master key of the ring (lib/secret-envelope.ts). It is
// made on first use: a unique index on tenantId lets exactly one of several concurrent creators
// win, and the others read the winner's key.
import { Schema, type Connection, type Model } from 'mongoose';
import { type KeyRing } from '../lib/key-ring';
import { isCurrentWrapping, newDataKey, unwrapDataKey, wrapDataKey, type Sealed } from '../lib/secret-envelope';
import { newId } from '../lib/ids';
import { isDuplicateKey } from './duplicate-key';

export interface TenantDataKeyDoc {
  _id: string;
  tenantId: string;
  /** Id (in the master key ring) of the key that wrapped `wrapped`. */
  masterKeyId: string;
  /** How it is wrapped (lib/secret-envelope.ts): 2, or absent for the master key itself (older data keys). */
  scheme?: number | null;
  wrapped: Sealed;
  createdAt: Date;
  updatedAt: Date;
}

export const SealedSchema = new Schema<Sealed>(
  { iv: { type: String, required: true }, tag: { type: String, required: true }, data: { type: String, required: true } },
  { _id: false },
);

const TenantDataKeySchema = new Schema<TenantDataKeyDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    masterKeyId: { type: String, required: true },
    scheme: { type: Number },
    wrapped: { type: SealedSchema, required: true },
  },
  { timestamps: true, versionKey: false },
);
TenantDataKeySchema.index({ tenantId: 1 }, { unique: true });

export type TenantDataKeyModel = Model<TenantDataKeyDoc>;
export const tenantDataKeyModel = (c: Connection): TenantDataKeyModel =>
  c.model<TenantDataKeyDoc>('TenantDataKey', TenantDataKeySchema, 'tenant_data_keys');

/**
 * Data keys this process unwrapped, by ring, store and tenant. A data key never changes once made
 * (rotating the master key re-wraps it, the key inside stays), so an unwrapped key stays right for
 * as long as the ring that opened it is in use; every sealed value of a tenant needs it, and
 * reading it each time cost a store round trip ahead of every secret opened. Bounded per store.
 */
const unwrapped = new WeakMap<KeyRing, WeakMap<TenantDataKeyModel, Map<string, Promise<Buffer>>>>();
const UNWRAPPED_KEPT = 10_000;

/** A tenant's data key, unwrapped; made (and stored wrapped by the current master key) on first use. */
export function tenantDataKey(model: TenantDataKeyModel, ring: KeyRing, tenantId: string): Promise<Buffer> {
  let byModel = unwrapped.get(ring);
  if (!byModel) unwrapped.set(ring, (byModel = new WeakMap()));
  let byTenant = byModel.get(model);
  if (!byTenant) byModel.set(model, (byTenant = new Map()));
  const known = byTenant.get(tenantId);
  if (known) return known;
  const loading = loadTenantDataKey(model, ring, tenantId);
  const kept = byTenant;
  if (kept.size >= UNWRAPPED_KEPT) kept.delete(kept.keys().next().value!);
  kept.set(tenantId, loading);
  // A failure (the store down, a master key missing) is not kept: the next use tries again.
  loading.catch(() => kept.get(tenantId) === loading && kept.delete(tenantId));
  return loading;
}

async function loadTenantDataKey(model: TenantDataKeyModel, ring: KeyRing, tenantId: string): Promise<Buffer> {
  const existing = await model.findOne({ tenantId }).lean();
  if (existing) return unwrapDataKey(ring, tenantId, existing);
  const key = newDataKey();
  try {
    await model.create({ tenantId, ...wrapDataKey(ring.current, tenantId, key) });
    return key;
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    // Another request created it first: use that one, or secrets sealed with it could not be read.
    const winner = await model.findOne({ tenantId }).lean();
    if (!winner) throw err;
    return unwrapDataKey(ring, tenantId, winner);
  }
}

/**
 * Re-wraps every data key (of one tenant, or all) not yet under the ring's current master key in
 * the current scheme (after a new key was put first in ENCRYPTION_KEYS), so the old master key can
 * then be dropped. The data keys themselves do not change: no secret needs re-encrypting. Safe to
 * run again. @throws UnknownMasterKeyError when a data key's master key is no longer in the ring.
 */
export async function rewrapTenantDataKeys(
  model: TenantDataKeyModel,
  ring: KeyRing,
  tenantId?: string,
): Promise<{ rewrapped: number; alreadyCurrent: number }> {
  let rewrapped = 0;
  let alreadyCurrent = 0;
  for await (const doc of model.find(tenantId === undefined ? {} : { tenantId }).lean().cursor()) {
    if (isCurrentWrapping(ring, doc)) {
      alreadyCurrent++;
      continue;
    }
    const key = unwrapDataKey(ring, doc.tenantId, doc);
    // Conditional on the wrapping read, so a concurrent re-wrap is not overwritten with a stale read.
    const result = await model.updateOne(
      { _id: doc._id, tenantId: doc.tenantId, masterKeyId: doc.masterKeyId, 'wrapped.data': doc.wrapped.data },
      { $set: wrapDataKey(ring.current, doc.tenantId, key) },
    );
    if (result.modifiedCount > 0) rewrapped++;
    else alreadyCurrent++;
  }
  return { rewrapped, alreadyCurrent };
}
