// Expectation matchers of scenario tests: what a turn or a whole scenario produced (an
// Observation) checked against an `expect` block. Each check gives one result with a message
// that says what was expected and what came instead.
import { SafeRegex } from '../../abl/regex';
import type { Expect, ResponseExpectation } from './schema';

export interface TraceEvent {
  type: string;
  data: Record<string, unknown>;
}

/** What a turn (or the whole scenario) produced. */
export interface Observation {
  /** The replies, joined by a blank line (as the chat API's `response`). */
  response: string;
  agent: string;
  status: string;
  variables: Record<string, unknown>;
  agentPath: string[];
  events: TraceEvent[];
}

export interface ExpectationResult {
  /** What was checked, e.g. `response.contains "refund"`. */
  expectation: string;
  passed: boolean;
  /** Why it failed, or the judge's reasoning. */
  message: string;
}

/** An LLM judge: does `response` satisfy `rubric`? */
export type Judge = (input: { rubric: string; response: string; model?: string }) => Promise<{ pass: boolean; reason: string }>;

const show = (value: unknown): string => {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
};
const many = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** True when `actual` holds everything in `expected`: objects partially (deeply), arrays element by element, the rest equal. */
export function containsDeep(actual: unknown, expected: unknown): boolean {
  if (expected === null || typeof expected !== 'object') return Object.is(actual, expected);
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => containsDeep(actual[i], e));
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  const a = actual as Record<string, unknown>;
  return Object.entries(expected).every(([k, v]) => Object.hasOwn(a, k) && containsDeep(a[k], v));
}

/** Finds `wanted` items in `events` in order (others may come between); returns the first not found, or -1. */
function inOrder<T>(events: readonly TraceEvent[], wanted: readonly T[], matches: (e: TraceEvent, w: T) => boolean): number {
  let at = 0;
  for (let i = 0; i < wanted.length; i++) {
    while (at < events.length && !matches(events[at]!, wanted[i]!)) at++;
    if (at >= events.length) return i;
    at++;
  }
  return -1;
}

async function checkResponse(r: ResponseExpectation, response: string, judge: Judge): Promise<ExpectationResult[]> {
  const out: ExpectationResult[] = [];
  const got = `got ${show(response)}`;
  if (r.equals !== undefined) {
    out.push({ expectation: `response.equals ${show(r.equals)}`, passed: response === r.equals, message: response === r.equals ? '' : got });
  }
  for (const text of many(r.contains)) {
    const passed = response.includes(text);
    out.push({ expectation: `response.contains ${show(text)}`, passed, message: passed ? '' : got });
  }
  for (const text of many(r.notContains)) {
    const passed = !response.includes(text);
    out.push({ expectation: `response.notContains ${show(text)}`, passed, message: passed ? '' : got });
  }
  for (const source of many(r.regex)) {
    const passed = SafeRegex.compile(source).test(response);
    out.push({ expectation: `response.regex /${source}/`, passed, message: passed ? '' : got });
  }
  if (r.judge !== undefined) {
    const { rubric, model } = typeof r.judge === 'string' ? { rubric: r.judge, model: undefined } : r.judge;
    const label = `response.judge ${show(rubric.length > 80 ? `${rubric.slice(0, 79)}…` : rubric)}`;
    try {
      const verdict = await judge({ rubric, response, ...(model ? { model } : {}) });
      out.push({ expectation: label, passed: verdict.pass, message: verdict.pass ? verdict.reason : `${verdict.reason}; ${got}` });
    } catch (err) {
      out.push({ expectation: label, passed: false, message: `the judge failed: ${err instanceof Error ? err.message : String(err)}` });
    }
  }
  return out;
}

