// Request and response schemas of the platform key and scope routes under /api/public.
import { z } from 'zod';
import { SCOPE_GRANT_NAMES } from '../../lib/api-scopes';
import '../openapi/registry';
import { trimmedText, ZDateTime, ZLimitQuery, ZOffsetQuery } from '../http/schemas';
import { KEY_ENVIRONMENTS } from '../../core/platform-keys/environments';

export const ZMeta = z
  .object({
    requestId: z.string().describe('`tr-` id correlating this response with the platform logs'),
    timestamp: z.string().describe('When the response was made (ISO 8601)'),
  })
  .openapi('PublicMeta');

const ZYesNo = z.enum(['YES', 'NO']);

/**
 * Only names of the catalogue (lib/api-scopes.ts), each optional: a strict object, so the document
 * states exactly which names exist and an unknown one is a 400 that names it.
 */
export const ZScopePermissions = z
  .strictObject(Object.fromEntries(SCOPE_GRANT_NAMES.map((name) => [name, ZYesNo.optional()])) as Record<string, z.ZodOptional<typeof ZYesNo>>)
  .describe('Permission name (`APP_VIEW` … `SESSIONS_LIST`, or an operation scope such as `outbound_calls.read`) to `YES` or `NO`');

export const ZScope = z
  .object({
    scope_id: z.string().describe('`as-` id'),
    scope_name: z.string(),
    description: z.string(),
    app_id: z.string().describe('The app (project id) the scope belongs to'),
    created_at: z.string(),
    permissions: z.record(z.string(), ZYesNo).describe('Every permission name, `YES` or `NO`'),
  })
  .openapi('Scope');

export const ZAppParam = z.object({ appId: z.string().min(1).max(64).describe('The app id: a project id') });
export const ZScopeParams = ZAppParam.extend({ scopeId: z.string().min(1).max(80).describe('`as-` scope id') });
export const ZPublicKeyIdParam = z.object({ keyId: z.string().min(1).max(80).describe('`ak-` key id') });

export const ZKeyEnvironment = z.enum(KEY_ENVIRONMENTS);

export const ZCreatePlatformKeyRequest = z.object({
  scope_name: trimmedText(200).describe('The scope the key belongs to; it must exist in the app'),
  api_key_name: trimmedText(200).describe('Unique within the scope'),
  app_id: z.string().min(1).max(64).optional().describe("The app; defaults to the calling key's app (required for a key bound to no app)"),
  environments: z
    .array(ZKeyEnvironment)
    .min(1)
    .max(KEY_ENVIRONMENTS.length)
    .optional()
    .describe("Environments the key may act in, within the calling key's; when omitted, the calling key's (all for a key bound to none)"),
  expiry: z
    .union([z.enum(['30_days', '90_days', 'never']), ZDateTime])
    .optional()
    .describe(
      '`30_days`, `90_days`, `never` or an ISO 8601 date-time in the future, no later than the calling key expires; ' +
        "when omitted, the calling key's expiry (`never` for a key that has none)",
    ),
});

export const ZPlatformKey = z
  .object({
    apikey: z.string().describe('The key (`abl_` + 48 hex). Returned only here, once'),
    key_id: z.string().describe('`ak-` id'),
    key_name: z.string(),
    scope_name: z.string(),
    scope_id: z.string(),
    app_id: z.string(),
    environments: z.array(z.string()).describe('Empty: every environment'),
    expires_at: z.string().nullable(),
  })
  .openapi('PlatformKeyCreated');

export const ZPlatformKeyListItem = ZPlatformKey.omit({ apikey: true })
  .extend({ key_prefix: z.string(), created_at: z.string(), last_used_at: z.string().nullable() })
  .openapi('PlatformKey');

export const ZCreateScopeRequest = z.object({
  scope_name: trimmedText(200).describe('Unique within the app'),
  description: z.string().max(2000).optional(),
  permissions: ZScopePermissions.optional().describe('Names not given are `NO`'),
});

export const ZUpdateScopeRequest = z.object({
  permissions: ZScopePermissions.describe('Names given are set; names not given keep their value'),
  description: z.string().max(2000).optional(),
});

export const ZPageQuery = z.object({ limit: ZLimitQuery, offset: ZOffsetQuery });
