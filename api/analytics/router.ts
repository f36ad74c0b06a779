// Event analytics routes (spec "Event analytics"; docs/observability.md, "Analytics queries"):
// grouped metrics, event pages (GET with a query, POST with a body: same semantics), an agent's
// summary, LLM cost by model and provider, session metrics. Reads go through the AnalyticsStore
// (core/analytics/store.ts); every range is bounded (MAX_RANGE_DAYS).
import { ApiError } from '../../lib/errors';
import { type ProjectDoc } from '../../db/project';
import { type Principal } from '../../lib/permissions';
import { type AppContext } from '../context';
import { defineRoute, type AnyRoute } from '../http/route';
import { mongoAnalyticsStore } from '../../core/analytics/store';
import { presentAnalyticsEvent } from '../../core/analytics/present';
import { agentAnalytics, analyticsMetrics, costBreakdown, DEFAULT_RANGE_MS, MAX_RANGE_DAYS, MAX_RANGE_MS, sessionMetrics } from '../../core/analytics/metrics';
import { type EventFilter, type TimeRange } from '../../core/analytics/store';
import {
  ZAgentParams,
  ZAgentResponse,
  ZAggregateBody,
  ZAnalyticsParams,
  ZCostBreakdownResponse,
  ZEventsQuery,
  ZEventsResponse,
  ZMetricsQuery,
  ZMetricsResponse,
  ZQueryBody,
  ZRangeQuery,
  ZSessionMetricsResponse,
} from './schemas';

const TAGS = ['Analytics'];
const BASE = '/api/projects/:projectId/analytics';

const scopeOf = (principal: Principal, project: ProjectDoc | null) => ({ tenantId: principal.tenantId, projectId: project!._id });
const storeOf = (ctx: AppContext) => mongoAnalyticsStore(ctx.models);

/**
 * The range a request names: defaults (the last 24 hours), from ≤ to, at most MAX_RANGE_DAYS long.
 * A range that breaks either rule is well-formed (each date is valid) but unusable, which no
 * schema can state across two fields: 422, as elsewhere in the API.
 */
function rangeOf(where: 'query' | 'body.timeRange', from: string | undefined, to: string | undefined): TimeRange {
  const end = to !== undefined ? new Date(to) : new Date();
  const start = from !== undefined ? new Date(from) : new Date(end.getTime() - DEFAULT_RANGE_MS);
  if (start.getTime() > end.getTime()) throw new ApiError('UNPROCESSABLE_ENTITY', `${where}.from: must not be after ${where}.to`);
  if (end.getTime() - start.getTime() > MAX_RANGE_MS) throw new ApiError('UNPROCESSABLE_ENTITY', `${where}: the range must not be longer than ${MAX_RANGE_DAYS} days`);
  return { from: start, to: end };
}

const rangeOut = (r: TimeRange) => ({ from: r.from.toISOString(), to: r.to.toISOString() });

async function eventsPage(ctx: AppContext, principal: Principal, project: ProjectDoc | null, range: TimeRange, filter: EventFilter, page: { limit: number; offset: number }) {
  const { events, total } = await storeOf(ctx).events(scopeOf(principal, project), range, filter, page);
  return {
    success: true as const,
    data: { events: events.map(presentAnalyticsEvent), total, hasMore: page.offset + events.length < total, limit: page.limit, offset: page.offset },
  };
}