/** Checks one `expect` block against what was observed. */
export async function checkExpect(expect: Expect, seen: Observation, judge: Judge): Promise<ExpectationResult[]> {
  const out: ExpectationResult[] = [];
  if (expect.response) out.push(...(await checkResponse(expect.response, seen.response, judge)));
  if (expect.agent !== undefined) {
    const passed = seen.agent === expect.agent;
    out.push({ expectation: `agent ${expect.agent}`, passed, message: passed ? '' : `the active agent is ${seen.agent}` });
  }
  if (expect.status !== undefined) {
    const passed = seen.status === expect.status;
    out.push({ expectation: `status ${expect.status}`, passed, message: passed ? '' : `the session is ${seen.status}` });
  }
  if (expect.agentPath) {
    const passed = seen.agentPath.join(' → ') === expect.agentPath.join(' → ');
    out.push({ expectation: `agentPath ${expect.agentPath.join(' → ')}`, passed, message: passed ? '' : `the path was ${seen.agentPath.join(' → ')}` });
  }
  const handoffs = seen.events.filter((e) => e.type === 'handoff');
  if (expect.handoffs) {
    const wanted = expect.handoffs.map((h) => (typeof h === 'string' ? { to: h, from: undefined } : h));
    const label = wanted.length === 0 ? 'no handoff' : `handoffs ${wanted.map((h) => `${h.from ?? '*'} → ${h.to}`).join(', ')}`;
    const actual = handoffs.map((e) => `${String(e.data['fromAgent'])} → ${String(e.data['toAgent'])}`).join(', ') || 'none';
    const missing = wanted.length === 0 ? (handoffs.length === 0 ? -1 : 0) : inOrder(handoffs, wanted, (e, w) => e.data['toAgent'] === w.to && (w.from === undefined || e.data['fromAgent'] === w.from));
    out.push({ expectation: label, passed: missing === -1, message: missing === -1 ? '' : `handoffs were: ${actual}` });
  }
  const calls = seen.events.filter((e) => e.type === 'tool_call');
  const callsText = () => calls.map((e) => `${String(e.data['tool'])}(${show(e.data['input'])})`).join(', ') || 'none';
  if (expect.toolCalls) {
    const wanted = expect.toolCalls.map((c) => (typeof c === 'string' ? { tool: c } : c));
    if (wanted.length === 0) {
      out.push({ expectation: 'no tool call', passed: calls.length === 0, message: calls.length === 0 ? '' : `tools called: ${callsText()}` });
    }
    for (const w of wanted) {
      const label = `toolCalls ${w.tool}${w.args ? ` with ${show(w.args)}` : ''}${w.argsMatch ? ` matching ${show(w.argsMatch)}` : ''}`;
      const matches = (e: TraceEvent) => {
        if (e.data['tool'] !== w.tool) return false;
        const input = (e.data['input'] ?? {}) as Record<string, unknown>;
        if (w.args && !containsDeep(input, w.args)) return false;
        return Object.entries(w.argsMatch ?? {}).every(([k, source]) => {
          const v = input[k];
          return v !== undefined && SafeRegex.compile(source).test(typeof v === 'string' ? v : JSON.stringify(v));
        });
      };
      const passed = calls.some(matches);
      out.push({ expectation: label, passed, message: passed ? '' : `tools called: ${callsText()}` });
    }
    // The order of several expected calls is checked as a whole.
    if (wanted.length > 1 && out.slice(-wanted.length).every((r) => r.passed)) {
      const missing = inOrder(calls, wanted, (e, w) => e.data['tool'] === w.tool);
      if (missing !== -1) out.push({ expectation: `toolCalls in order ${wanted.map((w) => w.tool).join(', ')}`, passed: false, message: `tools called: ${callsText()}` });
    }
  }
  for (const tool of expect.notCalled ?? []) {
    const passed = !calls.some((e) => e.data['tool'] === tool);
    out.push({ expectation: `notCalled ${tool}`, passed, message: passed ? '' : `tools called: ${callsText()}` });
  }
  for (const [name, value] of Object.entries(expect.state ?? {})) {
    const actual = seen.variables[name];
    const passed = containsDeep(actual, value);
    out.push({ expectation: `state.${name} = ${show(value)}`, passed, message: passed ? '' : `state.${name} is ${show(actual)}` });
  }
  if (expect.events?.length) {
    const missing = inOrder(seen.events, expect.events, (e, w) => e.type === w.type && (!w.data || containsDeep(e.data, w.data)));
    const label = `events ${expect.events.map((e) => `${e.type}${e.data ? ` ${show(e.data)}` : ''}`).join(', ')}`;
    const types = seen.events.map((e) => e.type).join(', ') || 'none';
    out.push({ expectation: label, passed: missing === -1, message: missing === -1 ? '' : `no match for ${show(expect.events[missing])} in order; events were: ${types}` });
  }
  return out;
}
