// Runs scenario tests in-process through the session interpreter the AgentSession workflow runs
// (abl/runtime), answering its commands as the workflow's effects do: model calls go to the
// configured model, tool calls to the scenario's mocks (never to real back-ends), delegations run
// the child agent in-process, provider guardrails use the offline moderation rules. Many
// scenarios run at once; each gets its own interpreter and a fixed clock and seed.
import { fixedContext, type CompilationOutput, type Json } from '../../abl';
import { maskSensitive, SENSITIVE_MASK } from '../../abl/gather';
import {
  createInterpreter,
  delegateOutcome,
  type AdvanceResult,
  type ChatTurn,
  type DelegateOutcome,
  type Interpreter,
  type LlmRequestSpec,
  type RuntimeCommand,
  type RuntimeEvent,
  type SessionRuntimeState,
} from '../../abl/runtime';
import { localModeration } from '../../providers/moderation';
import type { ChatMessage, LlmProvider } from '../../providers/llm';
import { checkExpect, containsDeep, type ExpectationResult, type Judge, type Observation, type TraceEvent } from './expect';
import type { Expect, Persona, Scenario, ScenarioFile, ToolMock } from './schema';
import { createJudge, nextPersonaMessage } from './judge';

/** A model ready to call: `model` null asks for the default (the agent's tier). */
export type ResolveModel = (model: string | null) => Promise<{ llm: LlmProvider; provider: string; model: string }>;

export interface RunOptions {
  compiled: CompilationOutput;
  resolveModel: ResolveModel;
  /** The judge's and personas' model when a rubric or persona names none; null: the default model. */
  judgeModel?: string | null;
  /** Scenarios run at once. @default 8 */
  concurrency?: number;
  /** The sessions' clock (fixed, so dates and ids repeat from run to run). */
  nowMs?: number;
  /** Wall-clock time (ms since the epoch) after which no further turn starts; the rest are reported as not run. */
  deadlineMs?: number;
}

export interface TurnReport {
  user: string;
  response: string;
  agent: string;
  expectations: ExpectationResult[];
}

export interface ScenarioReport {
  file: string;
  name: string;
  agent: string;
  passed: boolean;
  durationMs: number;
  turns: TurnReport[];
  /** The scenario-level `expect` block's results. */
  expectations: ExpectationResult[];
  /** What stopped or spoiled the run itself (an unmocked tool, an unknown agent, a failed model). */
  errors: string[];
}

export interface FileReport {
  file: string;
  scenarios: ScenarioReport[];
}

export interface RunReport {
  files: FileReport[];
  total: number;
  passed: number;
  failed: number;
  durationMs: number;
}

/** How deep delegated agents may nest, as in the workflow (workflows/effects.ts). */
const MAX_DELEGATION_DEPTH = 10;
const DEFAULT_NOW_MS = Date.UTC(2030, 0, 15, 12, 0, 0);

function toChatMessage(turn: ChatTurn): ChatMessage {
  return {
    role: turn.role,
    content: turn.content,
    ...(turn.toolCallId ? { tool_call_id: turn.toolCallId } : {}),
    ...(turn.toolCalls?.length ? { tool_calls: turn.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) } : {}),
  };
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The thread that holds the conversation: the session's last. */
const activeAgent = (state: SessionRuntimeState): string => state.threads[state.threads.length - 1]?.agent ?? state.entryAgent;

/** One session of one scenario: the interpreter, its state and everything it produced (a test drives one directly). */
export class ScenarioSession {
  readonly events: TraceEvent[] = [];
  readonly agentPath: string[] = [];
  readonly errors: string[] = [];
  private readonly interpreter: Interpreter;
  state: SessionRuntimeState | null = null;

  constructor(
    private readonly compiled: CompilationOutput,
    private readonly scenario: Scenario,
    private readonly resolveModel: ResolveModel,
    private readonly nowMs: number,
  ) {
    this.interpreter = this.interpreterFor(scenario.agent);
  }

  private interpreterFor(agent: string): Interpreter {
    const ctx = fixedContext(this.nowMs, 7);
    // As a session started today: every behaviour on (the other options default to on), tool calls of one answer together.
    return createInterpreter(
      { ...this.compiled, entry_agent: agent },
      { now: ctx.now, random: ctx.random, mockedTools: new Set(this.scenario.toolMocks.map((m) => m.tool)), parallelToolCalls: true },
    );
  }

