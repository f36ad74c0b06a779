// The Temporal codec server protocol (POST /codec/encode, /codec/decode) over the platform's payload
// codec, so the Temporal Web UI and CLI show decoded payloads to an operator, and only to one.
import { type Request } from 'express';
import { type Payload } from '@temporalio/common';
import { z } from 'zod';
import { ApiError } from '../../lib/errors';
import { safeEqual } from '../../lib/crypto';
import { ENCRYPTED_ENCODING, KEY_ID_METADATA, PayloadCodecError, type AesGcmPayloadCodec } from '../../lib/payload-codec';
import { defineRoute, type AnyRoute } from '../http/route';
import { type AppContext } from '../context';
import { hasCodecSession } from './operator-session';
import { isTrustedLocalUi } from './local-ui';

const ZBase64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');

/** A Payload in proto3 JSON: metadata values and data are base64 bytes. */
const ZPayload = z
  .object({
    metadata: z.record(z.string().max(256), ZBase64).optional().describe('Metadata values, base64 (e.g. `encoding`: base64 of `json/plain`)'),
    data: ZBase64.optional().describe('The payload bytes, base64'),
  })
  .describe('A Temporal Payload as proto3 JSON');

const ZPayloads = z.object({
  payloads: z.array(ZPayload).max(1000).describe('Payloads in the order they are answered'),
});

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const PLAIN_EXAMPLE = { payloads: [{ metadata: { encoding: b64('json/plain') }, data: b64('{"message":"hello"}') }] };
const ENCRYPTED_EXAMPLE = {
  payloads: [{ metadata: { encoding: b64(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: b64('k2') }, data: 'n2Zy0Jb6u0yq1Q4tH0m3xA6k0pQ3b1rTn8y2c5v7w9s=' }],
};

const fromJson = (p: z.infer<typeof ZPayload>): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? new Uint8Array()).toString('base64')])),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/**
 * The operator credential, as `X-Platform-Admin-Token` (curl, scripts), `Authorization: Bearer`
 * (the Temporal CLI's `--codec-auth`, a proxy in front of the Web UI), compared in constant time,
 * or the browser session of /codec/login sent by the Temporal UI's origin; in the dev stack, the
 * local Web UI alone (api/codec/local-ui.ts). Checked before the body is read (the routes' `authorize`).
 */
function authorizeOperator({ ctx, req }: { ctx: AppContext; req: Request }): void {
  const expected = ctx.config.PLATFORM_ADMIN_TOKEN;
  if (!expected) throw new ApiError('SERVICE_UNAVAILABLE', 'The codec endpoint is disabled: PLATFORM_ADMIN_TOKEN is not set');
  // The dev stack's own Web UI on this machine (CODEC_TRUST_LOCAL_UI; never in production).
  if (isTrustedLocalUi(ctx, req)) return;
  const header = req.headers['x-platform-admin-token'];
  const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const given = typeof header === 'string' ? header : bearer;
  // The session counts even beside another Bearer token (the UI's own, with "pass access token").
  const tokenOk = given !== undefined && safeEqual(given, expected);
  if (!tokenOk && !hasCodecSession(ctx, req)) {
    throw new ApiError('UNAUTHORIZED', 'An operator credential is required: X-Platform-Admin-Token or Authorization: Bearer <PLATFORM_ADMIN_TOKEN>');
  }
}

function requireCodec(ctx: AppContext): AesGcmPayloadCodec {
  if (!ctx.payloadCodec) throw new ApiError('SERVICE_UNAVAILABLE', 'No payload codec key is configured (PAYLOAD_CODEC_KEYS, ENCRYPTION_KEYS or ENCRYPTION_KEY): payloads are in clear');
  return ctx.payloadCodec;
}

const DESCRIPTION =
  'The Temporal codec server protocol, for the Temporal Web UI (its codec endpoint is `<API>/codec`) and CLI ' +
  '(`--codec-endpoint <API>/codec --codec-auth "Bearer <token>"`). Requires the operator credential: ' +
  '`X-Platform-Admin-Token`, `Authorization: Bearer` with the same token, or (from TEMPORAL_UI_ORIGIN) the browser session cookie of ' +
  '`/codec/login` (with CODEC_TRUST_LOCAL_UI, a dev-only setting, the local UI needs none). `X-Namespace` is accepted and not needed: ' +
  'one key ring serves every namespace. Browsers may call it only from TEMPORAL_UI_ORIGIN (CORS). See docs/operations.md.';

export const codecRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/codec/encode',
    operationId: 'encodePayloads',
    summary: 'Encrypt payloads with the current payload codec key (Temporal codec server)',
    description: `${DESCRIPTION} Every payload is encrypted with the first key of the ring.`,
    tags: ['Operations'],
    auth: 'public',
    security: 'platformAdmin',
    authorize: authorizeOperator,
    body: ZPayloads,
    bodyExample: PLAIN_EXAMPLE,
    errorStatuses: [401, 503],
    response: ZPayloads.openapi({ example: ENCRYPTED_EXAMPLE }),
    async handler({ ctx, body }) {
      const codec = requireCodec(ctx);
      return { payloads: (await codec.encode(body.payloads.map(fromJson))).map(toJson) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/codec/decode',
    operationId: 'decodePayloads',
    summary: 'Decrypt payloads the payload codec encrypted, under any key of the ring (Temporal codec server)',
    description: `${DESCRIPTION} Payloads not marked \`binary/encrypted\` are answered unchanged; one that fails to decrypt (altered, or under a key no longer configured) makes the whole call a 422 naming the key id.`,
    tags: ['Operations'],
    auth: 'public',
    security: 'platformAdmin',
    authorize: authorizeOperator,
    body: ZPayloads,
    bodyExample: ENCRYPTED_EXAMPLE,
    errorStatuses: [401, 422, 503],
    response: ZPayloads.openapi({ example: PLAIN_EXAMPLE }),
    async handler({ ctx, body }) {
      const codec = requireCodec(ctx);
      try {
        return { payloads: (await codec.decode(body.payloads.map(fromJson))).map(toJson) };
      } catch (err) {
        // Well-formed, but not for the keys here: 422, as for any request the stack's state refuses.
        if (err instanceof PayloadCodecError) throw new ApiError('UNPROCESSABLE_ENTITY', err.message);
        throw err;
      }
    },
  }),
];
