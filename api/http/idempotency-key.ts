// The Idempotency-Key request header of routes that make a retried request count once (the chat
// route, the HTTP-async message route): absent, or 1-128 letters, digits and `._:-` (else 400).
import { type Request } from 'express';
import { ApiError } from '../../lib/errors';

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

/** The key, null when none was sent; `onRefused` runs before the 400 is thrown. */
export function readIdempotencyKey(req: Request, onRefused: () => void = () => undefined): string | null {
  const key = req.headers['idempotency-key'];
  if (key === undefined) return null;
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    onRefused();
    throw new ApiError('VALIDATION_ERROR', 'headers.idempotency-key: 1-128 characters of letters, digits and ._:-');
  }
  return key;
}
