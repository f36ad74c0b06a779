// One route = one definition: its zod schemas, permission and handler. `mountRoutes` registers
// each definition both with Express and with the OpenAPI registry, so every route is documented.
// After authentication, the tenant rate-limit charge, the `:projectId` lookup and a route's
// read-only `preload` run together (one round trip of latency, not three); their outcomes are
// still judged in the documented order: 401, 429, 403, 404, 415, (409 admission), 413, 400.
// The request body is read here, never before: only once the caller holds the route's permission
// (for a route with `admit`, once every check has passed and the admission is taken).
import { type OpenAPIRegistry, type ResponseConfig } from '@asteasolutions/zod-to-openapi';
import { type NextFunction, type Request, type Response, type Router } from 'express';
import { type z } from 'zod';
import { ApiError } from '../../lib/errors';
import { hasPermission, type Permission, type Principal } from '../../lib/permissions';
import { type ProjectDoc } from '../../db/project';
import { findVisibleProject } from '../../core/projects/visible';
import { type AppContext } from '../context';
import { notifyProjectWrite } from '../../core/projects/writes';
import { beginAuthentication, type Authentication } from '../middleware/auth';
import { allowOrigin } from '../sdk/cors';
import { consumeRateLimit, tenantRateLimitKey } from '../middleware/rate-limit';
import { ZErrorResponseSchema } from './schemas';
import { tagRoute } from '../middleware/http-metrics';
import { pathOfNul } from '../../lib/storable-text';
import { type BodyLimit, mediaRefusal, PUBLIC_BODY_BYTES, readFormBody, readJsonBody, type RequestMedia, STANDARD_BODY_BYTES } from './body';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** `public`: no credential; `authenticated`: any valid credential; or one permission. */
export type RouteAuth = 'public' | 'authenticated' | Permission;

type AnyObject = z.ZodType<Record<string, unknown>>;

export interface HandlerInput<P, Q, B, Auth extends RouteAuth, L = undefined> {
  params: P;
  query: Q;
  body: B;
  principal: Auth extends 'public' ? null : Principal;
  /** The project named by `:projectId`, already checked to be visible to the caller. */
  project: ProjectDoc | null;
  /** What the route's `admit` took (undefined without one); the pipeline releases it. */
  admission?: Admission;
  /** What the route's `preload` found (undefined without one). */
  preloaded: L;
  req: Request;
  res: Response;
  ctx: AppContext;
}

export interface PreloadInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** Either confirmed, or the one this API key produced last time, still being confirmed. */
  principal: Principal;
  /**
   * Aborted as soon as the pipeline knows it will not hand this preload to the handler (the
   * request is refused, or a changed credential made it preload again), possibly while the
   * preload is still running: a preload checks it before it starts anything it would have to undo.
   */
  signal: AbortSignal;
  req: Request;
  ctx: AppContext;
}

/** A slot a route takes before its body is read (`admit`), released when the request ends. */
export interface Admission {
  release(): Promise<void>;
}

export interface AdmitInput {
  principal: Principal;
  project: ProjectDoc | null;
  req: Request;
  ctx: AppContext;
}

/** Returned by a handler that wrote the response itself (streams, files). */
export const RESPONSE_SENT = Symbol('response-sent');

/**
 * An OpenAPI link from a success response to an operation that uses what it returned, so a
 * client (and the fuzzer's stateful phase) can chain calls: `{ operationId, parameters }` with
 * runtime expressions such as `$response.body#/project/id` or `$request.path.projectId`.
 */
export interface RouteLink {
  operationId: string;
  parameters: Record<string, string>;
  description?: string;
}

/** Links, one per operation (named after it), that all take the same parameters. */
export function linksTo(operationIds: string[], parameters: Record<string, string>): Record<string, RouteLink> {
  return Object.fromEntries(operationIds.map((operationId) => [operationId, { operationId, parameters }]));
}

