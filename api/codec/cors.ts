// CORS for the codec endpoint: only the Temporal Web UI's origin (TEMPORAL_UI_ORIGIN) may call it
// from a browser, so another site an operator visits cannot have their browser decode payloads.
import { type NextFunction, type Request, type Response } from 'express';
import { ApiError } from '../../lib/errors';
import { type AppContext } from '../context';

/** What the Temporal UI sends: its JSON body, the namespace, and an operator credential. */
const ALLOWED_HEADERS = 'Content-Type, X-Namespace, Authorization, X-Platform-Admin-Token';

export function codecCors(ctx: AppContext) {
  const allowed = ctx.config.TEMPORAL_UI_ORIGIN;
  return (req: Request, res: Response, next: NextFunction): void => {
    const origin = req.headers.origin;
    // Answers differ by origin: a cache must not hand one origin's headers to another.
    res.vary('Origin');
    const permitted = allowed !== undefined && origin === allowed;
    if (permitted) {
      res.setHeader('Access-Control-Allow-Origin', allowed);
      // The UI's "include cross-origin credentials" option makes it send credentials along.
      res.setHeader('Access-Control-Allow-Credentials', 'true');
    }
    // Only a CORS preflight is answered here; any other OPTIONS goes on as on every route.
    if (req.method !== 'OPTIONS' || !origin || !req.headers['access-control-request-method']) return next();
    if (!permitted) return next(new ApiError('FORBIDDEN', `Origin ${origin} may not call the codec endpoint (TEMPORAL_UI_ORIGIN)`));
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', ALLOWED_HEADERS);
    res.setHeader('Access-Control-Max-Age', '600');
    res.status(204).end();
  };
}
