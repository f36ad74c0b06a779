// Request and response schemas of the event analytics routes (docs/observability.md, "Analytics queries").
import { z } from 'zod';
import '../openapi/registry';
import { ANALYTICS_CATEGORIES } from '../../db/analytics-event';
import { ZDateTime, ZOffsetQuery, queryInt, MAX_OFFSET } from '../http/schemas';
import { GROUP_DIMENSIONS, METRICS, MAX_RANGE_DAYS } from '../../core/analytics/metrics';

/** Page size of event reads (spec "Limits": default 100, max 10,000). */
export const ANALYTICS_MAX_LIMIT = 10_000;
export const ANALYTICS_DEFAULT_LIMIT = 100;
/** Most event types one filter may list. */
export const MAX_EVENT_TYPES = 50;
const EVENT_TYPE_MAX = 128;

const ZProjectId = z.string().min(1).max(64).describe('Project id (a CUID)');
export const ZAnalyticsParams = z.object({ projectId: ZProjectId });
export const ZAgentParams = z.object({
  projectId: ZProjectId,
  name: z.string().min(1).max(200).describe('Agent name as events carry it'),
});

const RANGE_NOTE = `at most ${MAX_RANGE_DAYS} days after \`from\`, and not before it (422 otherwise)`;
const ZFrom = ZDateTime.optional().describe('Start of the range, inclusive (ISO 8601; default 24 hours before `to`)');
const ZTo = ZDateTime.optional().describe(`End of the range, exclusive (ISO 8601; default now); ${RANGE_NOTE}`);
const ZCategory = z.enum(ANALYTICS_CATEGORIES).describe('Only events of this category');

/** A comma list of names from a fixed set, deduplicated, in the order given. */
function commaList<T extends string>(values: readonly T[], fallback: string, what: string) {
  const one = `(?:${values.join('|')})`;
  return z
    .string()
    .max(200)
    .regex(new RegExp(`^${one}(?:,${one})*$`), `must be a comma list of ${values.join(', ')}`)
    .default(fallback)
    .transform((s) => [...new Set(s.split(','))] as T[])
    .describe(`${what}: comma list of ${values.map((v) => `\`${v}\``).join(', ')} (default \`${fallback}\`)`);
}

const EVENT_TYPE_PATTERN = /^[^\u0000-\u001f\u007f,]+$/; // eslint-disable-line no-control-regex -- control characters are what this refuses
const ZEventType = z.string().min(1).max(EVENT_TYPE_MAX).regex(EVENT_TYPE_PATTERN, 'must be an event type (no control characters or commas)');
/** At most MAX_EVENT_TYPES types of at most EVENT_TYPE_MAX characters, stated in the pattern itself so the document says it all. */
const EVENT_TYPES_PATTERN = new RegExp(`^[^\\u0000-\\u001f\\u007f,]{1,${EVENT_TYPE_MAX}}(?:,[^\\u0000-\\u001f\\u007f,]{1,${EVENT_TYPE_MAX}}){0,${MAX_EVENT_TYPES - 1}}$`);
const ZEventTypesQuery = z
  .string()
  .max(MAX_EVENT_TYPES * (EVENT_TYPE_MAX + 1))
  .regex(EVENT_TYPES_PATTERN, `must be a comma list of at most ${MAX_EVENT_TYPES} event types of at most ${EVENT_TYPE_MAX} characters`)
  .transform((s) => [...new Set(s.split(','))])
  .optional()
  .describe(`Only events of these types (comma list, at most ${MAX_EVENT_TYPES})`);
const ZSessionIdFilter = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters') // eslint-disable-line no-control-regex -- as above
  .describe("Only this session's events");
const ZAgentNameFilter = z.string().min(1).max(200).describe("Only this agent's events");

export const ZMetricsQuery = z.object({
  from: ZFrom,
  to: ZTo,
  groupBy: commaList(GROUP_DIMENSIONS, 'category', 'Grouping keys'),
  metrics: commaList(METRICS, 'count,error_rate', 'Metrics of each group'),
  category: ZCategory.optional(),
});

export const ZEventsQuery = z.object({
  from: ZFrom,
  to: ZTo,
  category: ZCategory.optional(),
  eventTypes: ZEventTypesQuery,
  sessionId: ZSessionIdFilter.optional(),
  agentName: ZAgentNameFilter.optional(),
  hasError: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('`true`: error events only; `false`: events without an error'),
  limit: queryInt(1, ANALYTICS_MAX_LIMIT, ANALYTICS_DEFAULT_LIMIT).describe(`Page size (default ${ANALYTICS_DEFAULT_LIMIT}, max ${ANALYTICS_MAX_LIMIT})`),
  offset: ZOffsetQuery,
});

export const ZRangeQuery = z.object({ from: ZFrom, to: ZTo });

const ZTimeRange = z
  .object({
    from: ZDateTime.describe('Start, inclusive (ISO 8601)'),
    to: ZDateTime.describe(`End, exclusive (ISO 8601); ${RANGE_NOTE}`),
  })
  .describe('The range of event timestamps');

