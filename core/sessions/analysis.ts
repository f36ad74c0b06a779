// A session's analysis: rules over its trace events that point at slow spans and turns, error
// patterns, decision anomalies and cost hotspots, and the suggestions that follow from them.
// The rules are pure functions of the events (docs/sessions-api.md lists each with its threshold).
import { type Models } from '../../db/models';
import { type SessionDoc } from '../../db/session';
import { MAX_METRIC_EVENTS } from './metrics';

/** What a rule reads of one trace event. */
export interface AnalysedEvent {
  type: string;
  spanId: string;
  /** A tool_result's parent is its tool_call. */
  parentSpanId?: string | null;
  turn: number;
  timestamp: Date | string;
  data: Record<string, unknown>;
}

/** What a rule reads of one transcript message (turn timing). */
export interface AnalysedMessage {
  turn: number;
  timestamp: Date | string;
}

export type Severity = 'info' | 'warning' | 'critical';
export type FindingCategory = 'slow_span' | 'error_pattern' | 'decision_anomaly' | 'cost_hotspot';
export type FindingUnit = 'ms' | 'count' | 'tokens' | 'ratio';

export interface Finding {
  /** `<rule>:<n>`, unique within one analysis; suggestions name the findings they follow from. */
  id: string;
  rule: string;
  category: FindingCategory;
  severity: Severity;
  /** The spans the finding points at (at most MAX_SPANS_PER_FINDING; `spanCount` has them all). */
  spanIds: string[];
  spanCount: number;
  turns: number[];
  explanation: string;
  /** The rule fires when `observed` reaches `threshold` (both in `unit`). */
  threshold: number;
  observed: number;
  unit: FindingUnit;
  /** What the finding is about: a tool, agent, model, guardrail, variable, decision kind. */
  subject: Record<string, string>;
}

export interface Suggestion {
  kind: string;
  subject: Record<string, string>;
  explanation: string;
  findingIds: string[];
}

/** Every rule's thresholds, in one place (docs/sessions-api.md, "Analysis rules"). */
export const ANALYSIS_THRESHOLDS = {
  /** A span (LLM call, tool call, delegation) at least this long is slow whatever the session. */
  slowSpanMs: 10_000,
  /** ... and critical from this long. */
  criticalSpanMs: 30_000,
  /** A span at least this many times the median of the session's spans of its type is slow ... */
  slowSpanFactor: 5,
  /** ... when the session has at least this many spans of that type ... */
  slowSpanMinSamples: 4,
  /** ... and the span took at least this long (below it a ratio is noise). */
  slowSpanFloorMs: 1_000,
  /** A turn at least this long is slow. */
  slowTurnMs: 30_000,
  slowTurnFactor: 3,
  slowTurnMinSamples: 3,
  slowTurnFloorMs: 2_000,
  /** The same tool failing with the same message this many times. */
  repeatedToolErrors: 3,
  /** The same error (kind and message) this many times. */
  repeatedErrors: 3,
  /** Repeated errors are critical from this many. */
  criticalRepeats: 10,
  /** One tool called this many times within one turn. */
  toolCallsPerTurn: 4,
  /** Timeouts of one tool. */
  toolTimeouts: 1,
  /** The same tool called with the same input this many times, every call successful. */
  duplicateToolCalls: 3,
  /** The same decision (kind and value) this many times. */
  repeatedDecisions: 5,
  /** Returns to the value before the previous one (A→B→A→B is 2) of a variable, FLOW step or active agent. */
  pingPongReturns: 2,
  /** Blocks by one guardrail: info from 1, warning from guardrailBlocksWarning. */
  guardrailBlocks: 1,
  guardrailBlocksWarning: 3,
  /** Provider guardrail calls that failed. */
  guardrailErrors: 1,
  /** LLM calls answered by a fallback model. */
  llmFallbacks: 1,
  /** FLOW steps or GATHER fields that ran out of attempts. */
  exhaustedAttempts: 1,
  /** An LLM call whose prompt has at least this many tokens ... */
  heavyPromptTokens: 8_000,
  /** ... and at least this many times its output ... */
  heavyPromptRatio: 20,
  /** ... is a cost hotspot (warning from this many prompt tokens). */
  heavyPromptWarningTokens: 32_000,
} as const;

