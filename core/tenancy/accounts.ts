// Tenant management: tenants, projects, users and API keys. Used by the admin routes, the
// admin CLI and the dev seed, so all three behave the same.
import { setTimeout as sleep } from 'node:timers/promises';
import { DomainError } from '../../lib/errors';
import { hashPassword, sha256Hex } from '../../lib/crypto';
import { newApiKey, newId, slugify } from '../../lib/ids';
import { type Permission, type Principal } from '../../lib/permissions';
import { type Models } from '../../db/models';
import { boundedEnvironments, boundedExpiry, requireGrantsHeld, requirePermissionsHeld } from '../platform-keys/bounds';
import { isDuplicateKey } from '../../db/duplicate-key';

export async function createTenant(models: Models, input: { name: string; slug?: string }) {
  const slug = input.slug ?? slugify(input.name);
  try {
    return (await models.Tenant.create({ name: input.name, slug })).toObject();
  } catch (err) {
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `A tenant with slug "${slug}" already exists`);
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
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `A project with slug "${slug}" already exists in this tenant`);
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
    if (isDuplicateKey(err)) throw new DomainError('CONFLICT', `A user with email "${input.email}" already exists`);
    throw err;
  }
}

export interface CreateApiKeyInput {
  name: string;
  projectId?: string | null;
  /** A permission-style key's permissions; a scoped key takes its scope's instead. */
  permissions?: Permission[];
  /** The scope (`as-` id) the key belongs to; it binds the key to the scope's project. */
  scopeId?: string | null;
  /** Environments the key may act in; empty or absent means all (or, with an `issuer` bound to some, its own). */
  environments?: readonly string[];
  /** null: never; absent: never (or, with an `issuer` that expires, its expiry). */
  expiresAt?: Date | null;
  createdBy?: string | null;
  /**
   * The credential making the key, when a request does: the key then holds no more than it does
   * (core/platform-keys/bounds.ts). Absent for the operator (CLI, tenant creation, seed).
   */
  issuer?: Principal;
}

/** Most keys one scope holds (docs/public-api.md "Limits"). */
export const KEYS_PER_SCOPE = 20;
/** A claim this old whose key does not exist was left by a create that died half-way. */
const STALE_CLAIM_MS = 60_000;

/** Creates a key; the plain key is returned once and only its hash is stored. */
export async function createApiKey(models: Models, tenantId: string, input: CreateApiKeyInput) {
  let projectId = input.projectId ?? null;
  let permissions: Permission[] = input.permissions ?? [];
  let scopeGrants: string[] | null = null;
  if (input.scopeId) {
    const scope = await models.ApiScope.findOne({ _id: input.scopeId, tenantId }).lean();
    if (!scope || (projectId && projectId !== scope.projectId)) throw DomainError.notFound('Scope');
    projectId = scope.projectId;
    permissions = [];
    scopeGrants = scope.grants;
  } else if (permissions.length === 0) {
    throw new DomainError('UNPROCESSABLE_ENTITY', 'body.permissions: a key needs permissions or a scope');
  }
  if (projectId) {
    const project = await models.Project.exists({ _id: projectId, tenantId });
    if (!project) throw DomainError.notFound('Project');
  }
  const { issuer } = input;
  // A project-bound credential sees no other project, and makes no tenant-wide key.
  if (issuer?.projectId && projectId !== issuer.projectId) throw DomainError.notFound(input.scopeId ? 'Scope' : 'Project');
  if (issuer && scopeGrants) requireGrantsHeld(issuer, scopeGrants, 'A key of this scope');
  if (issuer && !input.scopeId) requirePermissionsHeld(issuer, permissions, 'The key');
  const environments = issuer ? boundedEnvironments(issuer, input.environments) : [...new Set(input.environments ?? [])];
  const expiresAt = issuer ? boundedExpiry(issuer, input.expiresAt) : (input.expiresAt ?? null);
  if (expiresAt && expiresAt.getTime() <= Date.now()) {
    // Well formed, but unusable now: a 422, since whether it is past depends on the clock.
    throw new DomainError('UNPROCESSABLE_ENTITY', 'body.expiresAt: must be in the future');
  }
  const key = newApiKey();
  const keyId = `ak-${newId()}`;
  if (input.scopeId) await claimScopePlaces(models, tenantId, input.scopeId, keyId, input.name);
  try {
    const doc = await models.ApiKey.create({
      _id: keyId,
      tenantId,
      projectId,
      name: input.name,
      keyHash: sha256Hex(key),
      keyPrefix: key.slice(0, 8),
      permissions,
      scopeId: input.scopeId ?? null,
      environments,
      expiresAt,
      createdBy: input.createdBy ?? null,
    });
    return { key, apiKey: doc.toObject() };
  } catch (err) {
    await models.ApiKeyClaim.deleteMany({ keyId });
    throw err;
  }
}