export const ZQueryBody = z.object({
  timeRange: ZTimeRange,
  category: ZCategory.optional(),
  eventTypes: z.array(ZEventType).max(MAX_EVENT_TYPES).optional().describe(`Only events of these types (at most ${MAX_EVENT_TYPES})`),
  sessionId: ZSessionIdFilter.optional(),
  agentName: ZAgentNameFilter.optional(),
  hasError: z.boolean().optional().describe('true: error events only; false: events without an error'),
  limit: z.number().int().min(1).max(ANALYTICS_MAX_LIMIT).default(ANALYTICS_DEFAULT_LIMIT).describe(`Page size (default ${ANALYTICS_DEFAULT_LIMIT}, max ${ANALYTICS_MAX_LIMIT})`),
  offset: z.number().int().min(0).max(MAX_OFFSET).default(0).describe('Events to skip'),
});

export const ZAggregateBody = z.object({
  timeRange: ZTimeRange,
  groupBy: z.array(z.enum(GROUP_DIMENSIONS)).min(1).max(GROUP_DIMENSIONS.length).describe('Grouping keys'),
  metrics: z.array(z.enum(METRICS)).min(1).max(METRICS.length).describe('Metrics of each group'),
  filters: z
    .object({
      category: ZCategory.optional(),
      eventTypes: z.array(ZEventType).max(MAX_EVENT_TYPES).optional().describe(`Only events of these types (at most ${MAX_EVENT_TYPES})`),
    })
    .optional(),
});

const ZBucket = z
  .record(z.string(), z.union([z.string(), z.number(), z.null()]))
  .describe('The group\'s keys (named as in groupBy: `hour` is the hour\'s start, `day` is YYYY-MM-DD, UTC) and the metric values (null where no event of the group has a duration)')
  .openapi('AnalyticsBucket');

const ZRangeOut = z.object({ from: z.string(), to: z.string() });

export const ZMetricsResponse = z.object({
  success: z.literal(true),
  data: z.object({ from: z.string(), to: z.string(), buckets: z.array(ZBucket) }),
});

export const ZAnalyticsEvent = z
  .object({
    id: z.string(),
    category: z.enum(ANALYTICS_CATEGORIES),
    event_type: z.string(),
    agent_name: z.string().nullable(),
    session_id: z.string().nullable(),
    channel: z.string().nullable(),
    timestamp: z.string(),
    duration_ms: z.number().nullable(),
    error: z.string().optional().describe('Present on error events'),
    metadata: z.record(z.string(), z.unknown()).describe('LLM events: model, provider, tokens_in, tokens_out, cost'),
  })
  .openapi('AnalyticsEvent');

export const ZEventsResponse = z.object({
  success: z.literal(true),
  data: z.object({
    events: z.array(ZAnalyticsEvent).describe('Newest first'),
    total: z.number().int().describe('Events matching the filters'),
    hasMore: z.boolean().describe('Whether events remain beyond this page'),
    limit: z.number().int(),
    offset: z.number().int(),
  }),
});

const nullableNumber = z.number().nullable();
const ZSummary = z.object({
  count: z.number(),
  error_count: z.number(),
  error_rate: nullableNumber,
  avg_duration: nullableNumber,
  p95_duration: nullableNumber,
  sum_tokens: nullableNumber,
  sum_cost: nullableNumber,
});

export const ZAgentResponse = z.object({
  success: z.literal(true),
  data: ZRangeOut.extend({
    agent_name: z.string(),
    summary: ZSummary,
    by_category: z.array(ZBucket),
    by_event_type: z.array(ZBucket),
  }),
});

const ZCostLine = z.object({ calls: z.number(), tokens_in: z.number(), tokens_out: z.number(), tokens: z.number(), cost: z.number() });
export const ZCostBreakdownResponse = z.object({
  success: z.literal(true),
  data: ZRangeOut.extend({
    currency: z.literal('USD'),
    total: ZCostLine,
    by_model: z.array(ZCostLine.extend({ model: z.string().nullable(), provider: z.string().nullable() })),
    by_provider: z.array(ZCostLine.extend({ provider: z.string().nullable() })),
  }),
});

const ZSessionSummary = z.object({
  sessions_started: z.number(),
  sessions_ended: z.number(),
  avg_session_duration: nullableNumber,
  p95_session_duration: nullableNumber,
  messages: z.number(),
  llm_calls: z.number(),
  tool_events: z.number(),
  events: z.number(),
  errors: z.number(),
  error_rate: nullableNumber,
  tokens: z.number(),
  cost: z.number(),
  messages_per_session: nullableNumber,
  tokens_per_session: nullableNumber,
  cost_per_session: nullableNumber,
});
export const ZSessionMetricsResponse = z.object({
  success: z.literal(true),
  data: ZRangeOut.extend({
    summary: ZSessionSummary,
    by_channel: z.array(ZSessionSummary.extend({ channel: z.string().nullable() })),
  }),
});
