// Session routes: the spec's "Sessions and traces" table (create, list, detail, delete, reset,
// traces, span children, metrics) and the transcript route (docs/sessions-api.md). The spec's
// literal sub-paths beside `:id` (RESERVED_SESSION_SUBPATHS) are never read as session ids.
import { type ProjectDoc } from '../../db/project';
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { ApiError } from '../../lib/errors';
import { findOwned } from '../../db/owned';
import { type SessionDoc } from '../../db/session';
import { type AppContext } from '../context';
import { requireEnvironment } from '../../core/platform-keys/environments';
import { defineRoute, linksTo, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { presentSessionDetail, presentSessionListItem, presentTraceEvent, presentTranscriptMessage } from './present';
import {
  RESERVED_SESSION_SUBPATHS,
  ZCreateSessionRequestSchema,
  ZCreateSessionResponseSchema,
  ZDeleteSessionResponseSchema,
  ZListSessionsQuery,
  ZListSessionsResponseSchema,
  ZMetricsResponseSchema,
  ZResetSessionResponseSchema,
  ZSessionDetailResponseSchema,
  ZSessionParams,
  ZSpanChildrenResponseSchema,
  ZSpanParams,
  ZTracesQuery,
  ZTracesResponseSchema,
  ZTranscriptParams,
  ZTranscriptQuery,
  ZTranscriptResponseSchema,
} from './schemas';
import { computeSessionMetrics } from '../../core/sessions/metrics';
import { deleteSession, resetSession } from '../../core/sessions/end';
import { findCurrentSession, findCurrentTenantSession, getSessionDetail, listSessions } from '../../core/sessions/read';
import { listSpanChildren, listTraceEvents, listTranscript } from '../../core/sessions/transcript';
import { resolveNewSessionTarget } from '../../core/sessions/target';
import { startSession } from '../../core/sessions/start';
import { type SessionScope } from '../../core/sessions/scope';

const TAGS = ['Sessions'];
/** `sessions/generations` and `sessions/export` are routes of their own, never session ids. */
const RESERVED = { id: RESERVED_SESSION_SUBPATHS };

/** The operations on one session, for links from whatever created it (here and POST /api/v1/chat/agent). */
export function sessionLinks(projectId: string, id: string) {
  return {
    ...linksTo(['getSession', 'listSessionTraces', 'getSessionMetrics', 'getSessionAnalysis', 'resetSession', 'deleteSession'], { projectId, id }),
    ...linksTo(['getSessionTranscript'], { id }),
  };
}
export const scopeOf = (principal: Principal, project: ProjectDoc | null): SessionScope => ({ tenantId: principal.tenantId, projectId: project!._id });

/** A session of an environment the key is not bound to is not visible to it: 404, like another project's. */
export function hideOutsideEnvironment(principal: Principal, session: Pick<SessionDoc, 'environment'>): void {
  if (!canActInEnvironment(principal, session.environment)) throw ApiError.notFound('Session');
}

/** The same, before an operation that reads the session itself; costs a read only for an environment-bound key. */
async function requireSessionEnvironment(ctx: AppContext, principal: Principal, scope: SessionScope, sessionId: string): Promise<void> {
  if (!principal.environments?.length) return;
  const session = await findOwned(ctx.models.Session, sessionId, scope);
  if (session) hideOutsideEnvironment(principal, session);
}

export const sessionRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/sessions',
    operationId: 'createSession',
    summary: 'Create a session with an agent and start its workflow',
    tags: TAGS,
    auth: 'session:execute',
    params: ZProjectIdParam,
    body: ZCreateSessionRequestSchema,
    links: sessionLinks('$request.path.projectId', '$response.body#/session/id'),
    bodyExample: { agentId: 'Support_Hub', channel: 'api', environment: 'dev' },
    successStatus: 201,
    errorStatuses: [404, 503],
    response: ZCreateSessionResponseSchema,
    async handler({ ctx, principal, project, body }) {
      const scope = scopeOf(principal, project);
      const { agent, deployment } = await resolveNewSessionTarget(ctx.models, scope, { agentId: body.agentId, environment: body.environment });
      requireEnvironment(principal, deployment?.environment ?? body.environment);
      const { session } = await startSession(ctx, {
        ...scope,
        ...agent,
        channel: body.channel,
        environment: deployment?.environment ?? body.environment,
        deploymentId: deployment?._id ?? null,
      });
      return {
        success: true,
        session: { id: session._id, agentId: agent.agentId, agentName: agent.agentName, createdAt: session.createdAt.toISOString() },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions',
    operationId: 'listSessions',
    summary: "List the project's sessions, newest first",
    tags: TAGS,
    auth: 'session:read',
    params: ZProjectIdParam,
    query: ZListSessionsQuery,
    response: ZListSessionsResponseSchema,
    async handler({ ctx, principal, project, query }) {
      const { total, sessions } = await listSessions(ctx.models, scopeOf(principal, project), query, principal.environments);
      return { success: true, total, offset: query.offset, limit: query.limit, sessions: sessions.map(presentSessionListItem) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/:id',
    reservedParams: RESERVED,
    operationId: 'getSession',
    summary: 'Get a session: its summary plus the live state of its workflow',
    tags: TAGS,
    auth: 'session:read',
    params: ZSessionParams,
    errorStatuses: [404],
    response: ZSessionDetailResponseSchema,
    async handler({ ctx, principal, project, params }) {
      await requireSessionEnvironment(ctx, principal, scopeOf(principal, project), params.id);
      const detail = await getSessionDetail(ctx, scopeOf(principal, project), params.id);
      return { success: true, session: presentSessionDetail(detail.session, detail.live, detail.liveUnavailableReason) };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/projects/:projectId/sessions/:id',
    reservedParams: RESERVED,
    operationId: 'deleteSession',
    summary: 'End the session workflow and delete the session, its trace events and transcript',
    tags: TAGS,
    auth: 'session:execute',
    params: ZSessionParams,
    errorStatuses: [404, 503],
    response: ZDeleteSessionResponseSchema,
    async handler({ ctx, principal, project, params }) {
      await requireSessionEnvironment(ctx, principal, scopeOf(principal, project), params.id);
      const deleted = await deleteSession(ctx, scopeOf(principal, project), params.id);
      return {
        success: true,
        deleted: { sessionId: deleted.sessionId, traceEvents: deleted.traceEvents, messages: deleted.messages },
        workflow: deleted.workflow,
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/projects/:projectId/sessions/:id/reset',
    reservedParams: RESERVED,
    operationId: 'resetSession',
    summary: 'Restart the conversation (history stays in traces and transcripts)',
    tags: TAGS,
    auth: 'session:execute',
    params: ZSessionParams,
    errorStatuses: [404, 409, 503],
    response: ZResetSessionResponseSchema,
    async handler({ ctx, principal, project, params }) {
      await requireSessionEnvironment(ctx, principal, scopeOf(principal, project), params.id);
      const { resetAt } = await resetSession(ctx, scopeOf(principal, project), params.id);
      return { success: true, session: { id: params.id, resetAt } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/:id/traces',
    reservedParams: RESERVED,
    operationId: 'listSessionTraces',
    summary: "The session's trace events in order, optionally filtered, with metrics on request",
    tags: TAGS,
    auth: 'session:read',
    params: ZSessionParams,
    query: ZTracesQuery,
    errorStatuses: [404],
    links: linksTo(['listSpanChildren'], {
      projectId: '$request.path.projectId',
      id: '$request.path.id',
      spanId: '$response.body#/traceEvents/0/spanId',
    }),
    response: ZTracesResponseSchema,
    async handler({ ctx, principal, project, params, query }) {
      const session = await findCurrentSession(ctx, scopeOf(principal, project), params.id);
      hideOutsideEnvironment(principal, session);
      const [{ total, events }, metrics] = await Promise.all([
        listTraceEvents(ctx.models, session, query),
        query.include === 'metrics' ? computeSessionMetrics(ctx.models, session) : Promise.resolve(undefined),
      ]);
      return {
        success: true,
        sessionId: session._id,
        total,
        offset: query.offset,
        limit: query.limit,
        traceEvents: events.map(presentTraceEvent),
        ...(metrics ? { metrics } : {}),
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/:id/traces/:spanId/children',
    reservedParams: RESERVED,
    operationId: 'listSpanChildren',
    summary: 'Child events of a span (events whose parentSpanId is the span)',
    tags: TAGS,
    auth: 'session:read',
    params: ZSpanParams,
    query: ZTranscriptQuery,
    errorStatuses: [404],
    response: ZSpanChildrenResponseSchema,
    async handler({ ctx, principal, project, params, query }) {
      const session = await findCurrentSession(ctx, scopeOf(principal, project), params.id);
      hideOutsideEnvironment(principal, session);
      const { total, events } = await listSpanChildren(ctx.models, session, params.spanId, query);
      return {
        success: true,
        sessionId: session._id,
        spanId: params.spanId,
        total,
        offset: query.offset,
        limit: query.limit,
        traceEvents: events.map(presentTraceEvent),
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/:id/metrics',
    reservedParams: RESERVED,
    operationId: 'getSessionMetrics',
    summary: 'Session metrics: latency per turn, tokens per LLM call, tool and guardrail rates',
    tags: TAGS,
    auth: 'session:read',
    params: ZSessionParams,
    errorStatuses: [404],
    response: ZMetricsResponseSchema,
    async handler({ ctx, principal, project, params }) {
      const session = await findCurrentSession(ctx, scopeOf(principal, project), params.id);
      hideOutsideEnvironment(principal, session);
      return { success: true, sessionId: session._id, metrics: await computeSessionMetrics(ctx.models, session) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/sessions/:id/transcripts',
    operationId: 'getSessionTranscript',
    summary: "The session's transcript messages in order",
    description:
      "An embedded widget may send `X-SDK-Token` (from `POST /api/v1/sdk/init`) from the page origin it was issued to (403 otherwise): it reads only sessions its end user started (another end user's, another project's or environment's is 404).",
    tags: TAGS,
    auth: 'session:read',
    sdkToken: true,
    params: ZTranscriptParams,
    query: ZTranscriptQuery,
    errorStatuses: [404],
    response: ZTranscriptResponseSchema,
    async handler({ ctx, principal, params, query }) {
      const session = await findCurrentTenantSession(ctx, principal, params.id);
      hideOutsideEnvironment(principal, session);
      const { total, messages } = await listTranscript(ctx.models, session, query);
      return {
        success: true,
        sessionId: session._id,
        total,
        offset: query.offset,
        limit: query.limit,
        messages: messages.map(presentTranscriptMessage),
      };
    },
  }),
];