export interface RouteDefinition<P, Q, B, Auth extends RouteAuth = RouteAuth, L = undefined> {
  method: HttpMethod;
  /** Express-style path, e.g. `/api/projects/:projectId/agents`. */
  path: string;
  /** Stable camelCase name of the operation in the OpenAPI document (and the links to it). */
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: Auth;
  params?: z.ZodType<P>;
  query?: z.ZodType<Q>;
  body?: z.ZodType<B>;
  /**
   * The request body's media type; JSON unless the route is a provider's webhook that posts a form,
   * or takes a file: `multipart/form-data` bodies are not read by the pipeline (`body` then only
   * documents them; the handler streams `req` once every check has passed).
   */
  requestMedia?: RequestMedia;
  successStatus?: number;
  /** Other success statuses answered with the same body (e.g. 200 on replace, 201 on create). */
  alsoSuccess?: number[];
  /** Media type of the success body; JSON unless the route streams (`text/event-stream`). */
  responseContentType?: 'application/json' | 'text/event-stream' | 'text/xml' | 'audio/wav' | 'text/csv' | 'application/javascript';
  /** True when the route answers 304 (no body) to an `If-None-Match` naming the current ETag; documented as such. */
  notModified?: boolean;
  response: z.ZodType;
  /**
   * Other media types the success response may take, by media type (e.g. `application/zip` when
   * a query asks for a download); the handler writes those bodies itself.
   */
  alternateResponses?: Record<string, z.ZodType>;
  /**
   * Values of a path parameter that are literal sub-paths, not ids (e.g. `sessions/export`
   * beside `sessions/:id`): such a request is passed on untouched, to the literal's own route
   * wherever it is mounted, or to the unknown-route 404, so a `:param` route can never swallow it.
   */
  reservedParams?: Record<string, readonly string[]>;
  /** A request body the documentation shows (and the fuzzer's examples phase sends). */
  bodyExample?: unknown;
  /**
   * The body's limits; by default 1 MB (STANDARD_BODY_BYTES) and no count of objects, and 16 KB
   * (PUBLIC_BODY_BYTES) for a public route without `authorize`, whose caller is anonymous until
   * the handler has read the body (a sign-in, a signed webhook).
   */
  bodyLimit?: BodyLimit;
  /**
   * For a route whose body may be large: taken after every check but the input's (401, 429, 403,
   * 404, 415) and before the body is read, so that a caller waiting for a slot costs nothing
   * (throws 409 when none is free). The pipeline releases it when the request ends. Such a
   * route has no `preload`.
   */
  admit?(input: AdmitInput): Promise<Admission>;
  /**
   * For a `public` route that checks its own credential from the headers (the codec's operator
   * token): runs before its body is read, and throws 401 for a caller it refuses.
   */
  authorize?(input: { req: Request; ctx: AppContext }): void | Promise<void>;
  /**
   * True when the route takes no body at all as `{}` (every field optional). Otherwise a
   * request without a body is a 400, like a body missing a required field.
   */
  bodyOptional?: boolean;
  /**
   * True when an embedded widget's SDK session token (`X-SDK-Token`) may call the route; every
   * other route refuses one with 401. The answer then carries the CORS headers of the token's origin.
   */
  sdkToken?: boolean;
  /** `platformAdmin`: the route takes the X-Platform-Admin-Token instead of a tenant credential. */
  security?: 'platformAdmin';
  /**
   * `handler`: the route looks the `:projectId` up itself (with its own error codes, or by a
   * credential that is not a principal, such as a signed URL's token); the pipeline does not.
   */
  projectLookup?: 'handler';
  /** Links from the success response to the operations that use its ids. */
  links?: Record<string, RouteLink>;
  /** Statuses besides the success one worth listing in the docs. */
  errorStatuses?: number[];
  responseHeaders?: Record<string, string>;
  /**
   * Lookups the handler needs, started alongside the rate-limit charge so their round trips
   * overlap it. Runs only for a principal holding the permission with valid input: a known API
   * key may still be being read (it can turn out revoked: 401). The request may still be
   * refused (401, 429, 404) after it ran, so it must change nothing, or only what it undoes
   * through `signal` or `onRefused`.
   */
  preload?(input: PreloadInput<P, Q, B>): Promise<L>;
  /**
   * Undoes what a preload started when the request is refused before the handler runs (401,
   * 429, 403, 404, 415, 400) or when a changed credential made the pipeline preload again:
   * refunds a charge, aborts a speculative upstream call. Called at most once per preload.
   */
  onRefused?(preloaded: L, ctx: AppContext): void;
  handler(input: HandlerInput<P, Q, B, Auth, L>): Promise<unknown>;
}

// The definition array is heterogeneous; each route is type-checked where it is defined.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteDefinition<any, any, any, RouteAuth, any>;

