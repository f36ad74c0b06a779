// The typed Switchboard client: openapi-fetch over the types generated from the API's OpenAPI
// document (sdk/schema.d.ts, `npm run sdk:generate`), with helpers for agent chat, sessions,
// the streamed agent turn and the completion stream (SSE), and callback signing. Imports nothing of the API's code.
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { components, operations, paths } from './schema';

export type { components, operations, paths } from './schema';
export { CALLBACK_SIGNATURE_HEADER, sendCallback, signCallback, type CallbackDelivery } from './callbacks';

type JsonBody<Op> = Op extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
type JsonOk<Op, Status extends number = 200> = Op extends { responses: { [S in Status]: { content: { 'application/json': infer R } } } } ? R : never;
type Query<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The body of POST /api/v1/chat/agent. */
export type AgentChatRequest = JsonBody<operations['chatWithAgent']>;
/** Its answer: 200 for a turn, 202 when an async tool call suspended the session (`suspension` set). */
export type AgentChatResponse = JsonOk<operations['chatWithAgent'], 200> | JsonOk<operations['chatWithAgent'], 202>;
export type SessionListQuery = Query<operations['listSessions']>;
export type SessionList = JsonOk<operations['listSessions']>;
export type SessionDetail = JsonOk<operations['getSession']>;
export type TranscriptQuery = Query<operations['getSessionTranscript']>;
export type Transcript = JsonOk<operations['getSessionTranscript']>;
/** The body of POST /api/v1/chat/stream (and /chat/complete). */
export type CompletionRequest = components['schemas']['ChatRequest'];
export type CompletionStreamEventName = components['schemas']['ChatStreamEvent']['event'];
/** One event of the completion stream, its data line parsed as JSON. */
export interface CompletionStreamEvent {
  event: CompletionStreamEventName;
  data: Record<string, unknown>;
}

export type AgentStreamEventName = components['schemas']['ChatAgentStreamEvent']['event'];
/**
 * One event of a streamed agent turn (POST /api/v1/chat/agent/stream): `turn`, `delta` (append
 * `data.text`; with `data.reset` replace the text shown so far), then `response` (the body
 * `chat()` returns, plus `status`) or `error`. `id` is what `resumeChatStream` takes as `after`.
 */
export interface AgentStreamEvent {
  id: number;
  event: AgentStreamEventName;
  data: Record<string, unknown>;
}

export interface SwitchboardClientOptions {
  /** The API's address, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** An API key (`abl_…`), sent as `X-API-Key`. */
  apiKey?: string;
  /** A bearer token (a login JWT, or an API key), sent as `Authorization: Bearer`. */
  bearerToken?: string;
  /** Other headers on every request. */
  headers?: Record<string, string>;
  /** A fetch to use instead of the global one. */
  fetch?: ClientOptions['fetch'];
}

/** An error answer of the API: its status and the envelope's `code`, `message` and request id. */
export class SwitchboardApiError extends Error {
  override readonly name = 'SwitchboardApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    readonly body: unknown,
  ) {
    super(`${status} ${code}: ${message}`);
  }
}

function toApiError(response: Response, error: unknown): SwitchboardApiError {
  const envelope = (error as { error?: { code?: unknown; message?: unknown; requestId?: unknown } } | undefined)?.error;
  const code = typeof envelope?.code === 'string' ? envelope.code : 'HTTP_ERROR';
  const message = typeof envelope?.message === 'string' ? envelope.message : response.statusText || 'request failed';
  const requestId = typeof envelope?.requestId === 'string' ? envelope.requestId : (response.headers.get('x-request-id') ?? undefined);
  return new SwitchboardApiError(response.status, code, message, requestId, error);
}

/** The data of a 2xx answer, or a SwitchboardApiError for any other. */
function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok || result.data === undefined) throw toApiError(result.response, result.error);
  return result.data;
}

/**
 * Reads a Server-Sent Events body and yields each event (name, data text, id). Comments
 * (`: heartbeat`) are skipped; the generator ends when the stream does.
 */
export async function* parseServerSentEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<EventSourceMessage> {
  const queue: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => queue.push(message) });
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(value);
      while (queue.length > 0) yield queue.shift()!;
    }
    parser.reset({ consume: true });
    while (queue.length > 0) yield queue.shift()!;
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