/** A finding lists at most this many span ids, and each rule reports at most MAX_FINDINGS_PER_RULE findings (the most severe). */
export const MAX_SPANS_PER_FINDING = 20;
export const MAX_FINDINGS_PER_RULE = 20;

const T = ANALYSIS_THRESHOLDS;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);
const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const ms = (n: number) => `${Math.round(n)} ms`;
const clip = (s: string, max = 160) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

export function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** JSON with sorted keys, so two equal inputs give one text whatever their key order. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Returns to the value before the previous one, after repeats are collapsed: A,B,A,B → 2. */
export function pingPongReturns(values: readonly string[]): number {
  const seq: string[] = [];
  for (const v of values) if (seq[seq.length - 1] !== v) seq.push(v);
  let returns = 0;
  for (let i = 2; i < seq.length; i++) if (seq[i] === seq[i - 2]) returns++;
  return returns;
}

/** How long a span took, from what the workflow records on it: null when it says nothing. */
export function spanDurationMs(e: AnalysedEvent): number | null {
  const d = e.data;
  switch (e.type) {
    case 'llm_call':
      return num(d.latencyMs) ?? num(d.latency_ms) ?? num(d.durationMs) ?? num(d.duration_ms);
    case 'tool_result':
    case 'delegate':
      return num(d.durationMs) ?? num(d.duration_ms);
    default:
      return null;
  }
}

function spanLabel(e: AnalysedEvent): { label: string; subject: Record<string, string> } {
  const d = e.data;
  const agent = str(d.agent) ?? str(d.fromAgent);
  const withAgent = (s: Record<string, string>) => (agent ? { ...s, agent } : s);
  if (e.type === 'llm_call') {
    const model = str(d.model);
    return { label: `LLM call${model ? ` to ${model}` : ''}`, subject: withAgent(model ? { model } : {}) };
  }
  if (e.type === 'tool_result') {
    const tool = str(d.tool);
    return { label: `tool call${tool ? ` ${tool}` : ''}`, subject: withAgent(tool ? { tool } : {}) };
  }
  const to = str(d.toAgent);
  return { label: `delegation${to ? ` to ${to}` : ''}`, subject: withAgent(to ? { toAgent: to } : {}) };
}

interface Draft extends Omit<Finding, 'id' | 'spanIds' | 'spanCount' | 'turns'> {
  spans: string[];
  turnList: number[];
}

const SEVERITY_RANK: Record<Severity, number> = { critical: 0, warning: 1, info: 2 };

function slowSpanFindings(events: AnalysedEvent[]): Draft[] {
  const out: Draft[] = [];
  const byType = new Map<string, { e: AnalysedEvent; ms: number }[]>();
  for (const e of events) {
    const d = spanDurationMs(e);
    if (d === null) continue;
    const list = byType.get(e.type) ?? [];
    list.push({ e, ms: d });
    byType.set(e.type, list);
  }
  for (const list of byType.values()) {
    const med = median(list.map((s) => s.ms));
    for (const { e, ms: took } of list) {
      const { label, subject } = spanLabel(e);
      if (took >= T.slowSpanMs) {
        out.push({
          rule: 'slow_span_absolute',
          category: 'slow_span',
          severity: took >= T.criticalSpanMs ? 'critical' : 'warning',
          spans: [e.spanId],
          turnList: [e.turn],
          explanation: `The ${label} took ${ms(took)}, at least the ${ms(T.slowSpanMs)} any span is allowed before it counts as slow.`,
          threshold: T.slowSpanMs,
          observed: took,
          unit: 'ms',
          subject,
        });
      } else if (list.length >= T.slowSpanMinSamples && took >= T.slowSpanFloorMs && med > 0 && took >= T.slowSpanFactor * med) {
        out.push({
          rule: 'slow_span_relative',
          category: 'slow_span',
          severity: 'warning',
          spans: [e.spanId],
          turnList: [e.turn],
          explanation: `The ${label} took ${ms(took)}, ${(took / med).toFixed(1)}× the median ${ms(med)} of the session's ${list.length} ${e.type} spans (the rule fires at ${T.slowSpanFactor}×).`,
          threshold: T.slowSpanFactor,
          observed: Number((took / med).toFixed(2)),
          unit: 'ratio',
          subject,
        });
      }
    }
  }
  return out;
}

