// The events an HTTP-async subscription receives, as OpenAPI 3.1 `webhooks` (docs/http-async.md
// "Events"): the bodies the conversation workflow builds (workflows/http-async-bodies.ts), which a
// unit test parses with these schemas so the document and the deliveries cannot drift apart.
import { z } from 'zod';
import { type OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import '../openapi/registry';
import { HTTP_ASYNC_STATUSES } from '../../workflows/definitions';

const ZTraceContext = z.object({ session_id: z.string(), delivery: z.literal('correlation_only') });
const ZTimestamp = z.string().describe('When the event was built (ISO 8601); the signature has its own timestamp header');

export const ZAgentResponseEvent = z
  .object({
    event: z.literal('agent.response'),
    message_id: z.string().describe("The accepted message's id (its reply), or a new `ham-` id for a reply that came after a wait"),
    session_key: z.string(),
    response: z.string().describe('The reply as plain text; empty when outcome.status is error'),
    channel_output: z.object({ kind: z.literal('text'), text: z.string() }),
    outcome: z.object({
      status: z.enum(['ok', 'error']),
      usedFallback: z.boolean(),
      error: z.object({ code: z.string(), message: z.string() }).optional().describe('Why the message could not be answered'),
    }),
    trace_context: ZTraceContext,
    session_id: z.string(),
    is_new_session: z.boolean(),
    response_metadata: z.object({
      isLlmGenerated: z.boolean(),
      responseProvenance: z.object({
        schemaVersion: z.literal(1),
        kind: z.enum(['llm_generated', 'agent_authored']),
        disclaimerRequired: z.boolean(),
        usedLlmInternally: z.boolean(),
      }),
    }),
    metadata: z.record(z.string(), z.unknown()).describe("The message's metadata, unchanged"),
    in_reply_to: z.string().optional().describe('On a reply after a wait: the message whose turn started it'),
    timestamp: ZTimestamp,
  })
  .strict()
  .openapi('HttpAsyncAgentResponseEvent');

export const ZAgentStatusEvent = z
  .object({
    event: z.literal('agent.status'),
    message_id: z.string().describe('This event\'s own id (`has-…`)'),
    session_key: z.string(),
    session_id: z.string(),
    status: z.enum(HTTP_ASYNC_STATUSES),
    related_message_id: z.string().nullable(),
    details: z.record(z.string(), z.unknown()).optional().describe('By status: tool and expires_at; human_task_id and due_at; cause; reason; event, attempts, reason and last_error'),
    trace_context: ZTraceContext,
    timestamp: ZTimestamp,
  })
  .strict()
  .openapi('HttpAsyncAgentStatusEvent');

export const ZAgentMediaEvent = z
  .object({
    event: z.literal('agent.media'),
    message_id: z.string(),
    session_key: z.string(),
    session_id: z.string(),
    related_message_id: z.string(),
    channel_output: z.object({
      kind: z.literal('rich'),
      rich_content: z.record(z.string(), z.unknown()).nullable().describe("The step's RICH_CONTENT"),
      actions: z.record(z.string(), z.unknown()).nullable().describe("The step's ACTIONS (`items` when a list)"),
    }),
    metadata: z.record(z.string(), z.unknown()),
    trace_context: ZTraceContext,
    timestamp: ZTimestamp,
  })
  .strict()
  .openapi('HttpAsyncAgentMediaEvent');

const SIGNATURE_HEADERS = z.object({
  'x-abl-signature': z.string().describe('`sha256=` and the hex HMAC-SHA256 of `<X-ABL-Timestamp>.<raw body>`, keyed with the signing secret'),
  'x-abl-timestamp': z.string().describe('Unix seconds'),
  'x-abl-event': z.enum(['agent.response', 'agent.status', 'agent.media']),
});

/** Adds the three events under `webhooks` of /openapi.json. */
export function registerHttpAsyncWebhooks(registry: OpenAPIRegistry): void {
  const events = [
    ['agent.response', ZAgentResponseEvent, 'A reply to an accepted message, or a reply after a wait'],
    ['agent.status', ZAgentStatusEvent, 'A transition of the conversation'],
    ['agent.media', ZAgentMediaEvent, 'The rich content and actions of the step the agent waits in'],
  ] as const;
  for (const [name, schema, summary] of events) {
    registry.registerWebhook({
      method: 'post',
      path: name,
      operationId: `httpAsyncEvent_${name.replace('.', '_')}`,
      summary: `HTTP-async ${name}: ${summary}`,
      description: "POSTed to the subscription's callback URL, signed (docs/http-async.md). Answer 2xx within 10 s; anything else is retried with the same message_id.",
      tags: ['HTTP-async channel'],
      request: { headers: SIGNATURE_HEADERS, body: { content: { 'application/json': { schema } } } },
      responses: { 200: { description: 'Taken (any 2xx)' }, 410: { description: 'Gone: the subscription is paused' } },
    });
  }
}
