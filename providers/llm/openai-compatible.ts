// Adapter for any OpenAI-compatible Chat Completions endpoint (OpenAI, Azure OpenAI v1, vLLM,
// Ollama, LM Studio) over the official `openai` SDK, with SDK retries off so Temporal owns them.
import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionContentPart,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { DEFAULT_TIMEOUT_MS, startDeadline } from './deadline';
import { ProviderError, toProviderError } from './errors';
import {
  contentText,
  type ChatMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmResult,
  type LlmStreamEvent,
  type LlmToolCall,
} from './types';
import { newOpenAIClient } from './openai-client';

export interface OpenAICompatibleOptions {
  /** Sent as `Authorization: Bearer`. Local servers ignore it; a placeholder is used when omitted. */
  apiKey?: string;
  /** e.g. `https://api.openai.com/v1` (default), `https://<resource>.openai.azure.com/openai/v1/`, `http://localhost:11434/v1`. */
  baseURL?: string;
  /** Per-request timeout. @default 60000 */
  timeoutMs?: number;
  /** Name reported in results and errors. @default 'openai' */
  name?: string;
  /**
   * Which field carries `maxTokens`. OpenAI's reasoning models accept only
   * `max_completion_tokens`; many self-hosted servers know only `max_tokens`.
   * @default 'max_completion_tokens' for api.openai.com (no baseURL), else 'max_tokens'
   */
  maxTokensParam?: 'max_tokens' | 'max_completion_tokens';
  /** Extra headers on every request (e.g. an Azure `api-key`, an org id, a gateway token). */
  defaultHeaders?: Record<string, string>;
  /** The fetch the SDK sends with, e.g. one that enforces destination rules (lib/net/destination). */
  fetch?: typeof globalThis.fetch;
}

const PLACEHOLDER_API_KEY = 'no-api-key-configured';

type BaseParams = Omit<ChatCompletionCreateParamsNonStreaming, 'stream'>;

export function toOpenAIMessages(messages: ChatMessage[]): ChatCompletionMessageParam[] {
  return messages.map((message): ChatCompletionMessageParam => {
    const name = message.name !== undefined ? { name: message.name } : {};
    switch (message.role) {
      case 'system':
        return { role: 'system', content: contentText(message.content), ...name };
      case 'user':
        return {
          role: 'user',
          content:
            typeof message.content === 'string'
              ? message.content
              : message.content.map(
                  (part): ChatCompletionContentPart =>
                    part.type === 'text'
                      ? { type: 'text', text: part.text }
                      : { type: 'image_url', image_url: { url: part.image_url.url } },
                ),
          ...name,
        };
      case 'assistant': {
        const text = contentText(message.content);
        const toolCalls = message.tool_calls ?? [];
        return {
          role: 'assistant',
          content: text === '' && toolCalls.length > 0 ? null : text,
          ...name,
          ...(toolCalls.length > 0
            ? {
                tool_calls: toolCalls.map((call) => ({
                  id: call.id,
                  type: 'function' as const,
                  function: { name: call.function.name, arguments: call.function.arguments },
                })),
              }
            : {}),
        };
      }
      case 'tool':
        return { role: 'tool', tool_call_id: message.tool_call_id ?? '', content: contentText(message.content) };
      default: {
        const unreachable: never = message.role;
        throw new ProviderError(`unknown message role ${String(unreachable)}`, {
          kind: 'bad_request',
          provider: 'openai',
          retryable: false,
        });
      }
    }
  });
}

interface OpenToolCall {
  id: string;
  name: string;
  arguments: string;
  started: boolean;
}

export class OpenAICompatibleProvider implements LlmProvider {
  readonly name: string;
  private readonly client: OpenAI;
  private readonly maxTokensParam: 'max_tokens' | 'max_completion_tokens';
  private readonly timeoutMs: number;

  constructor(options: OpenAICompatibleOptions = {}) {
    this.name = options.name ?? 'openai';
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxTokensParam = options.maxTokensParam ?? (options.baseURL ? 'max_tokens' : 'max_completion_tokens');
    this.client = newOpenAIClient({
      apiKey: options.apiKey ?? PLACEHOLDER_API_KEY,
      baseURL: options.baseURL,
      timeoutMs: this.timeoutMs,
      defaultHeaders: options.defaultHeaders,
      fetch: options.fetch,
    });
  }

