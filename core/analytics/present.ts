// The API's form of an analytics event (spec "Analytics event"): snake_case, ISO timestamp,
// `error` only on error events. LLM events carry model, provider, tokens_in, tokens_out and cost
// in their metadata, as written.
import { type AnalyticsEventDoc } from '../../db/analytics-event';

export interface PresentedAnalyticsEvent {
  id: string;
  category: string;
  event_type: string;
  agent_name: string | null;
  session_id: string | null;
  channel: string | null;
  timestamp: string;
  duration_ms: number | null;
  error?: string;
  metadata: Record<string, unknown>;
}

export function presentAnalyticsEvent(e: AnalyticsEventDoc): PresentedAnalyticsEvent {
  return {
    id: e._id,
    category: e.category,
    event_type: e.eventType,
    agent_name: e.agentName ?? null,
    session_id: e.sessionId ?? null,
    channel: e.channel ?? null,
    timestamp: e.timestamp.toISOString(),
    duration_ms: e.durationMs ?? null,
    ...(e.error != null ? { error: e.error } : {}),
    metadata: e.metadata ?? {},
  };
}
