// A session's metrics (turn latency, LLM calls and tokens, tool success, guardrail blocks),
// aggregated in TypeScript over one bounded read of its events and messages.
import { type Models } from '../../db/models';
import { type SessionDoc } from '../../db/session';

/** Metrics read at most this many trace events and transcript messages of one session. */
export const MAX_METRIC_EVENTS = 10_000;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const record = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

function toolResultFailed(data: Record<string, unknown>): boolean {
  return Boolean(data.error) || data.ok === false || data.success === false || data.status === 'error';
}

/**
 * Aggregates computed in TypeScript over one indexed read of the session's events (FerretDB has
 * no $facet). Turn latency spans the first to the last message or event of the turn.
 */
export async function computeSessionMetrics(models: Models, session: SessionDoc) {
  const owned = { tenantId: session.tenantId, sessionId: session._id };
  const [events, messages] = await Promise.all([
    models.TraceEvent.find(owned).select({ type: 1, spanId: 1, turn: 1, timestamp: 1, data: 1 }).sort({ seq: 1 }).limit(MAX_METRIC_EVENTS + 1).lean(),
    models.TranscriptMessage.find(owned).select({ turn: 1, timestamp: 1 }).sort({ seq: 1 }).limit(MAX_METRIC_EVENTS + 1).lean(),
  ]);
  const truncated = events.length > MAX_METRIC_EVENTS || messages.length > MAX_METRIC_EVENTS;
  const turnSpan = new Map<number, { first: number; last: number; llmCalls: number; toolCalls: number }>();
  const touch = (turn: number, at: Date) => {
    const t = new Date(at).getTime();
    const span = turnSpan.get(turn) ?? { first: t, last: t, llmCalls: 0, toolCalls: 0 };
    span.first = Math.min(span.first, t);
    span.last = Math.max(span.last, t);
    turnSpan.set(turn, span);
    return span;
  };
  for (const m of messages.slice(0, MAX_METRIC_EVENTS)) touch(m.turn, m.timestamp);

  const llmCalls: { spanId: string; turn: number; model: string | null; inputTokens: number; outputTokens: number; latencyMs: number | null }[] = [];
  let toolCallCount = 0;
  let toolResults = 0;
  let toolFailures = 0;
  let guardrailEvalCount = 0;
  let guardrailBlocks = 0;
  let handoffCount = 0;
  let delegateCount = 0;
  let errorCount = 0;
  for (const e of events.slice(0, MAX_METRIC_EVENTS)) {
    const span = touch(e.turn, e.timestamp);
    const data = record(e.data);
    switch (e.type) {
      case 'llm_call': {
        span.llmCalls += 1;
        const usage = record(data.usage);
        llmCalls.push({
          spanId: e.spanId,
          turn: e.turn,
          model: typeof data.model === 'string' ? data.model : null,
          inputTokens: num(usage.inputTokens) ?? 0,
          outputTokens: num(usage.outputTokens) ?? 0,
          latencyMs: num(data.latencyMs) ?? num(data.latency_ms) ?? num(data.durationMs) ?? num(data.duration_ms),
        });
        break;
      }
      case 'tool_call':
        span.toolCalls += 1;
        toolCallCount += 1;
        break;
      case 'tool_result':
        toolResults += 1;
        if (toolResultFailed(data)) toolFailures += 1;
        break;
      case 'guardrail_eval':
        guardrailEvalCount += 1;
        if (data.passed === false && data.action === 'block') guardrailBlocks += 1;
        break;
      case 'handoff':
        handoffCount += 1;
        break;
      case 'delegate':
        delegateCount += 1;
        break;
      case 'error':
        errorCount += 1;
        break;
      default:
        break;
    }
  }
  const input = llmCalls.reduce((sum, c) => sum + c.inputTokens, 0);
  const output = llmCalls.reduce((sum, c) => sum + c.outputTokens, 0);
  const turns = [...turnSpan.entries()]
    .sort(([a], [b]) => a - b)
    .map(([turn, s]) => ({ turn, latencyMs: s.last - s.first, llmCalls: s.llmCalls, toolCalls: s.toolCalls }));
  return {
    sessionLatencyMs: session.durationMs,
    turnCount: turns.length,
    turns,
    llmCalls,
    tokens: { input, output, total: input + output },
    toolCallCount,
    toolSuccessRate: toolResults === 0 ? null : (toolResults - toolFailures) / toolResults,
    guardrailEvalCount,
    guardrailBlockRate: guardrailEvalCount === 0 ? null : guardrailBlocks / guardrailEvalCount,
    handoffCount,
    delegateCount,
    errorCount,
    truncated,
  };
}
