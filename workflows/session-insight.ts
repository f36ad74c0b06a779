// What a session's summary says about how it went, kept by its AgentSession workflow from the rows
// each turn records (projection-writer.ts): messages by role, trace events by kind, token usage,
// the custom dimensions the agent set under `_meta`, whether a person took over, and from those
// its containment type and analytics status (docs/session-analytics.md). Pure and deterministic.
import type { TraceEventOut } from './definitions';

/** The running tallies; carried across continue-as-new with the session's other state. */
export interface SessionInsight {
  userMessages: number;
  agentMessages: number;
  /** Trace events by the kinds the public summary counts (`llm_call`, `decision`, `tool_call`, `error`). */
  traceKinds: Record<string, number>;
  inputTokens: number;
  outputTokens: number;
  /** `_meta.<name>` values the agent set: name → string, number or boolean. */
  dimensions: Record<string, string | number | boolean>;
  /** A person was asked to take over (ESCALATE) at some point: the session is no longer contained. */
  escalated: boolean;
  /** The last recorded turn logged an error event. */
  lastTurnFailed: boolean;
}

/** At most this many dimensions per session; a value is cut to MAX_DIMENSION_VALUE characters. */
export const MAX_DIMENSIONS = 32;
export const MAX_DIMENSION_VALUE = 256;
const DIMENSION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Reasons a channel gives for a session the user left (behaviour notes: contact-centre end reasons). */
const ABANDON_REASONS = new Set(['abandoned', 'user_left', 'user_exit', 'agent_hangup', 'failed', 'error', 'no_input']);
const TRANSFER_REASONS = new Set(['transferred', 'escalated']);

export function emptyInsight(): SessionInsight {
  return { userMessages: 0, agentMessages: 0, traceKinds: {}, inputTokens: 0, outputTokens: 0, dimensions: {}, escalated: false, lastTurnFailed: false };
}

function setDimension(insight: SessionInsight, name: string, value: unknown): void {
  if (!DIMENSION_NAME.test(name)) return;
  if (!(name in insight.dimensions) && Object.keys(insight.dimensions).length >= MAX_DIMENSIONS) return;
  if (value === null || value === undefined) {
    delete insight.dimensions[name];
    return;
  }
  if (typeof value === 'string') insight.dimensions[name] = value.slice(0, MAX_DIMENSION_VALUE);
  else if (typeof value === 'number' && Number.isFinite(value)) insight.dimensions[name] = value;
  else if (typeof value === 'boolean') insight.dimensions[name] = value;
}

/** Adds one recorded turn's trace events and transcript rows to the tallies. */
export function tallyTurn(insight: SessionInsight, events: readonly TraceEventOut[], messages: readonly { role: string }[]): void {
  for (const m of messages) {
    if (m.role === 'user') insight.userMessages++;
    else if (m.role === 'assistant') insight.agentMessages++;
  }
  let failed = false;
  for (const e of events) {
    insight.traceKinds[e.type] = (insight.traceKinds[e.type] ?? 0) + 1;
    const data = e.data ?? {};
    if (e.type === 'error') failed = true;
    if (e.type === 'llm_call') {
      const usage = (data.usage ?? {}) as { inputTokens?: unknown; outputTokens?: unknown };
      if (typeof usage.inputTokens === 'number') insight.inputTokens += usage.inputTokens;
      if (typeof usage.outputTokens === 'number') insight.outputTokens += usage.outputTokens;
    } else if (e.type === 'decision' && data.decisionKind === 'escalate') {
      insight.escalated = true;
    } else if (e.type === 'state_change' && typeof data.variable === 'string') {
      // `SET _meta.region = "emea"` names one dimension; `SET _meta = {…}` sets several.
      if (data.variable.startsWith('_meta.')) setDimension(insight, data.variable.slice('_meta.'.length), data.value);
      else if (data.variable === '_meta' && data.value && typeof data.value === 'object' && !Array.isArray(data.value)) {
        for (const [name, value] of Object.entries(data.value as Record<string, unknown>)) setDimension(insight, name, value);
      }
    }
  }
  // Only turns with activity say how the last one went (the end's own row holds no error).
  if (messages.length > 0 || failed) insight.lastTurnFailed = failed;
}

export type ContainmentType = 'contained' | 'contained_resolved' | 'contained_partial' | 'contained_unresolved' | 'escalated' | 'abandoned';
export type AnalyticsStatus = 'active' | 'ended' | 'completed' | 'escalated' | 'abandoned' | 'failed';

/**
 * How a session went, by these rules, first match:
 * - `escalated`: a person was asked to take over (ESCALATE), or the channel ended it as transferred;
 * - `contained`: not ended yet;
 * - `contained_resolved`: the agent finished it (COMPLETE);
 * - `abandoned`: the user never sent a message, or the channel reported the user left;
 * - `contained_unresolved`: it ended (timeout, hang-up, termination) after a turn that failed;
 * - `contained_partial`: it ended otherwise, the user having talked to the agent.
 */
export function containmentOf(insight: SessionInsight, endReason: string | null): ContainmentType {
  if (insight.escalated || (endReason !== null && TRANSFER_REASONS.has(endReason))) return 'escalated';
  if (endReason === null) return 'contained';
  if (endReason === 'completed') return 'contained_resolved';
  if (insight.userMessages === 0 || ABANDON_REASONS.has(endReason)) return 'abandoned';
  return insight.lastTurnFailed ? 'contained_unresolved' : 'contained_partial';
}

/**
 * The status the analytics API reports: live sessions are `active`, or `escalated` while a person
 * holds them (a human task of an escalation is pending); ended ones are `completed` (the agent
 * finished), `escalated`, `abandoned`, `failed` (its last turn failed) or `ended`. `idle` is told
 * at read time from `lastActivityAt`.
 */
export function analyticsStatusOf(insight: SessionInsight, endReason: string | null, waitingOnPerson: boolean): AnalyticsStatus {
  if (endReason === null) return insight.escalated && waitingOnPerson ? 'escalated' : 'active';
  const containment = containmentOf(insight, endReason);
  if (containment === 'contained_resolved') return 'completed';
  if (containment === 'escalated') return 'escalated';
  if (containment === 'abandoned') return 'abandoned';
  if (containment === 'contained_unresolved') return 'failed';
  return 'ended';
}

/** The summary fields the session's row gets from the tallies (db/session.ts). */
export function insightSummary(insight: SessionInsight, endReason: string | null, waitingOnPerson: boolean) {
  return {
    containmentType: containmentOf(insight, endReason),
    analyticsStatus: analyticsStatusOf(insight, endReason, waitingOnPerson),
    messageCounts: { user: insight.userMessages, agent: insight.agentMessages },
    traceEventCounts: {
      llm_call: insight.traceKinds.llm_call ?? 0,
      decision: insight.traceKinds.decision ?? 0,
      tool_call: insight.traceKinds.tool_call ?? 0,
      error: insight.traceKinds.error ?? 0,
    },
    tokenUsage: { inputTokens: insight.inputTokens, outputTokens: insight.outputTokens },
    traceDimensions: { ...insight.dimensions },
  };
}
