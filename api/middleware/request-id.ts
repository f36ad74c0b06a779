// Correlates logs and responses: reuses a sane incoming X-Request-Id or makes one, and echoes it.
import { randomUUID } from 'node:crypto';
import { type NextFunction, type Request, type Response } from 'express';

const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && SAFE_ID.test(incoming) ? incoming : randomUUID();
  res.locals.requestId = id;
  res.setHeader('X-Request-Id', id);
  next();
}

/** The public API's form of the request id: with the `tr-` prefix its spec gives it. */
export function publicRequestId(res: Response): string {
  const id = String(res.locals.requestId ?? '');
  return id.startsWith('tr-') ? id : `tr-${id}`;
}

/**
 * The public API's routes, whose error envelope carries the request id:
 * `{ success: false, error: { code, message, requestId } }`.
 */
export function isPublicApiPath(path: string): boolean {
  return /^\/api\/(?:public\/|v2\/|v1\/project\/|v1\/channels\/)/i.test(path);
}
