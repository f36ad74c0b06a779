// Session insight routes: a session's analysis (rules over its trace), the LLM calls across the
// project's sessions (generations) and the traces as streamed CSV (export). docs/sessions-api.md.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { defineRoute, RESPONSE_SENT, type AnyRoute } from '../http/route';
import { ZProjectIdParam } from '../http/schemas';
import { analyseSession } from '../../core/sessions/analysis';
import { prepareSessionExport } from '../../core/sessions/export';
import { listGenerations } from '../../core/sessions/generations';
import { findCurrentSession } from '../../core/sessions/read';
import { hideOutsideEnvironment, scopeOf } from './router';
import { RESERVED_SESSION_SUBPATHS, ZSessionParams } from './schemas';
import { ZAnalysisResponseSchema, ZExportCsvBody, ZExportQuery, ZGenerationsQuery, ZGenerationsResponseSchema } from './insight-schemas';

const TAGS = ['Sessions'];
const dateOf = (iso?: string) => (iso ? new Date(iso) : undefined);

export const sessionInsightRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/:id/analysis',
    reservedParams: { id: RESERVED_SESSION_SUBPATHS },
    operationId: 'getSessionAnalysis',
    summary: 'Session analysis: slow spans, error patterns, decision anomalies, cost hotspots and suggestions',
    tags: TAGS,
    auth: 'session:read',
    params: ZSessionParams,
    errorStatuses: [404],
    response: ZAnalysisResponseSchema,
    async handler({ ctx, principal, project, params }) {
      const session = await findCurrentSession(ctx, scopeOf(principal, project), params.id);
      hideOutsideEnvironment(principal, session);
      return { success: true, sessionId: session._id, analysis: await analyseSession(ctx.models, session) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/generations',
    operationId: 'listSessionGenerations',
    summary: "LLM calls across the project's sessions, newest first, filtered and paged",
    tags: TAGS,
    auth: 'session:read',
    params: ZProjectIdParam,
    query: ZGenerationsQuery,
    errorStatuses: [404],
    response: ZGenerationsResponseSchema,
    async handler({ ctx, principal, project, query }) {
      const { total, generations } = await listGenerations(
        ctx.models,
        scopeOf(principal, project),
        { ...query, from: dateOf(query.from), to: dateOf(query.to) },
        principal.environments,
      );
      return { success: true, total, offset: query.offset, limit: query.limit, hasMore: query.offset + generations.length < total, generations };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/projects/:projectId/sessions/export',
    operationId: 'exportSessionTraces',
    summary: "The project's session traces as CSV, streamed",
    description:
      'One row per trace event, sessions oldest first and each session\'s events in order. The body is streamed: a failure after the first bytes cuts the connection (the CSV is then short), ' +
      'one before them is an error response.',
    tags: TAGS,
    auth: 'session:read',
    params: ZProjectIdParam,
    query: ZExportQuery,
    responseContentType: 'text/csv',
    responseHeaders: { 'Content-Disposition': 'attachment; filename="session-traces-<projectId>.csv"' },
    errorStatuses: [404],
    response: ZExportCsvBody,
    async handler({ ctx, principal, project, query, res }) {
      const scope = scopeOf(principal, project);
      const chunks = await prepareSessionExport(ctx.models, scope, { ...query, from: dateOf(query.from), to: dateOf(query.to) }, principal.environments);
      // The first piece is read before the status is sent, so a store that fails at once is an error response.
      const first = await chunks.next();
      res.status(200).set({
        'Content-Type': 'text/csv; charset=utf-8',
        'Content-Disposition': `attachment; filename="session-traces-${scope.projectId.replace(/[^A-Za-z0-9_-]/g, '_')}.csv"`,
        'Cache-Control': 'no-store',
        'X-Content-Type-Options': 'nosniff',
      });
      // A client that takes nothing for SESSION_EXPORT_IDLE_TIMEOUT_MS is cut, which closes the cursors.
      const idleMs = ctx.config.SESSION_EXPORT_IDLE_TIMEOUT_MS;
      let idle: NodeJS.Timeout | undefined;
      let idled = false;
      const cut = () => {
        idled = true;
        res.destroy();
      };
      async function* all() {
        try {
          for (let next = first; !next.done; next = await chunks.next()) {
            // Runs while the piece waits to be taken, not while the store produces the next one.
            idle = setTimeout(cut, idleMs);
            yield next.value;
            clearTimeout(idle);
          }
        } finally {
          clearTimeout(idle);
          await chunks.return(undefined);
        }
      }
      try {
        await pipeline(Readable.from(all(), { objectMode: false }), res);
      } catch (err) {
        // Headers are out: the connection is cut, so the client sees a short body, never a complete-looking one.
        if (idled) ctx.logger.info({ projectId: scope.projectId, idleMs }, 'session trace export cut: the client read nothing for the idle limit');
        else if ((err as NodeJS.ErrnoException)?.code !== 'ERR_STREAM_PREMATURE_CLOSE') ctx.logger.warn({ err, projectId: scope.projectId }, 'session trace export stopped midway');
        res.destroy();
      }
      return RESPONSE_SENT;
    },
  }),
];
