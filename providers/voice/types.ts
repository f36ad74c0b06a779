// The seams of real-time voice: speech to text, text to speech and voice activity detection, each
// an interface that a vendor adapter (over its official SDK or wire protocol) or the offline
// development pair implements. Audio is 16-bit signed mono PCM throughout; adapters resample at
// their own edge.

/** A stretch of 16-bit signed mono PCM. */
export interface PcmAudio {
  sampleRate: number;
  samples: Int16Array;
}

export interface TranscribeOptions {
  /** BCP 47 tag, e.g. `en-US` (the agent's voiceConfig language). */
  language: string;
  /** Phrases the recogniser should favour (a grammar for the offline recogniser). */
  hints?: readonly string[];
  signal?: AbortSignal;
}

export interface Transcript {
  text: string;
  /** 0–1 as the recogniser reports it; null when it reports none. */
  confidence: number | null;
}

/** Turns one endpointed utterance into text. */
export interface SpeechToText {
  readonly name: string;
  transcribe(audio: PcmAudio, options: TranscribeOptions): Promise<Transcript>;
  /** Throws (VoiceConfigError) for a language the recogniser cannot take: call it when the agent's voiceConfig is read. */
  validate?(options: Pick<TranscribeOptions, 'language'>): void;
  /** Loads what the first utterance would otherwise wait for (a model, a helper process). */
  warmUp?(): Promise<void>;
  close?(): Promise<void>;
}

export interface SynthesizeOptions {
  /** Vendor voice id or name (the agent's voiceConfig voice); the adapter's default when absent. */
  voice?: string;
  language: string;
  signal?: AbortSignal;
}

/** Speaks text; yields audio as it is produced so the first chunk can play before the last is made. */
export interface TextToSpeech {
  readonly name: string;
  synthesize(text: string, options: SynthesizeOptions): AsyncIterable<PcmAudio>;
  /** The rate every chunk comes at, when it is fixed (each chunk states its own rate regardless). */
  readonly sampleRate?: number;
  /**
   * The provider's voice for these options; throws (VoiceConfigError) for a voice or language it
   * does not have, never a silent default: call it when the agent's voiceConfig is read.
   */
  validate?(options: Omit<SynthesizeOptions, 'signal'>): string;
  /** Loads what the first phrase would otherwise wait for. */
  warmUp?(): Promise<void>;
  close?(): Promise<void>;
}

export type VadEvent = { type: 'speech_start'; atMs: number } | { type: 'speech_end'; atMs: number; utterance: PcmAudio };

/** Finds where speech starts and ends in a stream of frames; one instance per caller. */
export interface VoiceActivityDetector {
  push(frame: PcmAudio): VadEvent[];
  reset(): void;
}
