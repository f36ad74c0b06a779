// The analytics events of a session's recorded turns, derived from its trace events and transcript
// messages (pure: the activity that records the turn writes them in the same batch). Ids are
// deterministic (`<sessionId>:t<seq>`, `<sessionId>:m<seq>`, `:started`, `:ended`), so a retried
// write inserts nothing twice. Events carry names, counts, timings and outcomes, never a message's
// text, a tool's arguments or output, or a variable's value.
import { type AnalyticsCategory } from '../../db/analytics-event';
import { type NewAnalyticsEvent } from './ingest';

export interface TurnTraceEvent {
  seq: number;
  turn?: number;
  type: string;
  spanId: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface TurnMessage {
  seq: number;
  turn?: number;
  role: 'user' | 'assistant' | 'system';
  agent: string | null;
  content: string;
  timestamp: string;
}

export interface TurnAnalyticsInput {
  tenantId: string;
  projectId: string;
  sessionId: string;
  turn: number;
  /** The session's channel (`api`, `web_debug`, `voice`, `http_async`); null when unknown. */
  channel: string | null;
  /** The agent active after the write: the agent of events whose trace names none. */
  currentAgent: string | null;
  messages: readonly TurnMessage[];
  traceEvents: readonly TurnTraceEvent[];
  /** The session summary as written; `status: 'ended'` adds the session's `session.ended` event. */
  summary: {
    status?: string;
    endedAt?: string | null;
    endReason?: string | null;
    durationMs?: number;
    messageCount?: number;
    traceEventCount?: number;
    tokenCount?: number;
    estimatedCost?: number;
    errorCount?: number;
    lastActivityAt: string;
  };
}

/** Where each decision kind of the interpreter belongs; any other kind is a `flow` decision. */
const DECISION_CATEGORIES: Record<string, AnalyticsCategory> = {
  handoff: 'agent',
  delegate: 'agent',
  escalate: 'agent',
  escalation: 'agent',
  return: 'agent',
  on_return: 'agent',
  human_complete: 'agent',
  pause: 'agent',
  gather_held: 'gather',
  inference: 'gather',
  constraint: 'evaluation',
  constraint_warn: 'evaluation',
};

/** Longest `decision` text an event keeps (it names steps, intents and rules, not user text). */
const MAX_DECISION_CHARS = 200;

const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function errorText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object') {
    const e = v as { kind?: unknown; message?: unknown };
    if (typeof e.message === 'string') return typeof e.kind === 'string' ? `${e.kind}: ${e.message}` : e.message;
  }
  return null;
}

type Derived = Pick<NewAnalyticsEvent, 'category' | 'eventType' | 'agentName' | 'durationMs' | 'error' | 'tokens' | 'cost' | 'metadata'>;

