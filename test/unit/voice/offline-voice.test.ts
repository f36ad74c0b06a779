// The offline voice pair and the energy VAD on real audio: espeak-ng speaks the fixtures here (no
// audio files in the repository), the VAD finds the utterance in them, and pocketsphinx (its helper
// from .tools/voice-venv, which infra/bootstrap.js installs) transcribes them against a grammar.
import { ProviderError } from '../../../providers/llm/errors';
import { ESPEAK_LANGUAGE_VOICES, ESPEAK_VARIANTS, resolveEspeakVoice } from '../../../providers/voice/espeak-voices';
import { createVad, textToSpeechFromConfig, VoiceConfigError, type PcmAudio } from '../../../providers/voice/index';
import { OfflineSpeechToText } from '../../../providers/voice/offline-stt';
import { ESPEAK_SAMPLE_RATE, OfflineTextToSpeech } from '../../../providers/voice/offline-tts';
import { concatPcm, durationMs, rms, silence } from '../../../providers/voice/pcm';
import { frameDb } from '../../../providers/voice/energy-vad';

// Phrases the bundled model's grammar search gets word for word on espeak-ng's en-us voice.
const PHRASES = ['book a meeting for tomorrow morning', 'cancel my order please', 'i want to speak to an agent', 'what is the weather today'];

const tts = new OfflineTextToSpeech();
const warnings: string[] = [];
const stt = new OfflineSpeechToText({ onWarning: (m) => warnings.push(m) });

// Both load at once: espeak-ng in its thread, the recogniser's model in its helper.
beforeAll(() => Promise.all([tts.warmUp(), stt.warmUp()]));

afterAll(async () => {
  await Promise.all([tts.close(), stt.close()]);
});

async function speak(text: string, options: { voice?: string; language?: string } = {}): Promise<{ chunks: PcmAudio[]; audio: PcmAudio }> {
  const chunks: PcmAudio[] = [];
  for await (const chunk of tts.synthesize(text, { language: options.language ?? 'en-US', ...(options.voice ? { voice: options.voice } : {}) })) chunks.push(chunk);
  return { chunks, audio: concatPcm(chunks) };
}

/** The utterance with `before` and `after` ms of silence round it, as a caller's line would carry it. */
const padded = (audio: PcmAudio, before: number, after: number): PcmAudio => concatPcm([silence(before, audio.sampleRate), audio, silence(after, audio.sampleRate)]);

describe('offline text to speech (espeak-ng)', () => {
  it('speaks a phrase as audible 22050 Hz PCM of a plausible length, sentence by sentence', async () => {
    const one = await speak('Book a meeting for tomorrow morning.');
    expect(one.chunks.every((c) => c.sampleRate === ESPEAK_SAMPLE_RATE)).toBe(true);
    // Six words: more than a second of speech and less than five.
    expect(durationMs(one.audio)).toBeGreaterThan(1000);
    expect(durationMs(one.audio)).toBeLessThan(5000);
    expect(rms(one.audio.samples)).toBeGreaterThan(500);

    const two = await speak('Book a meeting for tomorrow morning. Then cancel my order please!');
    expect(durationMs(two.audio)).toBeGreaterThan(durationMs(one.audio) + 1000);
    // The same instance speaks the same sentence the same way each time (its memory is reset per phrase).
    expect(Buffer.from(two.audio.samples.buffer).subarray(0, one.audio.samples.byteLength).equals(Buffer.from(one.audio.samples.buffer))).toBe(true);
  });

  it('maps BCP 47 tags and voice names to espeak-ng voices, and refuses unknown ones when configured', async () => {
    expect(resolveEspeakVoice({ language: 'en-US' })).toBe('en-us');
    expect(resolveEspeakVoice({ language: 'es-MX' })).toBe('es-419');
    expect(resolveEspeakVoice({ language: 'pt-BR' })).toBe('pt-br');
    expect(resolveEspeakVoice({ language: 'zh-Hans-CN' })).toBe('cmn');
    expect(resolveEspeakVoice({ language: 'fr-CA' })).toBe('fr-fr');
    expect(resolveEspeakVoice({ language: 'en-US', voice: 'F3' })).toBe('en-us+f3');
    expect(resolveEspeakVoice({ language: 'en-US', voice: 'en-gb+annie' })).toBe('en-gb+Annie');
    expect(() => resolveEspeakVoice({ language: 'en-US', voice: 'Polly.Joanna' })).toThrow(VoiceConfigError);
    expect(() => resolveEspeakVoice({ language: 'tlh' })).toThrow(/no voice for language "tlh"/);

    expect(() => textToSpeechFromConfig({ ...offlineConfig, VOICE_TTS_VOICE: 'alice' })).toThrow(VoiceConfigError);
    expect(tts.validate({ language: 'de-DE' })).toBe('de');
    // A bad voice fails before any audio is made.
    await expect(speak('hello', { voice: 'nobody' })).rejects.toBeInstanceOf(VoiceConfigError);
    const german = await speak('Guten Morgen', { language: 'de-DE' });
    expect(rms(german.audio.samples)).toBeGreaterThan(500);
  });

  it("knows exactly the build's voices and variants", async () => {
    const { languages, variants } = await tts.listVoices();
    const column = (lines: string[], index: number): string[] =>
      lines
        .filter((l) => /^\s*\d+\s/.test(l))
        .map((l) => l.trim().split(/\s+/)[index]!)
        .filter(Boolean);
    // The Cherokee voice is listed but cannot be selected by name in this build.
    expect(new Set(column(languages, 1).filter((v) => v !== 'chr-US-Qaaa-x-west'))).toEqual(new Set(ESPEAK_LANGUAGE_VOICES));
    expect(column(variants, 4).map((f) => f.replace('!v/', ''))).toEqual([...ESPEAK_VARIANTS]);
  });
});

