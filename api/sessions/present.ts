// Shapes stored session documents into API objects (ids as `id`, dates as ISO strings).
import { type SessionDoc } from '../../db/session';
import { type TraceEventDoc } from '../../db/trace-event';
import { type TranscriptMessageDoc } from '../../db/transcript-message';
import { type SessionStateView } from '../../workflows/definitions';
import { type LiveUnavailableReason } from '../../core/sessions/read';

const iso = (d: Date | string | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

export const presentSessionListItem = (s: SessionDoc) => ({
  id: s._id,
  runtimeSessionId: s.runtimeSessionId,
  agentName: s.agentName,
  status: s.status,
  channel: s.channel,
  messageCount: s.messageCount,
  traceEventCount: s.traceEventCount,
  tokenCount: s.tokenCount,
  errorCount: s.errorCount,
  estimatedCost: s.estimatedCost,
  durationMs: s.durationMs,
  createdAt: iso(s.createdAt)!,
  lastActivityAt: iso(s.lastActivityAt)!,
  handoffCount: s.handoffCount,
});



/**
 * The detail: stored summary plus the workflow's live state when it answered. Without live
 * state, currentAgent/runtimeStatus are the values stored after the last turn and the
 * live-only fields are null.
 */
export function presentSessionDetail(s: SessionDoc, live: SessionStateView | null, reason: LiveUnavailableReason | null) {
  return {
    ...presentSessionListItem(s),
    agentId: s.agentId,
    environment: s.environment,
    deploymentId: s.deploymentId,
    endedAt: iso(s.endedAt),
    endReason: s.endReason,
    currentAgent: live?.currentAgent ?? s.currentAgent,
    runtimeStatus: live?.status ?? s.runtimeStatus,
    live: live !== null,
    liveUnavailableReason: live ? null : reason,
    step: live?.step ?? null,
    gathered: live?.gathered ?? null,
    pending: live?.pending ?? null,
    turnCount: live?.turnCount ?? null,
  };
}

export const presentTranscriptMessage = (m: TranscriptMessageDoc) => ({
  id: m._id,
  role: m.role,
  content: m.content,
  timestamp: iso(m.timestamp)!,
  agent: m.agent,
  turn: m.turn,
});

export const presentTraceEvent = (e: TraceEventDoc) => ({
  id: e._id,
  type: e.type,
  spanId: e.spanId,
  parentSpanId: e.parentSpanId,
  timestamp: iso(e.timestamp)!,
  turn: e.turn,
  data: e.data ?? {},
});
