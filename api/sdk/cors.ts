// CORS for the routes an embedded widget calls from a customer's page: headers only for an origin
// a live public key lists. A preflight carries no key, so it is answered for an origin any live
// key lists (403 otherwise); the request itself is then judged against its own key or token.
import { type NextFunction, type Request, type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { isListedOrigin } from '../../core/sdk/public-keys';
import { type AppContext } from '../context';

/** Paths a widget calls cross-origin: the bootstrap and the routes that take an SDK token. */
export const SDK_CORS_PATHS = [
  '/api/v1/sdk',
  '/api/v1/chat/agent',
  '/api/v1/chat/send',
  '/api/v1/feedback',
  '/api/v1/sessions/:id/transcripts',
  '/api/projects/:projectId/sessions/:id/attachments',
  '/api/v1/voice/sessions',
];

const ALLOWED_HEADERS = 'Content-Type, X-Public-Key, X-API-Key, X-SDK-Token, Idempotency-Key, Last-Event-ID';

/**
 * The page origin of a widget's request: its `Origin` header, or, for a browser's same-origin GET
 * (which carries none; `Sec-Fetch-Site: same-origin`, a header no page can set), the origin the
 * request was sent to. A page elsewhere (or a rebound DNS name) names its own host, never ours.
 */
export function pageOrigin(req: Request): string | undefined {
  if (req.headers.origin) return req.headers.origin;
  if (req.headers['sec-fetch-site'] !== 'same-origin' || !req.headers.host) return undefined;
  return `${req.protocol}://${req.headers.host}`.toLowerCase();
}

/** The CORS headers of a response to an allowed origin. */
export function allowOrigin(res: Response, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Expose-Headers', 'X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Request-Id');
}

/** Answers preflights of the widget's routes; other requests pass through untouched. */
export function sdkPreflight(ctx: AppContext) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.headers.origin;
    if (req.method !== 'OPTIONS' || !origin || !req.headers['access-control-request-method']) return next();
    isListedOrigin(ctx, origin).then(
      (listed) => {
        if (!listed) return next(new ApiError('FORBIDDEN', 'This origin is not allowed'));
        allowOrigin(res, origin);
        res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
        res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
        res.setHeader('Access-Control-Max-Age', '600');
        res.status(204).end();
      },
      (err: unknown) => next(err),
    );
  };
}
