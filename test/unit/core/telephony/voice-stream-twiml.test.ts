// A realtime call's TwiML (core/telephony/voice-twiml.ts connectStream, core/telephony/voice.ts
// reconnectPauseSeconds): <Connect><Stream> to the phone bridge with its parameters, then the
// <Redirect> Twilio follows when the stream ends; a recording started first only when asked, and a
// pause before a reconnect from the second one on, growing and capped.
import { connectStream, sayAndHangUp, VOICE_TEXTS } from '../../../../core/telephony/voice-twiml';
import { reconnectPauseSeconds } from '../../../../core/telephony/voice';

const XML = '<?xml version="1.0" encoding="UTF-8"?>';
const STREAM = 'wss://switchboard.example.com/media-stream/cc_abc/2f1c7a9e-8d4b-4c1e-9f7a-3b2d1e0c9a8b';
const ON_END = 'https://switchboard.example.com/api/telephony/twilio/cc_abc/stream-ended?sessionId=2f1c7a9e-8d4b-4c1e-9f7a-3b2d1e0c9a8b&reconnects=0';

it('connects the stream with its parameters, then redirects to where the call goes when the stream ends', () => {
  expect(connectStream(STREAM, { sessionId: 's-1' }, { onEnd: ON_END })).toBe(
    `${XML}<Response><Connect><Stream url="${STREAM}"><Parameter name="sessionId" value="s-1"/></Stream></Connect>` +
      `<Redirect method="POST">${ON_END.replace('&', '&amp;')}</Redirect></Response>`,
  );
});

it('starts a recording first when asked, and pauses before the stream when asked', () => {
  const recorded = connectStream(STREAM, {}, { onEnd: ON_END, recording: 'https://switchboard.example.com/rec' });
  expect(recorded).toMatch(/^.*<Response><Start><Recording channels="dual" recordingStatusCallback="https:\/\/switchboard.example.com\/rec"[^>]*\/><\/Start><Connect>/);
  expect(recorded.indexOf('</Connect><Redirect')).toBeGreaterThan(0);
  const paused = connectStream(STREAM, {}, { onEnd: ON_END, pauseSeconds: 2 });
  expect(paused).toContain('<Response><Pause length="2"/><Connect><Stream');
  expect(connectStream(STREAM, {}, { onEnd: ON_END, pauseSeconds: 0 })).not.toContain('<Pause');
});

it('reconnects at once the first time, then after 1, 2, 4 and at most 4 seconds', () => {
  expect([0, 1, 2, 3, 4, 5, 6, 20].map(reconnectPauseSeconds)).toEqual([0, 0, 1, 2, 4, 4, 4, 4]);
});

it('apologises and hangs up when the stream is lost for good', () => {
  expect(sayAndHangUp({}, VOICE_TEXTS.streamLost)).toBe(`${XML}<Response><Say>${VOICE_TEXTS.streamLost}</Say><Hangup/></Response>`);
});
