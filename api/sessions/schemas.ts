// Request and response schemas of the session, transcript and trace routes (docs/sessions-api.md).
import { z } from 'zod';
import { SESSION_CHANNELS, SESSION_STATUSES } from '../../db/session';
import '../openapi/registry';
import { NOT_BLANK_PATTERN, ZLimitQuery, ZOffsetQuery } from '../http/schemas';
import { SESSION_ID_PATTERN } from '../../core/sessions/ids';

/** Ids this service issues are UUIDs (`crypto.randomUUID()`); the workflow id is `session/<id>`. */
export { SESSION_ID_PATTERN };

/** Longest session id a request may name (docs/errors.md, "Ids"). */
export const SESSION_ID_MAX_LENGTH = 128;

/**
 * A session id as a caller names it. The spec types it as a string, so anything a caller could
 * have been given as an id is looked up (an unknown one is 404); only absurd input is 400: empty,
 * longer than SESSION_ID_MAX_LENGTH, or holding control characters. A looked-up id never reaches
 * Temporal: only the id of a stored session (one we issued) names a workflow.
 */
export const ZSessionId = z
  .string()
  .min(1, 'must not be empty')
  .max(SESSION_ID_MAX_LENGTH, `must be at most ${SESSION_ID_MAX_LENGTH} characters`)
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
  .describe(`Session id (this service issues UUIDs); an unknown id is 404. At most ${SESSION_ID_MAX_LENGTH} characters, no control characters`);

/**
 * Literal sub-paths of `/api/projects/:projectId/sessions/` in the spec (core-api.md, "Sessions
 * and traces"). They are never session ids: a route with `:id` there passes them on (its
 * `reservedParams`), so they reach their own route, or the unknown-route 404 until it exists.
 */
export const RESERVED_SESSION_SUBPATHS = ['generations', 'export'] as const;

const ZProjectId = z.string().min(1).max(64).describe('Project id (a CUID)');

export const ZSessionParams = z.object({ projectId: ZProjectId, id: ZSessionId });
export const ZTranscriptParams = z.object({ id: ZSessionId });
export const ZSpanParams = ZSessionParams.extend({
  spanId: z.string().min(1).max(128).regex(/^[A-Za-z0-9._:-]+$/, 'must be a span id').describe('Span id of the parent event'),
});

/** Channels a session created through the sessions endpoint may carry (voice sessions come from calls). */
export const CREATABLE_CHANNELS = ['api', 'web_debug'] as const;
export const SESSION_ENVIRONMENTS = ['dev', 'staging', 'production'] as const;

export const ZCreateSessionRequestSchema = z.object({
  agentId: z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(1, 'must not be empty')
    .max(200)
    .regex(NOT_BLANK_PATTERN, 'must not be empty')
    .trim()
    .describe('Agent id, agent path `<domain>/<agent-name>`, or agent name'),
  channel: z.enum(CREATABLE_CHANNELS).default('api').describe('`api` (default) or `web_debug` for a Studio test session'),
  environment: z.enum(SESSION_ENVIRONMENTS).default('dev').describe('Environment the session runs in (default `dev`)'),
});
export type TCreateSessionRequest = z.infer<typeof ZCreateSessionRequestSchema>;

export const ZCreatedSessionSchema = z
  .object({
    id: z.string().describe('Session id (UUID)'),
    agentId: z.string().describe('Id of the agent the session started with'),
    agentName: z.string(),
    createdAt: z.string(),
  })
  .openapi('CreatedSession');

export const ZCreateSessionResponseSchema = z.object({ success: z.literal(true), session: ZCreatedSessionSchema });

export const ZListSessionsQuery = z.object({
  limit: ZLimitQuery,
  offset: ZOffsetQuery,
  status: z
    .enum([...SESSION_STATUSES, 'suspended'])
    .optional()
    .describe('`active` or `ended`; `suspended`: active sessions waiting on an async tool call'),
  channel: z
    .enum(SESSION_CHANNELS)
    .optional()
    .describe('`api`, `web_debug`, `voice` (phone calls and real-time voice rooms), `voice_realtime` (voice rooms only) or `http_async`'),
});
export type TListSessionsQuery = z.infer<typeof ZListSessionsQuery>;

export const ZSessionListItemSchema = z
  .object({
    id: z.string().describe('Session id (a UUID)').openapi({ example: '8f4e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b' }),
    runtimeSessionId: z
      .string()
      .describe('Temporal workflow id, `session/<id>`')
      .openapi({ example: 'session/8f4e2c1a-5b7d-4e3f-9a1b-2c3d4e5f6a7b' }),
    agentName: z.string().describe('Agent the session started with'),
    status: z.enum(SESSION_STATUSES),
    channel: z.enum(SESSION_CHANNELS),
    messageCount: z.number(),
    traceEventCount: z.number(),
    tokenCount: z.number(),
    errorCount: z.number(),
    estimatedCost: z.number().describe('USD'),
    durationMs: z.number(),
    createdAt: z.string(),
    lastActivityAt: z.string(),
    handoffCount: z.number(),
  })
  .openapi('SessionListItem');

export const ZListSessionsResponseSchema = z.object({
  success: z.literal(true),
  total: z.number(),
  offset: z.number(),
  limit: z.number(),
  sessions: z.array(ZSessionListItemSchema),
});

export const ZPendingSchema = z
  .object({
    kind: z.string().describe('`callback`, `human_task`, or `confirmation` (a tool call waits for the user to say yes or no; `tool` names it)'),
    reason: z.string().optional(),
    tool: z.string().optional(),
    expiresAt: z.string().optional(),
  })
  .openapi('SessionPending');

