// Request and response schemas of POST /api/v1/chat/agent.
import { z } from 'zod';
import '../openapi/registry';
import { ZSessionId } from '../sessions/schemas';

const ZToolMock = z.object({
  toolName: z.string().min(1).max(256),
  response: z.unknown().optional(),
  error: z.string().max(2000).optional(),
});

export const ZChatAgentRequestSchema = z.object({
  projectId: z.string().min(1).max(64).describe('Project holding the agents'),
  message: z.string().min(1).max(32_000).optional().describe('The user message; required unless `action` is given'),
  action: z
    .object({
      id: z.string().regex(/^[A-Za-z_][\w.-]{0,199}$/, 'an action id: a letter or _, then letters, digits, _ . - (at most 200)').describe("The id of the pressed button: a key of the waiting step's ON_ACTION"),
      value: z.unknown().optional().describe('A value the button carries; `action.value` in the handler (max 4 KB of JSON)'),
    })
    .strict()
    .openapi({ example: { id: 'pay_now', value: { invoice: 'INV-123456' } } })
    .optional()
    .describe("A channel's structured action (a button press). It takes the waiting step's ON_ACTION handler with that id; `message`, when given, is the text the transcript shows (else the id)"),
  sessionId: ZSessionId.optional().describe('Resume this session; omit to create one. An unknown id is 404 (a caller cannot name a new session)'),
  deploymentId: z.string().min(1).max(64).optional().describe('Run the versions this deployment pins (new sessions); not from an SDK token (403)'),
  environment: z.enum(['dev', 'staging', 'production']).optional(),
  agentId: z.string().min(1).max(200).optional().describe("Agent for the first turn: id, name or `<domain>/<name>` path. From an SDK token: the entry agent or one its public key lists in `allowedAgents` (403 otherwise)"),
  metadata: z.record(z.string(), z.unknown()).optional().describe('Per-turn only; max 16 KB of JSON, 50 keys, depth 5'),
  testContext: z
    .object({
      gatherValues: z.record(z.string(), z.unknown()).optional(),
      sessionVariables: z.record(z.string(), z.unknown()).optional(),
      callerContext: z
        .object({ userId: z.string().max(256).optional(), channel: z.string().max(64).optional(), customAttributes: z.record(z.string(), z.unknown()).optional() })
        .optional(),
      toolMocks: z.array(ZToolMock).max(50).optional(),
      skipOnStart: z.boolean().optional(),
      startAtStep: z.string().min(1).max(200).optional(),
    })
    .optional()
    .describe('Needs agent:write'),
})
  // `message` or `action`, or both: said in the document too, so a client (and the fuzzer) knows.
  .openapi({ anyOf: [{ required: ['message'] }, { required: ['action'] }] });
export type TChatAgentRequest = z.infer<typeof ZChatAgentRequestSchema>;

export const ZChatAgentResponseSchema = z
  .object({
    success: z.literal(true),
    sessionId: z.string(),
    response: z.string(),
    action: z.object({ type: z.string() }).passthrough(),
    state: z.record(z.string(), z.unknown()),
    richContent: z.record(z.string(), z.unknown()).optional().describe('Content variants of the step the session waits in (RICH_CONTENT)'),
    actions: z.record(z.string(), z.unknown()).optional().describe('Interactive elements of that step (ACTIONS); a list is given as { items }'),
    voiceConfig: z
      .object({
        voice: z.string().optional().describe('TTS voice (e.g. Polly.Joanna)'),
        language: z.string().optional().describe('BCP 47 language of speech in and out'),
        bargeIn: z.boolean().optional().describe('Whether the caller may interrupt what the agent says'),
        speechTimeout: z.union([z.number(), z.literal('auto')]).optional().describe('Seconds of silence that end an utterance, or auto'),
        silenceTimeout: z.number().optional().describe('Seconds to wait for the caller to start speaking'),
      })
      .optional()
      .describe('Voice settings where the session waits (ABL VOICE: the agent section, a step block over it); voice-enabled agents only'),
    metadata: z
      .object({ models: z.array(z.string()).describe('provider:model of every LLM call in this turn'), note: z.string().optional() })
      .optional()
      .describe('Which models answered; says so plainly when the offline local model did'),
    traceEvents: z.array(z.object({ type: z.string(), spanId: z.string(), parentSpanId: z.string().nullable(), timestamp: z.string(), data: z.record(z.string(), z.unknown()) })).optional(),
    suspensionId: z
      .string()
      .optional()
      .describe('Answered with 202: the session waits on an async tool call; this is its callback id (docs/callbacks.md)'),
    suspension: z
      .object({ id: z.string(), tool: z.string(), expiresAt: z.string() })
      .optional()
      .describe('The async tool call the session waits on, and when it expires (a tool_timeout then resumes the session)'),
  })
  .openapi('ChatAgentResponse');

/** The events of a streamed agent turn, in the order they come (docs/chat.md, "Streaming a turn"). */
export const CHAT_AGENT_STREAM_EVENTS = ['turn', 'delta', 'response', 'error'] as const;

export const ZChatAgentStreamEventSchema = z
  .object({
    id: z
      .string()
      .regex(/^[0-9]{1,10}$/)
      .optional()
      .describe('`id:` line: the event number (decimal digits), from 0, increasing by one within the turn; send it back as `Last-Event-ID` to resume. Absent only on an `error` that ends a stream when its API process stops: reconnect for the answer'),
    event: z.enum(CHAT_AGENT_STREAM_EVENTS),
    data: z.string().describe('One JSON document'),
  })
  .describe(
    'text/event-stream. `turn` first ({turnId, sessionId, isNewSession}); zero or more `delta` ({text}, append them; `reset: true`: replace the text shown so far with this one); ' +
      'then exactly one of `response` (the body `POST /api/v1/chat/agent` answers, plus `status`: 200, or 202 when the session waits on an async tool call; its `response` text replaces the deltas) ' +
      'or `error` ({error, code, retryable, status}), and the stream ends. Each event has an `id:` line; `: heartbeat` comments every SSE_HEARTBEAT_MS while waiting.',
  )
  .openapi('ChatAgentStreamEvent', { example: { id: '1', event: 'delta', data: '{"text":"Hello"}' } });

export const ZTurnStreamParams = z.object({
  turnId: z.string().min(1).max(64).describe('The `turnId` of the stream\'s `turn` event'),
});

/** The largest event number a turn can reach in practice, and the bound of `after`. */
const MAX_EVENT_SEQ = 1_000_000_000;

export const ZTurnStreamQuery = z.object({
  after: z
    .union([z.number(), z.string().regex(/^[0-9]{1,16}$/, 'must be an integer').transform(Number)])
    .pipe(z.number().int().min(0).max(MAX_EVENT_SEQ))
    .optional()
    .openapi({ type: 'integer', minimum: 0, maximum: MAX_EVENT_SEQ })
    .describe('Replay the events numbered above this one (as the `Last-Event-ID` header does, which wins when both are sent); all of them when absent'),
});
export { MAX_EVENT_SEQ };
