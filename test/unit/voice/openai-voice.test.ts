// OpenAI's speech adapters through the real `openai` SDK against a fake that speaks OpenAI's audio
// wire protocol: the upload and its fields, the streamed PCM, errors, and the config that picks them.
import { ConfigError, loadConfig } from '../../../lib/config';
import { ProviderError } from '../../../providers/llm/errors';
import { speechToTextFromConfig, textToSpeechFromConfig, VoiceConfigError, voiceProviderWarnings, type PcmAudio } from '../../../providers/voice/index';
import { OPENAI_PCM_SAMPLE_RATE } from '../../../providers/voice/openai-tts';
import { concatPcm, parseWav } from '../../../providers/voice/pcm';
import { startFakeOpenAIAudio, tone, type FakeOpenAIAudioServer } from '../../support/fake-openai-audio';

const KEY = 'sk-voice-test';
let fake: FakeOpenAIAudioServer;
const env = (extra: Record<string, string> = {}) =>
  loadConfig({ MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32), VOICE_STT_PROVIDER: 'openai', VOICE_TTS_PROVIDER: 'openai', VOICE_OPENAI_API_KEY: KEY, ...extra });

beforeAll(async () => {
  fake = await startFakeOpenAIAudio({ apiKey: KEY });
});
afterAll(() => fake.close());

const utterance: PcmAudio = { sampleRate: 16000, samples: new Int16Array(16000).map((_, i) => Math.round(5000 * Math.sin(i / 5))) };

describe('OpenAI speech to text', () => {
  it('uploads the utterance as WAV with the language, the hints as a prompt, and maps token logprobs to confidence', async () => {
    const stt = speechToTextFromConfig(env({ VOICE_OPENAI_BASE_URL: fake.baseURL }));
    fake.transcript = () => ({ text: ' Book a meeting. ', logprobs: [{ token: 'Book', logprob: -0.1 }, { token: ' a', logprob: -0.3 }] });
    const result = await stt.transcribe(utterance, { language: 'en-US', hints: ['book a meeting', 'cancel my order'] });
    expect(result.text).toBe('Book a meeting.');
    expect(result.confidence).toBeCloseTo(Math.exp(-0.2), 6);

    const request = fake.requests.at(-1)!;
    expect(request.path).toBe('/v1/audio/transcriptions');
    expect(request.fields).toMatchObject({ model: 'gpt-4o-mini-transcribe', language: 'en', response_format: 'json', 'include[]': 'logprobs' });
    expect(request.fields.prompt).toContain('book a meeting; cancel my order');
    const sent = parseWav(request.file!.bytes);
    expect(sent.sampleRate).toBe(16000);
    expect(Buffer.from(sent.samples.buffer).equals(Buffer.from(utterance.samples.buffer))).toBe(true);
  });

  it('gives null confidence for a model without logprobs, and vendor failures as classified ProviderErrors', async () => {
    const stt = speechToTextFromConfig(env({ VOICE_OPENAI_BASE_URL: fake.baseURL, VOICE_STT_MODEL: 'whisper-1' }));
    fake.transcript = () => ({ text: 'hello', logprobs: [{ token: 'hello', logprob: -0.1 }] });
    expect(await stt.transcribe(utterance, { language: 'de-DE' })).toEqual({ text: 'hello', confidence: null });
    expect(fake.requests.at(-1)!.fields).not.toHaveProperty('include[]');
    expect(fake.requests.at(-1)!.fields).not.toHaveProperty('prompt');

    fake.failNext(429);
    const limited = await stt.transcribe(utterance, { language: 'en' }).catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(ProviderError);
    expect(limited).toMatchObject({ kind: 'rate_limited', provider: 'openai', retryable: true });

    const wrongKey = speechToTextFromConfig(env({ VOICE_OPENAI_BASE_URL: fake.baseURL, VOICE_OPENAI_API_KEY: 'sk-wrong' }));
    const denied = await wrongKey.transcribe(utterance, { language: 'en' }).catch((err: unknown) => err);
    expect(denied).toMatchObject({ kind: 'auth', retryable: false });
    expect(String((denied as Error).message)).not.toContain('sk-wrong');
  });
});

