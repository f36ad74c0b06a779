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
