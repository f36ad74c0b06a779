/**
 * A fake OpenAI-compatible server that speaks the real wire protocol, so the real `openai` SDK
 * code path (HTTP, SSE parsing, error classes) runs in tests. Also holds the scripting core
 * that `fake-anthropic.ts` reuses.
 *
 * Usage:
 *   const fake = await startFakeOpenAI();            // real node:http server on 127.0.0.1:<free port>
 *   const provider = createLlmProvider({ provider: 'openai', baseURL: fake.baseURL, apiKey: 'test' });
 *   fake.script({ text: 'Hi there', usage: { inputTokens: 12, outputTokens: 3 } });   // next request
 *   fake.script([{ error: { status: 429, headers: { 'retry-after': '2' } } }, { text: 'ok' }]); // queue
 *   fake.script((req) => ({ text: `echo ${JSON.stringify(req.body)}` }));           // computed reply
 *   ...
 *   expect(fake.requests[0]?.body).toMatchObject({ model: 'gpt-4o-mini' });
 *   await fake.requests[0]?.settled; expect(fake.requests[0]?.aborted).toBe(true);
 *   await fake.close();
 *
 * Endpoints: `POST /v1/chat/completions` (also without the `/v1` prefix). `stream: true` answers with
 * SSE `data: {chunk}` lines ending in `data: [DONE]`; tool-call deltas carry `index`; a final
 * usage-only chunk is sent when `stream_options.include_usage` is true. Anything else is a 404
 * in OpenAI's error shape.
 *
 * A script item (`FakeReply`) can give: `text` (and `textChunks` for how it streams),
 * `toolCalls` (with `argumentChunks` to split arguments across deltas), `usage`,
 * `finishReason`, `model`, `error` (HTTP status + provider-shaped body + headers such as
 * `retry-after`), `delayMs` (before responding), `chunkDelayMs` (before every SSE chunk) and
 * `failAfterChunks` (destroy the socket after N SSE chunks: a mid-stream failure) and
 * `streamError` (the provider's in-stream error event after N chunks) and `hold` (never finish:
 * for a call the client is expected to give up on, whatever the machine's speed).
 * Items are used once, in order; when the queue is empty the default reply is used
 * (`DEFAULT_FAKE_TEXT`, or `options.defaultReply`).
 *
 * Each request is recorded (`requests`): method, path, lower-cased headers, parsed JSON body,
 * whether it streamed, the reply used, `aborted` (the client closed the connection before the
 * response ended) and `settled` (resolves when the response finished or the socket closed).
 * With `options.apiKey` set, a request without `Authorization: Bearer <apiKey>` gets a 401.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, type Socket } from 'node:net';

export const DEFAULT_FAKE_TEXT = 'Hello from the fake LLM server.';

export interface FakeToolCall {
  /** @default `call_fake_<n>` (OpenAI) / `toolu_fake_<n>` (Anthropic) */
  id?: string;
  name: string;
  /** A JSON text, or an object that is JSON-encoded. */
  arguments: string | Record<string, unknown>;
  /** How the arguments are split across stream deltas. @default two halves */
  argumentChunks?: string[];
}

export interface FakeError {
  status: number;
  message?: string;
  /** OpenAI `error.type` / Anthropic `error.type`. Defaults follow the status. */
  type?: string;
  /** OpenAI `error.code`. */
  code?: string;
  headers?: Record<string, string>;
}

