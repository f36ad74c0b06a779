// The voice agent's one activity, `attendVoiceRoom`: sits in a session's LiveKit room as the
// participant `agent`, hears the caller (VAD → speech to text), sends each utterance to the
// session as one `turn` (the chat route's core turn path) and speaks the reply into its own audio
// track, with barge-in, the greeting, silence reprompts, captions on the data topic `captions` and
// a voice metrics row per turn. The conversation lives in the session's workflow; this activity
// heartbeats its progress so a retry on another voice agent continues without greeting again.
import { ApplicationFailure, CancelledFailure, Context, type Context as ActivityContext } from '@temporalio/activity';
import { type Client } from '@temporalio/client';
import {
  AudioFrame,
  AudioResampler,
  AudioSource,
  AudioStream,
  DisconnectReason,
  LocalAudioTrack,
  Room,
  RoomEvent,
  TrackKind,
  TrackPublishOptions,
  TrackSource,
  type RemoteParticipant,
  type RemoteTrack,
} from '@livekit/rtc-node';
import { AccessToken } from 'livekit-server-sdk';
import { type Config } from '../../lib/config';
import { type Logger } from '../../lib/logger';
import { type Models } from '../../db/models';
import { isDomainError } from '../../lib/errors';
import { switchboardMetrics } from '../../lib/metrics/registry';
import { type CoreContext } from '../../core/context';
import { runSessionTurn } from '../../core/chat/turns';
import { liveKitClientUrl } from '../../core/voice/livekit';
import { endSessionWorkflow } from '../../core/sessions/end';
import { ingestVoiceEvents, type CallRef, type VoiceEventInput } from '../../core/telephony/voice-metrics';
import { VOICE_DEFAULTS, VOICE_TEXTS } from '../../core/telephony/voice-twiml';
import type { TurnResult } from '../../workflows/definitions';
import type { PcmAudio, SpeechToText, TextToSpeech, VoiceActivityDetector } from '../../providers/voice/types';
import type { AttendVoiceRoomInput, AttendVoiceRoomResult, VoiceAgentActivities } from './types';
import { RoomRecorder } from './recorder';

/** Voice metrics rows' stage figures (ms), by the stage label they are observed under. */
const STAGES = [
  ['endpointingMs', 'endpointing'],
  ['sttMs', 'speech_to_text'],
  ['turnMs', 'turn'],
  ['ttsFirstChunkMs', 'text_to_speech'],
  ['latencyMs', 'first_audio'],
] as const;

/** The Prometheus side of the voice metrics rows (lib/metrics/registry.ts): stages of answered turns, barge-ins, errors. */
export function observeVoiceEvents(events: readonly VoiceEventInput[]): void {
  const metrics = switchboardMetrics();
  for (const event of events) {
    if (event.type === 'voice.error') metrics.voiceErrors.inc({ reason: String(event.data.reason ?? 'unknown') });
    if (event.type !== 'voice.turn' || event.turn === 0) continue;
    for (const [field, stage] of STAGES) {
      const ms = event.data[field];
      if (typeof ms === 'number' && Number.isFinite(ms)) metrics.voiceTurnStage.observe({ stage }, ms / 1000);
    }
    if (event.data.interrupted === true) metrics.voiceBargeIns.inc();
  }
}

/** The voice agent's identity in every room; a replacement joining under it takes the place of a dead one. */
export const AGENT_IDENTITY = 'agent';
/** The data topic captions are published on. */
export const CAPTIONS_TOPIC = 'captions';
/** One caption as the room's participants receive it (JSON on CAPTIONS_TOPIC). */
export interface Caption {
  role: 'user' | 'agent';
  text: string;
  final: boolean;
  turn: number;
}

/** How often the activity heartbeats (the room workflow's heartbeat timeout is a few times this). */
export const HEARTBEAT_EVERY_MS = 2_000;
/** The caller's audio is taken at this rate, mono, as the recognisers want it. */
const LISTEN_RATE = 16_000;
/** The agent's track runs at this rate; speech from the TTS is resampled to it. */
const SPEAK_RATE = 48_000;
const FRAME_MS = 10;
/** The agent's audio token lives this long; it is only used to join. */
const TOKEN_TTL_SECONDS = 600;
/** How long the greeting waits for the caller's audio to be heard (a caller who publishes none is greeted after it). */
const GREETING_WAITS_FOR_CALLER_MS = 10_000;
/** Silences in a row that end the conversation: the first is reprompted, the second says goodbye. */
export const NO_INPUT_LIMIT = 2;

