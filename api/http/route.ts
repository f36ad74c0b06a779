// One route = one definition: its zod schemas, permission and handler. `mountRoutes` registers
// each definition both with Express and with the OpenAPI registry, so every route is documented.
import { type OpenAPIRegistry, type ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { type Request, type Response, type Router } from 'express';
import { type z } from 'zod';
import { ApiError } from '../../lib/errors';
import { canSeeProject, hasPermission, type Permission, type Principal } from '../../lib/permissions';
import { type ProjectDoc } from '../../db/project';
import { type AppContext } from '../context';
import { authenticate } from '../middleware/auth';
import { consumeRateLimit } from '../middleware/rate-limit';
import { ZErrorResponseSchema } from './schemas';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** `public`: no credential; `authenticated`: any valid credential; or one permission. */
export type RouteAuth = 'public' | 'authenticated' | Permission;

type AnyObject = z.ZodType<Record<string, unknown>>;

export interface HandlerInput<P, Q, B, Auth extends RouteAuth> {
  params: P;
  query: Q;
  body: B;
  principal: Auth extends 'public' ? null : Principal;
  /** The project named by `:projectId`, already checked to be visible to the caller. */
  project: ProjectDoc | null;
  req: Request;
  res: Response;
  ctx: AppContext;
}

/** Returned by a handler that wrote the response itself (streams, files). */
export const RESPONSE_SENT = Symbol('response-sent');

export interface RouteDefinition<P, Q, B, Auth extends RouteAuth = RouteAuth> {
  method: HttpMethod;
  /** Express-style path, e.g. `/api/projects/:projectId/agents`. */
  path: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: Auth;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  successStatus?: number;
  response: z.ZodType;
  /** Statuses besides the success one worth listing in the docs. */
  errorStatuses?: number[];
  responseHeaders?: Record<string, string>;
  handler(input: HandlerInput<P, Q, B, Auth>): Promise<unknown>;
}

// The definition array is heterogeneous; each route is type-checked where it is defined.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDefinition<any, any, any, RouteAuth>;

/** Identity helper that infers the handler's input types from the schemas. */
export function defineRoute<P = Record<string, never>, Q = Record<string, never>, B = undefined, Auth extends RouteAuth = RouteAuth>(
  route: RouteDefinition<P, Q, B, Auth>,
): RouteDefinition<P, Q, B, Auth> {
  return route;
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request',
  401: 'Missing or invalid credential',
  403: 'The credential lacks the permission',
  404: 'Not found, or not visible to this tenant',
  409: 'Conflict',
  410: 'Gone',
  413: 'Body over the size limit',
  415: 'Unsupported content type',
  422: 'Unprocessable',
  429: 'Rate limited',
  503: 'A backend dependency is unavailable',
};

function formatZodError(where: string, error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const field = [where, ...issue.path.map(String)].join('.');
      return `${field}: ${issue.message}`;
    })
    .join('; ');
}

function parseOrThrow<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return {} as T;
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError('VALIDATION_ERROR', formatZodError(where, result.error));
  return result.data;
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

async function loadVisibleProject(ctx: AppContext, principal: Principal | null, projectId: unknown) {
  if (!principal || typeof projectId !== 'string') throw ApiError.notFound('Project');
  const project = await ctx.models.Project.findOne({ _id: projectId, tenantId: principal.tenantId }).lean();
  if (!project || !canSeeProject(principal, project)) throw ApiError.notFound('Project');
  return project;
}

function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

function registerInOpenApi(registry: OpenAPIRegistry, route: AnyRoute): void {
  const success = route.successStatus ?? 200;
  const errorStatuses = new Set<number>(route.errorStatuses ?? []);
  if (route.auth !== 'public') errorStatuses.add(401).add(429);
  if (route.auth !== 'public' && route.auth !== 'authenticated') errorStatuses.add(403);
  if (route.path.includes(':projectId')) errorStatuses.add(404);
  if (route.body || route.query || route.params) errorStatuses.add(400);
  const responses: Record<string, ResponseConfig> = {
    [success]: {
      description: 'Success',
      content: { 'application/json': { schema: route.response } },
      ...(route.responseHeaders
        ? {
            headers: Object.fromEntries(
              Object.entries(route.responseHeaders).map(([name, value]) => [name, { schema: { type: 'string', example: value } }]),
            ),
          }
        : {}),
    },
  };
  for (const status of [...errorStatuses].sort()) {
    responses[status] = {
      description: STATUS_TEXT[status] ?? 'Error',
      content: { 'application/json': { schema: ZErrorResponseSchema } },
    };
  }
  registry.registerPath({
    method: route.method,
    path: toOpenApiPath(route.path),
    summary: route.summary,
    description: route.description,
    tags: route.tags,
    security: route.auth === 'public' ? [] : undefined,
    request: {
      params: route.params as AnyObject | undefined as never,
      query: route.query as AnyObject | undefined as never,
      body: route.body ? { content: { 'application/json': { schema: route.body } }, required: true } : undefined,
    },
    responses,
  });
}

/** Express handler that runs one route's pipeline: auth → rate limit → permission → project → input. */
function toExpressHandler(ctx: AppContext, route: AnyRoute) {
  return async (req: Request, res: Response): Promise<void> => {
    let principal: Principal | null = null;
    if (route.auth !== 'public') {
      principal = await authenticate(ctx, req);
      res.locals.principal = principal;
      await consumeRateLimit(ctx.rateLimiter, `tenant:${principal.tenantId}`, res);
      if (route.auth !== 'authenticated' && !hasPermission(principal, route.auth)) {
        throw new ApiError('FORBIDDEN', `This credential lacks the '${route.auth}' permission`);
      }
    }
    const project = route.path.includes(':projectId') ? await loadVisibleProject(ctx, principal, req.params.projectId) : null;
    if (route.body && hasBody(req) && !req.is(['application/json', 'application/*+json'])) {
      throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Request body must be application/json');
    }
    const params = parseOrThrow(route.params, req.params, 'params');
    const query = parseOrThrow(route.query, req.query, 'query');
    const body = route.body ? parseOrThrow(route.body, req.body ?? {}, 'body') : undefined;
    const result = await route.handler({ params, query, body, principal, project, req, res, ctx });
    if (result === RESPONSE_SENT || res.headersSent) return;
    for (const [name, value] of Object.entries(route.responseHeaders ?? {})) res.setHeader(name, value);
    // A handler may pick another status itself (readiness answers 503 with a body).
    if (res.statusCode === 200) res.status(route.successStatus ?? 200);
    res.json(result);
  };
}

export interface MountedRoute {
  method: HttpMethod;
  pattern: RegExp;
}

/** Mounts routes on the router and the registry; returns their patterns for 405 detection. */
export function mountRoutes(router: Router, registry: OpenAPIRegistry, ctx: AppContext, routes: AnyRoute[]): MountedRoute[] {
  return routes.map((route) => {
    router[route.method](route.path, toExpressHandler(ctx, route));
    registerInOpenApi(registry, route);
    const pattern = new RegExp(
      '^' + route.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '[^/]+') + '/?$',
    );
    return { method: route.method, pattern };
  });
}
