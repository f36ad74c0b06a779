// The voice providers a process uses, chosen from its configuration: speech to text, text to
// speech and the voice activity detector. Each is made once per process (the offline pair keeps a
// helper process and a worker thread) and closed when the process stops.
import { type Config } from '../../lib/config';
import { DeepgramSpeechToText } from './deepgram-stt';
import { EnergyVad, type EnergyVadOptions } from './energy-vad';
import { OfflineSpeechToText } from './offline-stt';
import { OfflineTextToSpeech } from './offline-tts';
import { OpenAISpeechToText } from './openai-stt';
import { OpenAITextToSpeech } from './openai-tts';
import { type SpeechToText, type TextToSpeech, type VoiceActivityDetector } from './types';

export { VoiceConfigError } from './errors';
export type * from './types';

export type VoiceProviderConfig = Pick<
  Config,
  | 'NODE_ENV'
  | 'VOICE_STT_PROVIDER'
  | 'VOICE_TTS_PROVIDER'
  | 'VOICE_OPENAI_API_KEY'
  | 'VOICE_OPENAI_BASE_URL'
  | 'OPENAI_API_KEY'
  | 'OPENAI_BASE_URL'
  | 'DEEPGRAM_API_KEY'
  | 'DEEPGRAM_BASE_URL'
  | 'VOICE_STT_MODEL'
  | 'VOICE_TTS_MODEL'
  | 'VOICE_TTS_VOICE'
  | 'VOICE_PROVIDER_TIMEOUT_MS'
>;

export interface VoiceProviderExtras {
  /** Where warnings go (hint phrases the offline recogniser cannot use). */
  onWarning?: (message: string) => void;
  /** The fetch vendor SDKs send with. */
  fetch?: typeof globalThis.fetch;
}

function openaiCredentials(config: VoiceProviderConfig): { apiKey: string; baseURL?: string } {
  const apiKey = config.VOICE_OPENAI_API_KEY ?? config.OPENAI_API_KEY;
  // loadConfig refuses an openai provider without a key; this guards a hand-made config.
  if (!apiKey) throw new Error('OpenAI speech providers need VOICE_OPENAI_API_KEY or OPENAI_API_KEY');
  const baseURL = config.VOICE_OPENAI_BASE_URL ?? config.OPENAI_BASE_URL;
  return { apiKey, ...(baseURL ? { baseURL } : {}) };
}

export function speechToTextFromConfig(config: VoiceProviderConfig, extras: VoiceProviderExtras = {}): SpeechToText {
  switch (config.VOICE_STT_PROVIDER) {
    case 'offline':
      return new OfflineSpeechToText(extras.onWarning ? { onWarning: extras.onWarning } : {});
    case 'openai':
      return new OpenAISpeechToText({
        ...openaiCredentials(config),
        ...(config.VOICE_STT_MODEL ? { model: config.VOICE_STT_MODEL } : {}),
        timeoutMs: config.VOICE_PROVIDER_TIMEOUT_MS,
        ...(extras.fetch ? { fetch: extras.fetch } : {}),
      });
    case 'deepgram':
      if (!config.DEEPGRAM_API_KEY) throw new Error('VOICE_STT_PROVIDER=deepgram needs DEEPGRAM_API_KEY');
      return new DeepgramSpeechToText({
        apiKey: config.DEEPGRAM_API_KEY,
        ...(config.DEEPGRAM_BASE_URL ? { baseURL: config.DEEPGRAM_BASE_URL } : {}),
        ...(config.VOICE_STT_MODEL ? { model: config.VOICE_STT_MODEL } : {}),
        timeoutMs: config.VOICE_PROVIDER_TIMEOUT_MS,
        ...(extras.fetch ? { fetch: extras.fetch } : {}),
      });
  }
}

/** @throws VoiceConfigError when VOICE_TTS_VOICE is no voice of the provider. */
export function textToSpeechFromConfig(config: VoiceProviderConfig, extras: VoiceProviderExtras = {}): TextToSpeech {
  switch (config.VOICE_TTS_PROVIDER) {
    case 'offline':
      return new OfflineTextToSpeech(config.VOICE_TTS_VOICE ? { defaultVoice: config.VOICE_TTS_VOICE } : {});
    case 'openai':
      return new OpenAITextToSpeech({
        ...openaiCredentials(config),
        ...(config.VOICE_TTS_MODEL ? { model: config.VOICE_TTS_MODEL } : {}),
        ...(config.VOICE_TTS_VOICE ? { defaultVoice: config.VOICE_TTS_VOICE } : {}),
        timeoutMs: config.VOICE_PROVIDER_TIMEOUT_MS,
        ...(extras.fetch ? { fetch: extras.fetch } : {}),
      });
  }
}

/** What a process should log at start about its speech providers (the offline pair in production). */
export function voiceProviderWarnings(config: VoiceProviderConfig): string[] {
  const warnings: string[] = [];
  if (config.NODE_ENV === 'production') {
    if (config.VOICE_STT_PROVIDER === 'offline') warnings.push('VOICE_STT_PROVIDER=offline (pocketsphinx) is for development: rough on free speech and English only');
    if (config.VOICE_TTS_PROVIDER === 'offline') warnings.push('VOICE_TTS_PROVIDER=offline (espeak-ng) is for development: a robotic voice');
  }
  if (config.VOICE_STT_PROVIDER === 'offline' && config.VOICE_STT_MODEL) warnings.push('VOICE_STT_MODEL is not read by the offline speech to text');
  if (config.VOICE_TTS_PROVIDER === 'offline' && config.VOICE_TTS_MODEL) warnings.push('VOICE_TTS_MODEL is not read by the offline text to speech');
  return warnings;
}

/**
 * Options of the voice activity detector, in the agent's voiceConfig terms or the detector's own:
 * `speechTimeout` (seconds of silence that end the caller's utterance, or `auto`) sets
 * `silenceMs` unless that is given.
 */
export interface VadOptions extends EnergyVadOptions {
  speechTimeout?: number | 'auto';
}

/** A detector for one caller's audio stream (the energy detector; docs/voice.md for its limits). */
export function createVad(options: VadOptions = {}): VoiceActivityDetector {
  const { speechTimeout, ...rest } = options;
  const silenceMs = rest.silenceMs ?? (typeof speechTimeout === 'number' ? speechTimeout * 1000 : undefined);
  return new EnergyVad({ ...rest, ...(silenceMs !== undefined ? { silenceMs } : {}) });
}
