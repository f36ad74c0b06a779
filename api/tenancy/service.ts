// Tenant management: tenants, projects, users and API keys. Used by the admin routes, the
// admin CLI and the dev seed, so all three behave the same.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../../lib/errors';
import { hashPassword, sha256Hex } from '../../lib/crypto';
import { newApiKey, slugify } from '../../lib/ids';
import { type Permission } from '../../lib/permissions';
import { type Models } from '../../db/models';

function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000;
}

export async function createTenant(models: Models, input: { name: string; slug?: string }) {
  const slug = input.slug ?? slugify(input.name);
  try {
    return (await models.Tenant.create({ name: input.name, slug })).toObject();
  } catch (err) {
    if (isDuplicateKey(err)) throw new ApiError('CONFLICT', `A tenant with slug "${slug}" already exists`);
    throw err;
  }
}

export async function createProject(
  models: Models,
  tenantId: string,
  input: { name: string; slug?: string; description?: string | null },
) {
  const slug = input.slug ?? slugify(input.name);
  try {
    return (
      await models.Project.create({ tenantId, name: input.name, slug, description: input.description ?? null })
    ).toObject();
  } catch (err) {
    if (isDuplicateKey(err)) throw new ApiError('CONFLICT', `A project with slug "${slug}" already exists in this tenant`);
    throw err;
  }
}

export async function createUser(
  models: Models,
  tenantId: string,
  input: { email: string; password: string; name?: string | null; permissions: Permission[] },
) {
  const passwordHash = await hashPassword(input.password);
  try {
    const user = await models.User.create({
      tenantId,
      email: input.email,
      name: input.name ?? null,
      passwordHash,
      permissions: input.permissions,
    });
    const { passwordHash: _omit, ...safe } = user.toObject();
    return safe;
  } catch (err) {
    if (isDuplicateKey(err)) throw new ApiError('CONFLICT', `A user with email "${input.email}" already exists`);
    throw err;
  }
}

export interface CreateApiKeyInput {
  name: string;
  projectId?: string | null;
  permissions: Permission[];
  expiresAt?: Date | null;
  createdBy?: string | null;
}

/** Creates a key; the plain key is returned once and only its hash is stored. */
export async function createApiKey(models: Models, tenantId: string, input: CreateApiKeyInput) {
  if (input.projectId) {
    const project = await models.Project.exists({ _id: input.projectId, tenantId });
    if (!project) throw ApiError.notFound('Project');
  }
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) {
    // Well formed, but unusable now: a 422, since whether it is past depends on the clock.
    throw new ApiError('UNPROCESSABLE_ENTITY', 'body.expiresAt: must be in the future');
  }
  const key = newApiKey();
  const doc = await models.ApiKey.create({
    tenantId,
    projectId: input.projectId ?? null,
    name: input.name,
    keyHash: sha256Hex(key),
    keyPrefix: key.slice(0, 8),
    permissions: input.permissions,
    expiresAt: input.expiresAt ?? null,
    createdBy: input.createdBy ?? null,
  });
  return { key, apiKey: doc.toObject() };
}

/**
 * Revokes a key, then waits `inForceAfterMs` (the API processes' API_KEY_CACHE_MS) before it
 * returns: by then no API process answers for the key from a read older than the revocation
 * (api/middleware/auth.ts), so every request that starts after this returns is refused.
 */
export async function revokeApiKey(models: Models, tenantId: string, keyId: string, inForceAfterMs: number) {
  // Idempotent: revoking twice keeps the first revocation time (and waits again, in case the
  // first call was cut off before its wait was over).
  await models.ApiKey.updateOne({ _id: keyId, tenantId, revokedAt: null }, { $set: { revokedAt: new Date() } });
  const doc = await models.ApiKey.findOne({ _id: keyId, tenantId }).lean();
  if (!doc) throw ApiError.notFound('API key');
  if (inForceAfterMs > 0) await sleep(inForceAfterMs);
  return doc;
}
