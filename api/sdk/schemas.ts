// Zod schemas of the public widget key routes and the SDK bootstrap (docs/widget.md).
import { z } from 'zod';
import { ZProjectIdParam } from '../http/schemas';
import { KEY_ENVIRONMENTS } from '../../core/platform-keys/environments';

/** Most origins one key may list. */
export const MAX_ALLOWED_ORIGINS = 50;

/**
 * An origin as a browser sends it: `scheme://host[:port]`, http or https, lower case, no path,
 * no trailing slash (`new URL(x).origin` gives back the same text).
 */
const ORIGIN_MESSAGE = 'must be an origin such as https://shop.example.com (scheme, host and port only, lower case, no path or trailing slash)';
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const PORT = '(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
/**
 * The shape the OpenAPI document states: a lower-case host name whose last label starts with a
 * letter (so it is never read as a number) or a dotted IPv4 address, and an optional port.
 */
export const ORIGIN_PATTERN = new RegExp(`^https?://(?:(?:${LABEL}\\.)*[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?|${OCTET}(?:\\.${OCTET}){3})(?::${PORT})?$`);

export const ZOrigin = z
  .string()
  .max(300)
  .regex(ORIGIN_PATTERN, ORIGIN_MESSAGE)
  .refine((value) => {
    try {
      const url = new URL(value);
      // A default port (`:443`, `:80`) is the same origin written longer; browsers send it without.
      const origin = url.origin;
      return (url.protocol === 'https:' || url.protocol === 'http:') && (origin === value || `${origin}:${url.protocol === 'https:' ? 443 : 80}` === value);
    } catch {
      return false;
    }
  }, ORIGIN_MESSAGE);

export const ZCreatePublicKeyRequest = z
  .object({
    name: z.string().trim().min(1).max(200),
    allowedOrigins: z.array(ZOrigin).min(1).max(MAX_ALLOWED_ORIGINS).describe('Pages allowed to use the key; at least one'),
    environment: z.enum(KEY_ENVIRONMENTS).default('production').describe('Environment the chats started through the key run in'),
  })
  .strict();

export const ZPublicKeyParams = ZProjectIdParam.extend({ keyId: z.string().min(1).max(100) });

export const ZPublicKey = z.object({
  id: z.string(),
  projectId: z.string(),
  name: z.string(),
  keyPrefix: z.string(),
  allowedOrigins: z.array(z.string()),
  environment: z.string(),
  permissions: z.array(z.literal('chat')),
  status: z.enum(['active', 'revoked']),
  revokedAt: z.string().nullable(),
  createdAt: z.string(),
});

export const ZCreatedPublicKeyResponse = z.object({
  success: z.literal(true),
  publicKey: ZPublicKey.extend({
    key: z.string().describe('The key (`pk_…`); shown only now'),
    identitySecret: z.string().describe("Your backend signs user assertions with it (`pkis_…`); keep it on the server; shown only now"),
  }),
});
export const ZPublicKeyResponse = z.object({ success: z.literal(true), publicKey: ZPublicKey });
export const ZPublicKeyListResponse = z.object({ success: z.literal(true), publicKeys: z.array(ZPublicKey) });

export const ZSdkInitRequest = z
  .object({
    projectId: z.string().min(1).max(100),
    userAssertion: z.string().min(1).max(8192).optional().describe("The customer's backend's signed user assertion (docs/widget.md); without it the end user is anonymous"),
  })
  .strict();

export const ZSdkInitResponse = z.object({
  success: z.literal(true),
  token: z.string().describe('Send as X-SDK-Token'),
  expiresAt: z.string(),
  endUserId: z.string(),
  identified: z.boolean(),
  projectId: z.string(),
  environment: z.string(),
});

export const ZSdkConfigResponse = z.object({
  success: z.literal(true),
  config: z.object({
    projectId: z.string(),
    environment: z.string(),
    entryAgent: z.object({ id: z.string(), name: z.string() }).nullable(),
    greeting: z.string().nullable(),
    theme: z.record(z.string(), z.string()),
    voice: z.object({ enabled: z.boolean() }),
    uploads: z.object({ enabled: z.boolean(), maxFileBytes: z.number().int(), maxFilesPerSession: z.number().int(), allowedMimeTypes: z.array(z.string()) }),
  }),
});

export const ZIdentitySecretResponse = z.object({ success: z.literal(true), keyId: z.string(), identitySecret: z.string() });
