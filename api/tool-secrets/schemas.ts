// Zod schemas of the tool-secret routes (docs/secrets.md): the spec's fields and limits.
import { z } from 'zod';
import '../openapi/registry';
import { queryInt, trimmedText, ZDateTime, ZLimitQuery } from '../http/schemas';
import { ALLOWED_HOST_PATTERN, ALLOWED_HOSTS_MAX, parseAllowedHost, parseAllowedHosts } from '../../lib/net/allowed-hosts';

export const TOOL_SECRET_NAME_MAX = 256;
export const TOOL_SECRET_VALUE_MAX = 16_384;

const ZProjectId = z.string().min(1).max(64).describe('Project id');
const ZEnvironment = trimmedText(64).describe('Environment the secret is for, e.g. dev, staging, production');
const ZValue = z.string().min(1).max(TOOL_SECRET_VALUE_MAX).describe('The secret; stored encrypted and never returned');
const ZAllowedHosts = z
  .array(
    z
      .string()
      .max(260)
      .regex(ALLOWED_HOST_PATTERN, 'must be a host name or IPv4 address with an optional :port (e.g. api.example.com, api.example.com:8443, 203.0.113.7)')
      // The pattern is the rule; the parser is asked too, so that the transform below cannot throw.
      .superRefine((entry, ctx) => {
        if (!ALLOWED_HOST_PATTERN.test(entry)) return;
        try {
          parseAllowedHost(entry);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
        }
      }),
  )
  .min(1, 'list at least one host the secret may be sent to')
  .max(ALLOWED_HOSTS_MAX)
  .transform((entries) => parseAllowedHosts(entries))
  .describe(
    'The hosts the value may be sent to: host (its scheme\'s default port, 443 for https) or host:port, e.g. api.example.com, api.example.com:8443. ' +
      'A tool call that would send the secret anywhere else fails (TOOL_SECRET_DESTINATION_NOT_ALLOWED)',
  );
const ZExpiresAt = ZDateTime.nullable().describe('After this instant the secret is no longer resolved at runtime; must be in the future');

export const ZCreateToolSecretRequest = z
  .object({
    projectId: ZProjectId,
    toolName: trimmedText(TOOL_SECRET_NAME_MAX).describe('The ABL tool that uses it, or * for every tool of the project'),
    secretKey: trimmedText(TOOL_SECRET_NAME_MAX).describe('The NAME a tool writes as {{secrets.NAME}}'),
    value: ZValue,
    allowedHosts: ZAllowedHosts,
    environment: ZEnvironment.default('dev'),
    expiresAt: ZExpiresAt.optional(),
  })
  .strict()
  .openapi('CreateToolSecretRequest');

export const ZRotateToolSecretRequest = z
  .object({
    value: ZValue.optional().describe('A new value (version + 1); omitted keeps the value, to change only allowedHosts'),
    allowedHosts: ZAllowedHosts.optional().describe('Replaces the hosts the value may be sent to; omitted keeps them'),
    expiresAt: ZExpiresAt.optional().describe('Optional: a new expiry (null for none); omitted keeps the current one'),
  })
  .strict()
  .refine((body) => body.value !== undefined || body.allowedHosts !== undefined, { message: 'give value, allowedHosts or both', path: ['value'] })
  // Said in the document too, so a client (and the fuzzer) knows one of them is needed.
  .openapi('RotateToolSecretRequest', { anyOf: [{ required: ['value'] }, { required: ['allowedHosts'] }] });

export const ZToolSecretIdParam = z.object({ id: z.string().min(1).max(64).describe('Tool secret id') });

export const ZListToolSecretsQuery = z.object({
  projectId: ZProjectId,
  toolName: z.string().min(1).max(TOOL_SECRET_NAME_MAX).optional().describe('Only this tool name'),
  environment: z.string().min(1).max(64).optional().describe('Only this environment'),
  page: queryInt(1, 1_000_000, 1).describe('Page number, from 1'),
  limit: ZLimitQuery,
});

export const ZListToolSecretAuditQuery = z.object({
  secretId: z.string().min(1).max(64).optional().describe('Only the records of this secret'),
  page: queryInt(1, 1_000_000, 1).describe('Page number, from 1'),
  limit: ZLimitQuery,
});

const secretFields = {
  id: z.string(),
  toolName: z.string(),
  secretKey: z.string(),
  environment: z.string(),
  version: z.number().int().min(1),
  expiresAt: z.string().nullable(),
  allowedHosts: z.array(z.string()).describe('Where the value may be sent; empty for a secret stored before secrets named their hosts, which is sent nowhere until they are set'),
};

export const ZToolSecret = z
  .object({ ...secretFields, createdAt: z.string(), updatedAt: z.string() })
  .openapi('ToolSecret', { description: 'Metadata of a tool secret; the value is never returned' });

export const ZCreatedToolSecretResponse = z.object({
  success: z.literal(true),
  secret: z.object({ ...secretFields, createdAt: z.string() }).openapi('CreatedToolSecret'),
});

export const ZRotatedToolSecretResponse = z.object({
  success: z.literal(true),
  secret: z
    .object({
      id: z.string(),
      toolName: z.string(),
      secretKey: z.string(),
      environment: z.string(),
      version: z.number().int().min(1),
      allowedHosts: z.array(z.string()),
      updatedAt: z.string(),
    })
    .openapi('RotatedToolSecret'),
});

export const ZListToolSecretsResponse = z.object({
  success: z.literal(true),
  secrets: z.array(ZToolSecret),
  total: z.number().int().min(0),
  page: z.number().int().min(1),
  limit: z.number().int().min(1),
});

export const ZToolSecretAuditRecord = z
  .object({
    id: z.string(),
    action: z.enum(['create', 'rotate', 'update', 'delete']).describe('update: the allowed hosts changed, the value did not'),
    secretId: z.string(),
    toolName: z.string(),
    secretKey: z.string(),
    environment: z.string(),
    version: z.number().int().min(1).describe('The version the action produced (for delete: the last one)'),
    allowedHosts: z.array(z.string()).describe('The allowed hosts after the action (empty on records older than the field)'),
    actor: z.object({ type: z.string().describe('api_key or user_jwt'), id: z.string().describe('The API key id or the user id') }),
    at: z.string(),
  })
  .openapi('ToolSecretAuditRecord');

export const ZListToolSecretAuditResponse = z.object({
  success: z.literal(true),
  records: z.array(ZToolSecretAuditRecord),
  total: z.number().int().min(0),
  page: z.number().int().min(1),
  limit: z.number().int().min(1),
});
