// Adapter for Anthropic's Messages API over the official `@anthropic-ai/sdk`, with SDK retries
// off so Temporal owns them. Keeps Anthropic's own stop reasons (`end_turn`, `tool_use`, ...).
import type Anthropic from '@anthropic-ai/sdk';
import { lazyModule } from '../../lib/lazy-module';
import type {
  ContentBlockParam,
  ImageBlockParam,
  MessageCreateParamsNonStreaming,
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
} from '@anthropic-ai/sdk/resources/messages';
import { DEFAULT_TIMEOUT_MS, SDK_TIMEOUT_SLACK_MS, startDeadline } from './deadline';
import { ProviderError, toProviderError } from './errors';
import {
  contentText,
  type ChatMessage,
  type ContentPart,
  type LlmProvider,
  type LlmRequest,
  type LlmResult,
  type LlmStreamEvent,
  type LlmToolCall,
} from './types';

export interface AnthropicOptions {
  apiKey?: string;
  /** @default 'https://api.anthropic.com' */
  baseURL?: string;
  /** Per-request timeout. @default 60000 */
  timeoutMs?: number;
  /** Anthropic requires max_tokens; used when the request has none. @default 4096 */
  defaultMaxTokens?: number;
  defaultHeaders?: Record<string, string>;
  /** The fetch the SDK sends with, e.g. one that enforces destination rules (lib/net/destination). */
  fetch?: typeof globalThis.fetch;
}

export const ANTHROPIC_DEFAULT_MAX_TOKENS = 4096;
const PROVIDER = 'anthropic';
const PLACEHOLDER_API_KEY = 'no-api-key-configured';

type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp';
const IMAGE_MEDIA_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

function toImageBlock(url: string): ImageBlockParam {
  const data = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (data) {
    const mediaType = data[1] ?? '';
    if (!IMAGE_MEDIA_TYPES.includes(mediaType)) {
      throw new ProviderError(`anthropic: unsupported image type ${mediaType}`, {
        kind: 'bad_request',
        provider: PROVIDER,
        retryable: false,
      });
    }
    return { type: 'image', source: { type: 'base64', media_type: mediaType as ImageMediaType, data: data[2] ?? '' } };
  }
  return { type: 'image', source: { type: 'url', url } };
}

function toContentBlocks(content: string | ContentPart[]): ContentBlockParam[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return content.map((part): ContentBlockParam =>
    part.type === 'text' ? { type: 'text', text: part.text } : toImageBlock(part.image_url.url),
  );
}

function parseToolInput(args: string): unknown {
  if (args.trim() === '') return {};
  try {
    return JSON.parse(args) as unknown;
  } catch {
    throw new ProviderError('anthropic: an earlier assistant tool call has arguments that are not JSON', {
      kind: 'bad_request',
      provider: PROVIDER,
      retryable: false,
    });
  }
}

/**
 * System messages become the top-level `system` text; tool results become `tool_result` blocks in
 * a user turn; assistant tool calls become `tool_use` blocks. Consecutive turns of one role are
 * merged, because all results for one assistant turn must arrive in the next user turn.
 */
export function toAnthropicMessages(messages: ChatMessage[]): { system?: string; messages: MessageParam[] } {
  const system: string[] = [];
  const out: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlockParam[]): void => {
    const previous = out.at(-1);
    if (previous && previous.role === role) previous.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        system.push(contentText(message.content));
        break;
      case 'user':
        push('user', toContentBlocks(message.content));
        break;
      case 'assistant':
        push('assistant', [
          ...toContentBlocks(message.content),
          ...(message.tool_calls ?? []).map(
            (call): ContentBlockParam => ({
              type: 'tool_use',
              id: call.id,
              name: call.function.name,
              input: parseToolInput(call.function.arguments),
            }),
          ),
        ]);
        break;
      case 'tool':
        push('user', [
          { type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: contentText(message.content) },
        ]);
        break;
      default: {
        const unreachable: never = message.role;
        throw new ProviderError(`unknown message role ${String(unreachable)}`, {
          kind: 'bad_request',
          provider: PROVIDER,
          retryable: false,
        });
      }
    }
  }
  const joined = system.filter((text) => text !== '').join('\n\n');
  return { ...(joined !== '' ? { system: joined } : {}), messages: out };
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const anthropicSdk = lazyModule(() => (require('@anthropic-ai/sdk') as { default: typeof Anthropic }).default);

export class AnthropicProvider implements LlmProvider {
  readonly name = PROVIDER;
  private readonly client: Anthropic;
  private readonly defaultMaxTokens: number;
  private readonly timeoutMs: number;

  constructor(options: AnthropicOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.defaultMaxTokens = options.defaultMaxTokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS;
    const AnthropicClient = anthropicSdk();
    this.client = new AnthropicClient({
      apiKey: options.apiKey ?? PLACEHOLDER_API_KEY,
      // Explicit, so ANTHROPIC_BASE_URL in the environment cannot redirect calls.
      baseURL: options.baseURL ?? 'https://api.anthropic.com',
      // Our own deadline (deadline.ts) enforces timeoutMs; the SDK's is only a backstop.
      timeout: this.timeoutMs + SDK_TIMEOUT_SLACK_MS,
      maxRetries: 0,
      // No span export from inside activities unless the app wires OpenTelemetry itself.
      openTelemetry: false,
      ...(options.defaultHeaders ? { defaultHeaders: options.defaultHeaders } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
  }

  private params(req: LlmRequest): Omit<MessageCreateParamsNonStreaming, 'stream'> {
    const { system, messages } = toAnthropicMessages(req.messages);
    const tools: Tool[] | undefined = req.tools?.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: { ...tool.parameters, type: 'object' },
    }));
    // `temperature` is not sent: API version 2026-10-21 (SDK 1.x) no longer accepts it.
    return {
      model: req.model,
      max_tokens: req.maxTokens ?? this.defaultMaxTokens,
      messages,
      ...(system !== undefined ? { system } : {}),
      ...(tools && tools.length > 0 ? { tools } : {}),
    };
  }

