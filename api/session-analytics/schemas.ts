// Request and response schemas of the public session analytics routes and of a platform key's
// encryption settings. Filter values are taken as text here and checked by the core
// (core/analytics/public-sessions.ts), which answers the spec's own codes (INVALID_STATUS …).
import { z } from 'zod';
import '../openapi/registry';
import { MAX_OFFSET, queryInt } from '../http/schemas';
import { CONTAINMENT_FILTER_VALUES, ENVIRONMENT_FILTER_VALUES, STATUS_FILTER_VALUES } from '../../core/analytics/public-sessions';
import { JWE_ALG, JWE_ENC } from '../../core/analytics/session-encryption';

const ZText = z.string().max(20_000);
/** A list parameter: repeated, or comma separated. The document states its values; the core checks them with the spec's codes. */
const ZList = (what: string, items: { enum?: readonly string[]; maxLength?: number } = {}, maxItems?: number) =>
  z
    .union([ZText, z.array(ZText).max(10_000)])
    .optional()
    .openapi({
      type: 'array',
      items: { type: 'string', ...(items.enum ? { enum: [...items.enum] } : {}), ...(items.maxLength ? { maxLength: items.maxLength } : {}) },
      ...(maxItems !== undefined ? { maxItems } : {}),
      description: `${what}; repeat the parameter or separate values with commas`,
    });

export const ZAnalyticsProjectParams = z.object({ projectId: z.string().min(1).max(128).describe('The project the key is bound to') });

const FILTER_DOCS = {
  fromDate: 'ISO 8601, inclusive; required with toDate unless sessionIds is given',
  toDate: 'ISO 8601, exclusive',
  sessionIds: 'Up to 10,000 session ids (in a query, as many as fit the 16 KB request line: use POST for more); replaces the date range',
  containmentType: `Up to 100 of ${CONTAINMENT_FILTER_VALUES.join(', ')} (case sensitive; 400 INVALID_CONTAINMENT_TYPE otherwise)`,
  environment: `Up to 4 of ${ENVIRONMENT_FILTER_VALUES.join(', ')} (400 INVALID_ENVIRONMENT otherwise; 403 outside the key's environments)`,
  channelUId: "Up to 100 end-user identities recorded on the channel",
  channel: 'Up to 50 distinct channels; a value asks for its family (web chat, voice); an unknown one matches nothing',
  status: `One of ${STATUS_FILTER_VALUES.join(', ')} (the first if repeated; 400 INVALID_STATUS otherwise)`,
  limit: '1 to 10,000 (default 100); a page may hold fewer rows so that it stays under 1 MiB: follow hasMore',
  offset: 'Rows to skip (default 0)',
};

export const ZSessionAnalyticsQuery = z
  .object({
    fromDate: z.string().max(64).optional().describe(FILTER_DOCS.fromDate),
    toDate: z.string().max(64).optional().describe(FILTER_DOCS.toDate),
    // Their caps (10,000 and 100) do not fit the 16 KB request line: long lists go in a POST body.
    sessionIds: ZList(FILTER_DOCS.sessionIds, { maxLength: 128 }),
    containmentType: ZList(FILTER_DOCS.containmentType, { enum: CONTAINMENT_FILTER_VALUES }, 100),
    environment: ZList(FILTER_DOCS.environment, { enum: ENVIRONMENT_FILTER_VALUES }, 4),
    channelUId: ZList(FILTER_DOCS.channelUId, { maxLength: 512 }),
    channel: ZList(FILTER_DOCS.channel, { maxLength: 128 }, 50),
    status: z
      .union([ZText, z.array(ZText).max(100)])
      .optional()
      .openapi({ type: 'string', enum: [...STATUS_FILTER_VALUES], description: FILTER_DOCS.status }),
    limit: queryInt(1, 10_000, 100).describe(FILTER_DOCS.limit),
    offset: queryInt(0, MAX_OFFSET, 0).describe(FILTER_DOCS.offset),
  })
  // `traceDimensions[<name>]=<value>`: a custom dimension, exact match; several must all match.
  .catchall(z.union([ZText, z.array(ZText).max(100)]));

const ZDimensionValue = z.union([z.string().max(512), z.number(), z.boolean()]);
const ZBodyList = (what: string) => z.union([z.string().max(400_000), z.array(z.string().max(512)).max(10_000)]).optional().describe(`${what}; a JSON array or a comma-separated string`);