/** What heartbeats carry: a retried attempt reads them and continues from there. */
export interface AttendProgress {
  /** Caller turns answered so far. */
  turns: number;
  /** The greeting was sent (never sent again by a replacement). */
  greeted: boolean;
  bargeIns: number;
}

export interface VoiceAgentDeps {
  config: Config;
  models: Models;
  logger: Logger;
  /** A client on the voice agent's Temporal connection: turns go to the sessions through it. */
  temporalClient: Client;
  speechToText: SpeechToText;
  textToSpeech: TextToSpeech;
  /** A fresh detector per room. */
  createVad(options?: { speechTimeout?: number }): VoiceActivityDetector;
  /** Phrases the recogniser favours in every room (the offline recogniser's grammar). */
  sttHints?: readonly string[];
}

export function createVoiceAgentActivities(deps: VoiceAgentDeps): VoiceAgentActivities {
  return {
    attendVoiceRoom: (input) => new RoomAttendance(deps, input, Context.current()).run(),
  };
}

/** The voiceConfig keys the voice agent reads, with the telephony defaults. */
interface Settings {
  voice: string | undefined;
  language: string;
  bargeIn: boolean;
  silenceTimeoutMs: number;
  greeting: string | undefined;
}

function settingsOf(voiceConfig: Record<string, unknown>): Settings {
  const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v : undefined);
  const silence = typeof voiceConfig.silenceTimeout === 'number' && voiceConfig.silenceTimeout > 0 ? voiceConfig.silenceTimeout : VOICE_DEFAULTS.silenceTimeout;
  return {
    voice: str(voiceConfig.voice),
    language: str(voiceConfig.language) ?? 'en-US',
    bargeIn: typeof voiceConfig.bargeIn === 'boolean' ? voiceConfig.bargeIn : VOICE_DEFAULTS.bargeIn,
    silenceTimeoutMs: silence * 1000,
    greeting: str(voiceConfig.greeting),
  };
}

/** An endpointed utterance and when its speech ended (wall clock, endpointing included). */
interface Utterance {
  audio: PcmAudio;
  speechEndedAt: number;
  /** When the VAD said so (speechEndedAt + the endpointing delay). */
  endpointedAt: number;
}

/** What became of one reply as spoken. */
interface Spoken {
  firstFrameAt: number | null;
  ttsFirstChunkMs: number | null;
  interrupted: boolean;
  /** Audio the caller had been sent when it ended or was cut (ms). */
  playedMs: number;
  totalMs: number;
}

type Finish = { reason: AttendVoiceRoomResult['reason'] } | { error: unknown };

class RoomAttendance {
  private readonly settings: Settings;
  private readonly core: CoreContext;
  private readonly ref: CallRef;
  private readonly log: Logger;
  private progress: AttendProgress;
  private room: Room | null = null;
  private source: AudioSource | null = null;
  private vad: VoiceActivityDetector;
  private finished: Finish | null = null;
  private finish!: (f: Finish) => void;
  private readonly done: Promise<Finish>;
  private readonly utterances: Utterance[] = [];
  private wake: (() => void) | null = null;
  /** The reply being prepared or spoken; aborted by barge-in. */
  private reply: AbortController | null = null;
  private replyInterrupted = false;
  private callerIdentity: string | null = null;
  private awayTimer: NodeJS.Timeout | null = null;
  private silenceTimer: NodeJS.Timeout | null = null;
  private silences = 0;
  private callerSpeaking = false;
  private streams: AudioStream[] = [];
  /** Audio time of the caller's stream and the wall clock it was read at, for the VAD's timestamps. */
  private heardMs = 0;
  /** This attendance's recording file, when the room's recording is on. */
  private recorder: RoomRecorder | null = null;

