// Reads POST /api/v1/chat/stream with fetch and parses it with a real SSE parser
// (eventsource-parser), recording events, comments and when each arrived.
import { createParser } from 'eventsource-parser';
import { fetch as undiciFetch, type Dispatcher } from 'undici';

export interface ReceivedEvent {
  event: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data: any;
  at: number;
}

export interface StreamResult {
  status: number;
  headers: Headers;
  events: ReceivedEvent[];
  comments: { text: string; at: number }[];
  /** The response body when the server answered with JSON instead of a stream. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  /** The body ended on its own (not cut by our abort). */
  ended: boolean;
}

export interface StreamOptions {
  key: string;
  body: unknown;
  /** Called per event; return true to abort the request from the client side. */
  onEvent?: (event: ReceivedEvent) => boolean | void;
  /** The connection pool to send through (e.g. one that keeps idle connections open). */
  dispatcher?: Dispatcher;
}

export async function openStream(baseUrl: string, options: StreamOptions): Promise<StreamResult> {
  const controller = new AbortController();
  const started = Date.now();
  const init = {
    method: 'POST',
    headers: { authorization: `Bearer ${options.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(options.body),
    signal: controller.signal,
  };
  // undici's own fetch for a pool of its own: the global fetch is another copy of undici.
  const res = (options.dispatcher ? await undiciFetch(`${baseUrl}/api/v1/chat/stream`, { ...init, dispatcher: options.dispatcher }) : await fetch(`${baseUrl}/api/v1/chat/stream`, init)) as Response;
  const result: StreamResult = { status: res.status, headers: res.headers, events: [], comments: [], json: null, ended: false };
  if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    result.json = await res.json();
    return result;
  }
  let aborted = false;
  const parser = createParser({
    onEvent(message) {
      const event: ReceivedEvent = { event: message.event ?? 'message', data: JSON.parse(message.data), at: Date.now() - started };
      result.events.push(event);
      if (!aborted && options.onEvent?.(event) === true) {
        aborted = true;
        controller.abort();
      }
    },
    onComment(comment) {
      result.comments.push({ text: comment.trim(), at: Date.now() - started });
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
    result.ended = true;
  } catch (err) {
    if (!aborted) throw err;
  }
  return result;
}

export const eventNames = (result: StreamResult): string[] => result.events.map((e) => e.event);
