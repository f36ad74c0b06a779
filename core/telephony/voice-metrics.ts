// Voice metrics of a call, written as rows of `voice_events` (db/voice-event.ts) as the call goes:
// its start, each turn (latency, estimated talk and silence, interruption, speech or keypad, the
// recogniser's confidence), each stretch of silence, a transfer, the agent ending it, a turn that
// failed, and at the end the call's totals and outcome. Every row goes through one ingestion path,
// `ingestVoiceEvents`, which also writes the matching category `voice` analytics events (one
// batch per call of it). Talk times are estimates from the text (Twilio's webhooks carry no audio
// timings): SPEECH_MS_PER_CHAR. Voice analytics (core/telephony/voice-analytics.ts) reads the rows.
import { isOnlyDuplicateKeys } from '../../db/duplicate-key';
import { driverCollection } from '../../db/driver-collection';
import { type VoiceEventDoc, type VoiceEventType } from '../../db/voice-event';
import { recordAnalyticsEvents, type NewAnalyticsEvent } from '../analytics/ingest';
import { type CoreContext } from '../context';

/** Spoken speech runs at about 150 words a minute, some 15 characters a second. */
export const SPEECH_MS_PER_CHAR = 1000 / 15;

export const estimateSpeechMs = (text: string): number => Math.round(text.trim().length * SPEECH_MS_PER_CHAR);

export interface CallRef {
  tenantId: string;
  projectId: string;
  /** The channel connection of a phone call; null for a real-time voice room (its name is the `callSid`). */
  connectionId: string | null;
  callSid: string;
  sessionId: string | null;
  /** The connection's environment, so that a key bound to environments sees only their calls. */
  environment?: string | null;
}

/** One event of a call as the ingestion path takes it; `at` defaults to now. */
export interface VoiceEventInput {
  type: VoiceEventType;
  /** The turn it belongs to (0: the greeting; the call's own events: 0; silences: turn * 10 + n). */
  turn: number;
  data: Record<string, unknown>;
  at?: Date;
}

/** What the ingestion path needs of its process. */
export type VoiceMetricsContext = Pick<CoreContext, 'models' | 'logger'>;

/**
 * `<connectionId>:<callSid>:<type>:<n>` (`room:<roomName>:…` for a voice room): the same on every
 * retry of the webhook or activity that writes it.
 */
export const voiceEventId = (call: Pick<CallRef, 'connectionId' | 'callSid'>, type: VoiceEventType, n: number) => `${call.connectionId ?? 'room'}:${call.callSid}:${type}:${n}`;

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * The category `voice` analytics event of a voice event: same type, session and time; turns carry
 * their latency and the call's end its duration as `durationMs`; a failed turn and a failed call
 * carry `error`. Its id is derived from the voice event's, so a retry writes nothing twice.
 */
export function voiceAnalyticsEvent(doc: VoiceEventDoc): NewAnalyticsEvent {
  const { data } = doc;
  const durationMs = doc.type === 'voice.turn' ? num(data.latencyMs) : doc.type === 'voice.call_ended' && num(data.durationSec) !== null ? num(data.durationSec)! * 1000 : null;
  const error =
    doc.type === 'voice.error' ? `turn failed: ${typeof data.reason === 'string' ? data.reason : 'error'}` : doc.type === 'voice.call_ended' && data.outcome === 'failed' ? 'call failed' : null;
  return {
    id: `voice:${doc._id}`,
    tenantId: doc.tenantId,
    projectId: doc.projectId,
    category: 'voice',
    eventType: doc.type,
    agentName: doc.type === 'voice.call_started' && typeof data.agent === 'string' ? data.agent : null,
    sessionId: doc.sessionId,
    // A row with no connection is a real-time voice room's.
    channel: doc.connectionId === null ? 'voice_realtime' : 'voice',
    timestamp: doc.at,
    durationMs,
    error,
    metadata: { ...data, connectionId: doc.connectionId, callSid: doc.callSid, turn: doc.turn },
  };
}

/**
 * The one ingestion path of voice metrics: writes the call's events (a retried webhook's ids are
 * skipped) and their category `voice` analytics events, each in one batch. Failures are logged,
 * never thrown: metrics never break a call.
 */
export async function ingestVoiceEvents(ctx: VoiceMetricsContext, call: CallRef, events: readonly VoiceEventInput[]): Promise<void> {
  if (events.length === 0) return;
  const now = new Date();
  const docs: VoiceEventDoc[] = events.map((e) => ({
    _id: voiceEventId(call, e.type, e.turn),
    tenantId: call.tenantId,
    projectId: call.projectId,
    connectionId: call.connectionId,
    callSid: call.callSid,
    sessionId: call.sessionId,
    environment: call.environment ?? null,
    type: e.type,
    turn: e.turn,
    at: e.at ?? now,
    data: e.data,
  }));
  try {
    await driverCollection(ctx.models.VoiceEvent).insertMany(docs, { ordered: false });
  } catch (err) {
    if (!isOnlyDuplicateKeys(err)) ctx.logger.warn({ err, callSid: call.callSid, types: events.map((e) => e.type) }, 'could not record a voice metrics event');
  }
  try {
    await recordAnalyticsEvents(ctx.models, docs.map(voiceAnalyticsEvent));
  } catch (err) {
    ctx.logger.warn({ err, callSid: call.callSid }, 'could not record the voice analytics events of a call');
  }
}

