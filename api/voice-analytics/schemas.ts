// Request and response schemas of the voice analytics routes (docs/voice-analytics.md).
import { z } from 'zod';
import '../openapi/registry';
import { queryInt } from '../http/schemas';
import { VOICE_ANALYTICS_DEFAULT_HOURS, VOICE_ANALYTICS_MAX_HOURS } from '../../core/telephony/voice-analytics';

export const ZVoiceAnalyticsQuery = z.object({
  hours: queryInt(1, VOICE_ANALYTICS_MAX_HOURS, VOICE_ANALYTICS_DEFAULT_HOURS).describe(
    `The window: the last \`hours\` hours, ending now (default ${VOICE_ANALYTICS_DEFAULT_HOURS}, 1 to ${VOICE_ANALYTICS_MAX_HOURS})`,
  ),
});

const unmeasured = (what: string) => z.null().describe(`${what}: not measured on the TwiML path (always null; docs/voice-analytics.md)`);
const avg = (what: string) => z.number().nullable().describe(`${what}; null when no call of the window has it`);

export const ZVoiceHourlyBucket = z
  .object({
    hour: z.string().describe('Start of the UTC hour (ISO 8601); the calls that started in it'),
    session_count: z.number().int().describe('Voice sessions (calls with a session) that started in the hour'),
    error_count: z.number().int().describe('Of those, calls with a failed turn or a `failed` call status'),
    avg_call_duration_ms: avg('Mean call duration (Twilio `CallDuration`), ms, of the ended calls'),
    avg_inbound_mos: unmeasured('Mean opinion score of the inbound audio'),
    avg_outbound_mos: unmeasured('Mean opinion score of the outbound audio'),
    avg_inbound_jitter_ms: unmeasured('Inbound jitter'),
    avg_outbound_jitter_ms: unmeasured('Outbound jitter'),
    avg_e2e_latency_ms: avg('Mean over calls of their mean turn latency (utterance received to reply ready), ms'),
    avg_barge_in_rate: avg('Mean over calls of interrupted turns / caller turns (0-1)'),
    avg_dtmf_fallback_rate: avg('Mean over calls of keyed (DTMF) turns / caller turns (0-1)'),
    avg_asr_score: avg('Mean over calls of the mean speech-recognition confidence Twilio reported (0-1)'),
    avg_tts_proxy_mos: unmeasured('Speech synthesis quality estimate'),
    avg_silence_percent: avg('Mean over ended calls of estimated silence / call duration (0-100)'),
    total_turns: z.number().int().describe('Caller turns (the greeting is not one)'),
    total_barge_in_count: z.number().int().describe('Turns where the caller cut the reply short'),
    total_dtmf_turn_count: z.number().int().describe('Turns the caller keyed rather than spoke'),
  })
  .openapi('VoiceHourlyBucket');

export const ZVoiceHourlyResponse = z.object({
  success: z.literal(true),
  data: z.array(ZVoiceHourlyBucket).describe('One bucket per UTC hour with at least one call, oldest first; hours without calls are left out'),
});

export const ZVoiceSummary = z
  .object({
    from: z.string().describe('Start of the window (ISO 8601)'),
    to: z.string().describe('End of the window: now (ISO 8601)'),
    hours: z.number().int().describe('The window asked for'),
    total_calls: z.number().int().describe('Voice sessions that started in the window'),
    total_errors: z.number().int().describe('Of those, calls with a failed turn or a `failed` call status'),
    avg_call_duration_ms: avg('Mean call duration, ms, of the ended calls'),
    overall_avg_inbound_mos: unmeasured('Mean opinion score of the inbound audio'),
    overall_avg_outbound_mos: unmeasured('Mean opinion score of the outbound audio'),
    overall_avg_latency_ms: avg('Mean over calls of their mean turn latency, ms'),
    overall_barge_in_rate: avg('Mean over calls of interrupted turns / caller turns (0-1)'),
    overall_dtmf_fallback_rate: avg('Mean over calls of keyed turns / caller turns (0-1)'),
    overall_asr_score: avg('Mean over calls of the mean speech-recognition confidence (0-1)'),
    total_turns: z.number().int(),
    total_barge_in_count: z.number().int(),
    total_dtmf_turn_count: z.number().int(),
  })
  .openapi('VoiceSummary');

export const ZVoiceSummaryResponse = z.object({ success: z.literal(true), data: ZVoiceSummary });
