// Deepgram speech to text over its REST wire protocol against a fake that speaks it: the request
// (query, key, WAV body), the best alternative and its confidence, and classified failures.
import { loadConfig } from '../../../lib/config';
import { ProviderError } from '../../../providers/llm/errors';
import { speechToTextFromConfig, type PcmAudio } from '../../../providers/voice/index';
import { parseWav } from '../../../providers/voice/pcm';
import { startFakeDeepgram, type FakeDeepgramServer } from '../../support/fake-deepgram';

const KEY = 'dg-voice-test';
let fake: FakeDeepgramServer;
beforeAll(async () => {
  fake = await startFakeDeepgram({ apiKey: KEY });
});
afterAll(() => fake.close());

const base = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32), VOICE_STT_PROVIDER: 'deepgram' };
const utterance: PcmAudio = { sampleRate: 16000, samples: new Int16Array(8000).map((_, i) => Math.round(4000 * Math.sin(i / 7))) };

it('posts the utterance as WAV with the model, the language and the hints as key terms, and reads the best alternative', async () => {
  const stt = speechToTextFromConfig(loadConfig({ ...base, DEEPGRAM_API_KEY: KEY, DEEPGRAM_BASE_URL: fake.baseURL }));
  fake.result = () => ({ transcript: 'Book a meeting.', confidence: 0.93 });
  expect(await stt.transcribe(utterance, { language: 'en-US', hints: ['book a meeting', 'cancel my order'] })).toEqual({ text: 'Book a meeting.', confidence: 0.93 });
  const request = fake.requests.at(-1)!;
  expect(request.headers['content-type']).toBe('audio/wav');
  expect(request.query.get('model')).toBe('nova-3');
  expect(request.query.get('language')).toBe('en-US');
  expect(request.query.getAll('keyterm')).toEqual(['book a meeting', 'cancel my order']);
  expect(Buffer.from(parseWav(request.body).samples.buffer).equals(Buffer.from(utterance.samples.buffer))).toBe(true);

  fake.result = () => ({ transcript: '', confidence: 0 });
  expect(await stt.transcribe(utterance, { language: 'en-US' })).toEqual({ text: '', confidence: null });
});

it('classifies failures: a refused key, a rate limit with its retry-after, and a config without a key', async () => {
  const wrong = speechToTextFromConfig(loadConfig({ ...base, DEEPGRAM_API_KEY: 'dg-wrong', DEEPGRAM_BASE_URL: fake.baseURL }));
  const denied = await wrong.transcribe(utterance, { language: 'en-US' }).catch((err: unknown) => err);
  expect(denied).toBeInstanceOf(ProviderError);
  expect(denied).toMatchObject({ kind: 'auth', retryable: false, status: 401, code: 'INVALID_AUTH' });
  expect((denied as Error).message).not.toContain('dg-wrong');

  const stt = speechToTextFromConfig(loadConfig({ ...base, DEEPGRAM_API_KEY: KEY, DEEPGRAM_BASE_URL: fake.baseURL }));
  fake.failNext(429, { 'retry-after': '2' });
  expect(await stt.transcribe(utterance, { language: 'en-US' }).catch((err: unknown) => err)).toMatchObject({ kind: 'rate_limited', retryable: true, retryAfterMs: 2000 });

  expect(() => loadConfig(base)).toThrow(/VOICE_STT_PROVIDER=deepgram needs DEEPGRAM_API_KEY/);
});