  async complete(req: LlmRequest): Promise<LlmResult> {
    const deadline = startDeadline(this.timeoutMs, req.signal);
    try {
      const body: MessageCreateParamsNonStreaming = { ...this.params(req), stream: false };
      const message = await this.client.messages.create(body, { signal: deadline.signal });
      let content = '';
      const toolCalls: LlmToolCall[] = [];
      for (const block of message.content) {
        if (block.type === 'text') content += block.text;
        else if (block.type === 'tool_use') {
          toolCalls.push({ id: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) });
        }
      }
      const inputTokens =
        message.usage.input_tokens +
        (message.usage.cache_creation_input_tokens ?? 0) +
        (message.usage.cache_read_input_tokens ?? 0);
      const outputTokens = message.usage.output_tokens;
      return {
        content,
        toolCalls,
        model: message.model,
        finishReason: message.stop_reason ?? 'unknown',
        usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
        provider: PROVIDER,
      };
    } catch (err) {
      throw toProviderError(err, PROVIDER, { signal: req.signal, timedOut: deadline.timedOut() });
    } finally {
      deadline.clear();
    }
  }

  async *stream(req: LlmRequest): AsyncGenerator<LlmStreamEvent> {
    let events: AsyncIterable<RawMessageStreamEvent>;
    // The deadline covers the wait for response headers; a long stream is bounded by the caller
    // (Temporal's heartbeat timeout), not by a fixed time.
    const deadline = startDeadline(this.timeoutMs, req.signal);
    try {
      const body: MessageCreateParamsStreaming = { ...this.params(req), stream: true };
      events = await this.client.messages.create(body, { signal: deadline.signal });
    } catch (err) {
      throw toProviderError(err, PROVIDER, { signal: req.signal, timedOut: deadline.timedOut() });
    } finally {
      deadline.clear();
    }

    const toolBlocks = new Map<number, { id: string; name: string; arguments: string }>();
    let model = req.model;
    let inputTokens = 0;
    let outputTokens = 0;
    let stopReason: string | undefined;
    let stopped = false;

    try {
      for await (const event of events) {
        switch (event.type) {
          case 'message_start': {
            model = event.message.model;
            const usage = event.message.usage;
            inputTokens =
              usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
            outputTokens = usage.output_tokens;
            break;
          }
          case 'content_block_start': {
            const block = event.content_block;
            if (block.type === 'tool_use') {
              toolBlocks.set(event.index, { id: block.id, name: block.name, arguments: '' });
              yield { type: 'tool_call_start', id: block.id, name: block.name };
            } else if (block.type === 'text' && block.text !== '') {
              yield { type: 'text_delta', delta: block.text };
            }
            break;
          }
          case 'content_block_delta': {
            const delta = event.delta;
            if (delta.type === 'text_delta') {
              if (delta.text !== '') yield { type: 'text_delta', delta: delta.text };
            } else if (delta.type === 'input_json_delta') {
              const call = toolBlocks.get(event.index);
              if (call && delta.partial_json !== '') {
                call.arguments += delta.partial_json;
                yield { type: 'tool_call_delta', id: call.id, arguments: delta.partial_json };
              }
            }
            break;
          }
          case 'content_block_stop': {
            const call = toolBlocks.get(event.index);
            if (call) {
              toolBlocks.delete(event.index);
              // A tool with no input streams no JSON at all; `{}` is what complete() would report.
              yield { type: 'tool_call_end', id: call.id, name: call.name, arguments: call.arguments || '{}' };
            }
            break;
          }
          case 'message_delta':
            if (event.delta.stop_reason) stopReason = event.delta.stop_reason;
            // output_tokens here is cumulative for the message, not an increment.
            outputTokens = event.usage.output_tokens;
            if (typeof event.usage.input_tokens === 'number') {
              inputTokens =
                event.usage.input_tokens +
                (event.usage.cache_creation_input_tokens ?? 0) +
                (event.usage.cache_read_input_tokens ?? 0);
            }
            break;
          case 'message_stop':
            stopped = true;
            break;
          default:
            break;
        }
      }
    } catch (err) {
      throw toProviderError(err, PROVIDER, { signal: req.signal });
    }
    if (req.signal?.aborted) {
      // The SDKs end a stream quietly when its signal fires; the caller still needs to know.
      throw toProviderError(req.signal.reason, PROVIDER, { signal: req.signal });
    }

    if (!stopped) {
      throw new ProviderError('anthropic: stream ended before message_stop', {
        kind: 'network',
        provider: PROVIDER,
        retryable: true,
      });
    }
    yield { type: 'usage', inputTokens, outputTokens };
    yield { type: 'finish', finishReason: stopReason ?? 'unknown', model };
  }
}