/** Turn latency: from the first to the last message or event of the turn (as the metrics route). */
export function turnLatencies(events: AnalysedEvent[], messages: AnalysedMessage[]): Map<number, number> {
  const span = new Map<number, { first: number; last: number }>();
  for (const x of [...messages, ...events]) {
    const t = new Date(x.timestamp).getTime();
    const s = span.get(x.turn) ?? { first: t, last: t };
    s.first = Math.min(s.first, t);
    s.last = Math.max(s.last, t);
    span.set(x.turn, s);
  }
  return new Map([...span.entries()].sort(([a], [b]) => a - b).map(([turn, s]) => [turn, s.last - s.first]));
}

function slowTurnFindings(events: AnalysedEvent[], messages: AnalysedMessage[]): Draft[] {
  const turns = turnLatencies(events, messages);
  const med = median([...turns.values()]);
  const out: Draft[] = [];
  for (const [turn, took] of turns) {
    if (took >= T.slowTurnMs) {
      out.push({
        rule: 'slow_turn_absolute',
        category: 'slow_span',
        severity: 'warning',
        spans: [`t${turn}`],
        turnList: [turn],
        explanation: `Turn ${turn} took ${ms(took)} from its first to its last message or event, at least the ${ms(T.slowTurnMs)} the rule allows.`,
        threshold: T.slowTurnMs,
        observed: took,
        unit: 'ms',
        subject: {},
      });
    } else if (turns.size >= T.slowTurnMinSamples && took >= T.slowTurnFloorMs && med > 0 && took >= T.slowTurnFactor * med) {
      out.push({
        rule: 'slow_turn_relative',
        category: 'slow_span',
        severity: 'warning',
        spans: [`t${turn}`],
        turnList: [turn],
        explanation: `Turn ${turn} took ${ms(took)}, ${(took / med).toFixed(1)}× the median ${ms(med)} of the session's ${turns.size} turns (the rule fires at ${T.slowTurnFactor}×).`,
        threshold: T.slowTurnFactor,
        observed: Number((took / med).toFixed(2)),
        unit: 'ratio',
        subject: {},
      });
    }
  }
  return out;
}

/** Groups events by a key; null keys are left out. */
function groupBy(events: AnalysedEvent[], key: (e: AnalysedEvent) => string | null): Map<string, AnalysedEvent[]> {
  const groups = new Map<string, AnalysedEvent[]>();
  for (const e of events) {
    const k = key(e);
    if (k === null) continue;
    const list = groups.get(k) ?? [];
    list.push(e);
    groups.set(k, list);
  }
  return groups;
}

const spansOf = (list: AnalysedEvent[]) => list.map((e) => e.spanId);
const turnsOf = (list: AnalysedEvent[]) => [...new Set(list.map((e) => e.turn))].sort((a, b) => a - b);
const toolFailed = (d: Record<string, unknown>) => d.success === false || d.ok === false || Boolean(d.error) || d.status === 'error';
const errorText = (v: unknown): { kind: string | null; message: string } => {
  if (typeof v === 'string') return { kind: null, message: v };
  const r = rec(v);
  return { kind: str(r.kind), message: str(r.message) ?? 'unknown error' };
};