/** Identity helper that infers the handler's input types from the schemas. */
export function defineRoute<P = Record<string, never>, Q = Record<string, never>, B = undefined, Auth extends RouteAuth = RouteAuth, L = undefined>(
  route: RouteDefinition<P, Q, B, Auth, L>,
): RouteDefinition<P, Q, B, Auth, L> {
  return route;
}

const STATUS_TEXT: Record<number, string> = {
  200: 'Success',
  201: 'Created',
  206: 'Partial content: the requested byte range',
  400: 'Invalid request',
  401: 'Missing or invalid credential',
  403: 'The credential lacks the permission',
  404: 'Not found, or not visible to this tenant',
  408: 'The request was not received in time: headers within HTTP_HEADERS_TIMEOUT_MS, all of it within HTTP_REQUEST_TIMEOUT_MS (answered by the HTTP server, with no body)',
  409: 'Conflict',
  410: 'Gone',
  413: 'Body over the size limit',
  415: 'Unsupported content type',
  416: 'The requested range cannot be satisfied',
  422: 'Unprocessable',
  429: 'Rate limited',
  431: 'Request line or headers over the 16 KB limit (answered by the HTTP server, with no body)',
  503: 'A backend dependency is unavailable',
  504: 'Not finished in time',
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

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): Outcome<T> {
  if (!schema) return { ok: true, value: {} as T };
  const result = schema.safeParse(value);
  if (!result.success) return { ok: false, error: new ApiError('VALIDATION_ERROR', formatZodError(where, result.error)) };
  const nul = pathOfNul(result.data, where);
  if (nul) return { ok: false, error: new ApiError('UNPROCESSABLE_ENTITY', `${nul}: text must not contain the NUL character (U+0000)`) };
  return { ok: true, value: result.data };
}

/** Never rejects, so a promise whose outcome is judged later cannot become an unhandled rejection. */
function settle<T>(promise: Promise<T>): Promise<Outcome<T>> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

