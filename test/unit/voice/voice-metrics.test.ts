// The voice agent's Prometheus metrics (activities/voice/attend.ts → lib/metrics/registry.ts):
// each answered turn's stages, barge-ins and failed turns; the greeting is not a caller's turn.
import { observeVoiceEvents } from '../../../activities/voice/attend';
import { switchboardMetrics } from '../../../lib/metrics/registry';

const stageCount = async (stage: string) => {
  const metric = await switchboardMetrics().voiceTurnStage.get();
  return metric.values.find((v) => v.metricName === 'switchboard_voice_turn_stage_seconds_count' && v.labels.stage === stage)?.value ?? 0;
};

it('observes each stage of a turn, its barge-in and failures, and not the greeting', async () => {
  const m = switchboardMetrics();
  const before = { first: await stageCount('first_audio'), stt: await stageCount('speech_to_text'), bargeIns: (await m.voiceBargeIns.get()).values[0]?.value ?? 0 };
  observeVoiceEvents([
    { type: 'voice.turn', turn: 0, data: { latencyMs: 900, turnMs: 40, interrupted: false } },
    { type: 'voice.turn', turn: 1, data: { latencyMs: 610, endpointingMs: 500, sttMs: 30, turnMs: 40, ttsFirstChunkMs: 25, interrupted: true } },
    { type: 'voice.turn', turn: 2, data: { latencyMs: null, sttMs: 28, turnMs: 31, ttsFirstChunkMs: null, interrupted: false } },
    { type: 'voice.error', turn: 3, data: { turn: 3, reason: 'stt_failed' } },
  ]);
  expect(await stageCount('first_audio')).toBe(before.first + 1);
  expect(await stageCount('speech_to_text')).toBe(before.stt + 2);
  expect((await m.voiceBargeIns.get()).values[0]!.value).toBe(before.bargeIns + 1);
  expect((await m.voiceErrors.get()).values.find((v) => v.labels.reason === 'stt_failed')!.value).toBeGreaterThanOrEqual(1);
  const text = await m.registry.metrics();
  expect(text).toContain('switchboard_voice_turn_stage_seconds_bucket{le="0.7",stage="first_audio"}');
  expect(text).toContain('switchboard_voice_rooms_attended 0');
});
