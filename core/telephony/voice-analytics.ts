// Voice analytics of a project: hourly buckets and a summary of its calls over the last `hours`,
// computed from the voice metrics events (db/voice-event.ts) the calls wrote through
// core/telephony/voice-metrics.ts. A call belongs to the UTC hour it started in (its
// `voice.call_started`), with everything it did afterwards; each `avg_` figure is the mean over the
// calls that have it. Figures the TwiML path cannot measure (MOS, jitter, a TTS quality score) are
// null. docs/voice-analytics.md.
import { type VoiceEventDoc, type VoiceEventType } from '../../db/voice-event';
import { type Models } from '../../db/models';

export const VOICE_ANALYTICS_DEFAULT_HOURS = 168;
/** The longest window a request may ask for: 30 days. */
export const VOICE_ANALYTICS_MAX_HOURS = 720;

const HOUR_MS = 3_600_000;

/** One hour of calls (the spec's "Voice metrics (hourly bucket)"). */
export interface VoiceHourlyBucket {
  hour: string;
  session_count: number;
  error_count: number;
  avg_call_duration_ms: number | null;
  avg_inbound_mos: null;
  avg_outbound_mos: null;
  avg_inbound_jitter_ms: null;
  avg_outbound_jitter_ms: null;
  avg_e2e_latency_ms: number | null;
  avg_barge_in_rate: number | null;
  avg_dtmf_fallback_rate: number | null;
  avg_asr_score: number | null;
  avg_tts_proxy_mos: null;
  avg_silence_percent: number | null;
  total_turns: number;
  total_barge_in_count: number;
  total_dtmf_turn_count: number;
}

export interface VoiceSummary {
  from: string;
  to: string;
  hours: number;
  total_calls: number;
  total_errors: number;
  avg_call_duration_ms: number | null;
  overall_avg_inbound_mos: null;
  overall_avg_outbound_mos: null;
  overall_avg_latency_ms: number | null;
  overall_barge_in_rate: number | null;
  overall_dtmf_fallback_rate: number | null;
  overall_asr_score: number | null;
  total_turns: number;
  total_barge_in_count: number;
  total_dtmf_turn_count: number;
}

export interface VoiceAnalyticsScope {
  tenantId: string;
  projectId: string;
  /** A key bound to environments sees only their calls; null or empty: every environment. */
  environments?: readonly string[] | null;
}

/** What one call contributes, gathered from its events. */
interface CallFigures {
  startedAt: number;
  durationMs: number | null;
  failed: boolean;
  latencies: number[];
  turns: number;
  bargeIns: number;
  dtmfTurns: number;
  confidences: number[];
  silenceMs: number;
}

/** Per call: the figures each `avg_` averages (null when the call has none). */
interface CallValues {
  durationMs: number | null;
  latencyMs: number | null;
  bargeInRate: number | null;
  dtmfRate: number | null;
  asrScore: number | null;
  silencePercent: number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const mean = (values: number[]): number | null => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : null);
const round = (v: number | null, digits: number): number | null => (v === null ? null : Math.round(v * 10 ** digits) / 10 ** digits);

function valuesOf(c: CallFigures): CallValues {
  return {
    durationMs: c.durationMs,
    latencyMs: mean(c.latencies),
    bargeInRate: c.turns ? c.bargeIns / c.turns : null,
    dtmfRate: c.turns ? c.dtmfTurns / c.turns : null,
    asrScore: mean(c.confidences),
    silencePercent: c.durationMs ? Math.min(100, (100 * c.silenceMs) / c.durationMs) : null,
  };
}

/** The figures of a set of calls, as a bucket's or the summary's fields need them. */
function aggregate(calls: CallFigures[]) {
  const values = calls.map(valuesOf);
  const avg = (pick: (v: CallValues) => number | null) => mean(values.map(pick).filter((v): v is number => v !== null));
  return {
    calls: calls.length,
    errors: calls.filter((c) => c.failed).length,
    durationMs: round(avg((v) => v.durationMs), 0),
    latencyMs: round(avg((v) => v.latencyMs), 0),
    bargeInRate: round(avg((v) => v.bargeInRate), 4),
    dtmfRate: round(avg((v) => v.dtmfRate), 4),
    asrScore: round(avg((v) => v.asrScore), 4),
    silencePercent: round(avg((v) => v.silencePercent), 2),
    turns: calls.reduce((a, c) => a + c.turns, 0),
    bargeIns: calls.reduce((a, c) => a + c.bargeIns, 0),
    dtmfTurns: calls.reduce((a, c) => a + c.dtmfTurns, 0),
  };
}

/** The events a call's figures are built from (its start is read first, on its own). */
const FIGURE_TYPES: VoiceEventType[] = ['voice.turn', 'voice.no_input', 'voice.error', 'voice.call_ended'];

/**
 * The calls of the project that started in [from, to], with their figures. Two reads, both by
 * `{tenantId, projectId, type, at}` and streamed: the window's call starts, then the later events
 * of the window, kept for the calls found; memory grows with the number of calls, not events.
 */