export interface FakeReply {
  text?: string;
  /** Stream pieces; must concatenate to `text`. @default word-sized pieces */
  textChunks?: string[];
  toolCalls?: FakeToolCall[];
  usage?: { inputTokens: number; outputTokens: number };
  /** @default `stop`/`tool_calls` (OpenAI), `end_turn`/`tool_use` (Anthropic) */
  finishReason?: string;
  /** @default the request's model */
  model?: string;
  error?: FakeError;
  delayMs?: number;
  chunkDelayMs?: number;
  failAfterChunks?: number;
  /**
   * Send the provider's in-stream error after `afterChunks` SSE chunks and end the stream
   * (OpenAI: a `data: {"error": …}` chunk; Anthropic: `event: error`, e.g. `overloaded_error`).
   */
  streamError?: { afterChunks: number; type: string; message?: string; code?: string };
  /** Extra response headers. */
  headers?: Record<string, string>;
  /**
   * Never finish the response, until the client goes away: `true` sends nothing at all;
   * `{ afterChunks }` streams that many SSE chunks first (a non-streamed reply sends nothing).
   */
  hold?: true | { afterChunks: number };
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Parsed JSON body (`undefined` when the body was not JSON). */
  body: unknown;
  stream: boolean;
  reply: FakeReply;
  /** The client closed the connection before the response ended. */
  aborted: boolean;
  /** Resolves when the response finished or the connection closed. */
  settled: Promise<void>;
  /** performance.now() when the request's body had been read (for benches). */
  receivedAt: number;
  /** performance.now() when the response started, after any `delayMs` (undefined before that). */
  respondedAt?: number;
}

export type ScriptItem = FakeReply | ((request: RecordedRequest) => FakeReply);