describe('energy VAD', () => {
  it('finds one utterance in silence, speech and silence, and its end after the configured silence', async () => {
    const { audio } = await speak('Book a meeting for tomorrow morning.');
    const line = padded(audio, 1000, 2000);
    const vad = createVad({ speechTimeout: 0.6 });
    const events: { type: string; atMs: number; pushedMs: number; utterance?: PcmAudio }[] = [];
    const step = Math.round(ESPEAK_SAMPLE_RATE * 0.02);
    for (let at = 0; at < line.samples.length; at += step) {
      for (const e of vad.push({ sampleRate: line.sampleRate, samples: line.samples.subarray(at, at + step) })) {
        events.push({ ...e, pushedMs: ((at + step) * 1000) / line.sampleRate });
      }
    }
    expect(events.map((e) => e.type)).toEqual(['speech_start', 'speech_end']);
    const [start, end] = events as [(typeof events)[0], (typeof events)[0]];
    // Speech starts where the silence ends (one analysis frame of slack).
    expect(start.atMs).toBeGreaterThanOrEqual(1000);
    expect(start.atMs).toBeLessThanOrEqual(1040);
    // It ends where the last audible frame of the speech ends, and is told 600 ms of silence later.
    let lastLoud = 0;
    for (let at = 0; at + step <= audio.samples.length; at += step) if (frameDb(audio.samples, at, at + step) >= -45) lastLoud = at + step;
    const speechEndMs = 1000 + (lastLoud * 1000) / audio.sampleRate;
    expect(Math.abs(end.atMs - speechEndMs)).toBeLessThanOrEqual(40);
    expect(end.pushedMs - end.atMs).toBeGreaterThanOrEqual(600);
    // The utterance holds all of the speech, its onset included.
    expect(durationMs(end.utterance!)).toBeGreaterThanOrEqual(end.atMs - start.atMs);
    expect(end.utterance!.sampleRate).toBe(ESPEAK_SAMPLE_RATE);
  });

  it('ignores a click shorter than the minimum speech length', () => {
    const vad = createVad({ minSpeechMs: 150 });
    const click = new Int16Array(Math.round(16000 * 0.04)).fill(12000);
    const line = concatPcm([silence(500, 16000), { sampleRate: 16000, samples: click }, silence(1500, 16000)]);
    expect(vad.push(line)).toEqual([]);
    expect(() => createVad({ silenceMs: 0 })).toThrow(RangeError);
  });
});

describe('offline speech to text (pocketsphinx)', () => {
  it('recognises a padded utterance against a grammar of the test phrases, and nothing that is not one', async () => {
    for (const phrase of [PHRASES[0]!, PHRASES[1]!]) {
      const { audio } = await speak(phrase);
      const result = await stt.transcribe(padded(audio, 1000, 1000), { language: 'en-US', hints: PHRASES });
      expect(result.text).toBe(phrase);
      expect(result.confidence).toBeGreaterThan(0);
      expect(result.confidence).toBeLessThanOrEqual(1);
    }
    const other = await speak('check my account balance');
    expect(await stt.transcribe(padded(other.audio, 1000, 1000), { language: 'en-US', hints: PHRASES })).toEqual({ text: '', confidence: null });
  });

  it('uses the language model without hints, and warns once about hint phrases outside its dictionary', async () => {
    const { audio } = await speak('yes');
    const free = await stt.transcribe(padded(audio, 500, 500), { language: 'en-US' });
    expect(free.text).toBe('yes');
    await stt.transcribe(padded(audio, 500, 500), { language: 'en-US', hints: ['yes', 'zzqxv blorf'] });
    await stt.transcribe(padded(audio, 500, 500), { language: 'en-US', hints: ['yes', 'zzqxv blorf'] });
    expect(warnings).toEqual([expect.stringContaining('"zzqxv blorf"')]);
    await expect(stt.transcribe(audio, { language: 'fr-FR' })).rejects.toBeInstanceOf(VoiceConfigError);
  });

  it('fails the utterance in flight clearly when the helper dies, and starts a new helper for the next', async () => {
    const { audio } = await speak(PHRASES[1]!);
    const line = padded(audio, 1000, 1000);
    await stt.warmUp();
    const pid = stt.helperPid!;
    // Stopped first, so the utterance is certainly in flight when the helper is killed.
    process.kill(pid, 'SIGSTOP');
    const inFlight = stt.transcribe(line, { language: 'en-US', hints: PHRASES });
    await new Promise((resolve) => setImmediate(resolve));
    process.kill(pid, 'SIGKILL');
    const error = await inFlight.then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).message).toMatch(/the speech recogniser stopped \(SIGKILL\)/);
    expect((error as ProviderError).retryable).toBe(true);

    expect(await stt.transcribe(line, { language: 'en-US', hints: PHRASES })).toMatchObject({ text: PHRASES[1] });
    expect(stt.helperPid).not.toBe(pid);
  });
});

const offlineConfig = {
  NODE_ENV: 'test' as const,
  VOICE_STT_PROVIDER: 'offline' as const,
  VOICE_TTS_PROVIDER: 'offline' as const,
  VOICE_OPENAI_API_KEY: undefined,
  VOICE_OPENAI_BASE_URL: undefined,
  OPENAI_API_KEY: undefined,
  OPENAI_BASE_URL: undefined,
  DEEPGRAM_API_KEY: undefined,
  DEEPGRAM_BASE_URL: undefined,
  VOICE_STT_MODEL: undefined,
  VOICE_TTS_MODEL: undefined,
  VOICE_TTS_VOICE: undefined,
  VOICE_PROVIDER_TIMEOUT_MS: 15000,
};