export const ZSessionDetailSchema = ZSessionListItemSchema.extend({
  agentId: z.string().nullable(),
  environment: z.string(),
  deploymentId: z.string().nullable(),
  endedAt: z.string().nullable(),
  endReason: z.string().nullable(),
  currentAgent: z.string().describe('Agent active now (live) or after the last turn (stored)'),
  runtimeStatus: z.string().describe('`active`, `suspended`, `escalated`, `completed` or `ended`'),
  live: z.boolean().describe('True when currentAgent/runtimeStatus/step/gathered/pending come from the running workflow'),
  liveUnavailableReason: z
    .enum(['ended', 'not_running', 'unreachable'])
    .nullable()
    .describe('Why the live fields are missing: the session ended, its workflow is closed, or Temporal did not answer in time'),
  step: z.string().nullable().describe('Current FLOW step (live only)'),
  gathered: z.record(z.string(), z.unknown()).nullable().describe('Values gathered so far (live only)'),
  pending: ZPendingSchema.nullable().describe('Suspension the session waits on (live only)'),
  turnCount: z.number().nullable().describe('Turns since the workflow started (live only)'),
}).openapi('SessionDetail');

export const ZSessionDetailResponseSchema = z.object({ success: z.literal(true), session: ZSessionDetailSchema });

export const ZDeleteSessionResponseSchema = z.object({
  success: z.literal(true),
  deleted: z.object({
    sessionId: z.string(),
    traceEvents: z.number().describe('Trace events removed'),
    messages: z.number().describe('Transcript messages removed'),
  }),
  workflow: z
    .enum(['ended', 'terminated', 'not_running'])
    .describe('How the workflow closed: it honoured the end signal, it was terminated, or it was not running'),
});

export const ZResetSessionResponseSchema = z.object({
  success: z.literal(true),
  session: z.object({ id: z.string(), resetAt: z.string().describe('When the conversation restarted (ISO 8601)') }),
});

export const ZTranscriptQuery = z.object({
  limit: ZLimitQuery,
  offset: ZOffsetQuery.describe('Messages to skip'),
});

export const ZTranscriptMessageSchema = z
  .object({
    id: z.string(),
    role: z.enum(['user', 'assistant', 'system']),
    content: z.string(),
    timestamp: z.string(),
    agent: z.string().nullable().describe('Agent that answered (assistant messages)'),
    turn: z.number(),
  })
  .openapi('TranscriptMessage');

export const ZTranscriptResponseSchema = z.object({
  success: z.literal(true),
  sessionId: z.string(),
  total: z.number(),
  offset: z.number(),
  limit: z.number(),
  messages: z.array(ZTranscriptMessageSchema),
});

/** 1 to 20 event types separated by commas (spaces around them allowed), each 1-64 of a-z and _. */
const EVENT_TYPES_PATTERN = /^ *[a-z_]{1,64} *(?:, *[a-z_]{1,64} *){0,19}$/;

export const ZTracesQuery = z.object({
  limit: ZLimitQuery,
  offset: ZOffsetQuery.describe('Events to skip'),
  eventType: z
    .string()
    .max(1400)
    .regex(EVENT_TYPES_PATTERN, 'must be 1-20 event types such as llm_call, separated by commas')
    .transform((s) => s.split(',').map((t) => t.trim()))
    .optional()
    .describe('Only these event types (comma-separated), e.g. `llm_call,tool_call`'),
  decisionKind: z.string().min(1).max(64).optional().describe('Only `decision` events of this kind (`data.decisionKind`)'),
  spanId: z.string().min(1).max(128).optional().describe('Only the event with this span id'),
  include: z.enum(['metrics']).optional().describe('`metrics` adds the aggregated session metrics'),
});
export type TTracesQuery = z.infer<typeof ZTracesQuery>;

export const ZTraceEventSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    spanId: z.string(),
    parentSpanId: z.string().nullable(),
    timestamp: z.string(),
    turn: z.number(),
    data: z.record(z.string(), z.unknown()),
  })
  .openapi('SessionTraceEvent');

export const ZSessionMetricsSchema = z
  .object({
    sessionLatencyMs: z.number().describe('Session duration (first to last activity)'),
    turnCount: z.number(),
    turns: z.array(z.object({ turn: z.number(), latencyMs: z.number(), llmCalls: z.number(), toolCalls: z.number() })),
    llmCalls: z.array(
      z.object({
        spanId: z.string(),
        turn: z.number(),
        model: z.string().nullable(),
        inputTokens: z.number(),
        outputTokens: z.number(),
        latencyMs: z.number().nullable(),
      }),
    ),
    tokens: z.object({ input: z.number(), output: z.number(), total: z.number() }),
    toolCallCount: z.number(),
    toolSuccessRate: z.number().nullable().describe('Share of tool results without an error; null without tool results'),
    guardrailEvalCount: z.number(),
    guardrailBlockRate: z.number().nullable().describe('Share of guardrail evaluations that blocked; null without evaluations'),
    handoffCount: z.number(),
    delegateCount: z.number(),
    errorCount: z.number(),
    truncated: z.boolean().describe('True when the session holds more events than the metrics read'),
  })
  .openapi('SessionMetrics');

export const ZTracesResponseSchema = z.object({
  success: z.literal(true),
  sessionId: z.string(),
  total: z.number(),
  offset: z.number(),
  limit: z.number(),
  traceEvents: z.array(ZTraceEventSchema),
  metrics: ZSessionMetricsSchema.optional(),
});

export const ZSpanChildrenResponseSchema = z.object({
  success: z.literal(true),
  sessionId: z.string(),
  spanId: z.string(),
  total: z.number(),
  offset: z.number(),
  limit: z.number(),
  traceEvents: z.array(ZTraceEventSchema),
});

export const ZMetricsResponseSchema = z.object({ success: z.literal(true), sessionId: z.string(), metrics: ZSessionMetricsSchema });
