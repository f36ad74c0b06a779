// Zod schemas of the LLM completion endpoints (POST /api/v1/chat/complete, /chat/stream,
// GET /api/v1/chat/usage), following the spec's "Agent-backed chat" section.
import { z } from 'zod';
import { MODEL_ID_PATTERN, MODEL_TIERS } from '../../core/llm/models';
import { ISO_DATE_PATTERN, ISO_DATETIME_PATTERN } from '../http/schemas';
import '../openapi/registry';
import { FINISH_REASONS } from '../../core/completions/finish-reason';
import { ZSessionId } from '../sessions/schemas';

const ZTextPart = z.object({ type: z.literal('text'), text: z.string() });
const ZImagePart = z.object({
  type: z.literal('image_url'),
  image_url: z.object({ url: z.string().min(1).describe('An https URL or a data: URL') }),
});

const ZAssistantToolCall = z.object({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), arguments: z.string().describe('JSON text') }),
});

export const ZChatMessageSchema = z
  .object({
    role: z.enum(['system', 'user', 'assistant', 'tool']),
    content: z
      .union([z.string(), z.array(z.discriminatedUnion('type', [ZTextPart, ZImagePart])).min(1)])
      .describe('A string, or multimodal parts (`text`, `image_url`)'),
    name: z.string().min(1).max(256).optional(),
    tool_call_id: z.string().min(1).optional().describe('For `role: tool`: the call this answers'),
    tool_calls: z.array(ZAssistantToolCall).optional().describe('For `role: assistant`: calls it made'),
  })
  .openapi('ChatMessage');

export const ZToolDefinitionSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, underscores or dashes')
      .describe('Function name'),
    description: z.string().max(4096),
    parameters: z.record(z.string(), z.unknown()).describe('JSON Schema of the arguments'),
  })
  .openapi('ToolDefinition');

export const ZChatRequestSchema = z
  .object({
    projectId: z.string().min(1).max(64).describe('Project (CUID) the call is billed to; invisible or unknown projects are 404'),
    messages: z.array(ZChatMessageSchema).min(1).max(1000),
    sessionId: ZSessionId.optional().describe('Used for the per-session message rate limit and recorded with the usage'),
    tools: z.array(ZToolDefinitionSchema).max(128).optional(),
    modelId: z
      .string()
      .min(1)
      .max(200)
      .regex(MODEL_ID_PATTERN, 'names no known provider; write provider:model (openai:, anthropic:, local)')
      .optional()
      .describe('Overrides the project default model, e.g. `gpt-4.1-mini`, `anthropic:claude-haiku-4-5`, `local`'),
    tier: z.enum(MODEL_TIERS).optional(),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().min(1).max(200_000).optional(),
  })
  .openapi('ChatRequest');
export type TChatRequest = z.infer<typeof ZChatRequestSchema>;

const ZUsage = z.object({
  inputTokens: z.number(),
  outputTokens: z.number(),
  totalTokens: z.number(),
  estimatedCost: z.number().nullable().describe('USD; null when the model price is unknown'),
});

export const ZChatCompleteResponseSchema = z
  .object({
    success: z.literal(true),
    content: z.string(),
    toolCalls: z
      .array(z.object({ id: z.string(), name: z.string(), arguments: z.string().describe('JSON text') }))
      .min(1)
      .optional()
      .describe('The tool calls the model made; present only when there are any'),
    model: z.string().describe('The model that served the call, as the provider reported it'),
    finishReason: z
      .enum(FINISH_REASONS)
      .describe('Why the model stopped, the same for every provider: `end_turn`, `max_tokens`, `tool_use`, `stop_sequence`, `content_filter` or `other`'),
    providerFinishReason: z.string().describe('The provider\'s own stop reason, e.g. `stop`, `length`, `end_turn` (`unknown` when it gave none)'),
    usage: ZUsage,
    latencyMs: z.number(),
  })
  .openapi('ChatCompleteResponse');
export type TChatCompleteResponse = z.infer<typeof ZChatCompleteResponseSchema>;

/** The named events of /chat/stream, in the order they can come (docs/chat-api.md). */
export const CHAT_STREAM_EVENTS = ['metadata', 'text_delta', 'tool_call_start', 'tool_call_delta', 'tool_call_end', 'usage', 'error', 'complete'] as const;

/** One Server-Sent Event of the stream (an OpenAPI 3.1 event-stream schema describes each event). */
export const ZChatStreamResponseSchema = z
  .object({
    event: z.enum(CHAT_STREAM_EVENTS),
    data: z.string().describe('One JSON document'),
  })
  .describe(
    'text/event-stream: named events `metadata`, `text_delta`, `tool_call_start`, `tool_call_delta`, `tool_call_end`, `usage`, `error`, `complete` (with `finishReason` and `providerFinishReason` as in /chat/complete), each with one JSON data line; `: heartbeat` comments every SSE_HEARTBEAT_MS',
  )
  .openapi('ChatStreamEvent', { example: { event: 'text_delta', data: '{"delta":"Hello"}' } });

const isoDate = z.union([
  z.string().regex(ISO_DATETIME_PATTERN, 'must be an ISO 8601 date or date-time with an offset'),
  z.string().regex(ISO_DATE_PATTERN, 'must be an ISO 8601 date or date-time with an offset'),
]);

export const ZChatUsageQuerySchema = z
  .object({
    projectId: z.string().min(1).max(64),
    startDate: isoDate.optional().describe('ISO 8601; inclusive'),
    endDate: isoDate.optional().describe('ISO 8601; a date alone includes that whole day (UTC)'),
    groupBy: z.enum(['model']).optional(),
  })
  .openapi('ChatUsageQuery');
export type TChatUsageQuery = z.infer<typeof ZChatUsageQuerySchema>;

export const ZChatUsageResponseSchema = z
  .object({
    success: z.literal(true),
    summary: z.object({
      totalTokens: z.number(),
      totalCost: z.number().describe('USD; calls with an unknown price add nothing'),
      requestCount: z.number(),
      avgLatency: z.number().describe('Mean latency in ms'),
    }),
    byModel: z
      .array(z.object({ modelId: z.string(), provider: z.string(), totalTokens: z.number(), totalCost: z.number(), requestCount: z.number() }))
      .optional(),
  })
  .openapi('ChatUsageResponse');