  private note(state: SessionRuntimeState): void {
    const agent = activeAgent(state);
    if (this.agentPath[this.agentPath.length - 1] !== agent) this.agentPath.push(agent);
  }

  /** The first user message: the session starts (ON_START) and takes it in the same turn, as a chat's first request. */
  async first(text: string, metadata?: Record<string, Json>): Promise<string[]> {
    const responses: string[] = [];
    const started = this.interpreter.init({
      type: 'start',
      sessionVariables: { channel: 'api', ...((this.scenario.sessionVariables ?? {}) as Record<string, Json>) },
      ...(this.scenario.skipOnStart ? { skipOnStart: true } : {}),
    });
    this.state = (await this.drive(this.interpreter, started, responses, [])).state;
    await this.message(text, metadata, responses, true);
    return responses;
  }

  async message(text: string, metadata?: Record<string, Json>, responses: string[] = [], withStart = false): Promise<string[]> {
    const first = this.interpreter.advance(this.state!, { type: 'user_message', text, ...(metadata ? { metadata } : {}), ...(withStart ? { withStart: true } : {}) });
    this.state = (await this.drive(this.interpreter, first, responses, [])).state;
    return responses;
  }

  /** As the workflow's driveInterpreter: a batch runs concurrently, its results are fed back in order. */
  private async drive(interpreter: Interpreter, first: AdvanceResult, responses: string[], chain: readonly string[]): Promise<AdvanceResult> {
    let result = first;
    const take = (r: AdvanceResult) => {
      responses.push(...r.responses);
      for (const draft of r.trace) if (draft.type !== 'tool_output_guarded') this.events.push({ type: draft.type, data: { ...draft.data } });
      if (chain.length === 0) this.note(r.state);
    };
    take(result);
    let batch = result.commands;
    while (batch.length > 0) {
      const events = await Promise.all(batch.map((command) => this.execute(command, chain)));
      batch = [];
      for (const event of events) {
        if (!event) continue;
        result = interpreter.advance(result.state, event);
        take(result);
        batch.push(...result.commands);
      }
    }
    return result;
  }

  private mockFor(tool: string, args: Record<string, Json>): ToolMock | undefined {
    return this.scenario.toolMocks.find((m) => m.tool === tool && (!m.when || containsDeep(args, m.when.args)));
  }

  private async execute(command: RuntimeCommand, chain: readonly string[]): Promise<RuntimeEvent | null> {
    switch (command.type) {
      case 'call_llm':
        return this.callLlm(command);
      case 'call_tool':
      case 'suspend_for_callback': {
        // As the session's trace shows it: the values of `sensitive` GATHER fields masked.
        const input = command.type === 'call_tool' && command.sensitiveArgs?.length
          ? Object.fromEntries(Object.entries(command.args).map(([k, v]) => [k, command.sensitiveArgs!.includes(k) ? SENSITIVE_MASK : v]))
          : command.args;
        this.events.push({ type: 'tool_call', data: { agent: command.agent, tool: command.tool, input } });
        const mock = this.mockFor(command.tool, command.args);
        const fail = (message: string): RuntimeEvent => ({ type: 'tool_result', commandId: command.id, ok: false, error: { kind: 'tool_error', message } });
        if (!mock) {
          this.errors.push(`tool ${command.tool} was called with ${JSON.stringify(input)} and no mock answers it (scenario runs never call real tools)`);
          this.events.push({ type: 'tool_result', data: { agent: command.agent, tool: command.tool, success: false, mocked: false } });
          return fail(`Tool ${command.tool} has no mock in this scenario`);
        }
        this.events.push({ type: 'tool_result', data: { agent: command.agent, tool: command.tool, success: mock.error === undefined, mocked: true, ...(mock.error === undefined ? { output: mock.response ?? null } : { error: mock.error }) } });
        if (mock.error !== undefined) return fail(mock.error);
        // As in the workflow: only a session can wait for a callback, never a delegated agent.
        if (command.type === 'suspend_for_callback' && chain.length > 0) return fail(`Tool ${command.tool} is asynchronous: a delegated agent cannot wait for its callback`);
        if (command.type === 'suspend_for_callback') {
          // An async tool's mock is its callback: the session resumes with it at once.
          this.events.push({ type: 'decision', data: { decisionKind: 'pause', decision: 'suspend_for_callback', agent: command.agent, tool: command.tool } });
          return { type: 'callback', commandId: command.id, payload: (mock.response ?? null) as Json };
        }
        return { type: 'tool_result', commandId: command.id, ok: true, value: (mock.response ?? null) as Json };
      }
      case 'delegate':
        return { type: 'delegate_result', commandId: command.id, results: await Promise.all(command.tasks.map((_, i) => this.delegate(command, i, chain))) };
      case 'escalate':
        // The session waits for the human task, as a real session does; no task is created.
        this.events.push({ type: 'decision', data: { decisionKind: 'escalation', decision: 'escalate', agent: command.agent, reasoning: command.reason, priority: command.priority, tags: command.tags } });
        return null;
      case 'moderate': {
        const verdict = localModeration(command.text);
        return { type: 'moderation_result', commandId: command.id, ok: true, provider: 'local', model: verdict.model, flagged: verdict.flagged, scores: verdict.scores, flaggedCategories: verdict.flaggedCategories };
      }
      case 'confirm_tool':
        // As in the workflow: the question is in the turn's reply; the next user turn answers it.
        return null;
    }
  }

