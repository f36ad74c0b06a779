// Test driver for the session interpreter: answers commands with scripted results and records
// everything the interpreter returned.

import { compileProject, fixedContext, type CompilationOutput, type Json } from '../../../abl';
import {
  createInterpreter, type AdvanceResult, type Interpreter, type RuntimeCommand, type RuntimeEvent, type RuntimeOptions, type SessionRuntimeState,
  type TraceDraft,
} from '../../../abl/runtime';
import { EXAMPLES_DIR, readProject } from '../abl/helpers';

type TraceData = { [T in TraceDraft as T['type']]: T['data'] };

let cached: CompilationOutput | null = null;
export function examples(): CompilationOutput {
  cached ??= compileProject(readProject(EXAMPLES_DIR));
  return cached;
}

/** Answers one command with the event to feed back; return undefined to leave it outstanding. */
export type Responder = (cmd: RuntimeCommand, driver: Driver) => RuntimeEvent | undefined;

export const llmText = (id: string, content: string): RuntimeEvent => ({ type: 'llm_result', commandId: id, ok: true, content, toolCalls: [] });
export const llmCall = (id: string, name: string, args: Record<string, Json> = {}, content = ''): RuntimeEvent => ({
  type: 'llm_result', commandId: id, ok: true, content, toolCalls: [{ id: `tc-${id}`, name, arguments: JSON.stringify(args) }],
});
export const toolOk = (id: string, value: Json): RuntimeEvent => ({ type: 'tool_result', commandId: id, ok: true, value });
export const toolFail = (id: string, message = 'boom', kind = 'tool_error'): RuntimeEvent => ({ type: 'tool_result', commandId: id, ok: false, error: { kind, message } });

export class Driver {
  readonly interp: Interpreter;
  state!: SessionRuntimeState;
  responses: string[] = [];
  trace: TraceDraft[] = [];
  commands: RuntimeCommand[] = [];
  results: AdvanceResult[] = [];
  /** Commands left unanswered (suspensions). */
  open: RuntimeCommand[] = [];
  last!: AdvanceResult;

  constructor(public responder: Responder, compiled: CompilationOutput = examples(), now = 1_700_000_000_000, options: Partial<RuntimeOptions> = {}) {
    const ctx = fixedContext(now, 7);
    this.interp = createInterpreter(compiled, { now: ctx.now, random: ctx.random, ...options });
  }

  private take(r: AdvanceResult): AdvanceResult {
    this.results.push(r);
    this.last = r;
    this.state = r.state;
    this.responses.push(...r.responses);
    this.trace.push(...r.trace);
    this.commands.push(...r.commands);
    return r;
  }

  /** Feeds results for the commands in `r` until nothing is answerable. Returns the responses of this exchange. */
  private pump(r: AdvanceResult, before: number): string[] {
    let queue = [...r.commands];
    while (queue.length > 0) {
      const cmd = queue.shift() as RuntimeCommand;
      const ev = this.responder(cmd, this);
      if (!ev) {
        this.open.push(cmd);
        continue;
      }
      const next = this.take(this.interp.advance(this.state, ev));
      queue = [...queue, ...next.commands];
    }
    return this.responses.slice(before);
  }

  start(event: Extract<RuntimeEvent, { type: 'start' }> = { type: 'start' }): string[] {
    const before = this.responses.length;
    return this.pump(this.take(this.interp.init(event)), before);
  }

  send(text: string, metadata?: Record<string, Json>): string[] {
    const before = this.responses.length;
    return this.pump(this.take(this.interp.advance(this.state, { type: 'user_message', text, ...(metadata ? { metadata } : {}) })), before);
  }

  /** The session's first message, sent with the start in one request (`withStart`). */
  sendWithStart(text: string): string[] {
    const before = this.responses.length;
    return this.pump(this.take(this.interp.advance(this.state, { type: 'user_message', text, withStart: true })), before);
  }

  /** A channel's structured action (a button press), with the text the transcript shows. */
  press(id: string, value?: Json, text = id): string[] {
    const before = this.responses.length;
    const action = value === undefined ? { id } : { id, value };
    return this.pump(this.take(this.interp.advance(this.state, { type: 'user_message', text, action })), before);
  }

  /** Feeds an event (callback, human_resolved, wait_expired…) and keeps pumping. */
  feed(ev: RuntimeEvent): string[] {
    const before = this.responses.length;
    this.open = this.open.filter((c) => c.id !== (ev as { commandId?: string }).commandId);
    return this.pump(this.take(this.interp.advance(this.state, ev)), before);
  }

  active(): string {
    const t = [...this.state.threads].reverse().find((x) => x.status !== 'waiting' && x.status !== 'completed');
    return t?.agent ?? '';
  }

  vars(agent?: string): Record<string, Json> {
    const t = agent ? [...this.state.threads].reverse().find((x) => x.agent === agent) : [...this.state.threads].reverse().find((x) => x.status !== 'waiting');
    return t?.vars ?? {};
  }

  traceOf<K extends keyof TraceData>(type: K): TraceData[K][] {
    return this.trace.filter((t) => t.type === type).map((t) => t.data as TraceData[K]);
  }
}

/** A responder built from per-tool and per-LLM handlers; unknown commands fail the test loudly. */
export function scripted(opts: {
  tools?: Record<string, (args: Record<string, Json>, id: string) => RuntimeEvent | undefined>;
  llm?: (cmd: Extract<RuntimeCommand, { type: 'call_llm' }>, d: Driver) => RuntimeEvent | undefined;
  delegate?: (cmd: Extract<RuntimeCommand, { type: 'delegate' }>) => RuntimeEvent | undefined;
}): Responder {
  return (cmd, d) => {
    switch (cmd.type) {
      case 'call_tool': {
        const h = opts.tools?.[cmd.tool];
        if (!h) throw new Error(`unexpected tool call ${cmd.tool}`);
        return h(cmd.args, cmd.id);
      }
      case 'call_llm':
        if (!opts.llm) throw new Error('unexpected LLM call');
        return opts.llm(cmd, d);
      case 'delegate':
        return opts.delegate?.(cmd);
      default:
        return undefined;
    }
  };
}
