// The TwiML a phone call is answered with, built with the twilio SDK's VoiceResponse: the agent's
// reply said (<Say voice language>) and the caller's next utterance gathered (<Gather
// input="dtmf speech">, shaped by the agent's voiceConfig), a pause and <Redirect> while a turn is still
// running, a transfer (<Dial>), the hang-ups, and a realtime call's Media Stream (<Connect><Stream>)
// followed by the <Redirect> Twilio takes when the stream ends. A reply with a voice form is said as that
// (voice-ssml.ts). The words the platform says itself are here too.
import VoiceResponse from 'twilio/lib/twiml/VoiceResponse';
import { type VoiceConfig, type VoiceSegment } from '../../workflows/definitions';
import { sayVoiceSegment, type SsmlRejection } from './voice-ssml';

/** What the platform says itself on a call (English; an agent's own words come from its ABL). */
export const VOICE_TEXTS = {
  /** After the first stretch of silence, before listening again. */
  reprompt: 'Sorry, I did not hear anything. Please go ahead.',
  /** After the second: the call ends. */
  noInputGoodbye: 'I still did not hear anything. Goodbye.',
  /** Before <Dial> when the escalating reply said nothing itself. */
  transfer: 'Please hold while I transfer your call.',
  /** A turn that took more than VOICE_REPLY_MAX_POLLS waits. */
  tooSlow: 'Sorry, that is taking too long. Please try again.',
  /** The session could not start or a turn failed. */
  failure: 'Sorry, something went wrong. Please call again later.',
  /** A realtime call whose stream to the voice agent kept dropping (VOICE_STREAM_MAX_RECONNECTS). */
  streamLost: 'Sorry, we lost the connection to the assistant. Please call again later.',
  /** A call to a disabled connection, or one whose session has ended. */
  unavailable: 'Sorry, this number cannot take your call right now. Goodbye.',
} as const;

/** Defaults for a voiceConfig key the agent does not set. */
export const VOICE_DEFAULTS = { bargeIn: true, speechTimeout: 'auto' as number | 'auto', silenceTimeout: 5 };

export type { VoiceConfig };

/**
 * A new answer; with `recording` (a recording-status callback URL) it first starts recording the
 * call, both parties on their own channel (an inbound call of a connection with recording on).
 */
function newResponse(recording?: string): VoiceResponse {
  const response = new VoiceResponse();
  if (recording) {
    response.start().recording({ channels: 'dual', recordingStatusCallback: recording, recordingStatusCallbackMethod: 'POST', recordingStatusCallbackEvent: ['completed'] });
  }
  return response;
}

function sayAttributes(config: VoiceConfig): VoiceResponse.SayAttributes {
  return {
    ...(config.voice ? { voice: config.voice as NonNullable<VoiceResponse.SayAttributes['voice']> } : {}),
    ...(config.language ? { language: config.language as NonNullable<VoiceResponse.SayAttributes['language']> } : {}),
  };
}

/**
 * What a call says: a text, or a turn's replies with their voice forms (ABL VOICE ssml /
 * plain_text, voice-ssml.ts), each its own <Say>. `onFallback` hears why an SSML was not said.
 */
export type Speech = string | { segments: VoiceSegment[]; onFallback(reason: SsmlRejection): void };

function say(node: { say(attributes: VoiceResponse.SayAttributes, message: string): VoiceResponse.Say }, config: VoiceConfig, speech: Speech): void {
  if (typeof speech !== 'string') {
    for (const segment of speech.segments) sayVoiceSegment(node, sayAttributes(config), segment, speech.onFallback);
    return;
  }
  const trimmed = speech.trim();
  if (trimmed) node.say(sayAttributes(config), trimmed);
}

/**
 * `text` said, then the caller's next utterance gathered and posted to `action`. With barge-in
 * (the default) the <Say> sits inside the <Gather>, so speech stops it; without, it comes first.
 * A <Gather> that hears nothing falls through to the <Redirect> to `onSilence`.
 */
export function sayAndGather(config: VoiceConfig, text: Speech, action: string, onSilence: string, recording?: string): string {
  const response = newResponse(recording);
  const bargeIn = config.bargeIn ?? VOICE_DEFAULTS.bargeIn;
  if (!bargeIn) say(response, config, text);
  const gather = response.gather({
    // Speech, or keys for a caller who would rather press them (posted as Digits).
    input: ['dtmf', 'speech'],
    action,
    method: 'POST',
    timeout: config.silenceTimeout ?? VOICE_DEFAULTS.silenceTimeout,
    speechTimeout: String(config.speechTimeout ?? VOICE_DEFAULTS.speechTimeout),
    bargeIn,
    ...(config.language ? { language: config.language as NonNullable<VoiceResponse.GatherAttributes['language']> } : {}),
  });
  if (bargeIn) say(gather, config, text);
  response.redirect({ method: 'POST' }, onSilence);
  return response.toString();
}

/** `text` said, then the call ends. */
export function sayAndHangUp(config: VoiceConfig, text: Speech, recording?: string): string {
  const response = newResponse(recording);
  say(response, config, text);
  response.hangup();
  return response.toString();
}

/** `text` said, then the caller is connected to `number` (the connection's transfer number). */
export function sayAndDial(config: VoiceConfig, text: Speech, number: string, recording?: string): string {
  const response = newResponse(recording);
  say(response, config, text);
  response.dial({}, number);
  return response.toString();
}

/** A second of silence, then Twilio asks `poll` for the reply still being worked on. */
export function holdAndRedirect(poll: string, recording?: string): string {
  const response = newResponse(recording);
  response.pause({ length: 1 });
  response.redirect({ method: 'POST' }, poll);
  return response.toString();
}

/** Ends the call without a word (a machine answered an outbound call set to `disconnect`; a realtime call's stream ended with its room). */
export function hangUp(): string {
  const response = new VoiceResponse();
  response.hangup();
  return response.toString();
}

/** An empty answer (status callbacks). */
export function emptyTwiml(): string {
  return new VoiceResponse().toString();
}

/** What the answer that connects a call's stream does besides, and where Twilio goes when the stream ends. */
export interface StreamAnswer {
  /** The recording-status callback of a recording to start first (an inbound call's first answer). */
  recording?: string;
  /** Seconds of silence before the stream is connected (a reconnect after a failed one). */
  pauseSeconds?: number;
  /** Where Twilio goes when the stream ends: the TwiML after <Connect> (a <Redirect>). */
  onEnd: string;
}

/**
 * The call's audio connected to a bidirectional Twilio Media Stream at `url` (`wss://…`), with
 * `parameters` sent in the stream's `start` message (Twilio takes no query string on a stream's
 * URL). Twilio runs nothing after <Connect><Stream> while the stream lasts; when it ends (the
 * server closed it, or dropped), Twilio goes on with the <Redirect> to `onEnd`, which decides
 * whether the call is over or its stream is connected again.
 */
export function connectStream(url: string, parameters: Record<string, string>, answer: StreamAnswer): string {
  const response = newResponse(answer.recording);
  if (answer.pauseSeconds) response.pause({ length: answer.pauseSeconds });
  const stream = response.connect().stream({ url });
  for (const [name, value] of Object.entries(parameters)) stream.parameter({ name, value });
  response.redirect({ method: 'POST' }, answer.onEnd);
  return response.toString();
}