  /**
   * The voiceConfig voice when the text-to-speech provider has it. A voice it does not have (an
   * agent written for the phone, `Polly.Joanna`, on the offline pair) is a warning in the log and
   * the language's own voice is spoken instead (docs/voice.md, "The voice agent").
   */
  private usableVoice(voice: string | undefined): string | undefined {
    if (!voice || !this.deps.textToSpeech.validate) return voice;
    try {
      this.deps.textToSpeech.validate({ voice, language: this.settings.language });
      return voice;
    } catch (err) {
      this.log.warn({ voice, provider: this.deps.textToSpeech.name, reason: err instanceof Error ? err.message : String(err) }, "the agent's voiceConfig voice is not one the text-to-speech provider has; speaking the language's own voice");
      return undefined;
    }
  }

  constructor(
    private readonly deps: VoiceAgentDeps,
    private readonly input: AttendVoiceRoomInput,
    private readonly activity: ActivityContext,
  ) {
    this.settings = settingsOf(input.voiceConfig);
    this.core = { config: deps.config, models: deps.models, logger: deps.logger, temporal: { client: () => Promise.resolve(deps.temporalClient) } };
    this.ref = { tenantId: input.tenantId, projectId: input.projectId, connectionId: null, callSid: input.roomName, sessionId: input.sessionId };
    this.log = deps.logger.child({ sessionId: input.sessionId, room: input.roomName, attempt: activity.info.attempt });
    this.settings.voice = this.usableVoice(this.settings.voice);
    const details = activity.info.heartbeatDetails as Partial<AttendProgress> | undefined;
    this.progress = { turns: details?.turns ?? 0, greeted: details?.greeted ?? false, bargeIns: details?.bargeIns ?? 0 };
    this.vad = deps.createVad(typeof input.voiceConfig.speechTimeout === 'number' ? { speechTimeout: input.voiceConfig.speechTimeout } : {});
    this.done = new Promise((resolve) => {
      this.finish = (f) => {
        if (this.finished) return;
        this.finished = f;
        this.reply?.abort();
        this.wake?.();
        resolve(f);
      };
    });
  }

  async run(): Promise<AttendVoiceRoomResult> {
    const rooms = switchboardMetrics().voiceRoomsAttended;
    rooms.inc();
    try {
      return await this.attend();
    } finally {
      rooms.dec();
    }
  }

  private async attend(): Promise<AttendVoiceRoomResult> {
    const beat = () => this.activity.heartbeat(this.progress);
    beat();
    const heartbeats = setInterval(beat, HEARTBEAT_EVERY_MS);
    const onCancel = () => {
      // The room workflow cancelling (the session ended) is an ending; anything else (this worker
      // shutting down, a lost heartbeat) fails the attempt so another voice agent takes over.
      // The server's cancel carries the reason CANCELLED (its details are not always filled in);
      // NOT_FOUND: the room's workflow closed without waiting, so nobody is left to take over.
      const reason: unknown = this.activity.cancellationSignal.reason;
      const requested = this.activity.cancellationDetails?.cancelRequested || (reason instanceof CancelledFailure && (reason.message === 'CANCELLED' || reason.message === 'NOT_FOUND'));
      if (requested) return this.finish({ reason: 'cancelled' });
      this.log.warn({ reason: reason instanceof Error ? reason.message : String(reason) }, 'leaving the voice room for another voice agent to take over');
      // A failure (not a cancellation) is what the server retries on another voice agent.
      const why = reason instanceof Error ? reason.message : String(reason);
      this.finish({ error: ApplicationFailure.retryable(`The voice agent left the room (${why}); another takes it over`, 'VOICE_AGENT_STOPPED') });
    };
    if (this.activity.cancellationSignal.aborted) onCancel();
    else this.activity.cancellationSignal.addEventListener('abort', onCancel, { once: true });
    try {
      if (!this.finished) await this.join();
      if (!this.finished) await this.converse();
      const f = await this.done;
      if ('error' in f) throw f.error;
      this.log.info({ reason: f.reason, turns: this.progress.turns }, 'left the voice room');
      return { reason: f.reason, turns: this.progress.turns };
    } finally {
      clearInterval(heartbeats);
      this.activity.cancellationSignal.removeEventListener('abort', onCancel);
      this.clearTimers();
      await this.leave();
    }
  }

  // ── the room ──────────────────────────────────────────────────────────────────────────────

