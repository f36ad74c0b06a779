// Every answer under /api/public/analytics: in the session-analytics error shape
// `{ error: { code, message, details }, success: false, message, required }`, and, for a platform
// key with response encryption on, as a JWE to the key's registered public key
// (`application/jose+json`, `X-ABL-Encrypted: true`). A 401, and any answer to a caller not yet
// known to be a key, is never encrypted. Mounted before the routes (api/app.ts), so errors the
// route pipeline answers (400, 403, 404, 413, 429 …) are shaped and encrypted alike.
import { type NextFunction, type Request, type Response } from 'express';
import { type Principal } from '../../lib/permissions';
import { encryptForClient, keyEncryption, type KeyEncryption } from '../../core/analytics/session-encryption';
import { type AppContext } from '../context';

export const SESSION_ANALYTICS_PREFIX = '/api/public/analytics';
export const ENCRYPTED_HEADER = 'X-ABL-Encrypted';
export const JOSE_JSON = 'application/jose+json';

/** The key's encryption switches, read once per request (null for a caller that is not a platform key). */
export function encryptionOf(ctx: AppContext, res: Response): Promise<KeyEncryption | null> {
  const principal = res.locals.principal as Principal | undefined;
  if (!principal || principal.kind !== 'api_key') return Promise.resolve(null);
  return ((res.locals.keyEncryption as Promise<KeyEncryption> | undefined) ??= keyEncryption(ctx, principal.tenantId, principal.subjectId));
}

/** The spec's error body: the common envelope, with `details`, and the message and required permission at the top. */
function analyticsErrorBody(body: unknown): unknown {
  if (!body || typeof body !== 'object' || (body as { success?: unknown }).success !== false) return body;
  const b = body as { error?: { message?: string; details?: unknown }; required?: unknown };
  return { ...b, error: { ...b.error, details: b.error?.details ?? {} }, message: b.error?.message ?? '', required: b.required ?? null };
}

export function sessionAnalyticsResponses(ctx: AppContext) {
  return (_req: Request, res: Response, next: NextFunction): void => {
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      const shaped = res.statusCode >= 400 ? analyticsErrorBody(body) : body;
      if (res.statusCode === 401) return send(shaped);
      void encryptionOf(ctx, res)
        .then(async (encryption) => {
          if (!encryption?.response || !encryption.clientJwk) return send(shaped);
          const jwe = await encryptForClient(encryption, shaped);
          res.setHeader(ENCRYPTED_HEADER, 'true');
          res.setHeader('Content-Type', `${JOSE_JSON}; charset=utf-8`);
          return send(jwe);
        })
        .catch((err: unknown) => {
          // Never the clear answer instead: a plain 500 that says nothing of it.
          ctx.logger.error({ err: { message: (err as Error)?.message } }, 'a session analytics answer could not be encrypted');
          if (res.headersSent) return void res.end();
          res.removeHeader(ENCRYPTED_HEADER);
          res.status(500);
          send({ success: false, error: { code: 'INTERNAL_ERROR', message: 'Internal server error', details: {} }, message: 'Internal server error', required: null });
        });
      return res;
    };
    next();
  };
}
