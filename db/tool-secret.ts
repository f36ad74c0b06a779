// Tool secrets: values HTTP tools reference as {{secrets.NAME}}, one row per project, tool name,
// key and environment, sealed with the tenant's data key (db/tenant-data-key.ts). The additional
// data names the row's tenant, project, tool, key and environment, so a ciphertext copied onto
// another row does not open. Values leave this module only for the tool call that uses them.
import { Schema, type Connection, type Model } from 'mongoose';
import { type KeyRing } from '../lib/key-ring';
import { seal, unseal, type Sealed } from '../lib/secret-envelope';
import { newId } from '../lib/ids';
import { SealedSchema, tenantDataKey, type TenantDataKeyModel } from './tenant-data-key';

/** The tool name of a project-wide secret, which any tool's placeholder falls back to. */
export const ANY_TOOL = '*';

export interface ToolSecretDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  toolName: string;
  secretKey: string;
  environment: string;
  version: number;
  expiresAt: Date | null;
  /**
   * Where the value may be sent: host (the scheme's default port) or host:port entries
   * (lib/net/allowed-hosts.ts). Absent on rows stored before secrets named their hosts: such a
   * secret is sent nowhere until its hosts are set.
   */
  allowedHosts?: string[];
  value: Sealed;
  createdAt: Date;
  updatedAt: Date;
}

const ToolSecretSchema = new Schema<ToolSecretDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    toolName: { type: String, required: true },
    secretKey: { type: String, required: true },
    environment: { type: String, required: true },
    version: { type: Number, required: true, default: 1 },
    expiresAt: { type: Date, default: null },
    // No default: a row without the field is one stored before the field existed.
    allowedHosts: { type: [String], default: undefined },
    value: { type: SealedSchema, required: true },
  },
  { timestamps: true, versionKey: false },
);
ToolSecretSchema.index({ tenantId: 1, projectId: 1, toolName: 1, secretKey: 1, environment: 1 }, { unique: true });

export type ToolSecretModel = Model<ToolSecretDoc>;
export const toolSecretModel = (c: Connection): ToolSecretModel => c.model<ToolSecretDoc>('ToolSecret', ToolSecretSchema, 'tool_secrets');

export interface ToolSecretPlace {
  tenantId: string;
  projectId: string;
  toolName: string;
  secretKey: string;
  environment: string;
}

/** Additional data binding a sealed value to its row. */
export function toolSecretAad(place: ToolSecretPlace): string {
  return JSON.stringify(['switchboard/tool-secret/v1', place.tenantId, place.projectId, place.toolName, place.secretKey, place.environment]);
}

export async function sealToolSecret(keys: TenantDataKeyModel, ring: KeyRing, place: ToolSecretPlace, value: string): Promise<Sealed> {
  const dataKey = await tenantDataKey(keys, ring, place.tenantId);
  return seal(dataKey, toolSecretAad(place), Buffer.from(value, 'utf8'));
}

export type ToolSecretProblem = 'missing' | 'expired' | 'unreadable' | 'not_configured';

/** Why a referenced secret cannot be used. The message names the secret, never a value. */
export class ToolSecretUnavailableError extends Error {
  constructor(
    readonly secretKey: string,
    readonly problem: ToolSecretProblem,
    detail: string,
  ) {
    super(detail);
    this.name = 'ToolSecretUnavailableError';
  }
}

export interface ToolSecretQuery {
  tenantId: string;
  projectId: string;
  toolName: string;
  environment: string;
  /** The secret keys the tool's templates reference. */
  names: string[];
  now?: Date;
}

/** A resolved secret: its value and the hosts it may be sent to (empty: none). */
export interface ResolvedToolSecret {
  /** The row's id, for messages that say how to fix it. */
  id: string;
  value: string;
  allowedHosts: string[];
}

/**
 * The values of `names` for one tool call: the row for this tool (toolName = the tool's name)
 * wins, else the project-wide row (toolName `*`), in the given environment. A row past
 * `expiresAt` is not used, and does not fall back to the project-wide one.
 * @throws ToolSecretUnavailableError for the first name that cannot be resolved.
 */
