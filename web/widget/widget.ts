// The chat widget: a launcher and a chat window in a shadow root. It keeps the session across
// reloads (and shows its transcript again), runs each turn streamed when the API streams (else as
// one request), resumes a dropped stream from its last event and retries a request that got no
// answer with the same Idempotency-Key, so a network drop loses nothing and doubles nothing.
import { ApiFailure, NetworkFailure, StreamDropped, WidgetClient, type ChatReply, type ChatRequest, type SdkConfig, type StreamProgress } from './client';
import { actionButtons, agentLabel, richContent } from './render';
import { WidgetStore, type SavedState } from './store';
import { STYLES } from './styles';
import { VoiceButton } from './voice';
import type { Caption } from '../voice/main';

export interface WidgetOptions {
  apiBase: string;
  publicKey: string;
  projectId: string;
  userAssertion: string | null;
  open: boolean;
  /** The browser's echo cancellation and the like on the microphone during a voice call (default on). */
  voiceAudioProcessing: boolean;
}

interface AgentMessage {
  text: string;
  messageId: string | null;
  body: HTMLElement;
  thumbs: HTMLButtonElement[];
}

/** A stream that was answered, then dropped before its turn was named: start it again. */
class StreamStartLost extends NetworkFailure {}

/** A cross-origin call the API answered without letting the page read it: refused, not lost. */
class RefusedFailure extends Error {}

const START = 'The chat could not start';

/** How long a turn keeps trying through a network drop (the API replays a turn for 15 minutes). */
const RETRY_WINDOW_MS = 15 * 60_000;
/** A token this close to its expiry is renewed before use. */
const TOKEN_MARGIN_MS = 30_000;

const THUMB = '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M2 21h4V9H2v12zm20-11a2 2 0 0 0-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 6.6 7.6C6.2 8 6 8.5 6 9v10a2 2 0 0 0 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z"/></svg>';
const CLIP = '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M16.5 6v11.5a4 4 0 0 1-8 0V5a2.5 2.5 0 0 1 5 0v10.5a1 1 0 0 1-2 0V6H10v9.5a2.5 2.5 0 0 0 5 0V5a4 4 0 0 0-8 0v12.5a5.5 5.5 0 0 0 11 0V6h-1.5z"/></svg>';
const CHAT_ICON = '<svg viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H8l-4 4V6a2 2 0 0 1 2-2z"/></svg>';

function newKey(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return 'wgt-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) e.setAttribute(name, value);
  if (text !== undefined) e.textContent = text;
  return e;
}

export class ChatWidget {
  private readonly client: WidgetClient;
  private readonly store: WidgetStore;
  private saved: SavedState;
  private config: SdkConfig | null = null;
  private configFailure: unknown = null;
  private readonly configLoaded: Promise<void>;
  private started: Promise<boolean> | null = null;
  private busy = false;
  private streamMissing = false;
  private currentAgent: string | null = null;
  private pendingFiles: { attachmentId: string; filename: string }[] = [];
  private readonly agentMessages: AgentMessage[] = [];

  private readonly host: HTMLElement;
  private readonly launcher: HTMLButtonElement;
  private readonly window: HTMLElement;
  private readonly title: HTMLElement;
  private readonly log: HTMLElement;
  private readonly typing: HTMLElement;
  private readonly status: HTMLElement;
  private readonly error: HTMLElement;
  private readonly files: HTMLElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly attachButton: HTMLButtonElement;
  private readonly fileInput: HTMLInputElement;
  private readonly voice: VoiceButton;
  /** The agent's caption bubble of each spoken turn, filled as its captions arrive. */
  private readonly spokenTurns = new Map<number, AgentMessage>();