  private async callLlm(command: Extract<RuntimeCommand, { type: 'call_llm' }>): Promise<RuntimeEvent> {
    const request: LlmRequestSpec = command.request;
    try {
      const target = await this.resolveModel(request.model);
      const result = await target.llm.complete({
        model: target.model,
        messages: request.messages.map(toChatMessage),
        ...(request.tools.length > 0 ? { tools: request.tools as never } : {}),
        ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
        ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
      });
      this.events.push({ type: 'llm_call', data: { agent: command.agent, purpose: command.purpose, model: result.model || target.model, provider: target.provider } });
      return { type: 'llm_result', commandId: command.id, ok: true, content: result.content, toolCalls: result.toolCalls };
    } catch (err) {
      const kind = (err as { kind?: string }).kind;
      this.events.push({ type: 'error', data: { agent: command.agent, source: 'llm', kind: kind ? `LLM_${kind.toUpperCase()}` : 'error', message: messageOf(err) } });
      return { type: 'llm_result', commandId: command.id, ok: false, error: { kind: kind ? `LLM_${kind.toUpperCase()}` : 'error', message: messageOf(err) } };
    }
  }

  private async delegate(command: Extract<RuntimeCommand, { type: 'delegate' }>, index: number, chain: readonly string[]): Promise<DelegateOutcome> {
    const task = command.tasks[index]!;
    const path = [...chain, command.agent];
    if (path.includes(task.agent) || path.length > MAX_DELEGATION_DEPTH) {
      const message = `Delegation from ${command.agent} to ${task.agent} refused: ${[...path, task.agent].join(' → ')}`;
      this.events.push({ type: 'delegate', data: { fromAgent: command.agent, toAgent: task.agent, task: task.purpose, status: 'failed', error: message } });
      return { agent: task.agent, status: 'failed', error: { kind: 'delegation_refused', message } };
    }
    const interpreter = this.interpreterFor(task.agent);
    const state = interpreter.initDelegateState(task.agent, task.input);
    const final = await this.drive(interpreter, interpreter.advance(state, { type: 'start' }), [], path);
    const outcome = delegateOutcome(final.state, task.returns);
    this.events.push({ type: 'delegate', data: { fromAgent: command.agent, toAgent: task.agent, task: task.purpose, status: outcome.status } });
    return outcome;
  }

  observe(response: string, fromEvent: number): Observation {
    const state = this.state!;
    const agent = activeAgent(state);
    const thread = state.threads[state.threads.length - 1];
    return {
      response,
      agent,
      status: state.status,
      variables: maskSensitive(this.compiled.agents[agent], thread?.vars ?? {}),
      agentPath: [...this.agentPath],
      events: this.events.slice(fromEvent),
    };
  }
}