  private async join(): Promise<void> {
    const { config } = this.deps;
    if (!config.LIVEKIT_URL || !config.LIVEKIT_API_KEY || !config.LIVEKIT_API_SECRET) {
      throw new Error('LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET must be set for the voice agent');
    }
    const token = new AccessToken(config.LIVEKIT_API_KEY, config.LIVEKIT_API_SECRET, { identity: AGENT_IDENTITY, name: 'Agent', ttl: TOKEN_TTL_SECONDS });
    token.addGrant({ roomJoin: true, room: this.input.roomName, canPublish: true, canSubscribe: true, canPublishData: true });
    const room = new Room();
    this.room = room;
    room
      .on(RoomEvent.TrackSubscribed, (track, _publication, participant) => this.onTrack(track, participant))
      .on(RoomEvent.ParticipantConnected, (participant) => this.onParticipantJoined(participant))
      .on(RoomEvent.ParticipantDisconnected, (participant) => this.onParticipantLeft(participant))
      .on(RoomEvent.Disconnected, (reason) => {
        // The room was closed under us (its session ended); any other loss is this attempt's failure.
        if (reason === DisconnectReason.ROOM_DELETED || reason === DisconnectReason.ROOM_CLOSED) this.finish({ reason: 'session_ended' });
        else this.finish({ error: new Error(`disconnected from the voice room (${DisconnectReason[reason] ?? reason})`) });
      });
    await room.connect(liveKitClientUrl(config.LIVEKIT_URL), await token.toJwt(), { autoSubscribe: true, dynacast: false });
    this.source = new AudioSource(SPEAK_RATE, 1);
    const track = LocalAudioTrack.createAudioTrack('agent-voice', this.source);
    await room.localParticipant!.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
    if (this.input.recording) {
      const { tenantId, projectId, sessionId, roomName } = this.input;
      this.recorder = await RoomRecorder.start({ models: this.deps.models, logger: this.log, retentionDays: this.deps.config.RECORDING_RETENTION_DAYS }, { tenantId, projectId, sessionId, roomName });
    }
    const callers = [...room.remoteParticipants.values()];
    for (const participant of callers) this.onParticipantJoined(participant);
    if (callers.length === 0) this.callerAway('empty_timeout');
    if (this.progress.turns === 0 && !this.progress.greeted) {
      await this.recordEvents([{ type: 'voice.call_started', turn: 0, data: { source: 'room', room: this.input.roomName, recording: this.input.recording } }]);
    }
    this.log.info({ callers: callers.length }, 'joined the voice room');
  }

  private onParticipantJoined(participant: RemoteParticipant): void {
    if (participant.identity === AGENT_IDENTITY) return;
    this.callerIdentity = participant.identity;
    if (this.awayTimer) clearTimeout(this.awayTimer);
    this.awayTimer = null;
    for (const publication of participant.trackPublications.values()) {
      if (publication.track && publication.kind === TrackKind.KIND_AUDIO) this.onTrack(publication.track, participant);
    }
  }

  private onParticipantLeft(participant: RemoteParticipant): void {
    if (participant.identity !== this.callerIdentity) return;
    this.callerIdentity = null;
    this.callerAway('caller_left');
  }

  /** The caller is not in the room: past the empty-room timeout, the agent leaves. */
  private callerAway(reason: 'caller_left' | 'empty_timeout'): void {
    if (this.awayTimer) clearTimeout(this.awayTimer);
    this.awayTimer = setTimeout(() => this.finish({ reason }), this.deps.config.VOICE_EMPTY_ROOM_TIMEOUT_SECONDS * 1000);
  }

  private readonly listening = new Set<string>();
  private callerTrackHeard: (() => void) | null = null;

  private onTrack(track: RemoteTrack, participant: RemoteParticipant): void {
    if (participant.identity === AGENT_IDENTITY || track.kind !== TrackKind.KIND_AUDIO || !track.sid || this.listening.has(track.sid)) return;
    this.listening.add(track.sid);
    this.log.info({ caller: participant.identity }, 'listening to the caller');
    this.callerTrackHeard?.();
    const stream = new AudioStream(track, { sampleRate: LISTEN_RATE, numChannels: 1 });
    this.streams.push(stream);
    void this.listen(stream).finally(() => this.listening.delete(track.sid!));
  }

