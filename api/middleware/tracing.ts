// The API's server span per request, installed only when tracing is on (lib/tracing.ts): named
// after the method and the route's template (`POST /api/v1/projects/:projectId/sessions`), never
// the path with its ids, and parent of every Temporal call the route makes. A caller's W3C
// `traceparent` header continues its trace. The path, query, headers and client address are not recorded.
import { type NextFunction, type Request, type Response } from 'express';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/** The matched route's template, or none for a request no route answered. */
function routeTemplate(req: Request): string | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? `${req.baseUrl}${path}` : undefined;
}

/** Probes are not traced: they would be most of the spans and say nothing. */
const PROBES = new Set(['/healthz', '/readyz']);

export function httpTracing() {
  const tracer = trace.getTracer('switchboard-api');
  return (req: Request, res: Response, next: NextFunction): void => {
    if (PROBES.has(req.path)) return next();
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(req.method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } }, parent);
    const done = () => {
      res.off('finish', done);
      res.off('close', done);
      const route = routeTemplate(req);
      if (route) {
        span.updateName(`${req.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    };
    res.on('finish', done);
    res.on('close', done);
    context.with(trace.setSpan(parent, span), next);
  };
}
