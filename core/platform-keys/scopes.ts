// Scopes of an app and the platform keys bound to them: create, read, change, delete. A change
// to a scope or a key's deletion waits API_KEY_CACHE_MS before it returns, like a revocation, so
// it is in force on every API process once it has returned (api/middleware/auth.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError } from '../../lib/errors';
import { grantsToPermissionObject } from '../../lib/api-scopes';
import { type ApiScopeDoc } from '../../db/api-scope';
import { type ApiKeyDoc } from '../../db/api-key';
import { isDuplicateKey } from '../../db/duplicate-key';
import { type ProjectDoc } from '../../db/project';
import { type Models } from '../../db/models';
import { type CoreContext } from '../context';
import { type Principal } from '../../lib/permissions';
import { deleteApiKey } from '../tenancy/accounts';
import { requireKeyWithinReach } from './bounds';

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

export const presentScope = (s: ApiScopeDoc) => ({
  scope_id: s._id,
  scope_name: s.name,
  description: s.description ?? '',
  app_id: s.projectId,
  created_at: iso(s.createdAt)!,
  permissions: grantsToPermissionObject(s.grants),
});

export const presentPlatformKey = (k: ApiKeyDoc, scope: ApiScopeDoc, lastUsed?: Date) => ({
  key_id: k._id,
  key_name: k.name,
  scope_name: scope.name,
  scope_id: scope._id,
  app_id: scope.projectId,
  environments: k.environments ?? [],
  expires_at: iso(k.expiresAt),
  key_prefix: k.keyPrefix,
  created_at: iso(k.createdAt)!,
  last_used_at: iso(lastUsed ?? k.lastUsedAt),
});

/** Applies `YES`/`NO` to a set of granted names. */
function applyPermissions(grants: Iterable<string>, permissions: Record<string, 'YES' | 'NO' | undefined>): string[] {
  const out = new Set(grants);
  for (const [name, value] of Object.entries(permissions)) {
    if (value === 'YES') out.add(name);
    else if (value === 'NO') out.delete(name);
  }
  return [...out].sort();
}

export async function findScope(ctx: CoreContext, app: ProjectDoc, scopeId: string): Promise<ApiScopeDoc> {
  const scope = await ctx.models.ApiScope.findOne({ _id: scopeId, tenantId: app.tenantId, projectId: app._id }).lean();
  if (!scope) throw DomainError.notFound('Scope');
  return scope;
}

export async function createScope(
  models: Models,
  app: Pick<ProjectDoc, '_id' | 'tenantId'>,
  input: { name: string; description?: string; permissions?: Record<string, 'YES' | 'NO' | undefined> },
): Promise<ApiScopeDoc> {
  try {
    const doc = await models.ApiScope.create({
      tenantId: app.tenantId,
      projectId: app._id,
      name: input.name,
      description: input.description ?? '',
      grants: applyPermissions([], input.permissions ?? {}),
    });
    return doc.toObject();
  } catch (err) {
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `A scope named "${input.name}" already exists in this app`);
    throw err;
  }
}

/**
 * Narrows a scope: the names set NO are removed (others keep their value), then this waits until
 * every API process sees it. A scope is never widened here: a name set YES must be granted
 * already (403 otherwise), and is left as it is. The removal is one atomic `$pullAll`, never a
 * rewrite of the whole list, so two concurrent changes cannot put back what the other removed.
 */
export async function updateScope(
  ctx: CoreContext,
  scope: ApiScopeDoc,
  input: { permissions: Record<string, 'YES' | 'NO' | undefined>; description?: string },
): Promise<ApiScopeDoc> {
  const entries = Object.entries(input.permissions);
  const added = entries.filter(([name, v]) => v === 'YES' && !scope.grants.includes(name)).map(([name]) => name);
  if (added.length > 0) throw new DomainError('FORBIDDEN', `A key cannot widen its own scope; the scope does not grant ${added.join(', ')}`);
  const removed = entries.filter(([, v]) => v === 'NO').map(([name]) => name);
  const update = {
    ...(removed.length > 0 ? { $pullAll: { grants: removed } } : {}),
    ...(input.description !== undefined ? { $set: { description: input.description } } : {}),
  };
  const filter = { _id: scope._id, tenantId: scope.tenantId };
  const updated = Object.keys(update).length > 0
    ? await ctx.models.ApiScope.findOneAndUpdate(filter, update, { new: true }).lean()
    : await ctx.models.ApiScope.findOne(filter).lean();
  if (!updated) throw DomainError.notFound('Scope');
  await waitForEveryProcess(ctx);
  return updated;
}

/** Deletes the scope and every key of it (in force everywhere when this returns); the keys' count. */
export async function deleteScope(ctx: CoreContext, scope: ApiScopeDoc): Promise<number> {
  const { deletedCount } = await ctx.models.ApiKey.deleteMany({ tenantId: scope.tenantId, scopeId: scope._id });
  await ctx.models.ApiKeyClaim.deleteMany({ tenantId: scope.tenantId, scopeId: scope._id });
  await ctx.models.ApiScope.deleteOne({ _id: scope._id, tenantId: scope.tenantId });
  await waitForEveryProcess(ctx);
  return deletedCount ?? 0;
}

/**
 * An API process answers for a key from what it read within API_KEY_CACHE_MS; waiting that long
 * after the write means every read any process answers from began after it.
 */
async function waitForEveryProcess(ctx: CoreContext): Promise<void> {
  if (ctx.config.API_KEY_CACHE_MS > 0) await sleep(ctx.config.API_KEY_CACHE_MS);
}

/** `30_days`, `90_days`, `never` or a date-time: the key's expiry. */
export function expiryOf(expiry: string, now = Date.now()): Date | null {
  if (expiry === 'never') return null;
  if (expiry === '30_days') return new Date(now + 30 * 86_400_000);
  if (expiry === '90_days') return new Date(now + 90 * 86_400_000);
  return new Date(expiry);
}

/**
 * Revokes (deletes) a platform key of the principal's tenant, and of its project when the
 * principal is bound to one: 404 when there is none, 403 when the key is beyond the principal's
 * reach (bounds.ts `requireKeyWithinReach`). In force on every API process when it returns.
 */
export async function deletePlatformKey(ctx: CoreContext, principal: Principal, keyId: string): Promise<{ projectId: string | null; scopeId: string | null }> {
  const filter = { _id: keyId, tenantId: principal.tenantId, ...(principal.projectId ? { projectId: principal.projectId } : {}) };
  const existing = await ctx.models.ApiKey.findOne(filter, { _id: 1, projectId: 1, scopeId: 1, permissions: 1, environments: 1 }).lean();
  if (!existing) throw DomainError.notFound('API key');
  const scope = existing.scopeId ? await ctx.models.ApiScope.findOne({ _id: existing.scopeId, tenantId: principal.tenantId }, { grants: 1 }).lean() : null;
  requireKeyWithinReach(principal, existing, existing.scopeId ? (scope?.grants ?? []) : null);
  await deleteApiKey(ctx.models, principal.tenantId, keyId, ctx.config.API_KEY_CACHE_MS);
  return { projectId: existing.projectId ?? null, scopeId: existing.scopeId ?? null };
}