/** The run's time budget ran out before a turn. */
class OutOfTime extends Error {
  constructor(turn: number) {
    super(`${turn === 1 ? 'not run' : `stopped before turn ${turn}`}: the run's time budget ran out`);
  }
}

const anyFailed = (results: readonly ExpectationResult[]) => results.some((r) => !r.passed);

/** Runs one scenario to its end; never throws (a failure of the run itself is one of its errors). */
export async function runScenario(file: string, scenario: Scenario, options: RunOptions, judge: Judge): Promise<ScenarioReport> {
  const started = Date.now();
  const report: ScenarioReport = { file, name: scenario.name, agent: scenario.agent, passed: false, durationMs: 0, turns: [], expectations: [], errors: [] };
  if (!options.compiled.agents[scenario.agent]) {
    report.errors.push(`agent ${scenario.agent} is not in the project`);
    report.durationMs = Date.now() - started;
    return report;
  }
  const session = new ScenarioSession(options.compiled, scenario, options.resolveModel, options.nowMs ?? DEFAULT_NOW_MS);
  const transcript: ChatTurn[] = [];
  let last: Observation | null = null;
  const outOfTime = () => options.deadlineMs !== undefined && Date.now() >= options.deadlineMs;
  const say = async (user: string, metadata: Record<string, unknown> | undefined, expect: Expect | undefined) => {
    if (outOfTime()) throw new OutOfTime(report.turns.length + 1);
    const fromEvent = session.events.length;
    const responses = session.state === null ? await session.first(user, metadata as Record<string, Json>) : await session.message(user, metadata as Record<string, Json>);
    const response = responses.join('\n\n');
    transcript.push({ role: 'user', content: user }, { role: 'assistant', content: response });
    const seen = session.observe(response, fromEvent);
    last = seen;
    const expectations = expect ? await checkExpect(expect, seen, judge) : [];
    report.turns.push({ user, response, agent: seen.agent, expectations });
  };
  try {
    if (scenario.driver === 'script') {
      for (const turn of scenario.turns ?? []) {
        if (session.state && session.state.status === 'completed') {
          report.errors.push(`the session ended before the turn "${turn.user}"`);
          break;
        }
        await say(turn.user, turn.metadata, turn.expect);
      }
    } else {
      const maxTurns = scenario.maxTurns ?? 10;
      let message: string | null = scenario.initialMessage!;
      for (let i = 0; i < maxTurns && message !== null; i++) {
        await say(message, undefined, undefined);
        if (session.state!.status === 'completed') break;
        message = await nextPersonaMessage(options, scenario.persona as Persona, transcript, i + 1);
      }
    }
    if (scenario.expect && last) {
      const whole = session.observe((last as Observation).response, 0);
      report.expectations = await checkExpect(scenario.expect, whole, judge);
    }
  } catch (err) {
    report.errors.push(err instanceof OutOfTime ? err.message : `the run failed: ${messageOf(err)}`);
  }
  report.errors.unshift(...session.errors);
  report.passed = report.errors.length === 0 && !report.turns.some((t) => anyFailed(t.expectations)) && !anyFailed(report.expectations);
  report.durationMs = Date.now() - started;
  return report;
}

/** Runs every scenario of the files, `concurrency` at once; the report keeps the files' order. */
export async function runScenarioFiles(files: readonly ScenarioFile[], options: RunOptions): Promise<RunReport> {
  const started = Date.now();
  const judge = createJudge(options);
  const jobs = files.flatMap((f, fi) => f.scenarios.map((s, si) => ({ fi, si, file: f.file, scenario: s })));
  const results: ScenarioReport[][] = files.map((f) => new Array<ScenarioReport>(f.scenarios.length));
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) {
      const job = jobs[next++]!;
      results[job.fi]![job.si] = await runScenario(job.file, job.scenario, options, judge);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 8, jobs.length)) }, lane));
  const all = results.flat();
  const passed = all.filter((r) => r.passed).length;
  return {
    files: files.map((f, i) => ({ file: f.file, scenarios: results[i]! })),
    total: all.length,
    passed,
    failed: all.length - passed,
    durationMs: Date.now() - started,
  };
}