export interface FakeLlmServer {
  /** Pass to the SDK / provider as `baseURL`. */
  readonly baseURL: string;
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string;
  readonly requests: RecordedRequest[];
  /** Queue replies for the next requests, in order. */
  script(items: ScriptItem | ScriptItem[]): void;
  /** Number of scripted replies not used yet. */
  pending(): number;
  /** Drop queued replies and recorded requests. */
  reset(): void;
  /** Resolves once `count` requests have arrived. */
  waitForRequests(count: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export interface FakeServerOptions {
  /** When set, requests must authenticate with this key. */
  apiKey?: string;
  defaultReply?: FakeReply;
}

/** What a protocol-specific fake plugs into the scripting core. */
export interface FakeProtocol {
  /** Paths (without query) the fake answers; others get 404. */
  paths: string[];
  /** The base URL the SDK expects, given the server origin. */
  baseURL(origin: string): string;
  /** The key the client sent, or undefined. */
  apiKeyOf(headers: Record<string, string>): string | undefined;
  errorBody(error: FakeError): unknown;
  /** Complete JSON body for a non-streamed reply. */
  completion(request: RecordedRequest, reply: FakeReply): unknown;
  /** SSE frames (each a full `event:`/`data:` block ending in a blank line) for a streamed reply. */
  streamFrames(request: RecordedRequest, reply: FakeReply): string[];
}

/** Word-sized pieces that concatenate back to `text`. */
export function splitWords(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
}

export function argumentsText(call: FakeToolCall): string {
  return typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
}

export function argumentChunks(call: FakeToolCall): string[] {
  if (call.argumentChunks) return call.argumentChunks;
  const text = argumentsText(call);
  const middle = Math.ceil(text.length / 2);
  return [text.slice(0, middle), text.slice(middle)].filter((piece) => piece !== '');
}

/** Deterministic default usage: a quarter token per character, like the local model. */
export function defaultUsage(request: RecordedRequest, reply: FakeReply): { inputTokens: number; outputTokens: number } {
  if (reply.usage) return reply.usage;
  const body = request.body as { messages?: unknown } | undefined;
  const inputTokens = Math.ceil(JSON.stringify(body?.messages ?? '').length / 4);
  const output = (reply.text ?? '') + (reply.toolCalls ?? []).map((call) => call.name + argumentsText(call)).join('');
  return { inputTokens, outputTokens: Math.ceil(output.length / 4) };
}

/** The reply text after defaults: the default text only when neither text nor tool calls are given. */
export function replyText(reply: FakeReply): string {
  return reply.text ?? (reply.toolCalls && reply.toolCalls.length > 0 ? '' : DEFAULT_FAKE_TEXT);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function headersOf(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) out[key.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

function writeFrame(res: ServerResponse, frame: string): Promise<void> {
  return new Promise((resolve) => {
    if (res.destroyed || res.writableEnded) {
      resolve();
      return;
    }
    res.write(frame, () => resolve());
  });
}

/** The scripting core: a real HTTP server that records requests and answers from a queue. */
export async function startFakeLlmServer(protocol: FakeProtocol, options: FakeServerOptions = {}): Promise<FakeLlmServer> {
  const queue: ScriptItem[] = [];
  const requests: RecordedRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];
  const sockets = new Set<Socket>();

  const notify = (): void => {
    for (const waiter of [...waiters]) {
      if (requests.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };

  const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const raw = await readBody(req);
    const receivedAt = performance.now();
    let body: unknown;
    try {
      body = raw === '' ? undefined : (JSON.parse(raw) as unknown);
    } catch {
      body = undefined;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const headers = headersOf(req);
    const stream = typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream === true;

    let markSettled: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => {
      markSettled = resolve;
    });
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      headers,
      body,
      stream,
      reply: {},
      aborted: false,
      settled,
      receivedAt,
    };
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true;
      markSettled();
    });

    if (req.method !== 'POST' || !protocol.paths.includes(path)) {
      record.reply = { error: { status: 404, message: `No route for ${req.method ?? ''} ${path}` } };
      requests.push(record);
      notify();
      sendJson(res, 404, protocol.errorBody(record.reply.error as FakeError));
      return;
    }

    const item = queue.shift() ?? options.defaultReply ?? {};
    const reply = typeof item === 'function' ? item(record) : item;
    record.reply = reply;
    requests.push(record);
    notify();

    if (options.apiKey !== undefined && protocol.apiKeyOf(headers) !== options.apiKey) {
      const error: FakeError = { status: 401, message: 'Incorrect API key provided.' };
      sendJson(res, 401, protocol.errorBody(error));
      return;
    }
    if (reply.hold === true || (reply.hold && !stream)) return;
    if (reply.delayMs) await sleep(reply.delayMs);
    if (res.destroyed) return;
    record.respondedAt = performance.now();

    if (reply.error) {
      sendJson(res, reply.error.status, protocol.errorBody(reply.error), reply.error.headers);
      return;
    }
    if (!stream) {
      sendJson(res, 200, protocol.completion(record, reply), reply.headers);
      return;
    }

    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      ...reply.headers,
    });
    res.flushHeaders();
    const frames = protocol.streamFrames(record, reply);
    let sent = 0;
    for (const frame of frames) {
      if (reply.hold && sent >= reply.hold.afterChunks) return;
      if (reply.failAfterChunks !== undefined && sent >= reply.failAfterChunks) {
        res.socket?.destroy();
        return;
      }
      if (reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
      if (res.destroyed) return;
      await writeFrame(res, frame);
      sent += 1;
    }
    if (reply.failAfterChunks !== undefined && sent >= reply.failAfterChunks) {
      res.socket?.destroy();
      return;
    }
    res.end();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, protocol.errorBody({ status: 500, message: String(err) }));
      else res.destroy();
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  return {
    baseURL: protocol.baseURL(origin),
    origin,
    requests,
    script(items) {
      queue.push(...(Array.isArray(items) ? items : [items]));
    },
    pending: () => queue.length,
    reset() {
      queue.length = 0;
      requests.length = 0;
    },
    waitForRequests(count, timeoutMs = 5000) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`fake LLM server: ${requests.length}/${count} requests after ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

// ---- OpenAI Chat Completions protocol ----

interface OpenAIRequestBody {
  model?: string;
  stream_options?: { include_usage?: boolean };
}

const OPENAI_ERROR_DEFAULTS: Record<number, { type: string; code: string | null; message: string }> = {
  400: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
  401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
  403: { type: 'invalid_request_error', code: 'unsupported_country_region_territory', message: 'Forbidden.' },
  404: { type: 'invalid_request_error', code: 'model_not_found', message: 'The model does not exist.' },
  429: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests.' },
  500: { type: 'server_error', code: null, message: 'The server had an error while processing your request.' },
  503: { type: 'server_error', code: null, message: 'The engine is currently overloaded.' },
};

function openAIToolCalls(reply: FakeReply): { id: string; type: 'function'; function: { name: string; arguments: string } }[] {
  return (reply.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_fake_${index + 1}`,
    type: 'function',
    function: { name: call.name, arguments: argumentsText(call) },
  }));
}

