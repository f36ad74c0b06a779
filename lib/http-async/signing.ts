// Signing of HTTP-async callbacks: `X-ABL-Signature: sha256=<hex HMAC-SHA256 of "timestamp.rawBody">`
// with the subscription's secret, and the timestamp in `X-ABL-Timestamp` (Unix seconds). The test
// message and the delivery activity sign with this module; docs/http-async.md shows how to verify.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'X-ABL-Signature';
export const TIMESTAMP_HEADER = 'X-ABL-Timestamp';
export const EVENT_HEADER = 'X-ABL-Event';
export const SIGNATURE_VERSION = 'sha256';

/** How far a receiver should let the timestamp drift before refusing a callback as replayed. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export const SIGNING_SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 32 random bytes, base64url. The whole string is the HMAC key. */
export function newSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** `sha256=<hex>`: HMAC-SHA256, keyed with the secret's UTF-8 bytes, of `<timestamp>.<rawBody>`. */
export function computeSignature(secret: string, timestamp: number | string, rawBody: string | Buffer): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
  return `${SIGNATURE_VERSION}=${mac}`;
}

/** The headers a signed callback carries, for a body already serialized exactly as it is sent. */
export function signatureHeaders(secret: string, rawBody: string, nowMs = Date.now()): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return { [TIMESTAMP_HEADER]: String(timestamp), [SIGNATURE_HEADER]: computeSignature(secret, timestamp, rawBody) };
}

export interface VerifyInput {
  secret: string;
  /** The `X-ABL-Timestamp` header. */
  timestamp: string | undefined;
  /** The `X-ABL-Signature` header. */
  signature: string | undefined;
  /** The body exactly as received (before any JSON parsing). */
  rawBody: string | Buffer;
  toleranceSeconds?: number;
  nowMs?: number;
}

/** What a receiver does: recompute, compare in constant time, refuse a stale timestamp. */
export function verifySignature(input: VerifyInput): boolean {
  const { secret, timestamp, signature, rawBody } = input;
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return false;
  const age = Math.abs((input.nowMs ?? Date.now()) / 1000 - Number(timestamp));
  if (age > (input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(computeSignature(secret, timestamp, rawBody));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