export const analyticsRoutes: AnyRoute[] = [
  defineRoute({
    method: 'get',
    path: `${BASE}/metrics`,
    operationId: 'getAnalyticsMetrics',
    summary: "Metrics of the project's analytics events, grouped",
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAnalyticsParams,
    query: ZMetricsQuery,
    response: ZMetricsResponse,
    async handler({ ctx, principal, project, query }) {
      const range = rangeOf('query', query.from, query.to);
      const buckets = await analyticsMetrics(storeOf(ctx), scopeOf(principal, project), { range, groupBy: query.groupBy, metrics: query.metrics, category: query.category });
      return { success: true, data: { ...rangeOut(range), buckets } };
    },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/aggregate`,
    operationId: 'aggregateAnalytics',
    summary: 'Metrics of analytics events, grouped (the metrics route with a body)',
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAnalyticsParams,
    body: ZAggregateBody,
    bodyExample: { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, groupBy: ['agent_name'], metrics: ['count', 'p95_duration'], filters: { category: 'llm' } },
    response: ZMetricsResponse,
    async handler({ ctx, principal, project, body }) {
      const range = rangeOf('body.timeRange', body.timeRange.from, body.timeRange.to);
      const buckets = await analyticsMetrics(storeOf(ctx), scopeOf(principal, project), {
        range,
        groupBy: [...new Set(body.groupBy)],
        metrics: [...new Set(body.metrics)],
        category: body.filters?.category,
        eventTypes: body.filters?.eventTypes,
      });
      return { success: true, data: { ...rangeOut(range), buckets } };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/events`,
    operationId: 'listAnalyticsEvents',
    summary: "The project's analytics events, newest first, filtered and paged",
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAnalyticsParams,
    query: ZEventsQuery,
    response: ZEventsResponse,
    async handler({ ctx, principal, project, query }) {
      const range = rangeOf('query', query.from, query.to);
      const { category, eventTypes, sessionId, agentName, hasError, limit, offset } = query;
      return eventsPage(ctx, principal, project, range, { category, eventTypes, sessionId, agentName, hasError }, { limit, offset });
    },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/query`,
    operationId: 'queryAnalyticsEvents',
    summary: 'Analytics events, filtered and paged (the events route with a body)',
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAnalyticsParams,
    body: ZQueryBody,
    bodyExample: { timeRange: { from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, category: 'tool', hasError: true, limit: 100 },
    response: ZEventsResponse,
    async handler({ ctx, principal, project, body }) {
      const range = rangeOf('body.timeRange', body.timeRange.from, body.timeRange.to);
      const { category, eventTypes, sessionId, agentName, hasError, limit, offset } = body;
      return eventsPage(ctx, principal, project, range, { category, eventTypes, sessionId, agentName, hasError }, { limit, offset });
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/agents/:name`,
    operationId: 'getAgentAnalytics',
    summary: "An agent's analytics: totals, per category and per event type",
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAgentParams,
    query: ZRangeQuery,
    response: ZAgentResponse,
    async handler({ ctx, principal, project, params, query }) {
      const range = rangeOf('query', query.from, query.to);
      const data = await agentAnalytics(storeOf(ctx), scopeOf(principal, project), range, params.name);
      return { success: true, data: { ...rangeOut(range), agent_name: params.name, ...data } };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/cost-breakdown`,
    operationId: 'getAnalyticsCostBreakdown',
    summary: 'LLM cost by model and provider',
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAnalyticsParams,
    query: ZRangeQuery,
    response: ZCostBreakdownResponse,
    async handler({ ctx, principal, project, query }) {
      const range = rangeOf('query', query.from, query.to);
      const data = await costBreakdown(storeOf(ctx), scopeOf(principal, project), range);
      return { success: true, data: { ...rangeOut(range), currency: 'USD' as const, ...data } };
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/session-metrics`,
    operationId: 'getAnalyticsSessionMetrics',
    summary: 'Sessions, their length, messages, LLM calls, errors, tokens and cost, in total and per channel',
    tags: TAGS,
    auth: 'session:read',
    errorStatuses: [422],
    params: ZAnalyticsParams,
    query: ZRangeQuery,
    response: ZSessionMetricsResponse,
    async handler({ ctx, principal, project, query }) {
      const range = rangeOf('query', query.from, query.to);
      const data = await sessionMetrics(storeOf(ctx), scopeOf(principal, project), range);
      return { success: true, data: { ...rangeOut(range), ...data } };
    },
  }),
];
