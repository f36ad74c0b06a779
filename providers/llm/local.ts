// The `local` model: a deterministic, offline stand-in for an LLM so a new user can talk to
// agents with no API key. It is NOT a language model: it follows fixed rules (see docs), and
// answers GATHER extraction requests with the same deterministic pattern extractor as `STRATEGY: pattern`.
import { localExtractionAnswer, localValidationAnswer } from '../../abl/gather-llm';
import { keywords } from './keywords';
import { localClassificationAnswer } from './local-nlu';
import { localAssistAnswer } from './local-assist';
import { ProviderError } from './errors';
import {
  contentText,
  type ChatMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmResult,
  type LlmStreamEvent,
  type LlmToolCall,
  type ToolDefinition,
} from './types';

export { keywords, stem } from './keywords';

export const LOCAL_MODEL_ID = 'local';
export const LOCAL_PROVIDER_NAME = 'local';
const REPLY_PREFIX = '[local model]';

/** FNV-1a, so tool-call ids are stable for the same input. */
function hash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** Rough token count: one token per four characters, at least one for non-empty text. */
export function approximateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function lastOfRole(messages: ChatMessage[], role: ChatMessage['role']): ChatMessage | undefined {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const message = messages[i];
    if (message?.role === role) return message;
  }
  return undefined;
}

function toolWords(tool: ToolDefinition): Set<string> {
  // The tool's name adds the target agent's name (`handoff_to_Billing` → `billing`).
  return new Set([...keywords(tool.description), ...keywords(tool.name)]);
}

/** The tool whose description and name share the most keywords with the text; ties go to the first. */
export function bestMatchingTool(text: string, tools: ToolDefinition[]): ToolDefinition | undefined {
  const wanted = keywords(text);
  let best: ToolDefinition | undefined;
  let bestScore = 0;
  for (const tool of tools) {
    const words = toolWords(tool);
    const score = wanted.filter((word) => words.has(word)).length;
    if (score > bestScore) {
      best = tool;
      bestScore = score;
    }
  }
  return best;
}

function hasReasonProperty(tool: ToolDefinition): boolean {
  const properties = tool.parameters['properties'];
  return typeof properties === 'object' && properties !== null && Object.hasOwn(properties, 'reason');
}

function goalOf(messages: ChatMessage[]): string | undefined {
  for (const message of messages) {
    if (message.role !== 'system') continue;
    for (const line of contentText(message.content).split('\n')) {
      const match = /^\s*GOAL\s*[:-]?\s*(.+?)\s*$/i.exec(line);
      if (match?.[1]) return match[1];
    }
  }
  return undefined;
}