export async function resolveToolSecrets(
  models: { ToolSecret: ToolSecretModel; TenantDataKey: TenantDataKeyModel },
  ring: KeyRing | null,
  query: ToolSecretQuery,
): Promise<Record<string, string>> {
  const resolved = await resolveToolSecretsWithHosts(models, ring, query);
  return Object.fromEntries(Object.entries(resolved).map(([name, secret]) => [name, secret.value]));
}

/** As resolveToolSecrets, with each secret's allowed hosts, which a tool call must respect. */
export async function resolveToolSecretsWithHosts(
  models: { ToolSecret: ToolSecretModel; TenantDataKey: TenantDataKeyModel },
  ring: KeyRing | null,
  query: ToolSecretQuery,
): Promise<Record<string, ResolvedToolSecret>> {
  const names = [...new Set(query.names)];
  if (names.length === 0) return {};
  const where = `for tool ${query.toolName} in environment "${query.environment}"`;
  if (!ring) throw new ToolSecretUnavailableError(names[0]!, 'not_configured', `secret "${names[0]}" cannot be read: encryption is not configured (ENCRYPTION_KEYS or ENCRYPTION_KEY)`);
  const rows = await models.ToolSecret.find({
    tenantId: query.tenantId,
    projectId: query.projectId,
    environment: query.environment,
    toolName: { $in: [query.toolName, ANY_TOOL] },
    secretKey: { $in: names },
  }).lean();
  const now = (query.now ?? new Date()).getTime();
  let dataKey: Buffer | null = null;
  const values: Record<string, ResolvedToolSecret> = {};
  for (const name of names) {
    const row = rows.find((r) => r.secretKey === name && r.toolName === query.toolName) ?? rows.find((r) => r.secretKey === name && r.toolName === ANY_TOOL);
    if (!row) throw new ToolSecretUnavailableError(name, 'missing', `secret "${name}" is not set ${where} (nor project-wide, tool name "*")`);
    if (row.expiresAt && row.expiresAt.getTime() <= now) {
      throw new ToolSecretUnavailableError(name, 'expired', `secret "${name}" ${where} expired at ${row.expiresAt.toISOString()}; rotate it with PUT /api/tool-secrets/${row._id}`);
    }
    try {
      dataKey ??= await tenantDataKey(models.TenantDataKey, ring, query.tenantId);
      values[name] = { id: row._id, value: unseal(dataKey, toolSecretAad(row), row.value).toString('utf8'), allowedHosts: row.allowedHosts ?? [] };
    } catch {
      throw new ToolSecretUnavailableError(name, 'unreadable', `secret "${name}" ${where} cannot be decrypted (was its master key removed from ENCRYPTION_KEYS?)`);
    }
  }
  return values;
}

/** `update`: the allowed hosts changed and the value did not. */
export type ToolSecretAction = 'create' | 'rotate' | 'update' | 'delete';

/** Who changed which secret, when, to which version. Never the value. */
export interface ToolSecretAuditDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  secretId: string;
  action: ToolSecretAction;
  toolName: string;
  secretKey: string;
  environment: string;
  version: number;
  /** The allowed hosts after the action (absent on records written before secrets named their hosts). */
  allowedHosts?: string[];
  actor: { type: string; id: string };
  at: Date;
}

const ToolSecretAuditSchema = new Schema<ToolSecretAuditDoc>(
  {
    _id: { type: String, default: newId },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    secretId: { type: String, required: true },
    action: { type: String, required: true, enum: ['create', 'rotate', 'update', 'delete'] },
    toolName: { type: String, required: true },
    secretKey: { type: String, required: true },
    environment: { type: String, required: true },
    version: { type: Number, required: true },
    allowedHosts: { type: [String], default: undefined },
    actor: { type: new Schema({ type: { type: String, required: true }, id: { type: String, required: true } }, { _id: false }), required: true },
    at: { type: Date, required: true, default: () => new Date() },
  },
  { versionKey: false },
);
ToolSecretAuditSchema.index({ tenantId: 1, projectId: 1, at: -1 });

export type ToolSecretAuditModel = Model<ToolSecretAuditDoc>;
export const toolSecretAuditModel = (c: Connection): ToolSecretAuditModel =>
  c.model<ToolSecretAuditDoc>('ToolSecretAudit', ToolSecretAuditSchema, 'tool_secret_audit');