  private params(req: LlmRequest): BaseParams {
    const tools: ChatCompletionTool[] | undefined = req.tools?.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }));
    return {
      model: req.model,
      messages: toOpenAIMessages(req.messages),
      ...(tools && tools.length > 0 ? { tools } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.maxTokens !== undefined ? { [this.maxTokensParam]: req.maxTokens } : {}),
    };
  }

  async complete(req: LlmRequest): Promise<LlmResult> {
    const deadline = startDeadline(this.timeoutMs, req.signal);
    try {
      const body: ChatCompletionCreateParamsNonStreaming = { ...this.params(req), stream: false };
      const response = await this.client.chat.completions.create(body, { signal: deadline.signal });
      const choice = response.choices[0];
      const toolCalls: LlmToolCall[] = (choice?.message.tool_calls ?? []).flatMap((call) =>
        call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : [],
      );
      const inputTokens = response.usage?.prompt_tokens ?? 0;
      const outputTokens = response.usage?.completion_tokens ?? 0;
      return {
        content: choice?.message.content ?? '',
        toolCalls,
        model: response.model,
        finishReason: choice?.finish_reason ?? 'unknown',
        usage: { inputTokens, outputTokens, totalTokens: response.usage?.total_tokens ?? inputTokens + outputTokens },
        provider: this.name,
      };
    } catch (err) {
      throw toProviderError(err, this.name, { signal: req.signal, timedOut: deadline.timedOut() });
    } finally {
      deadline.clear();
    }
  }

  async *stream(req: LlmRequest): AsyncGenerator<LlmStreamEvent> {
    let chunks: AsyncIterable<ChatCompletionChunk>;
    // The deadline covers the wait for response headers; a long stream is bounded by the caller
    // (Temporal's heartbeat timeout), not by a fixed time.
    const deadline = startDeadline(this.timeoutMs, req.signal);
    try {
      const body: ChatCompletionCreateParamsStreaming = {
        ...this.params(req),
        stream: true,
        stream_options: { include_usage: true },
      };
      chunks = await this.client.chat.completions.create(body, { signal: deadline.signal });
    } catch (err) {
      throw toProviderError(err, this.name, { signal: req.signal, timedOut: deadline.timedOut() });
    } finally {
      deadline.clear();
    }

    // Tool calls arrive as deltas keyed by `index`; the id and name come once, arguments in pieces.
    const open = new Map<number, OpenToolCall>();
    let finishReason: string | undefined;
    let model = req.model;
    let usage: { inputTokens: number; outputTokens: number } | undefined;

    function* closeToolCalls(): Generator<LlmStreamEvent> {
      const indexes = [...open.keys()].sort((a, b) => a - b);
      for (const index of indexes) {
        const call = open.get(index);
        if (!call) continue;
        if (!call.started) yield { type: 'tool_call_start', id: call.id, name: call.name };
        yield { type: 'tool_call_end', id: call.id, name: call.name, arguments: call.arguments };
      }
      open.clear();
    }

    try {
      for await (const chunk of chunks) {
        if (chunk.model) model = chunk.model;
        if (chunk.usage) {
          usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
        }
        const choice = chunk.choices[0];
        if (!choice) continue;
        const text = choice.delta.content;
        if (text) yield { type: 'text_delta', delta: text };
        for (const delta of choice.delta.tool_calls ?? []) {
          let call = open.get(delta.index);
          if (!call) {
            call = { id: delta.id ?? `call_${delta.index}`, name: '', arguments: '', started: false };
            open.set(delta.index, call);
          }
          if (delta.function?.name) call.name += delta.function.name;
          if (!call.started && call.name !== '') {
            call.started = true;
            yield { type: 'tool_call_start', id: call.id, name: call.name };
            if (call.arguments !== '') yield { type: 'tool_call_delta', id: call.id, arguments: call.arguments };
          }
          const piece = delta.function?.arguments;
          if (piece) {
            call.arguments += piece;
            if (call.started) yield { type: 'tool_call_delta', id: call.id, arguments: piece };
          }
        }
        if (choice.finish_reason) {
          finishReason = choice.finish_reason;
          yield* closeToolCalls();
        }
      }
    } catch (err) {
      throw toProviderError(err, this.name, { signal: req.signal });
    }
    if (req.signal?.aborted) {
      // The SDKs end a stream quietly when its signal fires; the caller still needs to know.
      throw toProviderError(req.signal.reason, this.name, { signal: req.signal });
    }

    if (finishReason === undefined) {
      // The body ended cleanly but without a finish reason: the answer is truncated.
      throw new ProviderError(`${this.name}: stream ended before the model finished`, {
        kind: 'network',
        provider: this.name,
        retryable: true,
      });
    }
    if (usage) yield { type: 'usage', ...usage };
    yield { type: 'finish', finishReason, model };
  }
}
