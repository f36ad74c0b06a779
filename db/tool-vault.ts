// The SecretRef vault of a session (ABL `RESULT_SECRETS` / `SECRET_ACCESS`): values a producer
// tool's result held, sealed with the tenant's data key and bound to their tenant, project,
// session and key, so they reach neither the model, the trace nor workflow history. A consumer
// tool's activity reads them for its `{{_secret.key}}` placeholders. Expired entries are never
// read (a read that finds one deletes it); MongoDB also drops them through a TTL index. A value
// produced by a call that carried stored secrets (or other vault values) keeps their host lists:
// it may be sent only where every one of them may go (activities/tools/tool-secrets.ts).
import { Schema, type Connection, type Model } from 'mongoose';
import { type KeyRing } from '../lib/key-ring';
import { seal, unseal, type Sealed } from '../lib/secret-envelope';
import { SealedSchema, tenantDataKey, type TenantDataKeyModel } from './tenant-data-key';
import { ensureExpiresAtTtlIndex } from './ttl-index';

export interface ToolVaultDoc {
  /** JSON of [tenantId, projectId, sessionId, key]. */
  _id: string;
  tenantId: string;
  projectId: string;
  sessionId: string;
  key: string;
  /** The tool whose result held it. */
  producer: string;
  /** Tools that may read it; empty = any tool whose SECRET_ACCESS lists it. */
  consumers: string[];
  singleUse: boolean;
  /** Where the credentials its producing call carried may go; empty (or absent in older rows): anywhere. */
  hostGrants?: VaultHostGrant[];
  expiresAt: Date | null;
  value: Sealed;
  createdAt: Date;
}

/** One credential the producing call carried, and the hosts it may be sent to. */
export interface VaultHostGrant {
  /** `secret:<NAME>` (a stored tool secret) or `vault:<key>` (a vault value it read). */
  via: string;
  /** The tool secret's row id, for the message that says how to allow a host. */
  secretId: string | null;
  allowedHosts: string[];
}

const ToolVaultSchema = new Schema<ToolVaultDoc>(
  {
    _id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    sessionId: { type: String, required: true },
    key: { type: String, required: true },
    producer: { type: String, required: true },
    consumers: { type: [String], default: [] },
    singleUse: { type: Boolean, default: false },
    hostGrants: { type: [{ _id: false, via: String, secretId: { type: String, default: null }, allowedHosts: [String] }], default: [] },
    expiresAt: { type: Date, default: null },
    value: { type: SealedSchema, required: true },
    createdAt: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
ToolVaultSchema.index({ tenantId: 1, projectId: 1, sessionId: 1 });

export type ToolVaultModel = Model<ToolVaultDoc>;
export const toolVaultModel = (c: Connection): ToolVaultModel => c.model<ToolVaultDoc>('ToolVault', ToolVaultSchema, 'tool_vault');

export interface VaultPlace {
  tenantId: string;
  projectId: string;
  sessionId: string;
}

const vaultId = (p: VaultPlace, key: string): string => JSON.stringify([p.tenantId, p.projectId, p.sessionId, key]);
const vaultAad = (p: VaultPlace, key: string): string => JSON.stringify(['switchboard/tool-vault/v1', p.tenantId, p.projectId, p.sessionId, key]);

export interface VaultEntry {
  key: string;
  value: string;
  producer: string;
  consumers: string[];
  ttlS: number | null;
  singleUse: boolean;
  /** Where the credentials its producing call carried may go (empty: it carried none). */
  hostGrants: VaultHostGrant[];
}

/** A value read for a consumer, with where it may be sent. */
export interface VaultValue {
  value: string;
  hostGrants: VaultHostGrant[];
}

export interface SecretVault {
  /** Stores (or replaces) each entry for the session. */
  put(place: VaultPlace, entries: VaultEntry[]): Promise<void>;
  /**
   * The values of `keys` that `tool` may read now: present, not expired, and naming it among their
   * consumers (or naming none). A single-use entry is removed by the read that gets it.
   */
  take(place: VaultPlace, tool: string, keys: string[]): Promise<Record<string, VaultValue>>;
}

/** The TTL index on `expiresAt`, once per connection (db/ttl-index.ts). */
function ensureTtlIndex(model: ToolVaultModel): Promise<void> {
  return ensureExpiresAtTtlIndex(model);
}

export function createSecretVault(models: { ToolVault: ToolVaultModel; TenantDataKey: TenantDataKeyModel }, ring: KeyRing | null): SecretVault {
  return {
    async put(place, entries) {
      if (entries.length === 0) return;
      if (!ring) throw new Error('the secret vault needs encryption (ENCRYPTION_KEYS or ENCRYPTION_KEY)');
      await ensureTtlIndex(models.ToolVault);
      const dataKey = await tenantDataKey(models.TenantDataKey, ring, place.tenantId);
      const now = Date.now();
      for (const e of entries) {
        const doc = {
          ...place,
          key: e.key,
          producer: e.producer,
          consumers: e.consumers,
          singleUse: e.singleUse,
          hostGrants: e.hostGrants,
          expiresAt: e.ttlS === null ? null : new Date(now + e.ttlS * 1000),
          value: seal(dataKey, vaultAad(place, e.key), Buffer.from(e.value, 'utf8')),
          createdAt: new Date(now),
        };
        await models.ToolVault.replaceOne({ _id: vaultId(place, e.key) }, doc, { upsert: true });
      }
    },
    async take(place, tool, keys) {
      const out: Record<string, VaultValue> = {};
      if (keys.length === 0 || !ring) return out;
      let dataKey: Buffer | null = null;
      for (const key of [...new Set(keys)]) {
        const id = vaultId(place, key);
        const doc = await models.ToolVault.findOne({ _id: id }).lean();
        if (!doc || doc.tenantId !== place.tenantId) continue;
        if (doc.expiresAt && doc.expiresAt.getTime() <= Date.now()) {
          await models.ToolVault.deleteOne({ _id: id, expiresAt: doc.expiresAt });
          continue;
        }
        if (doc.consumers.length > 0 && !doc.consumers.includes(tool)) continue;
        // A single-use entry belongs to whichever read deletes it: a concurrent read gets nothing.
        if (doc.singleUse && (await models.ToolVault.deleteOne({ _id: id })).deletedCount !== 1) continue;
        try {
          dataKey ??= await tenantDataKey(models.TenantDataKey, ring, place.tenantId);
          const value = unseal(dataKey, vaultAad(place, key), doc.value).toString('utf8');
          out[key] = { value, hostGrants: (doc.hostGrants ?? []).map((g) => ({ via: g.via, secretId: g.secretId ?? null, allowedHosts: [...g.allowedHosts] })) };
        } catch {
          // Unreadable (its master key removed): fail closed, as if absent.
        }
      }
      return out;
    },
  };
}
