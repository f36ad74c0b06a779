// The session interpreter: a pure function from (state, event) to (state, commands, responses,
// trace). A turn that needs effects is replayed from its snapshot each time a result arrives
// (see turn.ts); this file owns that replay, event validation and the never-throw boundary.

import { fixedContext } from '../expr/context';
import { numericTextOn } from './options';
import type { CompilationOutput, Json } from '../ir';
import type {
  AdvanceResult, DelegateOutcome, RuntimeCommand, RuntimeEvent, RuntimeOptions, SessionRuntimeState, TraceDraft, TurnExecution,
} from './contract';
import { EndTurn, newThread, Suspend, Turn } from './turn';
import { clone } from './values';

export interface Interpreter {
  /** Starts a session: seeds test variables, runs the entry agent's ON_START (and a flow up to its first wait). */
  init(event: Extract<RuntimeEvent, { type: 'start' }>): AdvanceResult;
  /** Applies one event. Never throws: bad events produce an `error` trace and leave the state as it was. */
  advance(state: SessionRuntimeState, event: RuntimeEvent): AdvanceResult;
  /** A fresh state for a delegated child seeded with INPUT; drive it with `advance(state, {type: 'start'})`. */
  initDelegateState(agent: string, input: Record<string, Json>): SessionRuntimeState;
}

/** Which command type each result event answers. */
const ANSWERS: Record<Exclude<RuntimeEvent['type'], 'start' | 'user_message' | 'end'>, RuntimeCommand['type'][]> = {
  llm_result: ['call_llm'],
  tool_result: ['call_tool', 'suspend_for_callback'],
  delegate_result: ['delegate'],
  callback: ['suspend_for_callback'],
  human_resolved: ['escalate'],
  wait_expired: ['suspend_for_callback', 'escalate'],
  moderation_result: ['moderate'],
  confirmation_result: ['confirm_tool'],
};