/** Writes one event once (a retried webhook writes nothing again), through the ingestion path. */
export async function recordVoiceEvent(ctx: VoiceMetricsContext, call: CallRef, type: VoiceEventType, turn: number, data: Record<string, unknown>): Promise<void> {
  await ingestVoiceEvents(ctx, call, [{ type, turn, data }]);
}

/** What a turn's metrics are computed from; times in ms since the epoch. */
export interface TurnTiming {
  /** When the previous answer (the one that asked) was sent. */
  promptedAt: number | null;
  /** Estimated time that answer took to say. */
  promptSpeechMs: number;
  /** Whether the caller could interrupt it. */
  bargeIn: boolean;
  /** When the caller's speech reached us. */
  heardAt: number;
  /** When the reply was ready. */
  repliedAt: number;
  /** Redirects the turn took. */
  polls: number;
}

/** How the caller answered: spoken words (Twilio's SpeechResult) or keys (its Digits); null for the greeting. */
export type TurnInput = 'speech' | 'dtmf' | null;

/** The `voice.turn` event's data. `confidence` is Twilio's speech-recognition Confidence (0-1), speech turns only. */
export function turnMetrics(timing: TurnTiming, speech: string, confidence: number | null, reply: string, input: TurnInput = null): Record<string, unknown> {
  const callerSpeechMs = estimateSpeechMs(speech);
  const sincePromptMs = timing.promptedAt === null ? null : Math.max(0, timing.heardAt - timing.promptedAt);
  // The caller spoke before the reply could have been said in full: they cut in.
  const interrupted = timing.bargeIn && sincePromptMs !== null && sincePromptMs < timing.promptSpeechMs;
  const silenceMs = sincePromptMs === null || interrupted ? 0 : Math.max(0, sincePromptMs - timing.promptSpeechMs - callerSpeechMs);
  return {
    latencyMs: Math.max(0, timing.repliedAt - timing.heardAt),
    polls: timing.polls,
    callerChars: speech.length,
    callerSpeechMs,
    input,
    confidence: input === 'dtmf' ? null : confidence,
    agentChars: reply.length,
    agentSpeechMs: estimateSpeechMs(reply),
    sincePromptMs,
    interrupted,
    silenceMs,
  };
}

export type CallOutcome = 'completed_by_agent' | 'transferred' | 'no_input' | 'caller_hung_up' | 'machine' | 'busy' | 'no_answer' | 'failed' | 'canceled';

/**
 * The `voice.call_ended` event, from the call's other events: turns, latency, talk and silence
 * time, interruptions and the outcome. Written once per call.
 */
export async function recordCallEnded(ctx: VoiceMetricsContext, call: CallRef, callStatus: string, durationSec: number | null): Promise<void> {
  const events: Pick<VoiceEventDoc, 'type' | 'turn' | 'data'>[] = await ctx.models.VoiceEvent.find(
    { tenantId: call.tenantId, connectionId: call.connectionId, callSid: call.callSid },
    { type: 1, turn: 1, data: 1 },
  ).lean();
  // Turn 0 is the greeting: talk time, but no caller turn.
  const turns = events.filter((e) => e.type === 'voice.turn' && e.turn > 0).map((e) => e.data as Record<string, number | boolean | null>);
  const greeting = events.find((e) => e.type === 'voice.turn' && e.turn === 0);
  const noInput = events.filter((e) => e.type === 'voice.no_input');
  const n0 = (v: unknown) => num(v) ?? 0;
  const latencies = turns.map((t) => n0(t.latencyMs));
  const outcome: CallOutcome = events.some((e) => e.type === 'voice.transfer')
    ? 'transferred'
    : events.some((e) => e.type === 'voice.agent_ended')
      ? 'completed_by_agent'
      : noInput.some((e) => e.data.final === true)
        ? 'no_input'
        : callStatus === 'completed' || callStatus === 'in-progress'
          ? 'caller_hung_up'
          : (callStatus.replace('-', '_') as CallOutcome);
  await recordVoiceEvent(ctx, call, 'voice.call_ended', 0, {
    outcome,
    callStatus,
    durationSec,
    turns: turns.length,
    avgLatencyMs: latencies.length ? Math.round(latencies.reduce((a, b) => a + b, 0) / latencies.length) : null,
    maxLatencyMs: latencies.length ? Math.max(...latencies) : null,
    agentTalkMs: n0(greeting?.data.agentSpeechMs) + turns.reduce((a, t) => a + n0(t.agentSpeechMs), 0),
    callerTalkMs: turns.reduce((a, t) => a + n0(t.callerSpeechMs), 0),
    silenceMs: turns.reduce((a, t) => a + n0(t.silenceMs), 0) + noInput.reduce((a, e) => a + n0(e.data.timeoutMs), 0),
    interruptions: turns.filter((t) => t.interrupted === true).length,
    dtmfTurns: turns.filter((t) => (t.input as unknown) === 'dtmf').length,
    noInputs: noInput.length,
    errors: events.filter((e) => e.type === 'voice.error').length,
  });
}
