// Provider-neutral shapes for one LLM call: the request, the non-streamed result and the
// stream events (which map 1:1 onto the SSE events of POST /api/v1/chat/stream).

/** The providers Switchboard can talk to. */
export const LLM_PROVIDER_NAMES = ['openai', 'anthropic', 'local'] as const;
export type LlmProviderName = (typeof LLM_PROVIDER_NAMES)[number];

export function isLlmProviderName(value: string): value is LlmProviderName {
  return (LLM_PROVIDER_NAMES as readonly string[]).includes(value);
}

/** Roles accepted in a conversation, as in the chat endpoints' message items. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

export interface TextContentPart {
  type: 'text';
  text: string;
}

export interface ImageContentPart {
  type: 'image_url';
  /** An https URL or a `data:<mime>;base64,<data>` URL. */
  image_url: { url: string };
}

export type ContentPart = TextContentPart | ImageContentPart;

/** A tool call the assistant made earlier in the conversation (OpenAI wire shape). */
export interface AssistantToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: ChatRole;
  content: string | ContentPart[];
  name?: string;
  /** For `role: 'tool'`: the id of the tool call this message answers. */
  tool_call_id?: string;
  /** For `role: 'assistant'`: the tool calls it made. */
  tool_calls?: AssistantToolCall[];
}

/** A JSON Schema object describing a tool's arguments. */
export type JsonSchema = { [key: string]: unknown };

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface LlmRequest {
  /** The provider's own model id (already resolved; no `provider:` prefix). */
  model: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** 0-2. Not sent to providers whose API no longer accepts it (see docs/llm-providers.md). */
  temperature?: number;
  /** 1-200,000. */
  maxTokens?: number;
  /** Aborts the HTTP request (and the stream) when fired. */
  signal?: AbortSignal;
}

export interface LlmToolCall {
  id: string;
  name: string;
  /** The arguments as the model produced them: a JSON text, possibly invalid. */
  arguments: string;
}

export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export interface LlmResult {
  content: string;
  toolCalls: LlmToolCall[];
  /** The model that served the request, as reported by the provider. */
  model: string;
  /** The provider's own stop reason: OpenAI `stop|length|tool_calls|…`, Anthropic `end_turn|max_tokens|tool_use|…`. */
  finishReason: string;
  usage: LlmUsage;
  /** `openai`, `anthropic` or `local`. */
  provider: string;
}

export type LlmStreamEvent =
  | { type: 'text_delta'; delta: string }
  | { type: 'tool_call_start'; id: string; name: string }
  | { type: 'tool_call_delta'; id: string; arguments: string }
  | { type: 'tool_call_end'; id: string; name: string; arguments: string }
  | { type: 'usage'; inputTokens: number; outputTokens: number }
  | { type: 'finish'; finishReason: string; model: string };

export type LlmStreamEventType = LlmStreamEvent['type'];

/**
 * One LLM backend. `stream()` yields events in order: text and tool-call events, then
 * `usage` (when the provider reports it), then exactly one `finish`. Failures — HTTP
 * errors, a dropped connection, an abort — are thrown as `ProviderError`, from `complete()`
 * or from the stream iterator.
 */
export interface LlmProvider {
  readonly name: string;
  complete(req: LlmRequest): Promise<LlmResult>;
  stream(req: LlmRequest): AsyncIterable<LlmStreamEvent>;
}

/** Text of a message's content: strings as-is, multimodal parts' text joined by newlines. */
export function contentText(content: string | ContentPart[]): string {
  if (typeof content === 'string') return content;
  return content
    .filter((part): part is TextContentPart => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}

/**
 * Folds a stream into the result `complete()` would have returned, for callers that stream
 * to a client and also need the final text (and for tests comparing the two paths).
 */
export async function collectStream(events: AsyncIterable<LlmStreamEvent>, provider: string): Promise<LlmResult> {
  let content = '';
  const toolCalls: LlmToolCall[] = [];
  let usage: LlmUsage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  let finishReason = 'unknown';
  let model = '';
  for await (const event of events) {
    switch (event.type) {
      case 'text_delta':
        content += event.delta;
        break;
      case 'tool_call_end':
        toolCalls.push({ id: event.id, name: event.name, arguments: event.arguments });
        break;
      case 'usage':
        usage = {
          inputTokens: event.inputTokens,
          outputTokens: event.outputTokens,
          totalTokens: event.inputTokens + event.outputTokens,
        };
        break;
      case 'finish':
        finishReason = event.finishReason;
        model = event.model;
        break;
      case 'tool_call_start':
      case 'tool_call_delta':
        break;
      default: {
        const unreachable: never = event;
        throw new Error(`unknown stream event ${JSON.stringify(unreachable)}`);
      }
    }
  }
  return { content, toolCalls, model, finishReason, usage, provider };
}
