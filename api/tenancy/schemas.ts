// Request and response schemas of the tenant-management routes.
import { z } from 'zod';
import { PERMISSIONS } from '../../lib/permissions';
import '../openapi/registry';
import { trimmedText, ZDateTime, ZEmail } from '../http/schemas';
import { KEY_ENVIRONMENTS } from '../../core/platform-keys/environments';

const ZSlug = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'must be lowercase letters, digits and single dashes');

export const ZPermission = z.enum(PERMISSIONS).describe('A permission; `admin` implies all others');

export const ZCreateTenantRequestSchema = z.object({
  name: trimmedText(200).describe('Display name'),
  slug: ZSlug.optional().describe('Unique slug; derived from the name when omitted'),
});

export const ZTenantSchema = z
  .object({ id: z.string(), name: z.string(), slug: z.string(), createdAt: z.string() })
  .openapi('Tenant');

export const ZProjectSchema = z
  .object({
    id: z.string().describe('CUID'),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Project');

export const ZCreateProjectRequestSchema = z.object({
  name: trimmedText(200),
  slug: ZSlug.optional(),
  description: z.string().max(2000).nullable().optional(),
});

export const ZCreateUserRequestSchema = z.object({
  email: ZEmail,
  password: z.string().min(12, 'must be at least 12 characters').max(256),
  name: z.string().max(200).nullable().optional(),
  permissions: z.array(ZPermission).min(1).max(PERMISSIONS.length),
});

export const ZUserSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    permissions: z.array(z.string()),
    createdAt: z.string(),
  })
  .openapi('User');

export const ZCreateApiKeyRequestSchema = z.object({
  name: trimmedText(200).describe('A label to tell keys apart'),
  projectId: z.string().min(1).max(64).nullable().optional().describe('Bind the key to one project'),
  permissions: z
    .array(ZPermission)
    .min(1)
    .max(PERMISSIONS.length)
    .optional()
    .describe('A permission-style key: these permissions. Give either `permissions` or `scopeId`'),
  scopeId: z.string().min(1).max(80).optional().describe("A scoped key: the scope (`as-` id) whose permissions it holds; binds it to the scope's project"),
  environments: z
    .array(z.enum(KEY_ENVIRONMENTS))
    .min(1)
    .max(KEY_ENVIRONMENTS.length)
    .optional()
    .describe("Environments the key may act in, within the calling key's; when omitted, the calling key's (all for a key bound to none)"),
  expiresAt: ZDateTime.nullable()
    .optional()
    .describe("ISO 8601; the key stops working then, no later than the calling key does. Omitted: the calling key's expiry; null: never (refused from a key that expires)"),
});

export const ZApiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    keyPrefix: z.string().describe('First characters of the key, for recognition'),
    projectId: z.string().nullable(),
    permissions: z.array(z.string()).describe("A scoped key's is empty: it holds its scope's"),
    scopeId: z.string().nullable().describe('The scope (`as-` id) of a scoped key'),
    environments: z.array(z.string()).describe('Environments the key may act in; empty means all'),
    expiresAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
    lastUsedAt: z.string().nullable(),
    createdAt: z.string(),
  })
  .openapi('ApiKey');

export const ZKeyIdParam = z.object({ keyId: z.string().min(1).max(64) });
