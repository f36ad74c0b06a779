// Tool-secret changes with their audit records: create, rotate (a new value, version + 1) and
// delete, each scoped to the caller's tenant (and its project, for a project-bound key). The
// value is sealed before anything is stored and appears in no answer, log or audit record.
import { DomainError } from '../../lib/errors';
import { secretMasterKeyRing } from '../../lib/secret-envelope';
import { type KeyRing } from '../../lib/key-ring';
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { findOwned } from '../../db/owned';
import { sealToolSecret, type ToolSecretAction, type ToolSecretDoc } from '../../db/tool-secret';
import { type CoreContext } from '../context';
import { requireVisibleProject } from '../projects/visible';
import { requireEnvironment } from '../platform-keys/environments';
import { auditEvent, emitOperationEvents } from '../analytics/operations';
import { isDuplicateKey } from '../../db/duplicate-key';

const rings = new WeakMap<CoreContext['config'], KeyRing | null>();

/** The master key ring, or 503 when neither ENCRYPTION_KEYS nor ENCRYPTION_KEY is set. */
export function requireMasterKeys(ctx: Pick<CoreContext, 'config'>): KeyRing {
  if (!rings.has(ctx.config)) rings.set(ctx.config, secretMasterKeyRing(ctx.config));
  const ring = rings.get(ctx.config);
  if (!ring) throw new DomainError('SERVICE_UNAVAILABLE', 'encryption not configured: set ENCRYPTION_KEYS or ENCRYPTION_KEY to store tool secrets');
  return ring;
}

function assertFuture(expiresAt: string | null | undefined): Date | null | undefined {
  if (expiresAt === undefined || expiresAt === null) return expiresAt;
  const date = new Date(expiresAt);
  // Well formed, but unusable now: a 422, as for API keys, since it depends on the clock.
  if (date.getTime() <= Date.now()) throw new DomainError('UNPROCESSABLE_ENTITY', 'body.expiresAt: must be in the future');
  return date;
}

const AUDIT_EVENT_ACTIONS = { create: 'created', rotate: 'rotated', update: 'updated', delete: 'deleted' } as const;

async function audit(ctx: CoreContext, principal: Principal, action: ToolSecretAction, doc: ToolSecretDoc): Promise<void> {
  await ctx.models.ToolSecretAudit.create({
    tenantId: doc.tenantId,
    projectId: doc.projectId,
    secretId: doc._id,
    action,
    toolName: doc.toolName,
    secretKey: doc.secretKey,
    environment: doc.environment,
    version: doc.version,
    allowedHosts: doc.allowedHosts ?? [],
    actor: { type: principal.kind, id: principal.subjectId },
    at: new Date(),
  });
  await emitOperationEvents(ctx, [
    auditEvent(doc, 'tool_secret', AUDIT_EVENT_ACTIONS[action], principal.subjectId, {
      secret_id: doc._id,
      tool_name: doc.toolName,
      secret_key: doc.secretKey,
      environment: doc.environment,
      version: doc.version,
    }),
  ]);
}

export interface CreateToolSecretInput {
  projectId: string;
  toolName: string;
  secretKey: string;
  environment: string;
  value: string;
  /** Canonical entries (the schema parses them). */
  allowedHosts: string[];
  expiresAt?: string | null;
}

export async function createToolSecret(ctx: CoreContext, principal: Principal, input: CreateToolSecretInput): Promise<ToolSecretDoc> {
  const project = await requireVisibleProject(ctx, principal, input.projectId);
  requireEnvironment(principal, input.environment);
  const ring = requireMasterKeys(ctx);
  const expiresAt = assertFuture(input.expiresAt) ?? null;
  const place = { tenantId: project.tenantId, projectId: project._id, toolName: input.toolName, secretKey: input.secretKey, environment: input.environment };
  const value = await sealToolSecret(ctx.models.TenantDataKey, ring, place, input.value);
  let doc: ToolSecretDoc;
  try {
    doc = (await ctx.models.ToolSecret.create({ ...place, version: 1, expiresAt, allowedHosts: input.allowedHosts, value })).toObject();
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    throw new DomainError('CONFLICT', `A secret "${input.secretKey}" for tool "${input.toolName}" in environment "${input.environment}" already exists in this project; rotate it with PUT /api/tool-secrets/:id`);
  }
  await audit(ctx, principal, 'create', doc);
  return doc;
}

/** The secret if it is this tenant's (and in a bound key's project), else 404. */
async function requireSecret(ctx: CoreContext, principal: Principal, id: string): Promise<ToolSecretDoc> {
  const doc = await findOwned(ctx.models.ToolSecret, id, {
    tenantId: principal.tenantId,
    ...(principal.projectId ? { projectId: principal.projectId } : {}),
  });
  // A secret of an environment the key is not bound to is not visible to it, like another project's.
  if (!doc || !canActInEnvironment(principal, doc.environment)) throw DomainError.notFound('Tool secret');
  return doc;
}

export interface UpdateToolSecretInput {
  /** A new value: stored re-encrypted, version + 1 (a rotation). */
  value?: string;
  /** New allowed hosts, canonical (the schema parses them). */
  allowedHosts?: string[];
  expiresAt?: string | null;
}

/** Rotates the value and/or replaces the allowed hosts; only a new value adds to the version. */
export async function rotateToolSecret(ctx: CoreContext, principal: Principal, id: string, input: UpdateToolSecretInput): Promise<ToolSecretDoc> {
  const ring = input.value !== undefined ? requireMasterKeys(ctx) : null;
  const current = await requireSecret(ctx, principal, id);
  const expiresAt = assertFuture(input.expiresAt);
  const value = ring && input.value !== undefined ? await sealToolSecret(ctx.models.TenantDataKey, ring, current, input.value) : undefined;
  const set = {
    ...(value ? { value } : {}),
    ...(input.allowedHosts ? { allowedHosts: input.allowedHosts } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
  const doc = await ctx.models.ToolSecret.findOneAndUpdate(
    { _id: current._id, tenantId: current.tenantId },
    { $set: set, ...(value ? { $inc: { version: 1 } } : {}) },
    { new: true, lean: true },
  );
  // Deleted between the read and the update.
  if (!doc) throw DomainError.notFound('Tool secret');
  await audit(ctx, principal, value ? 'rotate' : 'update', doc);
  return doc;
}

export async function deleteToolSecret(ctx: CoreContext, principal: Principal, id: string): Promise<void> {
  const doc = await requireSecret(ctx, principal, id);
  const removed = await ctx.models.ToolSecret.deleteOne({ _id: doc._id, tenantId: doc.tenantId });
  if (removed.deletedCount === 0) throw DomainError.notFound('Tool secret');
  await audit(ctx, principal, 'delete', doc);
}