function truncate(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

interface LocalDecision {
  content: string;
  toolCalls: LlmToolCall[];
  finishReason: 'stop' | 'length' | 'tool_calls';
}

/**
 * The rules, applied in order: an assist-mode request → suggestions or a summary as JSON
 * (local-assist.ts); a GATHER extraction request → the pattern extractor's values as
 * JSON (a validation request → accepted, saying it was not judged; an NLU classification request →
 * the intent by patterns and example overlap); tool result → summary; keyword match → tool call; else a reply.
 */
export function decideLocalReply(req: Pick<LlmRequest, 'messages' | 'tools' | 'maxTokens'>): LocalDecision {
  const { messages } = req;
  const last = messages.at(-1);

  // GATHER STRATEGY llm|hybrid (abl/gather-llm.ts): answered with the deterministic pattern extractor;
  // an LLM-judged validate rule cannot be judged offline, so the value is accepted; an NLU
  // classification (abl/nlu.ts) by patterns and example overlap (local-nlu.ts).
  const system = messages.find((message) => message.role === 'system');
  if (system && last?.role === 'user') {
    const text = contentText(system.content);
    const extraction =
      localAssistAnswer(text, contentText(last.content)) ??
      localExtractionAnswer(text, contentText(last.content)) ??
      localValidationAnswer(text) ??
      localClassificationAnswer(text, contentText(last.content));
    if (extraction !== null) return { content: extraction, toolCalls: [], finishReason: 'stop' };
  }

  if (last?.role === 'tool') {
    const caller = messages
      .flatMap((message) => message.tool_calls ?? [])
      .find((call) => call.id === last.tool_call_id);
    const toolName = caller?.function.name ?? last.name ?? 'the tool';
    const result = truncate(contentText(last.content), 200);
    return limit(
      `${REPLY_PREFIX} ${toolName} returned: ${result === '' ? '(nothing)' : result}`,
      req.maxTokens,
    );
  }

  const userText = contentText(lastOfRole(messages, 'user')?.content ?? '');
  const tools = req.tools ?? [];
  if (last?.role === 'user' && tools.length > 0) {
    const tool = bestMatchingTool(userText, tools);
    if (tool) {
      const args = hasReasonProperty(tool) ? JSON.stringify({ reason: userText }) : '{}';
      const id = `call_local_${hash(`${messages.length}|${tool.name}|${userText}`)}`;
      return { content: '', toolCalls: [{ id, name: tool.name, arguments: args }], finishReason: 'tool_calls' };
    }
  }

  const goal = goalOf(messages);
  const parts = [`${REPLY_PREFIX} This is the offline test model, not a real LLM.`];
  if (goal !== undefined) parts.push(`Goal: ${truncate(goal, 200)}.`);
  parts.push(userText.trim() === '' ? 'Send a message to begin.' : `You said: "${truncate(userText, 500)}".`);
  return limit(parts.join(' '), req.maxTokens);
}

/** Honours maxTokens the way a real model would: cut the reply and report `length`. */
function limit(content: string, maxTokens: number | undefined): LocalDecision {
  if (maxTokens !== undefined && approximateTokens(content) > maxTokens) {
    return { content: content.slice(0, maxTokens * 4), toolCalls: [], finishReason: 'length' };
  }
  return { content, toolCalls: [], finishReason: 'stop' };
}

function inputTokensOf(req: LlmRequest): number {
  const text =
    req.messages.map((message) => contentText(message.content)).join('\n') +
    (req.tools ?? []).map((tool) => `${tool.name} ${tool.description} ${JSON.stringify(tool.parameters)}`).join('\n');
  return approximateTokens(text);
}

function outputTokensOf(decision: LocalDecision): number {
  return approximateTokens(decision.content + decision.toolCalls.map((call) => call.name + call.arguments).join(''));
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new ProviderError('local: request aborted', { kind: 'aborted', provider: LOCAL_PROVIDER_NAME, retryable: false });
  }
}

/** Splits text into word-sized pieces that concatenate back to the exact text. */
export function wordChunks(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
}

export class LocalProvider implements LlmProvider {
  readonly name = LOCAL_PROVIDER_NAME;

  async complete(req: LlmRequest): Promise<LlmResult> {
    throwIfAborted(req.signal);
    const decision = decideLocalReply(req);
    const inputTokens = inputTokensOf(req);
    const outputTokens = outputTokensOf(decision);
    return {
      content: decision.content,
      toolCalls: decision.toolCalls,
      model: LOCAL_MODEL_ID,
      finishReason: decision.finishReason,
      usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
      provider: LOCAL_PROVIDER_NAME,
    };
  }

  async *stream(req: LlmRequest): AsyncGenerator<LlmStreamEvent> {
    throwIfAborted(req.signal);
    const decision = decideLocalReply(req);
    for (const delta of wordChunks(decision.content)) {
      // Yield to the event loop between words so an abort or a slow consumer behaves as with a real stream.
      await new Promise<void>((resolve) => setImmediate(resolve));
      throwIfAborted(req.signal);
      yield { type: 'text_delta', delta };
    }
    for (const call of decision.toolCalls) {
      yield { type: 'tool_call_start', id: call.id, name: call.name };
      yield { type: 'tool_call_delta', id: call.id, arguments: call.arguments };
      yield { type: 'tool_call_end', id: call.id, name: call.name, arguments: call.arguments };
    }
    yield { type: 'usage', inputTokens: inputTokensOf(req), outputTokens: outputTokensOf(decision) };
    yield { type: 'finish', finishReason: decision.finishReason, model: LOCAL_MODEL_ID };
  }
}