async function insertClaim(models: Models, claim: { _id: string; tenantId: string; scopeId: string; keyId: string }): Promise<boolean> {
  try {
    await models.ApiKeyClaim.create(claim);
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
}

/** Drops the scope's claims whose key never came to exist (a create that died between the two writes). */
async function dropStaleClaims(models: Models, scopeId: string): Promise<void> {
  const claims = await models.ApiKeyClaim.find({ scopeId, createdAt: { $lt: new Date(Date.now() - STALE_CLAIM_MS) } }).lean();
  if (claims.length === 0) return;
  const live = new Set((await models.ApiKey.find({ scopeId }, { _id: 1 }).lean()).map((k) => k._id));
  const stale = claims.filter((c) => !live.has(c.keyId)).map((c) => c._id);
  if (stale.length > 0) await models.ApiKeyClaim.deleteMany({ _id: { $in: stale } });
}

/**
 * Claims the key's name in the scope (409 when another key has it) and one of the scope's
 * KEYS_PER_SCOPE slots (429 when all are taken). Each claim is a document addressed by `_id`, so
 * two concurrent creates can never both win one: the rules hold without transactions.
 */
async function claimScopePlaces(models: Models, tenantId: string, scopeId: string, keyId: string, name: string): Promise<void> {
  await dropStaleClaims(models, scopeId);
  const claim = { tenantId, scopeId, keyId };
  if (!(await insertClaim(models, { ...claim, _id: `name:${scopeId}:${name}` }))) {
    throw new DomainError('CONFLICT', `A key named "${name}" already exists in this scope`);
  }
  const taken = new Set((await models.ApiKeyClaim.find({ scopeId }, { _id: 1 }).lean()).map((c) => c._id));
  for (let slot = 0; slot < KEYS_PER_SCOPE; slot++) {
    const id = `slot:${scopeId}:${slot}`;
    if (!taken.has(id) && (await insertClaim(models, { ...claim, _id: id }))) return;
  }
  await models.ApiKeyClaim.deleteMany({ keyId });
  throw new DomainError('KEY_LIMIT_REACHED', `This scope already holds ${KEYS_PER_SCOPE} keys, the most it may; delete one first`);
}

/**
 * Deletes a key for good (the public key API's revocation), then waits `inForceAfterMs` like
 * `revokeApiKey`, so once this returns no API process answers for the key any more.
 */
export async function deleteApiKey(models: Models, tenantId: string, keyId: string, inForceAfterMs: number): Promise<void> {
  await models.ApiKey.deleteOne({ _id: keyId, tenantId });
  await models.ApiKeyClaim.deleteMany({ keyId, tenantId });
  if (inForceAfterMs > 0) await sleep(inForceAfterMs);
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
  // A revoked scoped key gives its name and its place in the scope's limit back.
  await models.ApiKeyClaim.deleteMany({ keyId, tenantId });
  const doc = await models.ApiKey.findOne({ _id: keyId, tenantId }).lean();
  if (!doc) throw DomainError.notFound('API key');
  if (inForceAfterMs > 0) await sleep(inForceAfterMs);
  return doc;
}