function errorPatternFindings(events: AnalysedEvent[]): Draft[] {
  const out: Draft[] = [];
  const results = events.filter((e) => e.type === 'tool_result' && str(e.data.tool));
  // The same tool failing with the same message.
  const failures = groupBy(
    results.filter((e) => toolFailed(e.data)),
    (e) => `${e.data.tool as string}\u0000${errorText(e.data.error).message}`,
  );
  for (const list of failures.values()) {
    const tool = list[0]!.data.tool as string;
    const { message } = errorText(list[0]!.data.error);
    if (list.length >= T.repeatedToolErrors) {
      out.push({
        rule: 'repeated_tool_error',
        category: 'error_pattern',
        severity: list.length >= T.criticalRepeats ? 'critical' : 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Tool ${tool} failed ${list.length} times with the same error: "${clip(message)}" (the rule fires at ${T.repeatedToolErrors}).`,
        threshold: T.repeatedToolErrors,
        observed: list.length,
        unit: 'count',
        subject: { tool },
      });
    }
  }
  // Timeouts of a tool.
  const timeouts = groupBy(
    results.filter((e) => errorText(e.data.error).kind === 'tool_timeout'),
    (e) => e.data.tool as string,
  );
  for (const [tool, list] of timeouts) {
    if (list.length >= T.toolTimeouts) {
      out.push({
        rule: 'tool_timeout',
        category: 'error_pattern',
        severity: 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Tool ${tool} timed out ${list.length} time${list.length > 1 ? 's' : ''}.`,
        threshold: T.toolTimeouts,
        observed: list.length,
        unit: 'count',
        subject: { tool },
      });
    }
  }
  // One tool called many times within one turn: retried, or called in a loop.
  const perTurn = groupBy(
    events.filter((e) => e.type === 'tool_call' && str(e.data.tool)),
    (e) => `${e.turn}\u0000${e.data.tool as string}`,
  );
  for (const list of perTurn.values()) {
    const tool = list[0]!.data.tool as string;
    if (list.length >= T.toolCallsPerTurn) {
      out.push({
        rule: 'tool_retry_loop',
        category: 'error_pattern',
        severity: 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Tool ${tool} was called ${list.length} times in turn ${list[0]!.turn} (the rule fires at ${T.toolCallsPerTurn} calls in one turn).`,
        threshold: T.toolCallsPerTurn,
        observed: list.length,
        unit: 'count',
        subject: { tool },
      });
    }
  }
  // The same error (errors naming a tool are the tool rules' business).
  const errors = groupBy(
    events.filter((e) => e.type === 'error' && !str(e.data.tool)),
    (e) => `${str(e.data.kind) ?? 'error'}\u0000${str(e.data.message) ?? ''}`,
  );
  for (const list of errors.values()) {
    const kind = str(list[0]!.data.kind) ?? 'error';
    const message = str(list[0]!.data.message) ?? '';
    if (list.length >= T.repeatedErrors) {
      out.push({
        rule: 'repeated_error',
        category: 'error_pattern',
        severity: list.length >= T.criticalRepeats ? 'critical' : 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `The error ${kind} "${clip(message)}" occurred ${list.length} times (the rule fires at ${T.repeatedErrors}).`,
        threshold: T.repeatedErrors,
        observed: list.length,
        unit: 'count',
        subject: { errorKind: kind },
      });
    }
  }
  // Provider guardrails whose call failed.
  const guardErrors = groupBy(
    events.filter((e) => e.type === 'guardrail_eval' && str(e.data.error)),
    (e) => str(e.data.guardrail) ?? '',
  );
  for (const [guardrail, list] of guardErrors) {
    if (list.length >= T.guardrailErrors) {
      out.push({
        rule: 'guardrail_provider_error',
        category: 'error_pattern',
        severity: 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Guardrail ${guardrail || '(unnamed)'} could not get a verdict from its provider ${list.length} time${list.length > 1 ? 's' : ''}: "${clip(str(list[0]!.data.error) ?? '')}".`,
        threshold: T.guardrailErrors,
        observed: list.length,
        unit: 'count',
        subject: { guardrail },
      });
    }
  }
  // LLM calls that a fallback model answered.
  const fallbacks = groupBy(
    events.filter((e) => e.type === 'llm_call' && str(e.data.fallbackFrom)),
    (e) => `${e.data.fallbackFrom as string}\u0000${str(e.data.model) ?? ''}`,
  );
  for (const list of fallbacks.values()) {
    const from = list[0]!.data.fallbackFrom as string;
    const model = str(list[0]!.data.model) ?? 'another model';
    if (list.length >= T.llmFallbacks) {
      out.push({
        rule: 'llm_fallback',
        category: 'error_pattern',
        severity: 'info',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `${list.length} LLM call${list.length > 1 ? 's' : ''} for ${from} fell back to ${model}.`,
        threshold: T.llmFallbacks,
        observed: list.length,
        unit: 'count',
        subject: { model: from, fallbackModel: model },
      });
    }
  }
  return out;
}