async function callsInWindow(models: Models, scope: VoiceAnalyticsScope, from: Date, to: Date): Promise<CallFigures[]> {
  const key = (e: Pick<VoiceEventDoc, 'connectionId' | 'callSid'>) => `${e.connectionId}\u0000${e.callSid}`;
  const environments = scope.environments?.length ? { environment: { $in: [...scope.environments] } } : {};
  const calls = new Map<string, CallFigures>();
  const starts = models.VoiceEvent.find(
    { tenantId: scope.tenantId, projectId: scope.projectId, type: 'voice.call_started', at: { $gte: from, $lte: to }, ...environments },
    { connectionId: 1, callSid: 1, at: 1 },
  )
    .lean()
    .cursor();
  for await (const e of starts as AsyncIterable<Pick<VoiceEventDoc, 'connectionId' | 'callSid' | 'at'>>) {
    calls.set(key(e), { startedAt: e.at.getTime(), durationMs: null, failed: false, latencies: [], turns: 0, bargeIns: 0, dtmfTurns: 0, confidences: [], silenceMs: 0 });
  }
  if (calls.size === 0) return [];
  // A call's later events are never older than its start, so `at >= from` finds them all.
  const rest = models.VoiceEvent.find(
    { tenantId: scope.tenantId, projectId: scope.projectId, type: { $in: FIGURE_TYPES }, at: { $gte: from } },
    { connectionId: 1, callSid: 1, type: 1, turn: 1, data: 1 },
  )
    .lean()
    .cursor();
  for await (const e of rest as AsyncIterable<Pick<VoiceEventDoc, 'connectionId' | 'callSid' | 'type' | 'turn' | 'data'>>) {
    const call = calls.get(key(e));
    if (!call) continue;
    const data = e.data ?? {};
    switch (e.type) {
      case 'voice.turn': {
        // Turn 0 is the greeting: no caller spoke.
        if (e.turn === 0) break;
        call.turns += 1;
        const latency = num(data.latencyMs);
        if (latency !== null) call.latencies.push(latency);
        if (data.interrupted === true) call.bargeIns += 1;
        if (data.input === 'dtmf') call.dtmfTurns += 1;
        else {
          const confidence = num(data.confidence);
          if (confidence !== null) call.confidences.push(confidence);
        }
        call.silenceMs += num(data.silenceMs) ?? 0;
        break;
      }
      case 'voice.no_input':
        call.silenceMs += num(data.timeoutMs) ?? 0;
        break;
      case 'voice.error':
        call.failed = true;
        break;
      case 'voice.call_ended': {
        const seconds = num(data.durationSec);
        if (seconds !== null) call.durationMs = seconds * 1000;
        if (data.outcome === 'failed') call.failed = true;
        break;
      }
    }
  }
  return [...calls.values()];
}

/** The window the last `hours` cover, ending now. */
export function voiceWindow(hours: number, now = new Date()): { from: Date; to: Date } {
  return { from: new Date(now.getTime() - hours * HOUR_MS), to: now };
}

/** Hourly buckets of the project's calls over the last `hours`, oldest first; hours without a call are left out. */
export async function voiceHourly(models: Models, scope: VoiceAnalyticsScope, hours: number, now = new Date()): Promise<VoiceHourlyBucket[]> {
  const { from, to } = voiceWindow(hours, now);
  const byHour = new Map<number, CallFigures[]>();
  for (const call of await callsInWindow(models, scope, from, to)) {
    const hour = Math.floor(call.startedAt / HOUR_MS) * HOUR_MS;
    byHour.set(hour, [...(byHour.get(hour) ?? []), call]);
  }
  return [...byHour.keys()]
    .sort((a, b) => a - b)
    .map((hour) => {
      const a = aggregate(byHour.get(hour)!);
      return {
        hour: new Date(hour).toISOString(),
        session_count: a.calls,
        error_count: a.errors,
        avg_call_duration_ms: a.durationMs,
        avg_inbound_mos: null,
        avg_outbound_mos: null,
        avg_inbound_jitter_ms: null,
        avg_outbound_jitter_ms: null,
        avg_e2e_latency_ms: a.latencyMs,
        avg_barge_in_rate: a.bargeInRate,
        avg_dtmf_fallback_rate: a.dtmfRate,
        avg_asr_score: a.asrScore,
        avg_tts_proxy_mos: null,
        avg_silence_percent: a.silencePercent,
        total_turns: a.turns,
        total_barge_in_count: a.bargeIns,
        total_dtmf_turn_count: a.dtmfTurns,
      };
    });
}

/** The summary of the project's calls over the last `hours`. */
export async function voiceSummary(models: Models, scope: VoiceAnalyticsScope, hours: number, now = new Date()): Promise<VoiceSummary> {
  const { from, to } = voiceWindow(hours, now);
  const a = aggregate(await callsInWindow(models, scope, from, to));
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    hours,
    total_calls: a.calls,
    total_errors: a.errors,
    avg_call_duration_ms: a.durationMs,
    overall_avg_inbound_mos: null,
    overall_avg_outbound_mos: null,
    overall_avg_latency_ms: a.latencyMs,
    overall_barge_in_rate: a.bargeInRate,
    overall_dtmf_fallback_rate: a.dtmfRate,
    overall_asr_score: a.asrScore,
    total_turns: a.turns,
    total_barge_in_count: a.bargeIns,
    total_dtmf_turn_count: a.dtmfTurns,
  };
}