function unwrap<T>(outcome: Outcome<T>): T {
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

async function loadVisibleProject(ctx: AppContext, principal: Principal | null, projectId: unknown) {
  // No project id holds U+0000 (lib/storable-text.ts), and the store would refuse to look it up.
  const project = principal && typeof projectId === 'string' && !projectId.includes('\u0000') ? await findVisibleProject(ctx, principal, projectId) : null;
  if (!project) throw ApiError.notFound('Project');
  return project;
}

function toOpenApiPath(path: string): string {
  return path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

/** The code each documented error status answers with, for the documentation's examples. */
const STATUS_EXAMPLE: Record<number, { code: string; message: string }> = {
  400: { code: 'VALIDATION_ERROR', message: 'body.name: Too small: expected string to have >=1 characters' },
  401: { code: 'UNAUTHORIZED', message: 'A valid API key or bearer token is required' },
  403: { code: 'FORBIDDEN', message: "This credential lacks the 'agent:write' permission" },
  404: { code: 'NOT_FOUND', message: 'Project not found' },
  409: { code: 'CONFLICT', message: 'Already exists' },
  410: { code: 'GONE', message: 'The session has ended' },
  413: { code: 'PAYLOAD_TOO_LARGE', message: 'Request body exceeds the 1 MB limit' },
  415: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'Request body must be application/json' },
  416: { code: 'RANGE_NOT_SATISFIABLE', message: "The range is outside the file's 112044 bytes" },
  422: { code: 'UNPROCESSABLE_ENTITY', message: 'The draft has errors' },
  429: { code: 'RATE_LIMIT_EXCEEDED', message: 'Rate limit exceeded' },
  502: { code: 'OUTBOUND_PROVIDER_SUBMIT_FAILED', message: 'The telephony provider refused or failed the request' },
  503: { code: 'SERVICE_UNAVAILABLE', message: 'A backend dependency is unavailable' },
  504: { code: 'GATEWAY_TIMEOUT', message: 'The provider did not answer in time' },
};

/** Every error status a route can answer with, from what its definition says it does. */
export function documentedErrorStatuses(route: AnyRoute): number[] {
  const statuses = new Set<number>(route.errorStatuses ?? []);
  if (route.security === 'platformAdmin') statuses.add(401);
  else if (route.auth !== 'public') statuses.add(401).add(429);
  if (route.auth !== 'public' && route.auth !== 'authenticated') statuses.add(403);
  if (route.path.includes(':projectId')) statuses.add(404);
  if (route.body || route.query || route.params) statuses.add(400);
  // Well-formed input whose text holds U+0000, which the store cannot keep (lib/storable-text.ts).
  if (route.body || route.query || route.params) statuses.add(422);
  // A body may be too large, or not uncompressed UTF-8 JSON.
  if (route.body) statuses.add(413).add(415);
  if (route.admit) statuses.add(409);
  // Node's HTTP server refuses a request line and headers over 16 KB, or sent too slowly, before any route runs.
  statuses.add(408).add(431);
  return [...statuses].sort((a, b) => a - b);
}

/** Documents one route in the registry (what mountRoutes does besides mounting it). */
export function registerInOpenApi(registry: OpenAPIRegistry, route: AnyRoute): void {
  const contentType = route.responseContentType ?? 'application/json';
  const headers = route.responseHeaders
    ? Object.fromEntries(Object.entries(route.responseHeaders).map(([name, value]) => [name, { schema: { type: 'string' as const, example: value } }]))
    : undefined;
  const links = route.links
    ? Object.fromEntries(
        Object.entries(route.links).map(([name, link]) => [
          name,
          { operationId: link.operationId, parameters: link.parameters, ...(link.description ? { description: link.description } : {}) },
        ]),
      )
    : undefined;
  const responses: Record<string, ResponseConfig> = {};
  for (const status of [route.successStatus ?? 200, ...(route.alsoSuccess ?? [])]) {
    responses[status] = {
      description: STATUS_TEXT[status] ?? 'Success',
      content: {
        [contentType]: { schema: route.response },
        ...Object.fromEntries(Object.entries(route.alternateResponses ?? {}).map(([media, schema]) => [media, { schema }])),
      },
      ...(headers ? { headers } : {}),
      ...(links ? { links } : {}),
    };
  }
  if (route.notModified) {
    responses[304] = { description: 'Not modified: `If-None-Match` names the current ETag (no body)', ...(headers ? { headers } : {}) };
  }
  for (const status of documentedErrorStatuses(route)) {
    if (status === 408 || status === 431) {
      responses[status] = { description: STATUS_TEXT[status]! };
      continue;
    }
    const example = STATUS_EXAMPLE[status];
    responses[status] = {
      description: STATUS_TEXT[status] ?? 'Error',
      content: {
        'application/json': { schema: ZErrorResponseSchema, ...(example ? { example: { success: false, error: example } } : {}) },
      },
    };
  }
  registry.registerPath({
    method: route.method,
    path: toOpenApiPath(route.path),
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: route.tags,
    security:
      route.security === 'platformAdmin'
        ? [{ platformAdmin: [] }]
        : route.auth === 'public'
          ? []
          : route.sdkToken
            ? [{ bearerAuth: [] }, { apiKeyHeader: [] }, { sdkToken: [] }]
            : undefined,
    request: {
      params: route.params as AnyObject | undefined as never,
      query: route.query as AnyObject | undefined as never,
      body: route.body
        ? {
            content: {
              [route.requestMedia ?? 'application/json']: { schema: route.body, ...(route.bodyExample !== undefined ? { example: route.bodyExample } : {}) },
            },
            required: !route.bodyOptional,
          }
        : undefined,
    },
    responses,
  });
}

function samePrincipal(a: Principal, b: Principal): boolean {
  return (
    a.subjectId === b.subjectId &&
    a.tenantId === b.tenantId &&
    a.projectId === b.projectId &&
    a.permissions.size === b.permissions.size &&
    [...a.permissions].every((p) => b.permissions.has(p)) &&
    (a.scope?.id ?? null) === (b.scope?.id ?? null) &&
    (a.environments ?? []).join(',') === (b.environments ?? []).join(',')
  );
}

/** Express matches paths case-insensitively, so a reserved name is recognised in any case. */
function isReserved(values: readonly string[], value: unknown): boolean {
  return typeof value === 'string' && values.some((v) => v.toLowerCase() === value.toLowerCase());
}

/** Express handler that runs one route's pipeline: auth → rate limit → permission → project → input. */
function toExpressHandler(ctx: AppContext, route: AnyRoute) {
  const hasProjectParam = route.path.includes(':projectId') && route.projectLookup !== 'handler';
  const reserved = Object.entries(route.reservedParams ?? {});
  // A caller no credential has vouched for before the body (a public route without `authorize`) is read a few KB at most.
  const bodyLimit = route.bodyLimit ?? { bytes: route.auth === 'public' && !route.authorize ? PUBLIC_BODY_BYTES : STANDARD_BODY_BYTES };
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (reserved.some(([name, values]) => isReserved(values, req.params[name]))) return next();
    tagRoute(res, route.path);
    try {
      await runPipeline(req, res);
    } catch (err) {
      // A body still arriving that the pipeline did not read (refused before it, or past its
      // limit) is not read at all: the connection closes after the answer.
      if (!req.complete && !res.headersSent) res.setHeader('Connection', 'close');
      throw err;
    }
  };

  async function runPipeline(req: Request, res: Response): Promise<void> {
    // The key read (when what this process knows of the key has aged out) and, for a key seen
    // before, the tenant charge are the longest round trips: they are sent before anything else. A malformed credential is judged first all the same.
    const charge = (tenantId: string) => settle(consumeRateLimit(ctx.rateLimiter, tenantRateLimitKey(tenantId), res));
    let auth: Authentication | null = null;
    let malformed: { error: unknown } | null = null;
    if (route.auth !== 'public') {
      try {
        auth = beginAuthentication(ctx, req);
      } catch (error) {
        malformed = { error };
      }
    } else if (route.authorize) {
      await route.authorize({ req, ctx });
    }
    const earlyCharge = auth?.early ? charge(auth.early.tenantId) : null;

    // Header checks are synchronous; their errors wait their turn (after 401, 429, 403 and 404).
    const sendsBody = route.body !== undefined && hasBody(req);
    const media = sendsBody ? mediaRefusal(req, route.requestMedia) : null;
    const params = parse(route.params, req.params, 'params');
    const query = parse(route.query, req.query, 'query');
    const headersOk = media === null && params.ok && query.ok;

    // The body, read once, and only for a caller the route lets send it: a principal holding the
    // permission (one confirmed, or a key this process has read before and is confirming again),
    // or anyone on a public route. Up to the route's limit, never inflated.
    let bodyRead: Promise<Outcome<unknown>> | null = null;
    const readBody = (): Promise<Outcome<unknown>> =>
      (bodyRead ??= !route.body
        ? Promise.resolve({ ok: true, value: undefined })
        : !sendsBody
          ? Promise.resolve(
              route.bodyOptional ? parse(route.body, {}, 'body') : { ok: false, error: new ApiError('VALIDATION_ERROR', `body: is required (${route.requestMedia === 'multipart/form-data' ? 'multipart/form-data' : 'a JSON object'})`) },
            )
          : route.requestMedia === 'multipart/form-data'
            ? Promise.resolve({ ok: true, value: undefined })
            : settle(route.requestMedia === 'application/x-www-form-urlencoded' ? readFormBody(req, bodyLimit) : readJsonBody(req, bodyLimit)).then((read) =>
                read.ok ? parse(route.body, read.value, 'body') : read,
              ));

    // The lookups a principal allows, started together. Preloads not handed to the handler
    // have their signal aborted at once and are given to `onRefused` once they settle.
    const preloads: { outcome: Promise<Outcome<unknown>>; refused: AbortController }[] = [];
    const startLookups = (principal: Principal | null) => {
      const permitted = principal === null || route.auth === 'authenticated' || route.auth === 'public' || hasPermission(principal, route.auth);
      const bodyNow = permitted && headersOk && !route.admit && (principal !== null || route.auth === 'public');
      const body = bodyNow ? readBody() : null;
      let preload: Promise<Outcome<unknown>> | null = null;
      if (route.preload && principal && body) {
        const refused = new AbortController();
        preload = body.then((input) =>
          input.ok
            ? settle(route.preload!({ params: unwrap(params), query: unwrap(query), body: input.value, principal, signal: refused.signal, req, ctx }))
            : input,
        );
        preloads.push({ outcome: preload, refused });
      }
      return {
        permitted,
        project: hasProjectParam && permitted ? settle(loadVisibleProject(ctx, principal, req.params.projectId)) : null,
        preload,
      };
    };
    const refuseUnused = (used: Promise<Outcome<unknown>> | null) => {
      for (const { outcome, refused } of preloads) {
        if (outcome === used) continue;
        refused.abort();
        if (route.onRefused) void outcome.then((settled) => settled.ok && route.onRefused!(settled.value, ctx));
      }
    };

    let principal: Principal | null = null;
    let charged: Promise<Outcome<void>> | null = null;
    let lookups: ReturnType<typeof startLookups> | null = null;
    let project: ProjectDoc | null;
    let admission: Admission | undefined;
    let body: unknown;
    let preloaded: unknown;
    try {
      if (malformed) throw malformed.error;
      if (!auth) {
        lookups = startLookups(null);
      } else {
        // A key this process has seen before lets the tenant charge and the lookups start while
        // the key itself is read (or at once, when it was read within API_KEY_CACHE_MS); nothing
        // is judged, and the handler does not run, before it is confirmed.
        const confirmation = settle(auth.confirmed);
        const early = auth.early;
        const speculative = early ? { charged: earlyCharge!, lookups: startLookups(early) } : null;
        principal = unwrap(await confirmation);
        if (principal.sdk) {
          if (!route.sdkToken) throw new ApiError('UNAUTHORIZED', 'An SDK token is not accepted here; it serves the widget routes only');
          allowOrigin(res, principal.sdk.origin);
        }
        res.locals.principal = principal;
        // The key changed since it was last seen (permissions, project binding): look up again.
        charged = speculative && early!.tenantId === principal.tenantId ? speculative.charged : charge(principal.tenantId);
        lookups = speculative && samePrincipal(early!, principal) ? speculative.lookups : startLookups(principal);
      }

      if (charged) unwrap(await charged);
      if (!lookups.permitted) throw new ApiError('FORBIDDEN', `This credential lacks the '${String(route.auth)}' permission`);
      project = lookups.project ? unwrap(await lookups.project) : null;
      if (media) throw media;
      unwrap(params);
      unwrap(query);
      if (route.admit) admission = await route.admit({ principal: principal!, project, req, ctx });
      body = unwrap(await readBody());
      preloaded = lookups.preload ? unwrap(await lookups.preload) : undefined;
    } catch (err) {
      refuseUnused(null);
      await admission?.release();
      throw err;
    }
    refuseUnused(lookups.preload);
    let result: unknown;
    try {
      result = await route.handler({
        params: unwrap(params),
        query: unwrap(query),
        body,
        principal,
        project,
        admission,
        preloaded,
        req,
        res,
        ctx,
      });
    } finally {
      await admission?.release();
    }
    if (project && req.method !== 'GET') notifyProjectWrite(ctx, project);
    if (result === RESPONSE_SENT || res.headersSent) return;
    for (const [name, value] of Object.entries(route.responseHeaders ?? {})) res.setHeader(name, value);
    // A handler may pick another status itself (a PUT that created answers 201).
    if (res.statusCode === 200) res.status(route.successStatus ?? 200);
    res.json(result);
  }
}

