// LLM calls across a project's sessions: its `llm_call` trace events, newest first, filtered and
// paged. Only the call's metadata is read (never prompt or reply text).
import { type Models } from '../../db/models';
import { type TraceEventDoc } from '../../db/trace-event';
import { type SessionScope } from './scope';
import { timestampFilter, traceSessionFilter, type SessionWindow } from './filters';

export interface GenerationsQuery extends SessionWindow {
  limit: number;
  offset: number;
  model?: string;
  /** The agent that made the call (`data.agent`). */
  agentName?: string;
}

/** The fields of an llm_call's data a generation shows; nothing else of it is read. */
const DATA_FIELDS = ['agent', 'purpose', 'model', 'provider', 'usage', 'latencyMs', 'finishReason', 'estimatedCost', 'fallbackFrom'] as const;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

export function presentGeneration(e: Pick<TraceEventDoc, '_id' | 'sessionId' | 'spanId' | 'turn' | 'timestamp' | 'data'>) {
  const d = (e.data ?? {}) as Record<string, unknown>;
  const usage = (d.usage && typeof d.usage === 'object' ? d.usage : {}) as Record<string, unknown>;
  const inputTokens = num(usage.inputTokens) ?? 0;
  const outputTokens = num(usage.outputTokens) ?? 0;
  return {
    id: e._id,
    sessionId: e.sessionId,
    spanId: e.spanId,
    turn: e.turn,
    timestamp: new Date(e.timestamp).toISOString(),
    agentName: str(d.agent),
    model: str(d.model),
    provider: str(d.provider),
    purpose: str(d.purpose),
    inputTokens,
    outputTokens,
    totalTokens: inputTokens + outputTokens,
    latencyMs: num(d.latencyMs),
    estimatedCost: num(d.estimatedCost),
    finishReason: str(d.finishReason),
    fallbackFrom: str(d.fallbackFrom),
  };
}

export async function listGenerations(models: Models, scope: SessionScope, query: GenerationsQuery, environments?: readonly string[] | null) {
  const filter = {
    ...scope,
    type: 'llm_call',
    ...timestampFilter(query),
    ...(await traceSessionFilter(models, scope, query, environments)),
    ...(query.model ? { 'data.model': query.model } : {}),
    ...(query.agentName ? { 'data.agent': query.agentName } : {}),
  };
  const [total, events] = await Promise.all([
    models.TraceEvent.countDocuments(filter),
    models.TraceEvent.find(filter)
      .select({ sessionId: 1, spanId: 1, turn: 1, timestamp: 1, ...Object.fromEntries(DATA_FIELDS.map((f) => [`data.${f}`, 1])) })
      .sort({ timestamp: -1, _id: -1 })
      .skip(query.offset)
      .limit(query.limit)
      .lean(),
  ]);
  return { total, generations: events.map(presentGeneration) };
}
