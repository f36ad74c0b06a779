// The MOS a voice room's turn row carries is estimated from WebRTC's jitter, loss and round trip
// (WebRTC reports none): a clean link scores near the E-model's ceiling, and each impairment lowers it.
import { estimateMos } from '../../../activities/voice/attend';
import { voiceEventId } from '../../../core/telephony/voice-metrics';

it('scores a clean link near 4.4 and a lossy, jittery, distant one lower', () => {
  const clean = estimateMos(0, 0, 0);
  expect(clean).toBeGreaterThan(4.3);
  expect(clean).toBeLessThanOrEqual(4.5);
  expect(estimateMos(0, 0, 5)).toBeLessThan(clean);
  expect(estimateMos(0, 60, 0)).toBeLessThan(clean);
  expect(estimateMos(400, 0, 0)).toBeLessThan(estimateMos(100, 0, 0));
  expect(estimateMos(2000, 500, 60)).toBeGreaterThanOrEqual(1);
});

it('names a room event after the room where a call event names its connection', () => {
  expect(voiceEventId({ connectionId: null, callSid: 'voice-s1' }, 'voice.turn', 2)).toBe('room:voice-s1:voice.turn:2');
  expect(voiceEventId({ connectionId: 'conn1', callSid: 'CA1' }, 'voice.turn', 2)).toBe('conn1:CA1:voice.turn:2');
});
