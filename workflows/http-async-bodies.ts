// The JSON bodies an HTTP-async subscription receives (docs/http-async.md "Events"): the spec's
// `agent.response`, and the `agent.status` and `agent.media` events it leaves to us. Built in the
// conversation workflow, so every attempt of a delivery posts the same bytes.
import type { HttpAsyncSessionReplyInput, HttpAsyncStatus, TraceEventOut, TurnResult } from './definitions';
import type { HttpAsyncTurnOutcome } from '../activities/http-async/conversation';

export interface ConversationRef {
  sessionKey: string;
  sessionId: string;
}

const traceContext = (sessionId: string) => ({ session_id: sessionId, delivery: 'correlation_only' });

/** `response_metadata`: whether a model wrote the reply, and what it means for disclaimers. */
function responseMetadata(llm: HttpAsyncSessionReplyInput['llm']) {
  return {
    isLlmGenerated: llm.generated,
    responseProvenance: {
      schemaVersion: 1,
      kind: llm.generated ? 'llm_generated' : 'agent_authored',
      disclaimerRequired: llm.generated,
      usedLlmInternally: llm.usedInternally,
    },
  };
}

export interface ResponseBodyInput {
  messageId: string;
  /** Set on a reply that follows a wait: the accepted message whose turn started it. */
  inReplyTo?: string | null;
  response: string;
  isNewSession: boolean;
  metadata: Record<string, unknown>;
  llm: HttpAsyncSessionReplyInput['llm'];
  error?: { code: string; message: string };
  /** The body's time (ISO 8601); now when absent. */
  timestamp?: string;
}

/** The spec's callback body, field for field; `event` and `in_reply_to` are additions. */
export function responseBody(conv: ConversationRef, input: ResponseBodyInput): Record<string, unknown> {
  return {
    event: 'agent.response',
    message_id: input.messageId,
    session_key: conv.sessionKey,
    response: input.response,
    channel_output: { kind: 'text', text: input.response },
    outcome: input.error ? { status: 'error', usedFallback: input.llm.usedFallback, error: input.error } : { status: 'ok', usedFallback: input.llm.usedFallback },
    trace_context: traceContext(conv.sessionId),
    session_id: conv.sessionId,
    is_new_session: input.isNewSession,
    response_metadata: responseMetadata(input.llm),
    metadata: input.metadata,
    ...(input.inReplyTo ? { in_reply_to: input.inReplyTo } : {}),
    timestamp: input.timestamp ?? new Date().toISOString(),
  };
}

/** `agent.status`: a transition of the conversation, with what it concerns. */
export function statusBody(
  conv: ConversationRef,
  input: { messageId: string; status: HttpAsyncStatus; relatedMessageId: string | null; details?: Record<string, unknown> },
): Record<string, unknown> {
  return {
    event: 'agent.status',
    message_id: input.messageId,
    session_key: conv.sessionKey,
    session_id: conv.sessionId,
    status: input.status,
    related_message_id: input.relatedMessageId,
    ...(input.details ? { details: input.details } : {}),
    trace_context: traceContext(conv.sessionId),
    timestamp: new Date().toISOString(),
  };
}

/** `agent.media`: the rich content and interactive elements of the step the agent now waits in. */
export function mediaBody(
  conv: ConversationRef,
  input: { messageId: string; relatedMessageId: string; richContent?: Record<string, unknown>; actions?: Record<string, unknown>; metadata: Record<string, unknown> },
): Record<string, unknown> {
  return {
    event: 'agent.media',
    message_id: input.messageId,
    session_key: conv.sessionKey,
    session_id: conv.sessionId,
    related_message_id: input.relatedMessageId,
    channel_output: { kind: 'rich', rich_content: input.richContent ?? null, actions: input.actions ?? null },
    metadata: input.metadata,
    trace_context: traceContext(conv.sessionId),
    timestamp: new Date().toISOString(),
  };
}

/**
 * The wait before attempt `attempt + 1` (attempt ≥ 1): doubling from the initial interval, capped,
 * then a random half of it taken off ("equal jitter"), so receivers coming back are not hit by
 * every conversation at once. `random` is the workflow's deterministic Math.random.
 */
export function retryDelayMs(attempt: number, schedule: { initialIntervalMs: number; maxIntervalMs: number }, random: () => number): number {
  const base = Math.min(schedule.maxIntervalMs, schedule.initialIntervalMs * 2 ** Math.min(attempt - 1, 40));
  return Math.round(base / 2 + (random() * base) / 2);
}

/** How a reply was produced, from its turn's trace (docs/http-async.md "response_metadata"). */
export function llmProvenance(events: readonly Pick<TraceEventOut, 'type' | 'data'>[]): HttpAsyncSessionReplyInput['llm'] {
  const calls = events.filter((e) => e.type === 'llm_call');
  return {
    // `reasoning` writes the reply; `routing` picks an agent with a model.
    generated: calls.some((e) => e.data.purpose === 'reasoning' || e.data.purpose === 'routing'),
    usedInternally: calls.length > 0,
    usedFallback: calls.some((e) => typeof e.data.fallbackFrom === 'string'),
  };
}

/** What a conversation needs of a turn's result (not the whole TurnResult: variables stay out of its history). */
export function turnOutcome(result: TurnResult): HttpAsyncTurnOutcome {
  const action = result.action.type === 'handoff' ? 'continue' : result.action.type;
  const suspension = result.action.suspension as { tool: string; expiresAt: string } | undefined;
  const humanTask = result.action.humanTask as { id: string; dueAt: string | null } | undefined;
  return {
    ok: true,
    response: result.response,
    action,
    ...(suspension ? { suspension: { tool: suspension.tool, expiresAt: suspension.expiresAt } } : {}),
    ...(humanTask ? { humanTask: { id: humanTask.id, dueAt: humanTask.dueAt } } : {}),
    ...(result.richContent ? { richContent: result.richContent } : {}),
    ...(result.actions ? { actions: result.actions } : {}),
    llm: llmProvenance(result.traceEvents),
    ...(result.traceEvents.length ? { finishedAt: result.traceEvents.reduce((a, e) => (e.timestamp > a ? e.timestamp : a), result.traceEvents[0]!.timestamp) } : {}),
  };
}
