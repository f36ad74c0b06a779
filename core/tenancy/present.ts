// Shapes stored documents into API objects (ids as `id`, dates as ISO strings, no secrets).
import { type ApiKeyDoc } from '../../db/api-key';
import { type ProjectDoc } from '../../db/project';
import { type TenantDoc } from '../../db/tenant';
import { type UserDoc } from '../../db/user';

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

export const presentTenant = (t: TenantDoc) => ({ id: t._id, name: t.name, slug: t.slug, createdAt: iso(t.createdAt)! });

export const presentProject = (p: ProjectDoc) => ({
  id: p._id,
  name: p.name,
  slug: p.slug,
  description: p.description ?? null,
  createdAt: iso(p.createdAt)!,
  updatedAt: iso(p.updatedAt)!,
});

export const presentUser = (u: Omit<UserDoc, 'passwordHash'>) => ({
  id: u._id,
  email: u.email,
  name: u.name ?? null,
  permissions: u.permissions,
  createdAt: iso(u.createdAt)!,
});

/** `lastUsed`: the key's time from api_key_usage, when it has one (db/api-key-usage.ts). */
export const presentApiKey = (k: ApiKeyDoc, lastUsed?: Date) => ({
  id: k._id,
  name: k.name,
  keyPrefix: k.keyPrefix,
  projectId: k.projectId ?? null,
  permissions: k.permissions,
  scopeId: k.scopeId ?? null,
  environments: k.environments ?? [],
  expiresAt: iso(k.expiresAt),
  revokedAt: iso(k.revokedAt),
  lastUsedAt: iso(lastUsed && (!k.lastUsedAt || lastUsed > k.lastUsedAt) ? lastUsed : k.lastUsedAt),
  createdAt: iso(k.createdAt)!,
});
