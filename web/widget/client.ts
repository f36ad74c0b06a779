// The widget's HTTP client: SDK init and config with the public key, then the chat, transcript,
// attachment and feedback routes with the SDK session token. Errors come back as ApiFailure (the
// API's envelope was read) or NetworkFailure (no answer, or one the browser would not let us read).
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
  /** The path itself is unknown to this API (an older API than the widget), not a missing record. */
  get routeMissing(): boolean {
    return this.status === 404 && this.message.startsWith('Route ');
  }
}

export class NetworkFailure extends Error {}

export interface SdkConfig {
  entryAgent: { id: string; name: string } | null;
  greeting: string | null;
  title: string | null;
  primaryColor: string | null;
  position: 'bottom-right' | 'bottom-left';
  launcherLabel: string | null;
  uploads: { enabled: boolean; maxFileBytes: number; allowedMimeTypes: string[] };
  streaming: boolean | null;
  /** Real-time voice is offered: the API has a voice service and the key allows it (docs/voice.md). */
  voice: boolean;
}

export interface VoiceRoom {
  sessionId: string;
  room: string;
  url: string;
  token: string;
}

export interface SdkSession {
  token: string;
  expiresAt: number;
  endUserId: string;
  /** The previous token's end user was kept. */
  renewed: boolean;
}

export interface ChatReply {
  sessionId: string;
  response: string;
  agentName: string | null;
  actions: unknown;
  richContent: unknown;
}

export interface TranscriptMessage {
  id: string;
  role: 'user' | 'assistant' | 'system';
  content: string;
  agent: string | null;
}

export interface ChatRequest {
  message?: string;
  action?: { id: string; value?: unknown };
  sessionId?: string;
}

/** What a streamed turn reports as it goes (STREAM contract: turn, delta, response, error). */
export interface StreamHandlers {
  onTurn(turnId: string, sessionId: string): void;
  /** `reset`: the text replaces what was shown (a model call was retried). */
  onDelta(text: string, reset: boolean): void;
}

type Json = Record<string, unknown>;

const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

async function failureOf(res: Response): Promise<ApiFailure> {
  const body = obj(await res.json().catch(() => ({})));
  const error = obj(body.error);
  const retry = Number(error.retryAfterMs ?? body.retryAfterMs);
  return new ApiFailure(res.status, str(error.code) ?? 'ERROR', str(error.message) ?? `HTTP ${res.status}`, Number.isFinite(retry) ? retry : null);
}

export function replyOf(body: unknown): ChatReply {
  const b = obj(body);
  const state = obj(b.state);
  return {
    sessionId: String(b.sessionId ?? ''),
    response: typeof b.response === 'string' ? b.response : '',
    agentName: str(b.agentName) ?? str(state.agent),
    actions: b.actions,
    richContent: b.richContent,
  };
}

/** Reads the config in either of its shapes (fields at the top, or under `config`); absent fields take defaults. */
export function configOf(body: unknown): SdkConfig {
  const outer = obj(body);
  const c = outer.config && typeof outer.config === 'object' ? obj(outer.config) : outer;
  const theme = obj(c.theme);
  const uploads = obj(c.uploads);
  const entry = obj(c.entryAgent);
  const maxBytes = Number(uploads.maxFileSize ?? uploads.maxFileBytes);
  return {
    entryAgent: str(entry.id) ? { id: String(entry.id), name: str(entry.name) ?? String(entry.id) } : null,
    greeting: str(c.greeting),
    title: str(c.title),
    primaryColor: str(theme.primaryColor),
    position: theme.position === 'bottom-left' ? 'bottom-left' : 'bottom-right',
    launcherLabel: str(theme.launcherLabel),
    uploads: {
      enabled: uploads.enabled === true,
      maxFileBytes: Number.isFinite(maxBytes) && maxBytes > 0 ? maxBytes : 10 * 1024 * 1024,
      allowedMimeTypes: Array.isArray(uploads.allowedMimeTypes) ? uploads.allowedMimeTypes.filter((t): t is string => typeof t === 'string') : [],
    },
    streaming: typeof c.streaming === 'boolean' ? c.streaming : null,
    voice: obj(c.voice).enabled === true,
  };
}

