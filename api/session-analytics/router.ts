// Public session analytics (spec "Session analytics"): a project's session summaries for a
// platform key bound to it, by GET query or by POST body (which may be encrypted), the project's
// public key for encrypting those bodies, and a key's encryption settings under the key API.
// Answers are shaped and, per key, encrypted by ./responses.ts. docs/session-analytics.md.
import { z } from 'zod';
import { type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { hasPermission, type Principal } from '../../lib/permissions';
import { defineRoute, type AnyRoute } from '../http/route';
import { type AppContext } from '../context';
import { type ProjectDoc } from '../../db/project';
import { listSessionSummaries, MAX_PAGE_BYTES, parseSessionAnalyticsInput } from '../../core/analytics/public-sessions';
import { checkClientPublicJwk, decryptRequestBody, JWE_ALG, JWE_ENC, projectPublicJwk } from '../../core/analytics/session-encryption';
import { requireKeyWithinReach } from '../../core/platform-keys/bounds';
import { ZMeta, ZPublicKeyIdParam } from '../platform-keys/schemas';
import { metaOf } from '../platform-keys/meta';
import { encryptionOf, JOSE_JSON } from './responses';
import {
  ZAnalyticsProjectParams,
  ZFlattenedJwe,
  ZJwks,
  ZKeyEncryption,
  ZKeyEncryptionRequest,
  ZSessionAnalyticsBody,
  ZSessionAnalyticsQuery,
  ZSessionAnalyticsResponse,
} from './schemas';

const TAGS = ['Public API: session analytics'];
const PATH = '/api/public/analytics/projects/:projectId/sessions';

/** An encrypted answer's JWE overhead beyond the base64url of the plaintext (header, wrapped key up to 8192 bits, iv, tag, JSON). */
const JWE_OVERHEAD_BYTES = 4096;

const ENCRYPTION_DOC =
  'With response encryption on for the key, every answer but 401 is a flattened JWE (RSA-OAEP-256, A256GCM) to the key\'s registered public key, ' +
  '`Content-Type: application/jose+json` and `X-ABL-Encrypted: true`. Errors: `{ error: { code, message, details }, success: false, message, required }`.';

/** The permission a key needs (granted by SESSIONS_LIST, sessions.read, analytics.read), named in a refusal's `required`. */
const REQUIRED_PERMISSION = 'session:read';

/**
 * A platform key bound to a project (the pipeline has already made sure it is this one: 404
 * otherwise) holding session read access: 403 PLATFORM_API_KEY_REQUIRED, then 403 PERMISSION_REQUIRED.
 */
function requireProjectKey(principal: Principal): void {
  if (principal.kind !== 'api_key' || principal.projectId === null) {
    throw new ApiError('PLATFORM_API_KEY_REQUIRED', 'Session analytics take a platform key (abl_…) bound to the project, in x-api-key');
  }
  if (!hasPermission(principal, REQUIRED_PERMISSION)) {
    throw new ApiError('PERMISSION_REQUIRED', {
      message: `This key lacks session read access (${REQUIRED_PERMISSION}: scope SESSIONS_LIST, sessions.read or analytics.read)`,
      details: { required: REQUIRED_PERMISSION },
      extraBody: { required: REQUIRED_PERMISSION },
    });
  }
}

/** The page's byte budget: 1 MiB for the answer as sent, so less plaintext when it is encrypted. */
async function pageBudget(ctx: AppContext, res: Response): Promise<number> {
  const encryption = await encryptionOf(ctx, res);
  return encryption?.response && encryption.clientJwk ? Math.floor(((MAX_PAGE_BYTES - JWE_OVERHEAD_BYTES) * 3) / 4) : MAX_PAGE_BYTES;
}

async function answer(ctx: AppContext, res: Response, principal: Principal, project: ProjectDoc, raw: Record<string, unknown>, source: 'query' | 'body') {
  const filter = parseSessionAnalyticsInput(raw, source);
  return listSessionSummaries(ctx, principal, { tenantId: project.tenantId, projectId: project._id }, filter, await pageBudget(ctx, res));
}

const isJwe = (body: Record<string, unknown>) => typeof body.ciphertext === 'string' && typeof body.protected === 'string';

const listDescription =
  'Needs a platform key bound to the project with session read access (`SESSIONS_LIST`, `sessions.read` or `analytics.read`); ' +
  "a key bound to environments sees their sessions only. Newest first. ";

export const sessionAnalyticsRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: PATH,
    operationId: 'listSessionAnalytics',
    summary: "A project's session summaries: counts, tokens, cost, durations, containment and custom dimensions",
    description: listDescription + 'Custom dimensions: `traceDimensions[<name>]=<value>` (exact match; repeat with other names to require all). ' + ENCRYPTION_DOC,
    tags: TAGS,
    auth: 'authenticated',
    params: ZAnalyticsProjectParams,
    query: ZSessionAnalyticsQuery,
    errorStatuses: [400, 403, 404, 503],
    response: ZSessionAnalyticsResponse,
    alternateResponses: { [JOSE_JSON]: ZFlattenedJwe },
    async handler({ ctx, principal, project, query, res }) {
      requireProjectKey(principal);
      return answer(ctx, res, principal, project!, query, 'query');
    },
  }),
  defineRoute({
    method: 'post',
    path: PATH,
    operationId: 'searchSessionAnalytics',
    summary: 'Session summaries by a JSON body (the GET filters, plus callerNumber), which may be encrypted',
    description:
      listDescription +
      'The body: the GET parameters as JSON (lists as arrays or comma-separated text, `traceDimensions` an object), plus `callerNumber`. ' +
      "With request encryption on for the key, the body must be that object as a flattened JWE to the project's key (jwks route), " +
      'preferably sent as `application/jose+json`: a clear body is 400 ENCRYPTION_REQUIRED, one that does not decrypt 422 INVALID_ENCRYPTED_BODY. ' +
      ENCRYPTION_DOC,
    tags: TAGS,
    auth: 'authenticated',
    params: ZAnalyticsProjectParams,
    body: ZSessionAnalyticsBody,
    bodyExample: { fromDate: '2026-01-01T00:00:00Z', toDate: '2026-02-01T00:00:00Z', containmentType: ['escalated'], traceDimensions: { region: 'emea' }, limit: 100 },
    successStatus: 200,
    errorStatuses: [400, 403, 404, 422, 503],
    response: ZSessionAnalyticsResponse,
    alternateResponses: { [JOSE_JSON]: ZFlattenedJwe },
    async handler({ ctx, principal, project, body, res }) {
      requireProjectKey(principal);
      const encryption = await encryptionOf(ctx, res);
      let raw = body as Record<string, unknown>;
      if (isJwe(raw)) {
        raw = await decryptRequestBody(ctx, project!.tenantId, project!._id, ZFlattenedJwe.parse(raw));
      } else if (encryption?.request) {
        throw new ApiError('ENCRYPTION_REQUIRED', "This key has request encryption on: send the body as a JWE to the project's key (see the jwks route)");
      }
      return answer(ctx, res, principal, project!, raw, 'body');
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/public/analytics/projects/:projectId/jwks',
    operationId: 'getSessionAnalyticsJwks',
    summary: "The project's public key for encrypting session analytics request bodies (a JWKS)",
    description: `Encrypt a POST body to this key with alg ${JWE_ALG} and enc ${JWE_ENC}, \`kid\` in the protected header. Same credential as the list. ` + ENCRYPTION_DOC,
    tags: TAGS,
    auth: 'authenticated',
    params: ZAnalyticsProjectParams,
    errorStatuses: [403, 404, 503],
    response: ZJwks,
    alternateResponses: { [JOSE_JSON]: ZFlattenedJwe },
    async handler({ ctx, principal, project }) {
      requireProjectKey(principal);
      const { kid, jwk } = await projectPublicJwk(ctx, project!.tenantId, project!._id);
      return { keys: [{ kty: 'RSA' as const, n: jwk.n!, e: jwk.e!, kid, alg: JWE_ALG, use: 'enc' as const }] };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/public/apikeys/:keyId/encryption',
    operationId: 'getPlatformKeyEncryption',
    summary: "A platform key's session-analytics encryption settings",
    description: 'Needs a credential that may see keys (API_SCOPE_KEY_VIEW); another tenant\'s or project\'s key is 404.',
    tags: ['Public API: keys and scopes'],
    auth: 'api_key:read',
    params: ZPublicKeyIdParam,
    errorStatuses: [404],
    response: z.object({ success: z.literal(true), encryption: ZKeyEncryption, meta: ZMeta }),
    async handler({ ctx, principal, params, res }) {
      const key = await findKey(ctx, principal, params.keyId);
      return { success: true as const, encryption: presentEncryption(key._id, key.encryption ?? null), meta: metaOf(res) };
    },
  }),
  defineRoute({
    method: 'put',
    path: '/api/public/apikeys/:keyId/encryption',
    operationId: 'setPlatformKeyEncryption',
    summary: "Turns a platform key's session-analytics request and response encryption on or off, and registers its public key",
    description:
      'Same permission as revoking a key (API_SCOPE_KEY_FULL), and the same reach: 403 for a key holding what the calling credential does not. ' +
      'Request and response encryption are independent. In force on the next request. The public key is an RSA JWK of 2048 to 8192 bits.',
    tags: ['Public API: keys and scopes'],
    auth: 'api_key:manage',
    params: ZPublicKeyIdParam,
    body: ZKeyEncryptionRequest,
    bodyExample: { requestEncryption: true, responseEncryption: false },
    errorStatuses: [404, 422],
    response: z.object({ success: z.literal(true), encryption: ZKeyEncryption, meta: ZMeta }),
    async handler({ ctx, principal, params, body, res }) {
      const key = await findKey(ctx, principal, params.keyId);
      const scope = key.scopeId ? await ctx.models.ApiScope.findOne({ _id: key.scopeId, tenantId: principal.tenantId }, { grants: 1 }).lean() : null;
      requireKeyWithinReach(principal, key, key.scopeId ? (scope?.grants ?? []) : null);
      let client = { clientJwk: key.encryption?.clientJwk ?? null, clientKid: key.encryption?.clientKid ?? null };
      if (body.publicKey === null) client = { clientJwk: null, clientKid: null };
      else if (body.publicKey !== undefined) {
        const checked = await checkClientPublicJwk(body.publicKey);
        client = { clientJwk: checked.jwk, clientKid: checked.kid };
      }
      if (body.responseEncryption && !client.clientJwk) {
        throw new ApiError('UNPROCESSABLE_ENTITY', 'body.publicKey: response encryption needs the public key answers are encrypted to (none is registered)');
      }
      const encryption = { request: body.requestEncryption, response: body.responseEncryption, ...client };
      await ctx.models.ApiKey.updateOne({ _id: key._id, tenantId: principal.tenantId }, { $set: { encryption } });
      ctx.logger.info({ event: 'api_key:encryption_changed', tenantId: principal.tenantId, keyId: key._id, by: principal.subjectId, request: encryption.request, response: encryption.response }, 'key encryption changed');
      return { success: true as const, encryption: presentEncryption(key._id, encryption), meta: metaOf(res) };
    },
  }),
];

async function findKey(ctx: AppContext, principal: Principal, keyId: string) {
  const filter = { _id: keyId, tenantId: principal.tenantId, ...(principal.projectId ? { projectId: principal.projectId } : {}) };
  const key = await ctx.models.ApiKey.findOne(filter, { _id: 1, scopeId: 1, permissions: 1, environments: 1, encryption: 1 }).lean();
  if (!key) throw ApiError.notFound('API key');
  return key;
}

function presentEncryption(keyId: string, encryption: { request: boolean; response: boolean; clientKid: string | null } | null) {
  return {
    key_id: keyId,
    request_encryption: encryption?.request ?? false,
    response_encryption: encryption?.response ?? false,
    public_key_kid: encryption?.clientKid ?? null,
    alg: JWE_ALG,
    enc: JWE_ENC,
  };
}