  private async listen(stream: AudioStream): Promise<void> {
    const reader = stream.getReader();
    try {
      while (!this.finished) {
        const { value: frame, done } = await reader.read();
        if (done) return;
        this.heardMs += (frame.samplesPerChannel / frame.sampleRate) * 1000;
        this.recorder?.caller(frame.data, frame.sampleRate);
        for (const event of this.vad.push({ sampleRate: frame.sampleRate, samples: frame.data })) {
          if (event.type === 'speech_start') this.speechStarted();
          else this.speechEnded(event.utterance, this.heardMs - event.atMs);
        }
      }
    } catch (err) {
      if (!this.finished) this.log.warn({ err }, 'the caller audio stream failed');
    } finally {
      reader.releaseLock();
    }
  }

  private speechStarted(): void {
    this.callerSpeaking = true;
    this.silences = 0;
    this.disarmSilence();
    // Barge-in: the reply being prepared or spoken stops, and the rest of it is not said.
    if (this.reply && this.settings.bargeIn && !this.reply.signal.aborted) {
      this.replyInterrupted = true;
      this.reply.abort();
      this.source?.clearQueue();
      this.recorder?.agentCleared();
      this.progress.bargeIns++;
    }
  }

  private speechEnded(audio: PcmAudio, endpointingMs: number): void {
    this.callerSpeaking = false;
    const now = Date.now();
    this.utterances.push({ audio, speechEndedAt: now - Math.max(0, endpointingMs), endpointedAt: now });
    this.wake?.();
  }

  // ── the conversation ─────────────────────────────────────────────────────────────────────

  private async converse(): Promise<void> {
    if (!this.progress.greeted) {
      // Greeting an empty room says it to nobody: a caller who joins after the agent (a phone call
      // through the bridge, a slow browser) would miss it.
      // A caller in the room who publishes no audio is greeted after GREETING_WAITS_FOR_CALLER_MS;
      // while nobody is in it, the agent waits for one (or the empty-room timeout ends the room).
      while (this.listening.size === 0 && !this.finished) {
        const heard = new Promise<void>((resolve) => (this.callerTrackHeard = resolve));
        await Promise.race([heard, this.done, new Promise((resolve) => setTimeout(resolve, GREETING_WAITS_FOR_CALLER_MS))]);
        this.callerTrackHeard = null;
        if (this.callerIdentity !== null) break;
      }
      if (this.finished) return;
      await this.greet();
    } else this.armSilence();
    while (!this.finished) {
      const utterance = await this.nextUtterance();
      if (!utterance) return;
      await this.takeTurn(utterance);
    }
  }