function openAIFinishReason(reply: FakeReply): string {
  return reply.finishReason ?? (reply.toolCalls && reply.toolCalls.length > 0 ? 'tool_calls' : 'stop');
}

export const openAIProtocol: FakeProtocol = {
  paths: ['/v1/chat/completions', '/chat/completions'],
  baseURL: (origin) => `${origin}/v1`,
  apiKeyOf: (headers) => /^Bearer (.+)$/i.exec(headers['authorization'] ?? '')?.[1] ?? headers['api-key'],
  errorBody(error) {
    const defaults = OPENAI_ERROR_DEFAULTS[error.status] ?? { type: 'api_error', code: null, message: `HTTP ${error.status}` };
    return {
      error: {
        message: error.message ?? defaults.message,
        type: error.type ?? defaults.type,
        param: null,
        code: error.code ?? defaults.code,
      },
    };
  },
  completion(request, reply) {
    const body = request.body as OpenAIRequestBody | undefined;
    const usage = defaultUsage(request, reply);
    const toolCalls = openAIToolCalls(reply);
    const text = replyText(reply);
    return {
      id: `chatcmpl-fake-${requestNumber(request)}`,
      object: 'chat.completion',
      created: 1_700_000_000,
      model: reply.model ?? body?.model ?? 'fake-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: text === '' && toolCalls.length > 0 ? null : text,
            refusal: null,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: openAIFinishReason(reply),
        },
      ],
      usage: {
        prompt_tokens: usage.inputTokens,
        completion_tokens: usage.outputTokens,
        total_tokens: usage.inputTokens + usage.outputTokens,
      },
    };
  },
  streamFrames(request, reply) {
    const body = request.body as OpenAIRequestBody | undefined;
    const includeUsage = body?.stream_options?.include_usage === true;
    const base = {
      id: `chatcmpl-fake-${requestNumber(request)}`,
      object: 'chat.completion.chunk',
      created: 1_700_000_000,
      model: reply.model ?? body?.model ?? 'fake-model',
      ...(includeUsage ? { usage: null } : {}),
    };
    const chunk = (delta: Record<string, unknown>, finishReason: string | null = null): string =>
      `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] })}\n\n`;

    const frames = [chunk({ role: 'assistant', content: '' })];
    const text = replyText(reply);
    for (const piece of reply.textChunks ?? splitWords(text)) frames.push(chunk({ content: piece }));
    (reply.toolCalls ?? []).forEach((call, index) => {
      const id = call.id ?? `call_fake_${index + 1}`;
      frames.push(chunk({ tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: '' } }] }));
      for (const piece of argumentChunks(call)) {
        frames.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
      }
    });
    frames.push(chunk({}, openAIFinishReason(reply)));
    if (includeUsage) {
      const usage = defaultUsage(request, reply);
      frames.push(
        `data: ${JSON.stringify({
          ...base,
          choices: [],
          usage: {
            prompt_tokens: usage.inputTokens,
            completion_tokens: usage.outputTokens,
            total_tokens: usage.inputTokens + usage.outputTokens,
          },
        })}\n\n`,
      );
    }
    frames.push('data: [DONE]\n\n');
    if (reply.streamError) {
      const { afterChunks, type, message, code } = reply.streamError;
      return [
        ...frames.slice(0, afterChunks),
        `data: ${JSON.stringify({ error: { message: message ?? type, type, param: null, code: code ?? null } })}\n\n`,
      ];
    }
    return frames;
  },
};

const requestNumbers = new WeakMap<RecordedRequest, number>();
let nextRequestNumber = 1;
/** A stable per-request number for response ids. */
export function requestNumber(request: RecordedRequest): number {
  let number = requestNumbers.get(request);
  if (number === undefined) {
    number = nextRequestNumber;
    nextRequestNumber += 1;
    requestNumbers.set(request, number);
  }
  return number;
}

export type FakeOpenAI = FakeLlmServer;

/** Starts a fake OpenAI-compatible server; `baseURL` ends in `/v1`. */
export function startFakeOpenAI(options: FakeServerOptions = {}): Promise<FakeOpenAI> {
  return startFakeLlmServer(openAIProtocol, options);
}
