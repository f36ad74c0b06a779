// The widget's microphone button: starts a voice call with the entry agent (the room that
// POST /api/v1/voice/sessions makes, joined by /sdk/voice.js, loaded on first use), says whether the
// agent or the visitor is speaking, puts the live captions into the conversation, and falls back to
// text when the call cannot start or drops (no microphone, permission refused, every line busy).
import type { Caption, VoiceCall, VoiceState } from '../voice/main';
import { NetworkFailure, type VoiceRoom } from './client';

/** What the call needs of the widget around it. */
export interface VoiceHost {
  readonly apiBase: string;
  /** A room for this end user (the widget renews its token as for a chat turn). */
  openRoom(idempotencyKey: string): Promise<VoiceRoom>;
  showCaption(caption: Caption): void;
  setStatus(text: string): void;
  note(text: string): void;
  /** Says why the call could not start, as the widget words its other failures. */
  failed(err: unknown): Promise<void>;
  /** Whether the microphone reaches the recogniser unchanged (`data-voice-audio-processing="false"`). */
  readonly audioProcessing: boolean;
}

const MIC =
  '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M12 14a3 3 0 0 0 3-3V5a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.9V21h2v-3.1a7 7 0 0 0 6-6.9h-2z"/></svg>';

const STATUS: Record<VoiceState, string> = {
  connecting: 'Connecting the call…',
  listening: 'On a voice call: listening…',
  'user-speaking': 'On a voice call: listening…',
  'agent-speaking': 'On a voice call: the agent is speaking…',
  ended: '',
};

let loading: Promise<NonNullable<Window['SwitchboardVoice']>> | null = null;

/** Loads /sdk/voice.js from the API that served the widget, once per page. */
function voiceScript(apiBase: string): Promise<NonNullable<Window['SwitchboardVoice']>> {
  if (window.SwitchboardVoice) return Promise.resolve(window.SwitchboardVoice);
  loading ??= new Promise((resolve, reject) => {
    const script = document.createElement('script');
    script.src = `${apiBase}/sdk/voice.js`;
    script.async = true;
    script.onload = () => (window.SwitchboardVoice ? resolve(window.SwitchboardVoice) : reject(new NetworkFailure('the voice script did not load')));
    script.onerror = () => {
      loading = null;
      script.remove();
      reject(new NetworkFailure('the voice script could not be fetched'));
    };
    document.head.append(script);
  });
  return loading;
}

function newKey(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return 'voice-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export class VoiceButton {
  readonly element: HTMLButtonElement;
  private call: VoiceCall | null = null;
  private starting = false;

  constructor(private readonly host: VoiceHost) {
    this.element = document.createElement('button');
    this.element.type = 'button';
    this.element.className = 'mic';
    this.element.innerHTML = MIC;
    this.element.hidden = true;
    this.label(false);
    this.element.addEventListener('click', () => void (this.call ? this.hangUp() : this.start()));
  }

  /** Shown when the widget's config offers voice and the browser can capture audio. */
  offer(enabled: boolean): void {
    this.element.hidden = !(enabled && typeof navigator.mediaDevices?.getUserMedia === 'function' && typeof RTCPeerConnection === 'function');
  }

  get active(): boolean {
    return this.call !== null || this.starting;
  }

  private label(onCall: boolean): void {
    this.element.setAttribute('aria-label', onCall ? 'End the voice call' : 'Start a voice call');
    this.element.setAttribute('aria-pressed', String(onCall));
    this.element.classList.toggle('on-call', onCall);
  }

  private async start(): Promise<void> {
    if (this.starting) return;
    this.starting = true;
    this.label(true);
    this.host.setStatus(STATUS.connecting);
    try {
      const [room, voice] = await Promise.all([this.host.openRoom(newKey()), voiceScript(this.host.apiBase)]);
      this.call = await voice.connect({
        url: room.url,
        token: room.token,
        audioProcessing: this.host.audioProcessing,
        onState: (state) => this.host.setStatus(STATUS[state]),
        onCaption: (caption) => this.host.showCaption(caption),
        onEnd: (reason) => this.ended(reason),
      });
    } catch (err) {
      this.call = null;
      this.label(false);
      this.host.setStatus('');
      await this.host.failed(err);
      this.host.note('Voice is not available right now; you can keep typing.');
    } finally {
      this.starting = false;
    }
  }

  async hangUp(): Promise<void> {
    const call = this.call;
    this.call = null;
    await call?.hangUp();
  }

  private ended(reason: string | null): void {
    // A call that fails while it starts is reported once, by start().
    if (this.starting) return;
    this.call = null;
    this.label(false);
    this.host.setStatus('');
    this.host.note(reason ? `The voice call dropped (${reason}); you can keep typing.` : 'The voice call ended.');
  }
}