/** An answer that confirms a tool call; anything else (no, a question, another request) declines it. */
const CONFIRMS = /^\s*(yes|y|yeah|yep|yup|sure|ok|okay|confirm|confirmed|correct|proceed|go ahead|do it|please do|approved?)\b(?![\s\S]*\b(no|not|don'?t|cancel|stop|wait)\b)/i;

export function confirmsToolCall(text: string): boolean {
  return CONFIRMS.test(text);
}

function emptyState(entryAgent: string): SessionRuntimeState {
  return { version: 1, entryAgent, threads: [], status: 'active', memory: {}, pending: null, handoffCount: 0, turn: 0, seq: 0, exec: null, mode: 'session', result: null };
}

function outcomeOf(state: SessionRuntimeState): AdvanceResult['outcome'] {
  if (state.status === 'completed') return 'completed';
  if (state.pending) return state.pending.kind === 'confirmation' ? 'turn_complete' : 'suspended';
  if (state.exec && state.exec.outstanding.length > 0) return 'awaiting_effects';
  return 'turn_complete';
}

function activeAgent(state: SessionRuntimeState | null | undefined): string {
  const threads = state?.threads ?? [];
  for (let i = threads.length - 1; i >= 0; i--) {
    const t = threads[i];
    if (t && t.status !== 'waiting' && t.status !== 'completed') return t.agent;
  }
  return state?.entryAgent ?? '';
}

function errorResult(state: SessionRuntimeState, kind: string, message: string): AdvanceResult {
  const trace: TraceDraft[] = [{ type: 'error', data: { agent: activeAgent(state), kind, message } }];
  return { state, commands: [], responses: [], trace, outcome: outcomeOf(state) };
}

/** The child's result for the parent's `delegate_result`, once `advance` reported `completed`. */
export function delegateOutcome(state: SessionRuntimeState, returns?: readonly string[]): DelegateOutcome {
  const agent = state.entryAgent;
  const r = state.result;
  if (state.status !== 'completed' || !r) {
    return { agent, status: 'failed', error: { kind: 'needs_input', message: `${agent} did not complete` } };
  }
  if (!r.ok) return { agent, status: 'failed', error: r.error ?? { kind: 'agent_error', message: `${agent} failed` }, ...(r.response ? { response: r.response } : {}) };
  const vars = state.threads.find((t) => t.agent === agent)?.vars ?? state.threads[state.threads.length - 1]?.vars ?? {};
  const picked: Record<string, Json> = {};
  for (const k of returns ?? Object.keys(vars)) if (vars[k] !== undefined) picked[k] = vars[k] as Json;
  return { agent, status: 'completed', response: r.response ?? '', returns: picked };
}

/** What the user said in this exchange: the answer to a confirmation question, else the turn's own message. */
function userTextOf(exec: TurnExecution, turn: Turn): { userText?: string } {
  if (exec.answerText !== undefined) return { userText: exec.answerText };
  return turn.userText !== null ? { userText: turn.userText } : {};
}

export function createInterpreter(compiled: CompilationOutput, options: RuntimeOptions): Interpreter {
  const entryName = compiled.entry_agent ?? Object.keys(compiled.agents)[0] ?? '';

  function freshSession(agentName: string, vars: Record<string, Json>, mode: 'session' | 'delegate'): SessionRuntimeState {
    const s = emptyState(agentName);
    s.mode = mode;
    const agent = compiled.agents[agentName];
    if (agent) s.threads.push(newThread(s, agent, vars));
    return s;
  }

  /** Runs (or replays) the turn in `exec` and packages the result. */
  function replay(exec: TurnExecution): AdvanceResult {
    const working = clone(exec.snapshot);
    const turn = new Turn(compiled, options, working, exec, { ...fixedContext(exec.nowMs, exec.seed), numericText: () => numericTextOn(options) });
    let finished = false;
    try {
      turn.run(exec.event);
      finished = true;
    } catch (e) {
      if (e instanceof EndTurn) finished = true;
      else if (!(e instanceof Suspend)) throw e;
    }
    const responses = turn.responses.slice(exec.emittedResponses);
    const voiced = turn.voices.slice(exec.emittedResponses);
    const voices = voiced.some((v) => v !== null) ? { voices: voiced } : {};
    const trace = turn.trace.slice(exec.emittedTrace);
    const state = turn.s;
    if (finished) {
      state.exec = null;
      if (state.status !== 'completed') {
        state.status = 'active';
        state.pending = null;
      }
      return {
        state,
        commands: [],
        responses,
        ...voices,
        trace,
        outcome: state.status === 'completed' ? 'completed' : 'turn_complete',
        ...userTextOf(exec, turn),
      };
    }
    state.exec = {
      ...exec,
      outstanding: turn.outstanding,
      kinds: turn.kinds,
      emittedResponses: turn.responses.length,
      emittedTrace: turn.trace.length,
    };
    return {
      state,
      commands: turn.commands,
      responses,
      ...voices,
      trace,
      // A confirmation question ends the turn: the user's answer continues it.
      outcome: state.pending ? (state.pending.kind === 'confirmation' ? 'turn_complete' : 'suspended') : 'awaiting_effects',
      ...userTextOf(exec, turn),
    };
  }

  /**
   * The user's answer to a tool's confirmation question: the waiting turn is replayed with it, so
   * the call runs (or is declined) with exactly the arguments the user was shown.
   */
  function answerConfirmation(state: SessionRuntimeState, text: string): AdvanceResult {
    const exec = state.exec;
    const id = state.pending?.commandId;
    if (!exec || !id || !exec.outstanding.includes(id)) return startTurn({ ...state, pending: null, exec: null }, { type: 'user_message', text });
    const answer: RuntimeEvent = { type: 'confirmation_result', commandId: id, confirmed: confirmsToolCall(text) };
    return replay({ ...exec, journal: { ...exec.journal, [id]: answer }, outstanding: exec.outstanding.filter((x) => x !== id), answerText: text });
  }

  function startTurn(state: SessionRuntimeState, event: RuntimeEvent): AdvanceResult {
    // The snapshot shares the caller's state instead of copying it: nothing mutates it (advance
    // never changes its input, and `replay` works on a copy), and a copy per turn of every
    // thread's history was measurable on the workflow thread.
    const snapshot: SessionRuntimeState = { ...state, exec: null };
    const seed = Math.floor(options.random() * 0x100000000) >>> 0;
    return replay({ snapshot, event, journal: {}, outstanding: [], kinds: {}, emittedResponses: 0, emittedTrace: 0, nowMs: options.now(), seed });
  }

  /** While suspended, user messages only get a holding reply (after the input guardrails). */
  function holding(state: SessionRuntimeState, text: string): AdvanceResult {
    const next = clone(state);
    const exec: TurnExecution = { snapshot: next, event: { type: 'user_message', text }, journal: {}, outstanding: [], kinds: {}, emittedResponses: 0, emittedTrace: 0, nowMs: options.now(), seed: 1 };
    const turn = new Turn(compiled, options, next, exec, fixedContext(exec.nowMs, 1));
    const th = turn.active();
    const trace: TraceDraft[] = [];
    let reply: string;
    const pending = state.pending;
    if (th) {
      const g = turn.guardrails(th, turn.agent(th), 'input', text);
      trace.push(...turn.trace);
      if (g.blocked !== null) reply = g.blocked;
    }
    const messages = th ? turn.agent(th).messages : {};
    reply ??= pending?.kind === 'human_task'
      ? messages.holding_human ?? 'Your request is with our team. I will continue as soon as they respond.'
      : messages.holding_callback ?? `I'm still waiting for ${pending?.kind === 'callback' ? pending.tool : 'a result'} to finish. I will continue as soon as it does.`;
    trace.push({ type: 'response', data: { agent: th?.agent ?? state.entryAgent, text: reply } });
    return { state, commands: [], responses: [reply], trace, outcome: 'suspended' };
  }

  function advanceUnsafe(state: SessionRuntimeState, event: RuntimeEvent): AdvanceResult {
    switch (event.type) {
      case 'start':
        if (state.turn !== 0 || state.exec) return errorResult(state, 'already_started', 'The session has already started.');
        return startTurn(state, event);
      case 'user_message':
        if (typeof event.text !== 'string') return errorResult(state, 'bad_event', 'user_message needs a text.');
        if (state.status === 'completed') return errorResult(state, 'session_completed', 'The session has ended.');
        if (state.pending?.kind === 'confirmation') return answerConfirmation(state, event.text);
        if (state.pending) return holding(state, event.text);
        if (state.exec) return errorResult(state, 'turn_in_progress', 'A turn is still waiting for effects; send the message after it completes.');
        if (state.turn === 0) return errorResult(state, 'not_started', 'The session has not started.');
        return startTurn(state, event);
      case 'end':
        // The session ends from outside: the active agent's after_agent runs, then it is over.
        if (state.status === 'completed') return errorResult(state, 'session_completed', 'The session has ended.');
        if (state.exec) return errorResult(state, 'turn_in_progress', 'A turn is still waiting for effects.');
        if (state.turn === 0) return errorResult(state, 'not_started', 'The session has not started.');
        return startTurn({ ...state, pending: null, status: 'active' }, event);
      default: {
        const exec = state.exec;
        const id = (event as { commandId?: unknown }).commandId;
        if (!exec || typeof id !== 'string' || !exec.outstanding.includes(id)) {
          return errorResult(state, 'unknown_command', `No outstanding command ${String(id)} for ${event.type}.`);
        }
        const kind = exec.kinds[id];
        const accepted = ANSWERS[event.type] as RuntimeCommand['type'][] | undefined;
        if (!kind || !accepted || !accepted.includes(kind)) {
          return errorResult(state, 'unexpected_event', `${event.type} cannot answer ${kind ?? 'an unknown'} command ${id}.`);
        }
        const journal = { ...exec.journal, [id]: event };
        const outstanding = exec.outstanding.filter((x) => x !== id);
        if (outstanding.length > 0) {
          return { state: { ...state, exec: { ...exec, journal, outstanding } }, commands: [], responses: [], trace: [], outcome: 'awaiting_effects' };
        }
        return replay({ ...exec, journal, outstanding });
      }
    }
  }

  function advance(state: SessionRuntimeState, event: RuntimeEvent): AdvanceResult {
    try {
      if (!state || state.version !== 1 || !Array.isArray(state.threads)) {
        return errorResult(state ?? emptyState(entryName), 'bad_state', 'Unknown session state version.');
      }
      if (!event || typeof event !== 'object') return errorResult(state, 'bad_event', 'Missing event.');
      return advanceUnsafe(state, event);
    } catch (e) {
      return errorResult(state, 'internal_error', e instanceof Error ? e.message : String(e));
    }
  }

  return {
    init(event) {
      const s = freshSession(entryName, {}, 'session');
      if (s.threads.length === 0) {
        s.status = 'completed';
        return errorResult(s, 'no_entry_agent', 'The project has no entry agent.');
      }
      return advance(s, event ?? { type: 'start' });
    },
    advance,
    initDelegateState(agent, input) {
      const s = freshSession(agent, input, 'delegate');
      if (s.threads.length === 0) {
        s.status = 'completed';
        s.result = { ok: false, response: null, label: null, error: { kind: 'agent_unavailable', message: `Unknown agent ${agent}` } };
      }
      return s;
    },
  };
}

/** Standalone form of `Interpreter.initDelegateState`. */
export function initDelegateState(compiled: CompilationOutput, agent: string, input: Record<string, Json>): SessionRuntimeState {
  return createInterpreter(compiled, { now: () => 0, random: () => 0 }).initDelegateState(agent, input);
}