  constructor(private readonly options: WidgetOptions) {
    this.client = new WidgetClient(options.apiBase, options.projectId, options.publicKey);
    this.store = new WidgetStore(options.apiBase, options.projectId, options.publicKey);
    this.saved = this.store.load();

    this.host = el('div', { 'data-switchboard-widget': '' });
    const root = this.host.attachShadow({ mode: 'open' });
    const style = el('style');
    style.textContent = STYLES;

    this.launcher = el('button', { type: 'button', class: 'launcher', 'aria-label': 'Open chat', 'aria-haspopup': 'dialog', 'aria-controls': 'sb-window', 'aria-expanded': 'false' });
    this.launcher.innerHTML = CHAT_ICON;

    this.window = el('section', { id: 'sb-window', class: 'window', role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': 'sb-title' });
    this.window.hidden = true;
    const header = el('div', { class: 'header' });
    this.title = el('h2', { id: 'sb-title' }, 'Chat');
    const close = el('button', { type: 'button', class: 'close', 'aria-label': 'Close chat' }, '×');
    header.append(this.title, close);

    this.log = el('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Conversation', tabindex: '0' });
    this.typing = el('div', { class: 'typing', role: 'status' });
    this.typing.innerHTML = '<span aria-hidden="true"></span><span aria-hidden="true"></span><span aria-hidden="true"></span><em class="sr">The agent is typing</em>';
    this.typing.hidden = true;
    this.status = el('div', { class: 'status', role: 'status' });
    this.error = el('div', { class: 'error', role: 'alert' });
    this.error.hidden = true;
    this.files = el('div', { class: 'files' });

    const form = el('form', { 'aria-label': 'Send a message' });
    this.input = el('textarea', { 'aria-label': 'Message', rows: '1', placeholder: 'Type a message…', maxlength: '32000' });
    this.attachButton = el('button', { type: 'button', class: 'attach', 'aria-label': 'Attach a file' });
    this.attachButton.innerHTML = CLIP;
    this.attachButton.hidden = true;
    this.fileInput = el('input', { type: 'file', hidden: '', tabindex: '-1', 'aria-hidden': 'true' });
    this.sendButton = el('button', { type: 'submit', class: 'send', 'aria-label': 'Send' }, 'Send');
    this.voice = new VoiceButton({
      apiBase: options.apiBase,
      audioProcessing: options.voiceAudioProcessing,
      openRoom: (key) => this.openVoiceRoom(key),
      showCaption: (caption) => this.showCaption(caption),
      setStatus: (text) => (this.status.textContent = text),
      note: (text) => this.addNote(text),
      failed: (err) => this.showFailure(err, 'The voice call could not start'),
    });
    form.append(this.attachButton, this.fileInput, this.input, this.voice.element, this.sendButton);

    this.window.append(header, this.log, this.status, this.files, this.error, form);
    this.log.after(this.typing);
    root.append(style, this.launcher, this.window);

    this.launcher.addEventListener('click', () => this.open());
    close.addEventListener('click', () => this.close());
    this.window.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.close();
      }
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        void this.submit();
      }
    });
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.submit();
    });
    this.attachButton.addEventListener('click', () => this.fileInput.click());
    this.fileInput.addEventListener('change', () => void this.attach());

    document.body.append(this.host);
    this.configLoaded = this.loadConfig();
    if (options.open) this.open();
  }

  open(): void {
    this.window.hidden = false;
    this.launcher.hidden = true;
    this.launcher.setAttribute('aria-expanded', 'true');
    this.input.focus();
    this.started ??= this.start();
  }

  close(): void {
    this.window.hidden = true;
    this.launcher.hidden = false;
    this.launcher.setAttribute('aria-expanded', 'false');
    this.launcher.focus();
  }

  private async loadConfig(): Promise<void> {
    try {
      this.config = await this.client.config();
    } catch (err) {
      this.configFailure = err;
      return;
    }
    const { title, primaryColor, position, launcherLabel, uploads } = this.config;
    if (title) this.title.textContent = title;
    // Visible text beside the icon; the button's accessible name stays "Open chat".
    if (launcherLabel) {
      this.launcher.classList.add('with-label');
      this.launcher.append(el('span', {}, launcherLabel));
    }
    if (primaryColor && CSS.supports('color', primaryColor)) this.host.style.setProperty('--sb-primary', primaryColor);
    this.host.setAttribute('data-position', position);
    this.attachButton.hidden = !uploads.enabled;
    this.voice.offer(this.config.voice);
    if (uploads.allowedMimeTypes.length > 0) this.fileInput.accept = uploads.allowedMimeTypes.join(',');
  }

  /** Config, a token and, for a session kept from an earlier page, its transcript; false (with the reason shown) when the chat cannot start. */
  private async start(): Promise<boolean> {
    await this.configLoaded;
    try {
      if (this.configFailure) throw this.configFailure;
      await this.token();
      if (this.saved.sessionId) await this.loadHistory(this.saved.sessionId);
      if (this.log.childElementCount === 0) {
        this.currentAgent = this.config?.entryAgent?.name ?? null;
        if (this.config?.greeting) this.addAgentMessage(this.config.greeting, null, null, false);
      }
      return true;
    } catch (err) {
      await this.showFailure(err);
      this.started = null;
      return false;
    }
  }

  /** The SDK token, renewed when it is (nearly) expired; a new end user cannot continue the old session. */
  private async token(renew = false): Promise<string> {
    if (!renew && this.saved.token && this.saved.expiresAt - TOKEN_MARGIN_MS > Date.now()) return this.saved.token;
    const session = await this.client.init(this.options.userAssertion, this.saved.token);
    const sameUser = this.saved.token === null || (session.renewed && this.saved.endUserId === session.endUserId);
    this.saved = { sessionId: sameUser ? this.saved.sessionId : null, token: session.token, expiresAt: session.expiresAt, endUserId: session.endUserId };
    this.store.save(this.saved);
    return session.token;
  }

  private async loadHistory(sessionId: string): Promise<void> {
    let messages;
    try {
      messages = await this.client.transcript(await this.token(), sessionId);
    } catch (err) {
      // The session is gone, or not this end user's: start afresh. Any other failure (an API that
      // does not give the widget transcripts): the session goes on, without its history shown.
      if (err instanceof ApiFailure && err.status === 404 && !err.routeMissing) {
        this.saved.sessionId = null;
        this.store.save(this.saved);
      }
      return;
    }
    for (const m of messages) {
      if (m.role === 'user') this.addUserMessage(m.content);
      else if (m.role === 'assistant') this.addAgentMessage(m.content, m.agent, m.id, true);
    }
  }

  /** A voice room for this end user, through the same start and token renewal as a chat turn. */
  private async openVoiceRoom(key: string) {
    this.hideError();
    this.started ??= this.start();
    if (!(await this.started)) throw new Error('the chat could not start');
    try {
      return await this.client.voiceSession(await this.token(), key);
    } catch (err) {
      if (!(err instanceof ApiFailure && err.status === 401)) throw err;
      return this.client.voiceSession(await this.token(true), key);
    }
  }

  /** A caption of the voice call: the visitor's words once recognised, the agent's as it speaks them. */
  private showCaption(caption: Caption): void {
    if (caption.role === 'user') {
      if (caption.final && caption.text.trim()) this.addUserMessage(caption.text);
      return;
    }
    let message = this.spokenTurns.get(caption.turn);
    if (!message) {
      message = this.addAgentMessage('', this.currentAgent, null, false);
      this.spokenTurns.set(caption.turn, message);
    }
    message.text = caption.text;
    message.body.textContent = caption.text;
    this.log.scrollTop = this.log.scrollHeight;
  }

  private async submit(): Promise<void> {
    const text = this.input.value.trim();
    if (this.busy || (!text && this.pendingFiles.length === 0)) return;
    this.input.value = '';
    const message = text || this.pendingFiles.map((f) => f.filename).join(', ');
    await this.runTurn({ message }, message);
  }

  private async runTurn(request: ChatRequest, shown: string): Promise<void> {
    this.busy = true;
    this.sendButton.disabled = true;
    this.hideError();
    this.addUserMessage(shown);
    this.typing.hidden = false;
    try {
      this.started ??= this.start();
      if (!(await this.started)) return;
      const files = this.pendingFiles.splice(0);
      this.renderFiles();
      const reply = await this.exchange(request, files.map((f) => f.attachmentId));
      this.showReply(reply);
    } catch (err) {
      await this.showFailure(err, 'Your message was not answered');
    } finally {
      this.busy = false;
      this.sendButton.disabled = false;
      this.typing.hidden = true;
      this.status.textContent = '';
      this.streamBubble = null;
    }
  }

  /** One turn, through token renewal, an ended session, a missing stream route and network drops. */
  private async exchange(request: ChatRequest, attachmentIds: string[]): Promise<ChatReply> {
    let key = newKey();
    const deadline = Date.now() + RETRY_WINDOW_MS;
    let renewed = false;
    let restarted = false;
    for (let attempt = 0; ; attempt++) {
      // Streamed when the config says the API streams: a cross-origin page cannot read an older API's
      // 404 for the stream route (it carries no CORS headers), so it is not found out by trying.
      const streaming = !this.streamMissing && this.config?.streaming === true && attachmentIds.length === 0;
      try {
        const token = await this.token();
        const sessionId = this.saved.sessionId;
        const body: ChatRequest = { ...request, ...(sessionId ? { sessionId } : {}) };
        const reply =
          attachmentIds.length > 0 && sessionId
            ? await this.client.chatWithAttachments(token, sessionId, request.message ?? '', attachmentIds, key)
            : streaming
              ? await this.streamTurn(token, body, key)
              : await this.client.chat(token, body, key);
        this.status.textContent = '';
        if (reply.sessionId) this.saved.sessionId = reply.sessionId;
        this.store.save(this.saved);
        return reply;
      } catch (err) {
        // An API that answers a plain request but not the stream's start: an API without the stream
        // route seen from another origin (its 404 cannot be read), or a refusal the plain route repeats.
        if (streaming && err instanceof NetworkFailure && !(err instanceof StreamStartLost) && (await this.client.reachable())) {
          this.streamMissing = true;
          continue;
        }
        if (err instanceof ApiFailure) {
          if (streaming && err.routeMissing) {
            // An API without the streaming route: the same turn as one request.
            this.streamMissing = true;
            continue;
          }
          if (err.status === 401 && !renewed) {
            renewed = true;
            await this.token(true);
            continue;
          }
          const sessionGone = (err.status === 404 && /session/i.test(err.message)) || (err.status === 409 && err.code !== 'IDEMPOTENCY_CONFLICT') || err.status === 410;
          if (sessionGone && this.saved.sessionId && !restarted) {
            restarted = true;
            this.saved.sessionId = null;
            this.store.save(this.saved);
            this.addNote('That conversation has ended; this message starts a new one.');
            this.currentAgent = this.config?.entryAgent?.name ?? null;
            key = newKey();
            continue;
          }
          throw err;
        }
        // An API that answers a plain request but not ours refused it without CORS headers (a key
        // revoked meanwhile, an origin no longer listed): that is no network drop to wait out.
        if (err instanceof NetworkFailure && attempt >= 2 && (await this.client.reachable())) throw new RefusedFailure(err.message);
        if (err instanceof NetworkFailure && Date.now() < deadline) {
          // No answer: the same request again, with the same Idempotency-Key, once the network is back.
          this.status.textContent = 'Connection lost. Reconnecting…';
          await this.pause(attempt);
          continue;
        }
        throw err;
      }
    }
  }

  private streamBubble: AgentMessage | null = null;

  private async streamTurn(token: string, body: ChatRequest, key: string): Promise<ChatReply> {
    const progress: StreamProgress = { turnId: null, lastEventId: null };
    const handlers = {
      onTurn: (_turnId: string, sessionId: string) => {
        if (sessionId) {
          this.saved.sessionId = sessionId;
          this.store.save(this.saved);
        }
      },
      onDelta: (text: string, reset: boolean) => {
        this.typing.hidden = true;
        this.streamBubble ??= this.addAgentMessage('', this.currentAgent, null, false);
        this.streamBubble.text = reset ? text : this.streamBubble.text + text;
        this.streamBubble.body.textContent = this.streamBubble.text;
        this.log.scrollTop = this.log.scrollHeight;
      },
    };
    try {
      return await this.client.chatStream(token, body, key, handlers, progress);
    } catch (err) {
      if (!(err instanceof StreamDropped || err instanceof NetworkFailure)) throw err;
      // Dropped before the turn was named: the start again, with the same Idempotency-Key.
      if (progress.turnId === null) throw err instanceof StreamDropped ? new StreamStartLost(err.message) : err;
    }
    const deadline = Date.now() + RETRY_WINDOW_MS;
    for (let attempt = 0; ; attempt++) {
      this.status.textContent = 'Connection lost. Reconnecting…';
      await this.pause(attempt);
      try {
        const reply = await this.client.resumeStream(await this.token(attempt > 0 && attempt % 4 === 0), progress, handlers);
        this.status.textContent = '';
        return reply;
      } catch (err) {
        const retry = err instanceof StreamDropped || err instanceof NetworkFailure || (err instanceof ApiFailure && err.status === 401);
        if (!retry || Date.now() > deadline) throw err;
      }
    }
  }

  /** Waits before a retry: 1 s, 2 s, 4 s… up to 15 s, or until the browser says it is online again. */
  private pause(attempt: number): Promise<void> {
    const ms = Math.min(15_000, 1000 * 2 ** Math.min(attempt, 4));
    return new Promise((resolve) => {
      const done = () => {
        window.removeEventListener('online', done);
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(done, ms);
      window.addEventListener('online', done);
    });
  }

  private showReply(reply: ChatReply): void {
    const agent = reply.agentName;
    if (agent && this.currentAgent && agent !== this.currentAgent) this.addNote(`Now chatting with ${agentLabel(agent)}`);
    if (agent) this.currentAgent = agent;
    const rich = richContent(reply.richContent);
    const buttons = actionButtons(reply.actions);
    if (!reply.response && !rich && buttons.length === 0) {
      this.streamBubble?.body.closest('.msg')?.remove();
      return;
    }
    const message = this.streamBubble ?? this.addAgentMessage('', agent, null, true);
    message.text = reply.response;
    message.body.textContent = reply.response;
    const bubble = message.body.parentElement!;
    if (this.streamBubble) {
      const who = bubble.querySelector('.who');
      if (who && agent) who.textContent = agentLabel(agent);
      this.addThumbs(message);
    }
    if (rich) bubble.insertBefore(rich, message.body.nextSibling);
    if (buttons.length > 0) {
      const row = el('div', { class: 'actions', role: 'group', 'aria-label': 'Suggested actions' });
      for (const b of buttons) {
        const button = el('button', { type: 'button' }, b.label);
        button.addEventListener('click', () => {
          if (this.busy) return;
          for (const other of Array.from(row.querySelectorAll('button'))) other.disabled = true;
          void this.runTurn({ message: b.label, action: { id: b.id, ...(b.value !== undefined ? { value: b.value } : {}) } }, b.label);
        });
        row.append(button);
      }
      bubble.insertBefore(row, message.thumbs[0] ? message.thumbs[0].parentElement : null);
    }
    this.log.scrollTop = this.log.scrollHeight;
  }

  private addUserMessage(text: string): void {
    const bubble = el('div', { class: 'msg user' });
    bubble.append(el('span', { class: 'sr' }, 'You: '), el('span', {}, text));
    this.log.append(bubble);
    this.log.scrollTop = this.log.scrollHeight;
  }

  private addAgentMessage(text: string, agent: string | null, messageId: string | null, rateable: boolean): AgentMessage {
    const bubble = el('div', { class: 'msg agent' });
    bubble.append(el('span', { class: 'who' }, agent ? agentLabel(agent) : (this.config?.title ?? 'Agent')));
    const body = el('div', { class: 'text' }, text);
    bubble.append(body);
    const message: AgentMessage = { text, messageId, body, thumbs: [] };
    if (rateable) this.addThumbs(message);
    this.log.append(bubble);
    this.agentMessages.push(message);
    this.log.scrollTop = this.log.scrollHeight;
    return message;
  }

  private addThumbs(message: AgentMessage): void {
    if (message.thumbs.length > 0) return;
    const row = el('div', { class: 'thumbs', role: 'group', 'aria-label': 'Rate this reply' });
    for (const [rating, label] of [
      ['up', 'Helpful'],
      ['down', 'Not helpful'],
    ] as const) {
      const button = el('button', { type: 'button', class: rating, 'aria-label': label, 'aria-pressed': 'false' });
      button.innerHTML = THUMB;
      button.addEventListener('click', () => void this.rate(message, rating, button));
      row.append(button);
      message.thumbs.push(button);
    }
    message.body.parentElement?.append(row);
  }

  private async rate(message: AgentMessage, rating: 'up' | 'down', button: HTMLButtonElement): Promise<void> {
    const sessionId = this.saved.sessionId;
    if (!sessionId || message.thumbs.some((b) => b.disabled)) return;
    for (const b of message.thumbs) b.disabled = true;
    try {
      const token = await this.token();
      message.messageId ??= await this.findMessageId(token, sessionId, message);
      if (!message.messageId) throw new Error('reply not found');
      await this.client.feedback(token, sessionId, message.messageId, rating);
      button.setAttribute('aria-pressed', 'true');
      this.status.textContent = 'Thanks for your feedback.';
    } catch (err) {
      const already = err instanceof ApiFailure && err.status === 409;
      this.status.textContent = already ? 'This reply was already rated.' : 'Your rating could not be sent.';
      if (!already) for (const b of message.thumbs) b.disabled = false;
    }
  }

  /** A live reply's transcript id: the same text, counted the same number of times from the start. */
  private async findMessageId(token: string, sessionId: string, message: AgentMessage): Promise<string | null> {
    const transcript = (await this.client.transcript(token, sessionId, 200)).filter((m) => m.role === 'assistant' && m.content === message.text);
    const shownBefore = this.agentMessages.slice(0, this.agentMessages.indexOf(message)).filter((m) => m.text === message.text && m.thumbs.length > 0).length;
    return transcript[shownBefore]?.id ?? transcript[transcript.length - 1]?.id ?? null;
  }

  private addNote(text: string): void {
    this.log.append(el('div', { class: 'note' }, text));
  }

  private async attach(): Promise<void> {
    const file = this.fileInput.files?.[0];
    this.fileInput.value = '';
    if (!file || !this.config) return;
    const { maxFileBytes, allowedMimeTypes } = this.config.uploads;
    if (file.size > maxFileBytes) return this.showError(`${file.name} is larger than ${Math.floor(maxFileBytes / 1048576)} MB.`);
    if (allowedMimeTypes.length > 0 && file.type && !allowedMimeTypes.includes(file.type)) return this.showError(`Files of type ${file.type} cannot be sent here.`);
    const sessionId = this.saved.sessionId;
    if (!sessionId) return this.showError('Send a message first; files can then be attached to the conversation.');
    this.status.textContent = `Uploading ${file.name}…`;
    try {
      const uploaded = await this.client.upload(await this.token(), sessionId, file);
      this.pendingFiles.push(uploaded);
      this.renderFiles();
      this.status.textContent = `${uploaded.filename} is attached to your next message.`;
    } catch (err) {
      this.status.textContent = '';
      await this.showFailure(err, `${file.name} could not be uploaded`);
    }
  }

  private renderFiles(): void {
    this.files.replaceChildren(
      ...this.pendingFiles.map((f) => {
        const chip = el('span', {}, f.filename);
        const remove = el('button', { type: 'button', 'aria-label': `Remove ${f.filename}` }, '×');
        remove.addEventListener('click', () => {
          this.pendingFiles = this.pendingFiles.filter((p) => p !== f);
          this.renderFiles();
        });
        chip.append(remove);
        return chip;
      }),
    );
  }

  private showError(text: string): void {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  private hideError(): void {
    this.error.hidden = true;
    this.error.textContent = '';
  }

  /** Says why the chat failed in words a visitor (or the site's developer) can act on. */
  private async showFailure(err: unknown, what = START): Promise<void> {
    const origin = window.location.origin;
    if (err instanceof RefusedFailure) {
      return this.showError(`The chat refused this page: ${origin} is not an allowed origin for the widget's key, or the key is no longer valid.`);
    }
    if (err instanceof ApiFailure) {
      if (err.status === 403) return this.showError(`This chat is not available on this page: ${origin} is not an allowed origin for the widget's key.`);
      if (err.status === 401) return this.showError(`${what}: the widget's key is not valid (mistyped or revoked).`);
      if (err.status === 429) return this.showError('Too many messages at once. Please wait a moment and try again.');
      if (err.status === 503) return this.showError('The chat is unavailable right now. Please try again shortly.');
      return this.showError(`${what}: ${err.message}`);
    }
    if (err instanceof NetworkFailure && what !== START) {
      return this.showError(`${what}: the connection was lost. Please try again.`);
    }
    if (err instanceof NetworkFailure) {
      // A refused cross-origin call cannot be read; a no-cors request tells a refusal from a dead network.
      if (await this.client.reachable()) {
        return this.showError(`This chat is not available on this page: ${origin} is not an allowed origin for the widget's key, or the key is not valid.`);
      }
      return this.showError('The chat service cannot be reached. Check your connection and try again.');
    }
    return this.showError(`${what}.`);
  }
}