export interface MountedRoute {
  method: HttpMethod;
  pattern: RegExp;
}

/** Mounts routes on the router and the registry; returns their patterns for 405 detection. */
export function mountRoutes(router: Router, registry: OpenAPIRegistry, ctx: AppContext, routes: AnyRoute[]): MountedRoute[] {
  return routes.map((route) => {
    if (route.admit && route.preload) throw new Error(`${route.operationId}: a route with \`admit\` reads its body last and cannot preload`);
    router[route.method](route.path, toExpressHandler(ctx, route));
    registerInOpenApi(registry, route);
    return { method: route.method, pattern: pathPattern(route) };
  });
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A literal matched in any letter case (`export` → `[eE][xX]…`). */
const anyCase = (text: string) =>
  [...text].map((c) => (c.toLowerCase() !== c.toUpperCase() ? `[${c.toLowerCase()}${c.toUpperCase()}]` : escapeRegExp(c))).join('');

/** The paths a route answers, for 405 detection: a reserved parameter value is not one of them. */
export function pathPattern(route: Pick<AnyRoute, 'path' | 'reservedParams'>): RegExp {
  const source = escapeRegExp(route.path).replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, (_match, name: string) => {
    const reserved = route.reservedParams?.[name] ?? [];
    return reserved.length > 0 ? `(?!(?:${reserved.map(anyCase).join('|')})(?:/|$))[^/]+` : '[^/]+';
  });
  return new RegExp(`^${source}/?$`);
}