export class WidgetClient {
  constructor(
    readonly apiBase: string,
    readonly projectId: string,
    private readonly publicKey: string,
  ) {}

  private async send(path: string, init: RequestInit): Promise<Response> {
    let res: Response;
    try {
      res = await fetch(this.apiBase + path, { ...init, credentials: 'omit', mode: 'cors' });
    } catch (err) {
      throw new NetworkFailure(err instanceof Error ? err.message : String(err));
    }
    if (!res.ok) throw await failureOf(res);
    return res;
  }

  private async json(path: string, init: RequestInit): Promise<Json> {
    const res = await this.send(path, init);
    try {
      return obj(await res.json());
    } catch (err) {
      throw new NetworkFailure(err instanceof Error ? err.message : String(err));
    }
  }

  /**
   * Whether the API answers at all: a request the browser makes without CORS (its answer unread).
   * After a refused cross-origin call this tells an origin the key does not list from an API that is down.
   */
  async reachable(): Promise<boolean> {
    try {
      await fetch(`${this.apiBase}/healthz`, { mode: 'no-cors', credentials: 'omit', cache: 'no-store' });
      return true;
    } catch {
      return false;
    }
  }

  async config(): Promise<SdkConfig> {
    return configOf(await this.json(`/api/v1/sdk/config/${encodeURIComponent(this.projectId)}`, { headers: { 'X-API-Key': this.publicKey } }));
  }

  /** A token for the end user; the previous token, when there is one, asks to stay the same end user (`renewed`). */
  async init(userAssertion: string | null, previousToken: string | null): Promise<SdkSession> {
    const body = await this.json('/api/v1/sdk/init', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Public-Key': this.publicKey },
      body: JSON.stringify({ projectId: this.projectId, ...(userAssertion ? { userAssertion } : {}), ...(previousToken ? { previousToken } : {}) }),
    });
    const expiresAt = Date.parse(String(body.expiresAt));
    return {
      token: String(body.token),
      expiresAt: Number.isFinite(expiresAt) ? expiresAt : Date.now() + 60_000,
      endUserId: String(body.endUserId),
      renewed: body.renewed === true,
    };
  }

  private tokenHeaders(token: string, extra: Record<string, string> = {}): Record<string, string> {
    return { 'X-SDK-Token': token, ...extra };
  }

  async chat(token: string, request: ChatRequest, idempotencyKey: string): Promise<ChatReply> {
    const body = await this.json('/api/v1/chat/agent', {
      method: 'POST',
      headers: this.tokenHeaders(token, { 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey }),
      body: JSON.stringify({ projectId: this.projectId, ...request }),
    });
    return replyOf(body);
  }

  /** A voice room with the entry agent, and this end user's token for it. */
  async voiceSession(token: string, idempotencyKey: string): Promise<VoiceRoom> {
    const body = await this.json('/api/v1/voice/sessions', {
      method: 'POST',
      headers: this.tokenHeaders(token, { 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey }),
      body: JSON.stringify({ projectId: this.projectId }),
    });
    return { sessionId: String(body.sessionId), room: String(body.room), url: String(body.url), token: String(body.token) };
  }

  async chatWithAttachments(token: string, sessionId: string, message: string, attachmentIds: string[], idempotencyKey: string): Promise<ChatReply> {
    const body = await this.json('/api/v1/chat/send', {
      method: 'POST',
      headers: this.tokenHeaders(token, { 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey }),
      body: JSON.stringify({ sessionId, message, attachmentIds }),
    });
    return replyOf(body);
  }

  /** Starts a streamed turn; resolves with the final reply. A drop after `turn` throws StreamDropped. */
  async chatStream(token: string, request: ChatRequest, idempotencyKey: string, handlers: StreamHandlers, progress: StreamProgress): Promise<ChatReply> {
    const res = await this.send('/api/v1/chat/agent/stream', {
      method: 'POST',
      headers: this.tokenHeaders(token, { 'Content-Type': 'application/json', Accept: 'text/event-stream', 'Idempotency-Key': idempotencyKey }),
      body: JSON.stringify({ projectId: this.projectId, ...request }),
    });
    return readStream(res, handlers, progress);
  }

  /** Replays a turn's events after the last one seen, then follows it live. */
  async resumeStream(token: string, progress: StreamProgress, handlers: StreamHandlers): Promise<ChatReply> {
    const after = progress.lastEventId === null ? '' : `?after=${encodeURIComponent(progress.lastEventId)}`;
    const res = await this.send(`/api/v1/chat/agent/stream/${encodeURIComponent(progress.turnId!)}${after}`, {
      headers: this.tokenHeaders(token, { Accept: 'text/event-stream' }),
    });
    return readStream(res, handlers, progress);
  }

  /** The session's last `limit` messages, oldest first. */
  async transcript(token: string, sessionId: string, limit = 100): Promise<TranscriptMessage[]> {
    const path = `/api/v1/sessions/${encodeURIComponent(sessionId)}/transcripts`;
    let body = await this.json(`${path}?limit=${limit}&offset=0`, { headers: this.tokenHeaders(token) });
    const total = Number(body.total);
    if (Number.isFinite(total) && total > limit) body = await this.json(`${path}?limit=${limit}&offset=${total - limit}`, { headers: this.tokenHeaders(token) });
    const messages = Array.isArray(body.messages) ? body.messages : [];
    return messages.map((m) => {
      const o = obj(m);
      const role = o.role === 'user' || o.role === 'assistant' ? o.role : 'system';
      return { id: String(o.id), role, content: typeof o.content === 'string' ? o.content : '', agent: str(o.agent) };
    });
  }

  async upload(token: string, sessionId: string, file: File): Promise<{ attachmentId: string; filename: string }> {
    const form = new FormData();
    form.append('file', file, file.name);
    const body = await this.json(`/api/projects/${encodeURIComponent(this.projectId)}/sessions/${encodeURIComponent(sessionId)}/attachments`, {
      method: 'POST',
      headers: this.tokenHeaders(token),
      body: form,
    });
    return { attachmentId: String(body.attachmentId), filename: str(body.filename) ?? file.name };
  }

  async feedback(token: string, sessionId: string, messageId: string, rating: 'up' | 'down'): Promise<void> {
    await this.json('/api/v1/feedback', {
      method: 'POST',
      headers: this.tokenHeaders(token, { 'Content-Type': 'application/json' }),
      body: JSON.stringify({ sessionId, messageId, rating }),
    });
  }
}