/** The analytics event of one trace event, or null for a kind that has none of its own. */
export function analyticsOfTraceEvent(e: TurnTraceEvent): Derived | null {
  const d = e.data;
  const agent = str(d.agent);
  switch (e.type) {
    case 'llm_call': {
      const usage = (d.usage ?? {}) as { inputTokens?: unknown; outputTokens?: unknown };
      const tokensIn = num(usage.inputTokens) ?? 0;
      const tokensOut = num(usage.outputTokens) ?? 0;
      const cost = num(d.estimatedCost) ?? 0;
      return {
        category: 'llm',
        eventType: 'llm.call',
        agentName: agent,
        durationMs: num(d.latencyMs),
        tokens: tokensIn + tokensOut,
        cost,
        metadata: {
          model: str(d.model),
          provider: str(d.provider),
          tokens_in: tokensIn,
          tokens_out: tokensOut,
          cost,
          // Null when the model has no price in the table: the cost is then unknown, not free.
          cost_known: num(d.estimatedCost) !== null,
          purpose: str(d.purpose),
          finish_reason: str(d.finishReason),
          ...(str(d.fallbackFrom) ? { fallback_from: d.fallbackFrom } : {}),
        },
      };
    }
    case 'tool_call':
      return { category: 'tool', eventType: 'tool.call', agentName: agent, metadata: { tool: str(d.tool) } };
    case 'tool_result': {
      const success = d.success === true;
      return {
        category: 'tool',
        eventType: 'tool.result',
        agentName: agent,
        durationMs: num(d.durationMs),
        error: success ? null : (errorText(d.error) ?? 'tool call failed'),
        metadata: { tool: str(d.tool), success, mocked: d.mocked === true },
      };
    }
    case 'suspension':
      return { category: 'tool', eventType: 'tool.suspended', agentName: agent, metadata: { tool: str(d.tool), async: true } };
    case 'resume':
      return { category: 'tool', eventType: 'tool.resumed', agentName: agent, durationMs: num(d.waitedMs), metadata: { tool: str(d.tool), via: str(d.via) } };
    case 'handoff':
      return {
        category: 'agent',
        eventType: 'agent.handoff',
        agentName: str(d.fromAgent),
        metadata: { from_agent: str(d.fromAgent), to_agent: str(d.toAgent), reason: str(d.reason) },
      };
    case 'delegate': {
      const status = str(d.status);
      const failed = status !== null && status !== 'completed' && status !== 'started';
      return {
        category: 'agent',
        eventType: 'agent.delegate',
        agentName: str(d.fromAgent),
        durationMs: num(d.duration_ms),
        error: failed ? (str(d.error) ?? status) : null,
        metadata: { from_agent: str(d.fromAgent), to_agent: str(d.toAgent), task: str(d.task), status },
      };
    }
    case 'human_task':
      return {
        category: 'agent',
        eventType: `human_task.${str(d.status) ?? 'updated'}`,
        agentName: agent,
        durationMs: num(d.waitedMs),
        metadata: { task_id: str(d.taskId), status: str(d.status) },
      };
    case 'decision': {
      const kind = str(d.decisionKind) ?? 'unknown';
      const decision = str(d.decision);
      return {
        category: DECISION_CATEGORIES[kind] ?? 'flow',
        eventType: `decision.${kind}`,
        agentName: agent,
        metadata: { decision_kind: kind, decision: decision ? decision.slice(0, MAX_DECISION_CHARS) : null },
      };
    }
    case 'guardrail_eval': {
      const passed = d.passed === true;
      return {
        category: 'evaluation',
        eventType: 'guardrail.evaluated',
        agentName: agent,
        error: str(d.error),
        metadata: {
          guardrail: str(d.guardrail),
          kind: str(d.kind),
          passed,
          action: str(d.action),
          ...(str(d.provider) ? { provider: d.provider, model: str(d.model), category: str(d.category), score: num(d.score), threshold: num(d.threshold) } : {}),
        },
      };
    }
    case 'state_change': {
      const variable = str(d.variable);
      if (variable === '_session') {
        // The session's end is its `session.ended` event (from the summary, with its totals).
        return d.value === 'reset' ? { category: 'session', eventType: 'session.reset', agentName: agent, metadata: {} } : null;
      }
      // The variable's name only: its value may be what a user typed.
      return d.source === 'gather'
        ? { category: 'gather', eventType: 'gather.field_set', agentName: agent, metadata: { field: variable } }
        : { category: 'flow', eventType: 'flow.state_change', agentName: agent, metadata: { variable } };
    }
    case 'error': {
      const kind = str(d.kind) ?? 'error';
      const tool = str(d.tool);
      const llm = d.source === 'llm' || kind === 'llm_error';
      return {
        category: tool ? 'tool' : llm ? 'llm' : 'system',
        eventType: tool ? 'tool.error' : llm ? 'llm.error' : `error.${kind}`,
        agentName: agent,
        durationMs: num(d.durationMs),
        error: str(d.message) ?? kind,
        metadata: { kind, ...(tool ? { tool } : {}) },
      };
    }
    // `response` is the assistant's message event; other kinds have no analytics event.
    default:
      return null;
  }
}

/** Every analytics event of one write of a session's rows, in the order they happened. */
export function analyticsEventsOfTurn(input: TurnAnalyticsInput): NewAnalyticsEvent[] {
  const { tenantId, projectId, sessionId, channel } = input;
  const base = { tenantId, projectId, sessionId, channel };
  const out: NewAnalyticsEvent[] = [];
  const firstWrite = input.traceEvents.some((e) => e.seq === 0) || input.messages.some((m) => m.seq === 1);
  if (firstWrite) {
    const times = [...input.traceEvents.map((e) => e.timestamp), ...input.messages.map((m) => m.timestamp)].sort();
    out.push({
      ...base,
      id: `${sessionId}:started`,
      category: 'session',
      eventType: 'session.started',
      agentName: input.currentAgent,
      timestamp: new Date(times[0] ?? input.summary.lastActivityAt),
      metadata: {},
    });
  }
  const rows: { at: string; event: NewAnalyticsEvent }[] = [];
  for (const m of input.messages) {
    rows.push({
      at: m.timestamp,
      event: {
        ...base,
        id: `${sessionId}:m${m.seq}`,
        category: 'message',
        eventType: `message.${m.role}`,
        agentName: m.agent ?? input.currentAgent,
        timestamp: new Date(m.timestamp),
        metadata: { role: m.role, turn: m.turn ?? input.turn, chars: m.content.length },
      },
    });
  }
  for (const e of input.traceEvents) {
    const derived = analyticsOfTraceEvent(e);
    if (!derived) continue;
    rows.push({
      at: e.timestamp,
      event: {
        ...base,
        ...derived,
        id: `${sessionId}:t${e.seq}`,
        agentName: derived.agentName ?? input.currentAgent,
        timestamp: new Date(e.timestamp),
        metadata: { ...derived.metadata, turn: e.turn ?? input.turn, span_id: e.spanId },
      },
    });
  }
  rows.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  out.push(...rows.map((r) => r.event));
  const s = input.summary;
  if (s.status === 'ended') {
    out.push({
      ...base,
      id: `${sessionId}:ended`,
      category: 'session',
      eventType: 'session.ended',
      agentName: input.currentAgent,
      timestamp: new Date(s.endedAt ?? s.lastActivityAt),
      durationMs: s.durationMs ?? null,
      metadata: {
        end_reason: s.endReason ?? null,
        message_count: s.messageCount ?? 0,
        trace_event_count: s.traceEventCount ?? 0,
        // The session's totals; the LLM events carry the tokens and cost that sums add up.
        token_count: s.tokenCount ?? 0,
        estimated_cost: s.estimatedCost ?? 0,
        error_count: s.errorCount ?? 0,
      },
    });
  }
  return out;
}
