// Agentic-app session routes (docs/agentic-app-sessions.md): create, list, detail, terminate,
// runs/execute and run status. An app is a project (`appId` = project id); a key bound to another
// project, or another tenant's app, gets 404.
import { canActInEnvironment, type Principal } from '../../lib/permissions';
import { requireEnvironment } from '../../core/platform-keys/environments';
import { ApiError } from '../../lib/errors';
import { defineRoute, linksTo, RESPONSE_SENT, type AnyRoute } from '../http/route';
import {
  ZAppEnvParams,
  ZAppParams,
  ZAppSessionDetailQuery,
  ZAppSessionDetailResponse,
  ZCreateAppSessionBody,
  ZCreateAppSessionResponse,
  ZExecuteRunBody,
  ZExecuteRunResponse,
  ZListAppSessionsBody,
  ZListAppSessionsQuery,
  ZListAppSessionsResponse,
  ZRunParams,
  ZRunStreamEvent,
  ZRunStatusResponse,
  ZTerminateBody,
  ZTerminateResponse,
} from './schemas';
import { coreSessionId, findOrCreateAppSession, listAppSessions, loadApp, parseIdentity, terminateAppSession, type AppScope } from '../../core/agentic-apps/sessions';
import { allowedMimeTypes, fileUploadConfig, presentAppSession, sessionInfo } from './present';
import { hasGrant } from '../../lib/api-scopes';
import { oauthProfiles } from '../../core/agentic-apps/oauth';
import { newId } from '../../lib/ids';
import { findOwned } from '../../db/owned';
import { type AppSessionDoc } from '../../db/app-session';
import { appSessionDetail } from '../../core/agentic-apps/traces';
import { executeRun, runStatus } from './runs';
import { type AppContext } from '../context';

const TAGS = ['Agentic-app sessions'];

/** The app and environment a route acts in: a key bound to other environments gets 403. */
async function scopeOf(ctx: AppContext, principal: Principal, params: { appId: string; envName: string }): Promise<AppScope> {
  const app = await loadApp(ctx, principal, params.appId);
  requireEnvironment(principal, params.envName.toLowerCase());
  return { tenantId: app.tenantId, projectId: app._id, environment: params.envName };
}

/** The auth profiles of the tools the session runs (its deployment's, or the latest versions'). */
async function sessionAuthProfiles(ctx: AppContext, session: AppSessionDoc) {
  const scope = { tenantId: session.tenantId, projectId: session.projectId };
  const core = await findOwned(ctx.models.Session, session._id, scope);
  const deployment = core?.deploymentId ? await findOwned(ctx.models.Deployment, core.deploymentId, scope) : null;
  return oauthProfiles(ctx, { ...scope, environment: session.environment }, deployment);
}

const sessionDetailLink = linksTo(['getAppSession'], { appId: '$request.path.appId', session_id: '$response.body#/session/sessionId' });

