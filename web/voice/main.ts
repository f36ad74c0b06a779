// Entry of GET /sdk/voice.js: the real-time voice half of the widget, loaded only when a visitor
// presses the microphone button (LiveKit's browser client is several times the widget's size). It
// joins the voice room the API made, publishes the microphone, plays the agent's audio, and reports
// speaking state and the captions the voice agent sends on the `captions` data topic.
import { createLocalAudioTrack, Room, RoomEvent, Track, type LocalAudioTrack, type Participant, type RemoteTrack } from 'livekit-client';

export type VoiceState = 'connecting' | 'listening' | 'agent-speaking' | 'user-speaking' | 'ended';

export interface Caption {
  role: 'user' | 'agent';
  text: string;
  final: boolean;
  turn: number;
}

export interface VoiceCallOptions {
  /** The LiveKit server's URL and the participant token, as POST /api/v1/voice/sessions answers them. */
  url: string;
  token: string;
  onState(state: VoiceState): void;
  onCaption(caption: Caption): void;
  /** The call ended: by hanging up (null) or a failure (its message). */
  onEnd(reason: string | null): void;
  /**
   * The browser's echo cancellation, noise suppression and gain control on the microphone (default
   * on: they keep the agent's own voice from reading as the caller talking over it). Off for a
   * headset or a recorded input that must reach the recogniser unchanged.
   */
  audioProcessing?: boolean;
}

export interface VoiceCall {
  hangUp(): Promise<void>;
  setMuted(muted: boolean): Promise<void>;
}

declare global {
  interface Window {
    SwitchboardVoice?: { connect(options: VoiceCallOptions): Promise<VoiceCall> };
  }
}

const CAPTIONS_TOPIC = 'captions';
const MAX_CAPTION_CHARS = 4000;

/** A caption from the data channel, or null when the message is not one (it is data, never trusted). */
export function parseCaption(payload: Uint8Array): Caption | null {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, unknown>;
  if ((v.role !== 'user' && v.role !== 'agent') || typeof v.text !== 'string') return null;
  return {
    role: v.role,
    text: v.text.slice(0, MAX_CAPTION_CHARS),
    final: v.final !== false,
    turn: typeof v.turn === 'number' && Number.isFinite(v.turn) ? v.turn : 0,
  };
}

async function connect(options: VoiceCallOptions): Promise<VoiceCall> {
  const room = new Room({ adaptiveStream: false, dynacast: false });
  const players: HTMLMediaElement[] = [];
  let microphone: LocalAudioTrack | null = null;
  let ended = false;

  const finish = (reason: string | null): void => {
    if (ended) return;
    ended = true;
    for (const player of players) player.remove();
    microphone?.stop();
    options.onState('ended');
    options.onEnd(reason);
  };

  room.on(RoomEvent.TrackSubscribed, (track: RemoteTrack) => {
    if (track.kind !== Track.Kind.Audio) return;
    const player = track.attach();
    player.setAttribute('data-switchboard-voice', '');
    player.style.display = 'none';
    document.body.append(player);
    players.push(player);
  });
  room.on(RoomEvent.ActiveSpeakersChanged, (speakers: Participant[]) => {
    if (ended) return;
    if (speakers.some((s) => s.identity === room.localParticipant.identity)) options.onState('user-speaking');
    else if (speakers.length > 0) options.onState('agent-speaking');
    else options.onState('listening');
  });
  room.on(RoomEvent.DataReceived, (payload: Uint8Array, _participant?: Participant, _kind?: unknown, topic?: string) => {
    if (topic !== CAPTIONS_TOPIC) return;
    const caption = parseCaption(payload);
    if (caption) options.onCaption(caption);
  });
  room.on(RoomEvent.Disconnected, () => finish(null));

  options.onState('connecting');
  try {
    await room.connect(options.url, options.token, { autoSubscribe: true });
    const processing = options.audioProcessing !== false;
    microphone = await createLocalAudioTrack({ echoCancellation: processing, noiseSuppression: processing, autoGainControl: processing });
    await room.localParticipant.publishTrack(microphone, { source: Track.Source.Microphone });
    await room.startAudio();
  } catch (err) {
    await room.disconnect();
    finish(err instanceof Error ? err.message : String(err));
    throw err;
  }
  options.onState('listening');

  return {
    async hangUp() {
      await room.disconnect();
      finish(null);
    },
    async setMuted(muted: boolean) {
      if (!microphone) return;
      if (muted) await microphone.mute();
      else await microphone.unmute();
    },
  };
}

window.SwitchboardVoice ??= { connect };