export interface SwitchboardClient {
  /** The typed client over every route of the API: `api.GET('/api/projects/{projectId}/agents', …)`. */
  api: Client<paths>;
  /** One agent chat turn (POST /api/v1/chat/agent); omit `sessionId` to start a session. */
  chat(body: AgentChatRequest, init?: { signal?: AbortSignal }): Promise<AgentChatResponse>;
  sessions: {
    list(projectId: string, query?: SessionListQuery): Promise<SessionList>;
    get(projectId: string, sessionId: string): Promise<SessionDetail>;
    transcript(sessionId: string, query?: TranscriptQuery): Promise<Transcript>;
  };
  /** One agent chat turn as its stream of events (POST /api/v1/chat/agent/stream). */
  streamChat(body: AgentChatRequest, init?: { signal?: AbortSignal; idempotencyKey?: string }): AsyncGenerator<AgentStreamEvent>;
  /** A streamed turn's events after event `after` (all when absent), then live to its end (GET /api/v1/chat/agent/stream/{turnId}). */
  resumeChatStream(turnId: string, init?: { after?: number; signal?: AbortSignal }): AsyncGenerator<AgentStreamEvent>;
  /** One LLM completion as its stream of events (POST /api/v1/chat/stream). */
  streamCompletion(body: CompletionRequest, init?: { signal?: AbortSignal }): AsyncGenerator<CompletionStreamEvent>;
}

export function createSwitchboardClient(options: SwitchboardClientOptions): SwitchboardClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.apiKey) headers['X-API-Key'] = options.apiKey;
  if (options.bearerToken) headers.Authorization = `Bearer ${options.bearerToken}`;
  const api = createClient<paths>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), headers, ...(options.fetch ? { fetch: options.fetch } : {}) });

  return {
    api,
    chat: async (body, init) => unwrap(await api.POST('/api/v1/chat/agent', { body, signal: init?.signal })),
    sessions: {
      list: async (projectId, query) => unwrap(await api.GET('/api/projects/{projectId}/sessions', { params: { path: { projectId }, query } })),
      get: async (projectId, sessionId) => unwrap(await api.GET('/api/projects/{projectId}/sessions/{id}', { params: { path: { projectId, id: sessionId } } })),
      transcript: async (sessionId, query) => unwrap(await api.GET('/api/v1/sessions/{id}/transcripts', { params: { path: { id: sessionId }, query } })),
    },
    async *streamChat(body, init) {
      const headers = init?.idempotencyKey ? { 'Idempotency-Key': init.idempotencyKey } : undefined;
      const result = await api.POST('/api/v1/chat/agent/stream', { body, parseAs: 'stream', signal: init?.signal, headers });
      if (!result.response.ok || !result.data) throw toApiError(result.response, result.error);
      yield* agentStreamEvents(result.data as ReadableStream<Uint8Array>);
    },
    async *resumeChatStream(turnId, init) {
      const query = init?.after !== undefined ? { after: init.after } : undefined;
      const result = await api.GET('/api/v1/chat/agent/stream/{turnId}', { params: { path: { turnId }, query }, parseAs: 'stream', signal: init?.signal });
      if (!result.response.ok || !result.data) throw toApiError(result.response, result.error);
      yield* agentStreamEvents(result.data as ReadableStream<Uint8Array>);
    },
    async *streamCompletion(body, init) {
      const result = await api.POST('/api/v1/chat/stream', { body, parseAs: 'stream', signal: init?.signal });
      // Errors before the stream opens are JSON envelopes (openapi-fetch has parsed them into `error`).
      if (!result.response.ok || !result.data) throw toApiError(result.response, result.error);
      for await (const message of parseServerSentEvents(result.data as ReadableStream<Uint8Array>)) {
        yield { event: (message.event ?? 'message') as CompletionStreamEventName, data: JSON.parse(message.data) as Record<string, unknown> };
      }
    },
  };
}

async function* agentStreamEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<AgentStreamEvent> {
  for await (const message of parseServerSentEvents(body)) {
    yield { id: Number(message.id), event: (message.event ?? 'message') as AgentStreamEventName, data: JSON.parse(message.data) as Record<string, unknown> };
  }
}
