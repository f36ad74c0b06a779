// Voice metrics of a call, written as rows of `voice_events` (db/voice-event.ts) as the call goes:
// its start, each turn (latency, estimated talk and silence, interruption), each stretch of
// silence, a transfer, the agent ending it, and at the end the call's totals and outcome. Talk
// times are estimates from the text (Twilio's webhooks carry no audio timings): SPEECH_MS_PER_CHAR.
import { isDuplicateKey } from '../../db/duplicate-key';
import { type VoiceEventDoc, type VoiceEventType } from '../../db/voice-event';
import { type CoreContext } from '../context';

/** Spoken speech runs at about 150 words a minute, some 15 characters a second. */
export const SPEECH_MS_PER_CHAR = 1000 / 15;

export const estimateSpeechMs = (text: string): number => Math.round(text.trim().length * SPEECH_MS_PER_CHAR);

export interface CallRef {
  tenantId: string;
  projectId: string;
  connectionId: string;
  callSid: string;
  sessionId: string | null;
}

const eventId = (call: CallRef, type: VoiceEventType, n: number) => `${call.connectionId}:${call.callSid}:${type}:${n}`;

/** Writes one event once (a retried webhook writes nothing again). Failures are logged, never thrown: metrics never break a call. */
export async function recordVoiceEvent(ctx: CoreContext, call: CallRef, type: VoiceEventType, turn: number, data: Record<string, unknown>): Promise<void> {
  try {
    await ctx.models.VoiceEvent.create({ _id: eventId(call, type, turn), ...call, type, turn, at: new Date(), data });
  } catch (err) {
    if (!isDuplicateKey(err)) ctx.logger.warn({ err, callSid: call.callSid, type }, 'could not record a voice metrics event');
  }
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

/** The `voice.turn` event's data. */
export function turnMetrics(timing: TurnTiming, speech: string, confidence: number | null, reply: string): Record<string, unknown> {
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
    confidence,
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
export async function recordCallEnded(ctx: CoreContext, call: CallRef, callStatus: string, durationSec: number | null): Promise<void> {
  const events: Pick<VoiceEventDoc, 'type' | 'turn' | 'data'>[] = await ctx.models.VoiceEvent.find(
    { tenantId: call.tenantId, connectionId: call.connectionId, callSid: call.callSid },
    { type: 1, turn: 1, data: 1 },
  ).lean();
  // Turn 0 is the greeting: talk time, but no caller turn.
  const turns = events.filter((e) => e.type === 'voice.turn' && e.turn > 0).map((e) => e.data as Record<string, number | boolean | null>);
  const greeting = events.find((e) => e.type === 'voice.turn' && e.turn === 0);
  const noInput = events.filter((e) => e.type === 'voice.no_input');
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const latencies = turns.map((t) => num(t.latencyMs));
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
    agentTalkMs: num(greeting?.data.agentSpeechMs) + turns.reduce((a, t) => a + num(t.agentSpeechMs), 0),
    callerTalkMs: turns.reduce((a, t) => a + num(t.callerSpeechMs), 0),
    silenceMs: turns.reduce((a, t) => a + num(t.silenceMs), 0) + noInput.reduce((a, e) => a + num(e.data.timeoutMs), 0),
    interruptions: turns.filter((t) => t.interrupted === true).length,
    noInputs: noInput.length,
  });
}
