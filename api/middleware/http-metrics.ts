// Counts and times every request by method, route template and status for /metrics. The route is
// the template the request matched (`/api/projects/:projectId/agents`), set by the route pipeline
// (api/http/route.ts) or by createApp for its own few routes: a raw path would put ids in labels
// and let any caller mint series. A path no route took is `(unmatched)`.
import { type NextFunction, type Request, type Response } from 'express';
import { switchboardMetrics } from '../../lib/metrics/registry';
import { oneOf } from '../../lib/metrics/labels';

/** The route label of a request no route took (404s, preflights answered before the routes). */
export const UNMATCHED_ROUTE = '(unmatched)';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Names the route template the request is being answered by (for the request's metrics). */
export function tagRoute(res: Response, template: string): void {
  res.locals.routeTemplate = template;
}

export function httpMetrics() {
  const { httpRequests, httpRequestDuration } = switchboardMetrics();
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    const done = () => {
      res.off('finish', done);
      res.off('close', done);
      const labels = {
        method: oneOf(METHODS, req.method),
        route: typeof res.locals.routeTemplate === 'string' ? res.locals.routeTemplate : UNMATCHED_ROUTE,
        // A response cut before its headers were sent (the client went away) still says what it was.
        status: String(res.statusCode),
      };
      httpRequests.inc(labels);
      httpRequestDuration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    };
    res.on('finish', done);
    res.on('close', done);
    next();
  };
}
