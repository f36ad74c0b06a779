/**
 * A fake Anthropic Messages API server that speaks the real wire protocol, so the real
 * `@anthropic-ai/sdk` code path (HTTP, SSE parsing, error classes) runs in tests.
 *
 * Usage (the scripting API is the same as `startFakeOpenAI`, see fake-openai.ts):
 *   const fake = await startFakeAnthropic();          // real node:http server on 127.0.0.1:<free port>
 *   const provider = createLlmProvider({ provider: 'anthropic', baseURL: fake.baseURL, apiKey: 'test' });
 *   fake.script({ toolCalls: [{ id: 'toolu_1', name: 'lookup', arguments: { id: 7 } }] });
 *   fake.script({ error: { status: 529 } });         // Anthropic's overloaded_error
 *   await fake.close();
 *
 * Endpoint: `POST /v1/messages`. `stream: true` answers with SSE named events:
 * `message_start`, per block `content_block_start` / `content_block_delta` (`text_delta`,
 * `input_json_delta`) / `content_block_stop`, then `message_delta` (stop_reason,
 * usage.output_tokens) and `message_stop`. Errors use Anthropic's body
 * `{ type: 'error', error: { type, message } }` (type follows the status unless given).
 * `failAfterChunks` counts SSE events. `finishReason` defaults to `end_turn`, or `tool_use`
 * when the reply has tool calls. With `options.apiKey` set, the key must arrive as
 * `x-api-key` or `Authorization: Bearer`.
 */
import {
  argumentChunks,
  argumentsText,
  defaultUsage,
  replyText,
  requestNumber,
  splitWords,
  startFakeLlmServer,
  type FakeError,
  type FakeLlmServer,
  type FakeProtocol,
  type FakeReply,
  type FakeServerOptions,
} from './fake-openai';

export type { FakeError, FakeReply, FakeToolCall, RecordedRequest, ScriptItem } from './fake-openai';

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

interface AnthropicRequestBody {
  model?: string;
}

function stopReason(reply: FakeReply): string {
  return reply.finishReason ?? (reply.toolCalls && reply.toolCalls.length > 0 ? 'tool_use' : 'end_turn');
}

function toolId(index: number, id: string | undefined): string {
  return id ?? `toolu_fake_${index + 1}`;
}

function parsedInput(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return {};
  }
}

function usageBlock(inputTokens: number, outputTokens: number): Record<string, unknown> {
  return {
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: null,
    inference_geo: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: 'standard',
    speed: null,
  };
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export const anthropicProtocol: FakeProtocol = {
  paths: ['/v1/messages'],
  baseURL: (origin) => origin,
  apiKeyOf: (headers) => headers['x-api-key'] ?? /^Bearer (.+)$/i.exec(headers['authorization'] ?? '')?.[1],
  errorBody(error: FakeError) {
    return {
      type: 'error',
      error: {
        type: error.type ?? ANTHROPIC_ERROR_TYPES[error.status] ?? 'api_error',
        message: error.message ?? `HTTP ${error.status}`,
      },
      request_id: 'req_fake',
    };
  },
  completion(request, reply) {
    const body = request.body as AnthropicRequestBody | undefined;
    const usage = defaultUsage(request, reply);
    const text = replyText(reply);
    const content: unknown[] = [];
    if (text !== '') content.push({ type: 'text', text, citations: null });
    (reply.toolCalls ?? []).forEach((call, index) => {
      content.push({ type: 'tool_use', id: toolId(index, call.id), name: call.name, input: parsedInput(argumentsText(call)) });
    });
    return {
      id: `msg_fake_${requestNumber(request)}`,
      type: 'message',
      role: 'assistant',
      model: reply.model ?? body?.model ?? 'fake-model',
      content,
      stop_reason: stopReason(reply),
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: usageBlock(usage.inputTokens, usage.outputTokens),
    };
  },
  streamFrames(request, reply) {
    const body = request.body as AnthropicRequestBody | undefined;
    const usage = defaultUsage(request, reply);
    const frames = [
      sse('message_start', {
        type: 'message_start',
        message: {
          id: `msg_fake_${requestNumber(request)}`,
          type: 'message',
          role: 'assistant',
          model: reply.model ?? body?.model ?? 'fake-model',
          content: [],
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          container: null,
          diagnostics: null,
          usage: usageBlock(usage.inputTokens, 1),
        },
      }),
    ];
    let index = 0;
    const text = replyText(reply);
    if (text !== '') {
      frames.push(sse('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '', citations: null } }));
      for (const piece of reply.textChunks ?? splitWords(text)) {
        frames.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } }));
      }
      frames.push(sse('content_block_stop', { type: 'content_block_stop', index }));
      index += 1;
    }
    (reply.toolCalls ?? []).forEach((call, callIndex) => {
      frames.push(
        sse('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: toolId(callIndex, call.id), name: call.name, input: {} },
        }),
      );
      for (const piece of argumentChunks(call)) {
        frames.push(sse('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } }));
      }
      frames.push(sse('content_block_stop', { type: 'content_block_stop', index }));
      index += 1;
    });
    frames.push(
      sse('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stopReason(reply), stop_sequence: null, stop_details: null, container: null },
        usage: { output_tokens: usage.outputTokens, input_tokens: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens_details: null, server_tool_use: null },
      }),
    );
    frames.push(sse('message_stop', { type: 'message_stop' }));
    if (reply.streamError) {
      const { afterChunks, type, message } = reply.streamError;
      return [...frames.slice(0, afterChunks), sse('error', { type: 'error', error: { type, message: message ?? type } })];
    }
    return frames;
  },
};

export type FakeAnthropic = FakeLlmServer;

/** Starts a fake Anthropic server; `baseURL` is the origin (the SDK appends `/v1/messages`). */
export function startFakeAnthropic(options: FakeServerOptions = {}): Promise<FakeAnthropic> {
  return startFakeLlmServer(anthropicProtocol, options);
}