describe('OpenAI text to speech', () => {
  it('yields 24 kHz PCM with samples intact across odd-sized chunks', async () => {
    const tts = textToSpeechFromConfig(env({ VOICE_OPENAI_BASE_URL: fake.baseURL, VOICE_TTS_VOICE: 'coral' }));
    const expected = tone(600, 330);
    fake.speech = () => expected;
    const chunks: PcmAudio[] = [];
    for await (const chunk of tts.synthesize('Your booking is confirmed.', { language: 'en-US' })) chunks.push(chunk);
    expect(chunks.every((c) => c.sampleRate === OPENAI_PCM_SAMPLE_RATE)).toBe(true);
    expect(Array.from(concatPcm(chunks).samples)).toEqual(Array.from(expected));
    expect(fake.requests.at(-1)!.fields).toEqual({ model: 'gpt-4o-mini-tts', voice: 'coral', input: 'Your booking is confirmed.', response_format: 'pcm' });
  });

  it('stops the response when the consumer stops early, and refuses an unknown voice before any request', async () => {
    const tts = textToSpeechFromConfig(env({ VOICE_OPENAI_BASE_URL: fake.baseURL }));
    fake.speech = () => tone(5000);
    // The fake sends two chunks and then holds the rest: only the client can end this response.
    fake.holdAfterChunks = 2;
    const before = fake.requests.length;
    for await (const chunk of tts.synthesize('A long answer.', { language: 'en-US', voice: 'nova' })) {
      expect(chunk.samples.length).toBeGreaterThan(0);
      break;
    }
    fake.holdAfterChunks = null;
    expect(fake.requests.length).toBe(before + 1);
    const request = fake.requests.at(-1)!;
    expect(request.fields.voice).toBe('nova');
    await request.settled;
    expect(request.aborted).toBe(true);

    expect(() => tts.validate!({ language: 'en-US', voice: 'Polly.Joanna' })).toThrow(VoiceConfigError);
    await expect(
      (async () => {
        for await (const _ of tts.synthesize('Hi', { language: 'en-US', voice: 'Polly.Joanna' })) void _;
      })(),
    ).rejects.toBeInstanceOf(VoiceConfigError);
    expect(fake.requests.length).toBe(before + 1);
    expect(() => textToSpeechFromConfig(env({ VOICE_TTS_VOICE: 'alice' }))).toThrow(VoiceConfigError);
  });
});

describe('voice provider configuration', () => {
  it('defaults to the offline pair, needs a key for OpenAI, and warns about the offline pair in production', () => {
    const base = { MONGODB_URI: 'mongodb://127.0.0.1:27017/sb', JWT_SECRET: 'x'.repeat(32) };
    const config = loadConfig(base);
    expect(config).toMatchObject({ VOICE_STT_PROVIDER: 'offline', VOICE_TTS_PROVIDER: 'offline', VOICE_PROVIDER_TIMEOUT_MS: 15000 });
    expect(speechToTextFromConfig(config).name).toBe('offline');
    expect(voiceProviderWarnings(config)).toEqual([]);

    expect(() => loadConfig({ ...base, VOICE_TTS_PROVIDER: 'openai' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, VOICE_TTS_PROVIDER: 'openai' })).toThrow(/VOICE_TTS_PROVIDER=openai needs VOICE_OPENAI_API_KEY or OPENAI_API_KEY/);
    expect(() => loadConfig({ ...base, VOICE_STT_PROVIDER: 'whisper' })).toThrow(/VOICE_STT_PROVIDER/);
    // The platform's OpenAI key serves speech too.
    expect(speechToTextFromConfig(loadConfig({ ...base, VOICE_STT_PROVIDER: 'openai', OPENAI_API_KEY: KEY })).name).toBe('openai');

    const production = loadConfig({ ...base, NODE_ENV: 'production', ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') });
    expect(voiceProviderWarnings(production)).toEqual([expect.stringContaining('VOICE_STT_PROVIDER=offline'), expect.stringContaining('VOICE_TTS_PROVIDER=offline')]);
  });
});