function decisionFindings(events: AnalysedEvent[]): Draft[] {
  const out: Draft[] = [];
  const decisions = events.filter((e) => e.type === 'decision' && str(e.data.decisionKind));
  // The same decision again and again.
  for (const list of groupBy(decisions, (e) => `${e.data.decisionKind as string}\u0000${str(e.data.decision) ?? ''}`).values()) {
    const kind = list[0]!.data.decisionKind as string;
    const decision = str(list[0]!.data.decision) ?? '';
    if (list.length >= T.repeatedDecisions) {
      out.push({
        rule: 'repeated_decision',
        category: 'decision_anomaly',
        severity: 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `The ${kind} decision "${clip(decision)}" was taken ${list.length} times (the rule fires at ${T.repeatedDecisions}): the conversation may be going round in circles.`,
        threshold: T.repeatedDecisions,
        observed: list.length,
        unit: 'count',
        subject: { decisionKind: kind, ...(str(list[0]!.data.agent) ? { agent: list[0]!.data.agent as string } : {}) },
      });
    }
  }
  // Steps or fields that ran out of attempts.
  const exhausted = decisions.filter((e) => e.data.decisionKind === 'max_attempts');
  if (exhausted.length >= T.exhaustedAttempts) {
    out.push({
      rule: 'attempts_exhausted',
      category: 'decision_anomaly',
      severity: 'warning',
      spans: spansOf(exhausted),
      turnList: turnsOf(exhausted),
      explanation: `${exhausted.length} FLOW step${exhausted.length > 1 ? 's' : ''} ran out of attempts (${exhausted.map((e) => clip(str(e.data.decision) ?? '', 60)).slice(0, 3).join('; ')}): the user could not give what was asked.`,
      threshold: T.exhaustedAttempts,
      observed: exhausted.length,
      unit: 'count',
      subject: {},
    });
  }
  // A variable flipping between values.
  const changes = groupBy(
    events.filter((e) => e.type === 'state_change' && str(e.data.variable) && !(e.data.variable as string).startsWith('_')),
    (e) => `${str(e.data.agent) ?? ''}\u0000${e.data.variable as string}`,
  );
  for (const list of changes.values()) {
    const returns = pingPongReturns(list.map((e) => stableJson(e.data.value)));
    if (returns >= T.pingPongReturns) {
      const variable = list[0]!.data.variable as string;
      out.push({
        rule: 'state_ping_pong',
        category: 'decision_anomaly',
        severity: 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Variable ${variable} went back to its previous value ${returns} times over ${list.length} changes (the rule fires at ${T.pingPongReturns}): something sets and undoes it in a loop.`,
        threshold: T.pingPongReturns,
        observed: returns,
        unit: 'count',
        subject: { variable, ...(str(list[0]!.data.agent) ? { agent: list[0]!.data.agent as string } : {}) },
      });
    }
  }
  // FLOW steps bouncing between each other.
  const transitions = decisions.filter((e) => e.data.decisionKind === 'flow_transition' && str(e.data.decision)?.includes(' -> '));
  for (const [agent, list] of groupBy(transitions, (e) => str(e.data.agent) ?? '')) {
    const steps: string[] = [];
    for (const e of list) {
      const [from, to] = (e.data.decision as string).split(' -> ');
      if (steps[steps.length - 1] !== from) steps.push(from!);
      steps.push(to!);
    }
    const returns = pingPongReturns(steps);
    if (returns >= T.pingPongReturns) {
      out.push({
        rule: 'flow_ping_pong',
        category: 'decision_anomaly',
        severity: 'warning',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Agent ${agent || '(unknown)'}'s FLOW went back to the step it had just left ${returns} times (the rule fires at ${T.pingPongReturns}).`,
        threshold: T.pingPongReturns,
        observed: returns,
        unit: 'count',
        subject: agent ? { agent } : {},
      });
    }
  }
  // Handoffs back and forth between agents.
  const handoffs = events.filter((e) => e.type === 'handoff' && str(e.data.fromAgent) && str(e.data.toAgent));
  if (handoffs.length > 0) {
    const agents: string[] = [];
    for (const e of handoffs) {
      if (agents[agents.length - 1] !== e.data.fromAgent) agents.push(e.data.fromAgent as string);
      agents.push(e.data.toAgent as string);
    }
    const returns = pingPongReturns(agents);
    if (returns >= T.pingPongReturns) {
      const involved = [...new Set(agents)];
      out.push({
        rule: 'handoff_loop',
        category: 'decision_anomaly',
        severity: 'warning',
        spans: spansOf(handoffs),
        turnList: turnsOf(handoffs),
        explanation: `The conversation was handed back to the agent it had just left ${returns} times (${clip(agents.join(' → '), 200)}; the rule fires at ${T.pingPongReturns}).`,
        threshold: T.pingPongReturns,
        observed: returns,
        unit: 'count',
        subject: { agents: involved.join(',') },
      });
    }
  }
  // Guardrail blocks.
  const blocks = events.filter((e) => e.type === 'guardrail_eval' && e.data.passed === false && e.data.action === 'block');
  for (const [guardrail, list] of groupBy(blocks, (e) => str(e.data.guardrail) ?? '')) {
    if (list.length >= T.guardrailBlocks) {
      out.push({
        rule: 'guardrail_block',
        category: 'decision_anomaly',
        severity: list.length >= T.guardrailBlocksWarning ? 'warning' : 'info',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Guardrail ${guardrail || '(unnamed)'} (${str(list[0]!.data.kind) ?? 'guardrail'}) blocked ${list.length} time${list.length > 1 ? 's' : ''} (a warning from ${T.guardrailBlocksWarning}).`,
        threshold: T.guardrailBlocks,
        observed: list.length,
        unit: 'count',
        subject: { guardrail, ...(str(list[0]!.data.agent) ? { agent: list[0]!.data.agent as string } : {}) },
      });
    }
  }
  return out;
}

function costFindings(events: AnalysedEvent[]): Draft[] {
  const out: Draft[] = [];
  for (const e of events) {
    if (e.type !== 'llm_call') continue;
    const usage = rec(e.data.usage);
    const input = num(usage.inputTokens) ?? 0;
    const output = num(usage.outputTokens) ?? 0;
    if (input >= T.heavyPromptTokens && input >= T.heavyPromptRatio * Math.max(output, 1)) {
      const { subject } = spanLabel(e);
      out.push({
        rule: 'heavy_prompt',
        category: 'cost_hotspot',
        severity: input >= T.heavyPromptWarningTokens ? 'warning' : 'info',
        spans: [e.spanId],
        turnList: [e.turn],
        explanation: `An LLM call sent ${input} prompt tokens for ${output} output tokens (at least ${T.heavyPromptTokens} tokens and ${T.heavyPromptRatio}× the output fire the rule).`,
        threshold: T.heavyPromptTokens,
        observed: input,
        unit: 'tokens',
        subject: { ...subject, ...(str(e.data.purpose) ? { purpose: e.data.purpose as string } : {}) },
      });
    }
  }
  // The same tool, the same input, the same (successful) answer path: a cache would do.
  const calls = new Map(events.filter((e) => e.type === 'tool_call').map((e) => [e.spanId, e]));
  const okResults = events.filter((e) => e.type === 'tool_result' && !toolFailed(e.data) && e.data.mocked !== true);
  const byInput = new Map<string, AnalysedEvent[]>();
  for (const r of okResults) {
    const call = calls.get(r.parentSpanId ?? '');
    if (!call || !str(call.data.tool)) continue;
    const key = `${call.data.tool as string}\u0000${stableJson(call.data.input ?? null)}`;
    const list = byInput.get(key) ?? [];
    list.push(call);
    byInput.set(key, list);
  }
  for (const list of byInput.values()) {
    if (list.length >= T.duplicateToolCalls) {
      const tool = list[0]!.data.tool as string;
      out.push({
        rule: 'duplicate_tool_call',
        category: 'cost_hotspot',
        severity: 'info',
        spans: spansOf(list),
        turnList: turnsOf(list),
        explanation: `Tool ${tool} was called ${list.length} times with the same input, successfully each time (the rule fires at ${T.duplicateToolCalls}).`,
        threshold: T.duplicateToolCalls,
        observed: list.length,
        unit: 'count',
        subject: { tool },
      });
    }
  }
  return out;
}

/** What to do about the findings: one suggestion per kind and subject, naming the findings behind it. */
export function suggestionsFor(findings: Finding[]): Suggestion[] {
  const out = new Map<string, Suggestion>();
  const add = (kind: string, subject: Record<string, string>, explanation: string, f: Finding) => {
    const key = `${kind}\u0000${stableJson(subject)}`;
    const known = out.get(key);
    if (known) known.findingIds.push(f.id);
    else out.set(key, { kind, subject, explanation, findingIds: [f.id] });
  };
  for (const f of findings) {
    const { tool, agent, model, guardrail } = f.subject;
    switch (f.rule) {
      case 'slow_span_absolute':
      case 'slow_span_relative':
        if (tool) add('speed_up_tool', { tool }, `Tool ${tool} is slow: cache its results when its input repeats, or make its endpoint answer faster.`, f);
        else if (model) add('faster_model_or_shorter_prompt', { model }, `Calls to ${model} are slow: a smaller or faster model, or a shorter prompt, cuts the wait.`, f);
        else if (f.subject.toAgent) add('review_delegation', { toAgent: f.subject.toAgent }, `Delegations to ${f.subject.toAgent} are slow: give the delegated agent a narrower task or a TIMEOUT.`, f);
        break;
      case 'tool_timeout':
        add('raise_tool_timeout', { tool: tool! }, `Tool ${tool} timed out: raise its timeout_ms if the endpoint is merely slow, or make it answer within the limit.`, f);
        break;
      case 'repeated_tool_error':
        add('handle_tool_failure', { tool: tool! }, `Tool ${tool} keeps failing the same way: fix the call (arguments, credentials, endpoint) and give the step an ON_FAIL so the agent stops retrying.`, f);
        break;
      case 'tool_retry_loop':
        add('bound_tool_retries', { tool: tool! }, `Tool ${tool} is called again and again within a turn: bound its retries and check what makes the agent call it again.`, f);
        break;
      case 'duplicate_tool_call':
        add('cache_tool_result', { tool: tool! }, `Tool ${tool} answers the same input more than once: cache its result for the session (or remember it in a variable).`, f);
        break;
      case 'heavy_prompt':
        add('shorten_prompt', agent ? { agent } : {}, `Prompts${agent ? ` of ${agent}` : ''} are large against what they produce: shorten the instructions, summarise the history or send fewer tool results.`, f);
        break;
      case 'repeated_decision':
      case 'state_ping_pong':
      case 'flow_ping_pong':
      case 'attempts_exhausted':
        add('add_exit_condition', agent ? { agent } : {}, `The conversation loops${agent ? ` in ${agent}` : ''}: add an exit (a maximum of attempts, an ESCALATE or a default path) to the step or rule that repeats.`, f);
        break;
      case 'handoff_loop':
        add('tighten_handoff_rules', { agents: f.subject.agents ?? '' }, 'Agents hand the conversation back and forth: make their HANDOFF conditions exclusive, or let one agent finish the task.', f);
        break;
      case 'guardrail_block':
        if (f.severity !== 'info') add('review_guardrail', { guardrail: guardrail! }, `Guardrail ${guardrail} blocks often: check it does not catch legitimate messages, or guide users before they hit it.`, f);
        break;
      case 'guardrail_provider_error':
        add('check_guardrail_provider', { guardrail: guardrail! }, `Guardrail ${guardrail}'s provider fails: check its credentials and availability, and its on_error choice.`, f);
        break;
      case 'llm_fallback':
        add('check_llm_provider', { model: model! }, `Calls to ${model} fell back to another model: check the provider's credentials, quota and availability.`, f);
        break;
      case 'repeated_error':
        add('investigate_error', { errorKind: f.subject.errorKind ?? 'error' }, `The same ${f.subject.errorKind ?? ''} error repeats: its message says what to fix; an ON_ERROR handler keeps the conversation going meanwhile.`, f);
        break;
      default:
        break;
    }
  }
  return [...out.values()];
}

export interface SessionAnalysis {
  eventCount: number;
  truncated: boolean;
  slowSpans: Finding[];
  errorPatterns: Finding[];
  decisionAnomalies: Finding[];
  costHotspots: Finding[];
  suggestions: Suggestion[];
  summary: { findings: number; critical: number; warning: number; info: number };
}

/** Runs every rule over a session's events and messages (pure: same input, same analysis). */
export function analyseEvents(events: AnalysedEvent[], messages: AnalysedMessage[], truncated = false): SessionAnalysis {
  const drafts = [...slowSpanFindings(events), ...slowTurnFindings(events, messages), ...errorPatternFindings(events), ...decisionFindings(events), ...costFindings(events)];
  const byRule = new Map<string, Draft[]>();
  for (const d of drafts) byRule.set(d.rule, [...(byRule.get(d.rule) ?? []), d]);
  const findings: Finding[] = [];
  for (const [rule, list] of byRule) {
    const kept = list.sort((a, b) => SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] || b.observed - a.observed).slice(0, MAX_FINDINGS_PER_RULE);
    kept.forEach((d, i) => {
      const { spans, turnList, ...rest } = d;
      findings.push({ id: `${rule}:${i + 1}`, ...rest, spanIds: spans.slice(0, MAX_SPANS_PER_FINDING), spanCount: spans.length, turns: turnList });
    });
  }
  findings.sort((a, b) => SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] || a.id.localeCompare(b.id));
  const of = (category: FindingCategory) => findings.filter((f) => f.category === category);
  return {
    eventCount: events.length,
    truncated,
    slowSpans: of('slow_span'),
    errorPatterns: of('error_pattern'),
    decisionAnomalies: of('decision_anomaly'),
    costHotspots: of('cost_hotspot'),
    suggestions: suggestionsFor(findings),
    summary: {
      findings: findings.length,
      critical: findings.filter((f) => f.severity === 'critical').length,
      warning: findings.filter((f) => f.severity === 'warning').length,
      info: findings.filter((f) => f.severity === 'info').length,
    },
  };
}

/** The analysis of a stored session: one bounded read of its events and messages (as the metrics). */
export async function analyseSession(models: Models, session: SessionDoc): Promise<SessionAnalysis> {
  const owned = { tenantId: session.tenantId, sessionId: session._id };
  const [events, messages] = await Promise.all([
    models.TraceEvent.find(owned).select({ type: 1, spanId: 1, parentSpanId: 1, turn: 1, timestamp: 1, data: 1 }).sort({ seq: 1 }).limit(MAX_METRIC_EVENTS + 1).lean(),
    models.TranscriptMessage.find(owned).select({ turn: 1, timestamp: 1 }).sort({ seq: 1 }).limit(MAX_METRIC_EVENTS + 1).lean(),
  ]);
  const truncated = events.length > MAX_METRIC_EVENTS || messages.length > MAX_METRIC_EVENTS;
  return analyseEvents(
    events.slice(0, MAX_METRIC_EVENTS).map((e) => ({ ...e, data: rec(e.data) })),
    messages.slice(0, MAX_METRIC_EVENTS),
    truncated,
  );
}
