// How a receiver verifies an HTTP-async callback (docs/http-async.md): recompute the HMAC of
// "<X-ABL-Timestamp>.<raw body>" with the subscription's signing secret and compare in constant
// time. Self-contained (node:crypto only) so it can be copied into a receiver as it is.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Refuse callbacks whose timestamp is further than this from the receiver's clock (replays). */
const TOLERANCE_SECONDS = 300;

export function verifyAblSignature(
  secret: string, // the subscription's signing secret, `whsec_…`, exactly as shown once
  rawBody: Buffer | string, // the request body as received, before JSON parsing
  timestampHeader: string | undefined, // X-ABL-Timestamp: Unix seconds
  signatureHeader: string | undefined, // X-ABL-Signature: `sha256=<hex>`
  nowSeconds = Date.now() / 1000,
): boolean {
  if (!timestampHeader || !signatureHeader || !/^\d+$/.test(timestampHeader)) return false;
  if (Math.abs(nowSeconds - Number(timestampHeader)) > TOLERANCE_SECONDS) return false;
  const expected = 'sha256=' + createHmac('sha256', secret).update(`${timestampHeader}.`).update(rawBody).digest('hex');
  const a = Buffer.from(expected);
  const b = Buffer.from(signatureHeader);
  return a.length === b.length && timingSafeEqual(a, b);
}