export const ZSessionAnalyticsFilterBody = z
  .strictObject({
    fromDate: z.string().max(64).optional().describe(FILTER_DOCS.fromDate),
    toDate: z.string().max(64).optional().describe(FILTER_DOCS.toDate),
    sessionIds: ZBodyList(FILTER_DOCS.sessionIds),
    containmentType: ZBodyList(FILTER_DOCS.containmentType),
    environment: ZBodyList(FILTER_DOCS.environment),
    channelUId: ZBodyList(FILTER_DOCS.channelUId),
    channel: ZBodyList(FILTER_DOCS.channel),
    callerNumber: ZBodyList('1 to 100 caller numbers, each 1-512 characters with a letter or digit, any provider format (an empty array is 400)'),
    traceDimensions: z
      .record(z.string().max(64), z.union([ZDimensionValue, z.array(ZDimensionValue).max(100)]))
      .optional()
      .describe('Name to value (string, number, boolean, or an array of those: any of them); all must match'),
    status: ZBodyList(FILTER_DOCS.status),
    limit: queryInt(1, 10_000, 100).describe(FILTER_DOCS.limit),
    offset: queryInt(0, MAX_OFFSET, 0).describe(FILTER_DOCS.offset),
  })
  .openapi('SessionAnalyticsFilter');

export const ZFlattenedJwe = z
  .strictObject({
    protected: z.string().max(4096).describe(`base64url of the protected header: { "alg": "${JWE_ALG}", "enc": "${JWE_ENC}", "kid": <the project key's kid> }`),
    encrypted_key: z.string().max(4096),
    iv: z.string().max(64),
    ciphertext: z.string().max(1_500_000),
    tag: z.string().max(64),
    header: z.record(z.string(), z.unknown()).optional(),
    aad: z.string().max(4096).optional(),
  })
  .openapi('FlattenedJwe');

export const ZSessionAnalyticsBody = z.union([ZFlattenedJwe, ZSessionAnalyticsFilterBody]);

const ZCounts = <T extends string>(names: readonly T[]) => z.object(Object.fromEntries(names.map((n) => [n, z.number()])) as Record<T, z.ZodNumber>);

export const ZSessionSummary = z
  .object({
    id: z.string(),
    channel: z.string(),
    environment: z.string(),
    status: z.string().describe(`${STATUS_FILTER_VALUES.filter((s) => s !== 'archived').join(', ')} or failed`),
    containmentType: z.enum(CONTAINMENT_FILTER_VALUES),
    createdAt: z.string(),
    lastActivityAt: z.string(),
    endedAt: z.string().nullable(),
    messageCount: ZCounts(['user', 'agent', 'total']),
    traceEventCount: ZCounts(['llm_call', 'decision', 'tool_call', 'error', 'total']),
    tokenCount: ZCounts(['inputTokens', 'cachedTokens', 'completionTokens', 'reasoningTokens', 'outputTokens', 'totalTokens']),
    traceDimensions: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).describe('What the agent set under `_meta.<name>`'),
    estimatedCost: z.number(),
    durationMs: z.number(),
    idleDurationMs: z.number(),
    isTest: z.null(),
  })
  .openapi('SessionSummary');

export const ZSessionAnalyticsResponse = z
  .object({
    success: z.literal(true),
    sessions: z.array(ZSessionSummary),
    total: z.number().int().describe('Every match, across pages'),
    offset: z.number().int(),
    limit: z.number().int(),
    hasMore: z.boolean(),
  })
  .openapi('SessionAnalyticsPage');

export const ZJwks = z
  .object({
    keys: z.array(z.object({ kty: z.literal('RSA'), n: z.string(), e: z.string(), kid: z.string(), alg: z.literal(JWE_ALG), use: z.literal('enc') })),
  })
  .openapi('SessionAnalyticsJwks');

const B64URL = /^[A-Za-z0-9_-]+$/;

export const ZRsaPublicJwk = z
  .strictObject({
    kty: z.literal('RSA'),
    // 2048 bits are 342 base64url characters, 8192 bits 1366.
    n: z.string().min(342).max(1366).regex(B64URL),
    e: z.string().min(1).max(16).regex(B64URL),
    kid: z.string().max(256).optional(),
    alg: z.string().max(32).optional(),
    use: z.string().max(16).optional(),
    ext: z.boolean().optional(),
    key_ops: z.array(z.string().max(32)).max(8).optional(),
  })
  .describe(
    `The client's RSA public key as a JWK (2048 to 8192 bits); answers are encrypted to it with ${JWE_ALG} and ${JWE_ENC}. ` +
      'Only public members: a private member (`d`, `p`, …) is 400. A key that does not import is 422',
  );

export const ZKeyEncryptionRequest = z.strictObject({
  requestEncryption: z.boolean().describe("When true, POST bodies must be JWE encrypted to the project's key (jwks route); a clear body is 400 ENCRYPTION_REQUIRED"),
  responseEncryption: z.boolean().describe('When true, every answer but 401 is a JWE to `publicKey`, with `X-ABL-Encrypted: true`'),
  publicKey: ZRsaPublicJwk.nullable().optional().describe('Required to turn response encryption on unless one is registered; null removes it (response encryption must then be off)'),
});

export const ZKeyEncryption = z
  .object({
    key_id: z.string(),
    request_encryption: z.boolean(),
    response_encryption: z.boolean(),
    public_key_kid: z.string().nullable().describe("RFC 7638 thumbprint of the registered client key, the `kid` of each encrypted answer's header"),
    alg: z.literal(JWE_ALG),
    enc: z.literal(JWE_ENC),
  })
  .openapi('PlatformKeyEncryption');