  private async nextUtterance(): Promise<Utterance | null> {
    while (!this.finished && this.utterances.length === 0) {
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
    return this.finished ? null : this.utterances.shift()!;
  }

  /** The session's start (its greeting), said once per room: a replacement agent never says it again. */
  private async greet(): Promise<void> {
    const started = Date.now();
    let result: TurnResult | null = null;
    try {
      result = await runSessionTurn(this.core, { sessionId: this.input.sessionId, message: '', startOnly: true, updateId: `voice-room-${this.input.sessionId}-start`, channel: 'voice_realtime' });
    } catch (err) {
      // A session started before (by a first turn elsewhere) has had its start: nothing to greet with.
      if (!(isDomainError(err) && err.code === 'CONFLICT')) throw err;
    }
    this.progress.greeted = true;
    this.activity.heartbeat(this.progress);
    const text = [this.settings.greeting, result?.response].filter((t): t is string => Boolean(t && t.trim())).join(' ');
    if (!text) return this.armSilence();
    this.caption({ role: 'agent', text, final: true, turn: 0 });
    const spoken = await this.speak(text);
    await this.recordEvents([{ type: 'voice.turn', turn: 0, data: this.turnData({ spoken, reply: text, heardAt: started, stt: null, turnMs: Date.now() - started }) }]);
    if (result && sessionOver(result)) return this.endedByAgent(0);
    if (!this.finished) this.armSilence();
  }

  private async takeTurn(utterance: Utterance): Promise<void> {
    const turn = this.progress.turns + 1;
    const sttStarted = Date.now();
    let heard;
    try {
      heard = await this.deps.speechToText.transcribe(utterance.audio, { language: this.settings.language, ...(this.deps.sttHints ? { hints: this.deps.sttHints } : {}) });
    } catch (err) {
      this.log.warn({ err, turn }, 'speech to text failed');
      await this.recordEvents([{ type: 'voice.error', turn, data: { turn, reason: 'stt_failed' } }]);
      return this.armSilence();
    }
    const sttMs = Date.now() - sttStarted;
    const text = heard.text.trim();
    // Noise the recogniser found no words in is not a turn.
    if (!text) {
      this.log.info({ turn, audioMs: Math.round((utterance.audio.samples.length / utterance.audio.sampleRate) * 1000), sttMs }, 'the recogniser found no words in an utterance; no turn');
      return this.armSilence();
    }
    this.caption({ role: 'user', text, final: true, turn });
    this.replyInterrupted = false;
    this.reply = new AbortController();
    const turnStarted = Date.now();
    let result: TurnResult;
    try {
      // The update id is this attempt's own: a replacement agent's turn n is a new message, never
      // the answer its predecessor got for a different utterance.
      result = await runSessionTurn(this.core, { sessionId: this.input.sessionId, message: text, updateId: `voice-room-${this.input.sessionId}-${this.activity.info.attempt}-${turn}`, channel: 'voice_realtime' });
    } catch (err) {
      this.reply = null;
      if (isDomainError(err) && err.code === 'CONFLICT') return this.finish({ reason: 'session_ended' });
      this.log.error({ err, turn }, 'a voice turn failed');
      await this.recordEvents([{ type: 'voice.error', turn, data: { turn, reason: 'turn_failed' } }]);
      await this.speak(VOICE_TEXTS.failure, new AbortController());
      return this.armSilence();
    }
    const turnMs = Date.now() - turnStarted;
    this.progress.turns = turn;
    this.activity.heartbeat(this.progress);
    const reply = result.response;
    let spoken: Spoken = { firstFrameAt: null, ttsFirstChunkMs: null, interrupted: this.replyInterrupted, playedMs: 0, totalMs: 0 };
    if (reply.trim() && !this.replyInterrupted) {
      this.caption({ role: 'agent', text: reply, final: true, turn });
      spoken = await this.speak(reply, this.reply);
    }
    this.reply = null;
    const interrupted = spoken.interrupted || this.replyInterrupted;
    const stats = await this.linkStats();
    await this.recordEvents([
      {
        type: 'voice.turn',
        turn,
        data: {
          ...this.turnData({ spoken: { ...spoken, interrupted }, reply, heardAt: utterance.speechEndedAt, stt: { text, confidence: heard.confidence, ms: sttMs }, turnMs }),
          endpointingMs: utterance.endpointedAt - utterance.speechEndedAt,
          ...stats,
        },
      },
    ]);
    if (sessionOver(result)) return this.endedByAgent(turn);
    if (!this.finished && !interrupted) this.armSilence();
  }

  private async endedByAgent(turn: number): Promise<void> {
    await this.recordEvents([{ type: 'voice.agent_ended', turn: 0, data: { turn } }]);
    this.finish({ reason: 'session_ended' });
  }

  /** The `voice.turn` row's data: measured from the audio, not estimated from text. */
  private turnData(t: { spoken: Spoken; reply: string; heardAt: number; stt: { text: string; confidence: number | null; ms: number } | null; turnMs: number }): Record<string, unknown> {
    const { spoken } = t;
    const heardChars = spoken.totalMs > 0 ? Math.round((t.reply.length * spoken.playedMs) / spoken.totalMs) : 0;
    return {
      source: 'room',
      // End of the caller's speech (endpointing included) to the first audio frame of the reply.
      latencyMs: spoken.firstFrameAt !== null ? Math.max(0, spoken.firstFrameAt - t.heardAt) : null,
      sttMs: t.stt?.ms ?? null,
      turnMs: t.turnMs,
      ttsFirstChunkMs: spoken.ttsFirstChunkMs,
      input: t.stt ? 'speech' : null,
      callerChars: t.stt?.text.length ?? 0,
      confidence: t.stt?.confidence ?? null,
      agentChars: t.reply.length,
      agentSpeechMs: Math.round(spoken.playedMs),
      interrupted: spoken.interrupted,
      // What the caller did not hear of the reply (barge-in).
      ...(spoken.interrupted ? { interruptedText: t.reply.slice(heardChars) } : {}),
      bargeIns: this.progress.bargeIns,
    };
  }

  // ── speaking ─────────────────────────────────────────────────────────────────────────────

  /** Speaks `text` into the agent's track until it is said or `abort` fires (barge-in). */
  private async speak(text: string, abort: AbortController = new AbortController()): Promise<Spoken> {
    const source = this.source!;
    this.reply = abort;
    const started = Date.now();
    let firstFrameAt: number | null = null;
    let ttsFirstChunkMs: number | null = null;
    let sentSamples = 0;
    let resampler: AudioResampler | null = null;
    const frameSamples = (SPEAK_RATE * FRAME_MS) / 1000;
    let pending = new Int16Array(0);
    const send = async (samples: Int16Array) => {
      for (let i = 0; i + frameSamples <= samples.length && !abort.signal.aborted; i += frameSamples) {
        const frame = samples.slice(i, i + frameSamples);
        await source.captureFrame(new AudioFrame(frame, SPEAK_RATE, 1, frameSamples));
        this.recorder?.agent(frame, SPEAK_RATE);
        firstFrameAt ??= Date.now();
        sentSamples += frameSamples;
      }
    };
    try {
      for await (const chunk of this.deps.textToSpeech.synthesize(text, { language: this.settings.language, ...(this.settings.voice ? { voice: this.settings.voice } : {}), signal: abort.signal })) {
        ttsFirstChunkMs ??= Date.now() - started;
        if (abort.signal.aborted) break;
        let out: Int16Array = chunk.samples;
        if (chunk.sampleRate !== SPEAK_RATE) {
          resampler ??= new AudioResampler(chunk.sampleRate, SPEAK_RATE, 1);
          out = concat(resampler.push(new AudioFrame(chunk.samples, chunk.sampleRate, 1, chunk.samples.length)).map((f) => f.data));
        }
        const all = concat([pending, out]);
        const whole = all.length - (all.length % frameSamples);
        await send(all.subarray(0, whole));
        pending = all.slice(whole);
      }
      if (!abort.signal.aborted) {
        const tail = concat([pending, ...(resampler ? resampler.flush().map((f) => f.data) : [])]);
        const padded = new Int16Array(Math.ceil(tail.length / frameSamples) * frameSamples);
        padded.set(tail);
        await send(padded);
        await Promise.race([source.waitForPlayout(), new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve(), { once: true }))]);
      }
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    } finally {
      resampler?.close();
    }
    const interrupted = abort.signal.aborted && !this.finished;
    if (abort.signal.aborted) {
      source.clearQueue();
      this.recorder?.agentCleared();
    }
    const queuedMs = abort.signal.aborted ? 0 : source.queuedDuration;
    const totalMs = (sentSamples / SPEAK_RATE) * 1000;
    const playedMs = interrupted && firstFrameAt !== null ? Math.min(totalMs, Date.now() - firstFrameAt) : totalMs - queuedMs;
    if (this.reply === abort) this.reply = null;
    return { firstFrameAt, ttsFirstChunkMs, interrupted, playedMs, totalMs: interrupted ? Math.max(totalMs, estimateTotalMs(text, totalMs, playedMs)) : totalMs };
  }

  private caption(caption: Caption): void {
    const participant = this.room?.localParticipant;
    if (!participant) return;
    participant.publishData(new TextEncoder().encode(JSON.stringify(caption)), { reliable: true, topic: CAPTIONS_TOPIC }).catch((err: unknown) => this.log.warn({ err }, 'could not publish a caption'));
  }

  // ── silence ──────────────────────────────────────────────────────────────────────────────

  private armSilence(): void {
    this.disarmSilence();
    if (this.finished) return;
    this.silenceTimer = setTimeout(() => void this.silent(), this.settings.silenceTimeoutMs);
  }

  private disarmSilence(): void {
    if (this.silenceTimer) clearTimeout(this.silenceTimer);
    this.silenceTimer = null;
  }

  /** The caller said nothing for the silence timeout: reprompted once, then goodbye and the session ends. */
  private async silent(): Promise<void> {
    this.silenceTimer = null;
    if (this.finished || this.callerSpeaking || this.utterances.length > 0 || this.reply || !this.callerIdentity) return this.armSilence();
    this.silences++;
    const final = this.silences >= NO_INPUT_LIMIT;
    const turn = this.progress.turns;
    await this.recordEvents([{ type: 'voice.no_input', turn: turn * 10 + this.silences, data: { turn, timeoutMs: this.settings.silenceTimeoutMs, final } }]);
    const text = final ? VOICE_TEXTS.noInputGoodbye : VOICE_TEXTS.reprompt;
    this.caption({ role: 'agent', text, final: true, turn });
    await this.speak(text);
    if (!final) return this.armSilence();
    try {
      await endSessionWorkflow(this.core, { tenantId: this.input.tenantId, sessionId: this.input.sessionId }, 'no_input');
    } catch (err) {
      this.log.warn({ err }, 'could not end the session after silence');
    }
    this.finish({ reason: 'session_ended' });
  }

  // ── metrics and leaving ──────────────────────────────────────────────────────────────────

  private async recordEvents(events: VoiceEventInput[]): Promise<void> {
    observeVoiceEvents(events);
    // A replacement agent's rows of the same turn are its own attempt's.
    const attempt = this.activity.info.attempt;
    await ingestVoiceEvents(this.core, this.ref, attempt > 1 ? events.map((e) => ({ ...e, data: { ...e.data, attempt } })) : events);
  }

  /** Jitter, loss and round trip of the caller's audio as WebRTC reports them, and the MOS they give (E-model). */
  private async linkStats(): Promise<Record<string, number>> {
    try {
      const stats = await this.room!.getRtcStats();
      let jitterMs: number | null = null;
      let lost = 0;
      let received = 0;
      let rttMs: number | null = null;
      for (const s of [...stats.subscriberStats, ...stats.publisherStats]) {
        if (s.stats.case === 'inboundRtp' && s.stats.value.stream?.kind === 'audio') {
          jitterMs = Math.max(jitterMs ?? 0, (s.stats.value.received?.jitter ?? 0) * 1000);
          lost += Number(s.stats.value.received?.packetsLost ?? 0);
          received += Number(s.stats.value.received?.packetsReceived ?? 0);
        } else if (s.stats.case === 'candidatePair' && s.stats.value.candidatePair?.nominated && s.stats.value.candidatePair.currentRoundTripTime !== undefined) {
          rttMs = Math.max(rttMs ?? 0, s.stats.value.candidatePair.currentRoundTripTime * 1000);
        }
      }
      if (jitterMs === null) return {};
      const lossPct = received + lost > 0 ? (100 * lost) / (received + lost) : 0;
      return { jitterMs: round1(jitterMs), packetLossPct: round1(lossPct), ...(rttMs !== null ? { rttMs: round1(rttMs) } : {}), mos: estimateMos(rttMs ?? 0, jitterMs, lossPct) };
    } catch (err) {
      this.log.debug({ err }, 'no WebRTC stats for this turn');
      return {};
    }
  }

  private clearTimers(): void {
    this.disarmSilence();
    if (this.awayTimer) clearTimeout(this.awayTimer);
    this.awayTimer = null;
  }

  private async leave(): Promise<void> {
    await this.recorder?.close();
    for (const stream of this.streams) await stream.cancel().catch(() => undefined);
    await this.source?.close().catch(() => undefined);
    await this.room?.disconnect().catch(() => undefined);
    this.room?.removeAllListeners();
  }
}

/** The agent ended the conversation: a completing action or an ended session. */
function sessionOver(result: TurnResult): boolean {
  return result.action.type === 'complete' || result.state.status === 'completed' || result.state.status === 'ended';
}

function concat(parts: Int16Array[]): Int16Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** An interrupted reply was not all synthesised: its length is judged from what was. */
function estimateTotalMs(text: string, sentMs: number, playedMs: number): number {
  return Math.max(sentMs, playedMs, text.length * 60);
}

const round1 = (n: number) => Math.round(n * 10) / 10;

/**
 * MOS (1–4.5) from one-way delay, jitter and loss by the simplified E-model (ITU-T G.107) that
 * WebRTC monitoring commonly uses: WebRTC's stats report no MOS of their own.
 */
export function estimateMos(rttMs: number, jitterMs: number, lossPct: number): number {
  const latency = rttMs / 2 + jitterMs * 2 + 10;
  const r = 93.2 - (latency < 160 ? latency / 40 : (latency - 120) / 10) - lossPct * 2.5;
  const clamped = Math.max(0, Math.min(100, r));
  return round1(1 + 0.035 * clamped + 0.000007 * clamped * (clamped - 60) * (100 - clamped));
}
