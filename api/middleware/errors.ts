// The single place where errors become HTTP responses: the spec's envelope
// `{ success: false, error: { code, message } }` (plus `requestId` on the public API's paths),
// the status from the one code table, and never a stack trace or an internal message in a body.
import { type NextFunction, type Request, type Response } from 'express';
import { type Logger } from '../../lib/logger';
import { ApiError, isApiError, isDomainError, RETRY_LATER_HEADERS } from '../../lib/errors';
import { statusForCode } from '../../lib/error-codes';
import { type MountedRoute } from '../http/route';
import { isPublicApiPath, publicRequestId } from './request-id';
import { isDatabaseUnavailable } from '../../db/unavailable';
import { causes, isTemporalUnavailable } from '../../core/sessions/workflow-client';

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  charset?: string;
  /** The parser's limit in bytes, on `entity.too.large`. */
  limit?: number;
}

/** `1048576` → `1 MB` (the parsers' limits are whole megabytes). */
function formatLimit(limit: number | undefined): string {
  const mb = 1024 * 1024;
  return limit && limit % mb === 0 ? `${limit / mb} MB` : limit ? `${limit}-byte` : 'size';
}

/** Maps domain errors, body-parser failures (and anything else) onto ApiError. */
function toApiError(err: unknown): ApiError {
  if (isApiError(err)) return err;
  if (isDomainError(err)) return ApiError.fromDomain(err);
  const e = err as BodyParserError;
  switch (e?.type) {
    case 'entity.parse.failed':
      return new ApiError('BAD_REQUEST', 'Malformed JSON in request body');
    case 'entity.too.large':
      return new ApiError('PAYLOAD_TOO_LARGE', `Request body exceeds the ${formatLimit(e.limit)} limit`);
    case 'charset.unsupported':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', `Unsupported charset "${e.charset ?? ''}"; send UTF-8`);
    case 'encoding.unsupported':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported content encoding');
    case 'request.aborted':
      return new ApiError('BAD_REQUEST', 'Request aborted by the client');
    case 'entity.verify.failed':
      return new ApiError('BAD_REQUEST', e.message);
    default:
      // The database did not answer, or (FerretDB on SQLite) was busy and wrote nothing: 503 tells
      // the caller to retry, which every write route makes safe (atomic claims, Idempotency-Key).
      if (isDatabaseUnavailable(err)) return new ApiError('SERVICE_UNAVAILABLE', { message: 'The database is unavailable; retry the request', cause: err, headers: RETRY_LATER_HEADERS });
      return new ApiError('INTERNAL_ERROR', { message: 'Internal server error', cause: err });
  }
}

/** A 503 whose cause is Temporal or the store not answering: the same request may be sent again shortly. */
function dependencyDidNotAnswer(apiError: ApiError, err: unknown): boolean {
  if (apiError.code !== 'SERVICE_UNAVAILABLE') return false;
  const cause = apiError.cause ?? err;
  if (cause === undefined || cause === apiError) return false;
  return causes(cause).some(isDatabaseUnavailable) || isTemporalUnavailable(cause);
}

export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const apiError = toApiError(err);
    const status = statusForCode(apiError.code);
    if (status >= 500) {
      logger.error({ err: apiError.cause ?? err, requestId: res.locals.requestId, path: req.path }, 'request failed');
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    const headers = apiError.headers ?? (dependencyDidNotAnswer(apiError, err) ? RETRY_LATER_HEADERS : {});
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    res.status(status).json({
      success: false,
      error: {
        code: apiError.code,
        message: apiError.message,
        ...(apiError.details ? { details: apiError.details } : {}),
        ...(isPublicApiPath(req.path) ? { requestId: publicRequestId(res) } : {}),
      },
      ...apiError.extraBody,
    });
  };
}

/**
 * Unknown path: 404. Known path, other method: 405 with `Allow`. A path whose route let the
 * request through (a reserved parameter value, see `reservedParams`) is unknown too: 404.
 */
export function notFoundHandler(routes: () => MountedRoute[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const allowed = routes()
      .filter((r) => r.pattern.test(req.path))
      .map((r) => r.method.toUpperCase());
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    if (allowed.length > 0 && !allowed.includes(method)) {
      res.setHeader('Allow', [...new Set(allowed)].join(', '));
      next(new ApiError('METHOD_NOT_ALLOWED', `Method ${req.method} is not allowed on ${req.path}`));
      return;
    }
    next(new ApiError('NOT_FOUND', `Route ${req.method} ${req.path} not found`));
  };
}