export const agenticAppRoutes: AnyRoute[] = [
  defineRoute({
    method: 'post',
    path: '/api/v2/apps/:appId/environments/:envName/sessions',
    operationId: 'createAppSession',
    summary: 'Session Create: find or create a session of an app from its identity',
    description:
      'sessionIdentity (a session id) > sessionReference > userReference decide which session is found; without a match a session is started. The session is an AgentSession workflow on channel `api`.',
    tags: TAGS,
    auth: 'session:execute',
    params: ZAppEnvParams,
    body: ZCreateAppSessionBody,
    bodyOptional: true,
    bodyExample: { sessionIdentity: [{ type: 'sessionReference', value: 'order-1234' }, { type: 'userReference', value: 'customer-42' }], source: 'AP' },
    errorStatuses: [404, 409, 429, 503],
    links: sessionDetailLink,
    response: ZCreateAppSessionResponse,
    async handler({ ctx, principal, params, body }) {
      const scope = await scopeOf(ctx, principal, params);
      const { session, greeting } = await findOrCreateAppSession(ctx, scope, parseIdentity(body.sessionIdentity), body.source ?? 'AP');
      const welcome = greeting ? [{ type: 'Welcome_Event', content: { messageToUser: greeting }, params: { reason: 'session_start' } }] : [];
      const output = greeting ? [{ type: 'text', content: greeting }] : [];
      const profiles = await sessionAuthProfiles(ctx, session);
      // Files are taken from a key holding DOCUMENT_UPLOAD (POST …/sessions/{sessionId}/attachments).
      const uploading = hasGrant(principal, 'DOCUMENT_UPLOAD');
      const uploads = { allowedMimeTypes: allowedMimeTypes(uploading), fileUploadConfig: fileUploadConfig(ctx.config, uploading) };
      if (profiles.some((p) => !p.isAuthorized)) {
        // The IDP_Redirect shape: the session exists, and its OAuth tools fail until authorised.
        return {
          messageId: `msg-${newId()}`,
          events: [{ type: 'IDP_Redirect', content: { auth_profiles: profiles } }, ...welcome],
          output,
          sessionInfo: sessionInfo(session, null),
          ...uploads,
        };
      }
      return { session: presentAppSession(session), events: welcome, output, ...uploads };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/public/apps/:appId/sessions/list',
    operationId: 'listAppSessions',
    summary: "Session Details: list an app's sessions in a time window",
    tags: TAGS,
    auth: 'session:read',
    params: ZAppParams,
    query: ZListAppSessionsQuery,
    body: ZListAppSessionsBody,
    bodyOptional: true,
    bodyExample: { env_name: 'dev', user_reference_id: 'customer-42' },
    errorStatuses: [404],
    response: ZListAppSessionsResponse,
    async handler({ ctx, principal, params, query, body }) {
      const app = await loadApp(ctx, principal, params.appId);
      if (body.env_name) requireEnvironment(principal, body.env_name.toLowerCase());
      // A key bound to environments lists only their sessions when no env_name is given.
      return listAppSessions(ctx, { tenantId: app.tenantId, projectId: app._id, environments: principal.environments ?? null }, body, query);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/public/apps/:appId/sessions',
    operationId: 'getAppSession',
    summary: 'Session Details: one session, with its traces and observations on request',
    tags: TAGS,
    auth: 'session:read',
    params: ZAppParams,
    query: ZAppSessionDetailQuery,
    errorStatuses: [404],
    response: ZAppSessionDetailResponse,
    async handler({ ctx, principal, params, query }) {
      const app = await loadApp(ctx, principal, params.appId);
      const id = query.session_id ?? query.sessionId;
      // Both names are optional in the document (either may be sent), so naming none finds none.
      if (!id) throw new ApiError('NOT_FOUND', 'Session not found: send session_id');
      const session = await ctx.models.AppSession.findOne({ _id: coreSessionId(id), tenantId: app.tenantId, projectId: app._id }).lean();
      // A session in an environment the key is not bound to is invisible.
      if (!session || !canActInEnvironment(principal, session.environment)) throw new ApiError('NOT_FOUND', 'Session not found');
      const include = new Set(query.include === undefined ? [] : Array.isArray(query.include) ? query.include : [query.include]);
      const detail = await appSessionDetail(ctx, session, { traces: include.has('traces') || include.has('observations'), observations: include.has('observations') });
      return { sessions: [detail], pagination: { page: 1, limit: 1, total: 1 } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v2/apps/:appId/environments/:envName/sessions/terminate',
    operationId: 'terminateAppSession',
    summary: 'Session Terminate: end a session (succeeds if it has already ended)',
    tags: TAGS,
    auth: 'session:execute',
    params: ZAppEnvParams,
    body: ZTerminateBody,
    bodyExample: { sessionIdentity: [{ type: 'sessionReference', value: 'order-1234' }] },
    errorStatuses: [404, 503],
    response: ZTerminateResponse,
    async handler({ ctx, principal, params, body }) {
      const scope = await scopeOf(ctx, principal, params);
      return terminateAppSession(ctx, scope, parseIdentity(body.sessionIdentity));
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v2/apps/:appId/environments/:envName/runs/execute',
    operationId: 'executeAppRun',
    summary: 'Run one input through a session: synchronously, as SSE, or async with a signed callback',
    description:
      'stream.enable answers text/event-stream (the last event has isLastEvent: true) and wins over isAsync. isAsync answers 202; with callbackUrl the result is POSTed there, signed with X-ABL-Signature over `timestamp.rawBody` (docs/agentic-app-sessions.md).',
    tags: TAGS,
    auth: 'session:execute',
    params: ZAppEnvParams,
    body: ZExecuteRunBody,
    bodyExample: { sessionIdentity: [{ type: 'sessionReference', value: 'order-1234' }], input: [{ type: 'text', content: 'I have a question about my invoice' }] },
    alsoSuccess: [202],
    alternateResponses: { 'text/event-stream': ZRunStreamEvent },
    // 422: a callbackUrl that is not https in production, or not a public destination.
    errorStatuses: [404, 409, 422, 429, 503],
    links: linksTo(['getAppRunStatus'], { appId: '$request.path.appId', envName: '$request.path.envName', runId: '$response.body#/sessionInfo/runId' }),
    response: ZExecuteRunResponse,
    async handler({ ctx, principal, params, body, res }) {
      const scope = await scopeOf(ctx, principal, params);
      const outcome = await executeRun(ctx, { principal, scope, body, res });
      if ('streamed' in outcome) return RESPONSE_SENT;
      res.status(outcome.status);
      return outcome.body;
    },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v2/apps/:appId/environments/:envName/runs/:runId/status',
    operationId: 'getAppRunStatus',
    summary: "A run's status (pending, running, success, failed), output and callback delivery",
    tags: TAGS,
    auth: 'session:read',
    params: ZRunParams,
    errorStatuses: [404],
    response: ZRunStatusResponse,
    async handler({ ctx, principal, params }) {
      return runStatus(ctx, await scopeOf(ctx, principal, params), params.runId);
    },
  }),
];