/** Where a streamed turn got to: what a reconnect asks to replay after. */
export interface StreamProgress {
  turnId: string | null;
  lastEventId: string | null;
}

/** The stream ended, or the connection dropped, before the turn's `response` or `error`. */
export class StreamDropped extends Error {}

async function readStream(res: Response, handlers: StreamHandlers, progress: StreamProgress): Promise<ChatReply> {
  if (!res.body) throw new StreamDropped('no body');
  let outcome: { reply: ChatReply } | { failure: ApiFailure } | null = null;
  const parser = createParser({
    onEvent(event: EventSourceMessage) {
      if (event.id !== undefined) progress.lastEventId = event.id;
      let data: Json;
      try {
        data = obj(JSON.parse(event.data));
      } catch {
        return;
      }
      if (event.event === 'turn') {
        progress.turnId = String(data.turnId);
        handlers.onTurn(progress.turnId, String(data.sessionId ?? ''));
      } else if (event.event === 'delta') {
        if (typeof data.text === 'string') handlers.onDelta(data.text, data.reset === true);
      } else if (event.event === 'response') {
        outcome = { reply: replyOf(data) };
      } else if (event.event === 'error') {
        outcome = { failure: new ApiFailure(data.retryable === true ? 503 : 500, str(data.code) ?? 'ERROR', str(data.error) ?? 'The turn failed') };
      }
    },
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    while (!outcome) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(value);
    }
  } catch (err) {
    throw new StreamDropped(err instanceof Error ? err.message : String(err));
  } finally {
    reader.cancel().catch(() => undefined);
  }
  const ended = outcome as { reply: ChatReply } | { failure: ApiFailure } | null;
  if (!ended) throw new StreamDropped('the stream ended before the reply');
  if ('failure' in ended) throw ended.failure;
  return ended.reply;
}
