// Helpers of the rule checkpoints (tool_input / tool_output / handoff guardrails): the text a
// guardrail check sees for a JSON value, redaction inside JSON values, and keeping a blocked
// call's answer next to the call in the history sent to the LLM.
import type { Json } from '../ir';
import type { ChatTurn } from './contract';
import type { SafeRegex } from '../regex';

/** What a guardrail's `input`/`output` is for a JSON value: a string as is, anything else as JSON. */
export function guardText(v: Json): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? 'null');
}

/** Replaces the patterns' matches with `[REDACTED]` in every string inside `v` (keys untouched). */
export function redactJson(v: Json, patterns: readonly SafeRegex[]): Json {
  if (patterns.length === 0) return v;
  if (typeof v === 'string') {
    let out = v;
    for (const re of patterns) out = re.replaceAll(out, '[REDACTED]');
    return out;
  }
  if (Array.isArray(v)) return v.map((x) => redactJson(x, patterns));
  if (v && typeof v === 'object') {
    const out: { [k: string]: Json } = {};
    for (const [k, x] of Object.entries(v)) out[k] = redactJson(x, patterns);
    return out;
  }
  return v;
}

/**
 * The history with each assistant tool-call turn directly followed by its `tool` answers. A
 * blocked call's message (a constraint or guardrail reply) is recorded before the call's answer;
 * providers reject a tool-call turn that is not followed by its answers, so they move up.
 */
export function answersFirst(history: readonly ChatTurn[]): ChatTurn[] {
  const out: ChatTurn[] = [];
  const moved = new Set<number>();
  history.forEach((turn, i) => {
    if (moved.has(i)) return;
    out.push(turn);
    const ids = new Set((turn.toolCalls ?? []).map((c) => c.id));
    if (ids.size === 0) return;
    for (let j = i + 1; j < history.length; j++) {
      const later = history[j] as ChatTurn;
      if (later.role === 'user' || later.toolCalls) break;
      if (later.role === 'tool' && later.toolCallId !== undefined && ids.has(later.toolCallId)) {
        out.push(later);
        moved.add(j);
      }
    }
  });
  return out;
}

/**
 * An LLM answer's tool calls with `patterns` redacted from their arguments (a copy: the answer
 * itself is journalled). Arguments that are not JSON are redacted as text.
 */
export function redactToolCalls(calls: NonNullable<ChatTurn['toolCalls']>, patterns: readonly SafeRegex[]): NonNullable<ChatTurn['toolCalls']> {
  return calls.map((call) => {
    let args: Json;
    try {
      args = JSON.parse(call.arguments) as Json;
    } catch {
      return { ...call, arguments: redactJson(call.arguments, patterns) as string };
    }
    return { ...call, arguments: JSON.stringify(redactJson(args, patterns)) };
  });
}
