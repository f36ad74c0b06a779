// The reasoning loop: the system prompt and tool list an LLM call gets, the `call_llm` effect,
// and what the model's answer does (a reply, tool calls, or a control tool: handoff, delegate,
// fan-out, escalate, complete), with parallel tool batches.

import { sensitiveFields } from '../gather';
import type { AgentIR, FlowStepIR, Json, ToolIR } from '../ir';
import { answersFirst, redactToolCalls } from './checkpoints';
import type { ChatTurn, ThreadState } from './contract';
import { FAN_OUT_TOOL, branchesOf, fanOutResult, fanOutToolSpec, hasWhenTargets, planFanOut, type WhenHolds } from './fan-out';
import { Issued, batchable, ordinaryBatch } from './parallel-tools';
import { needsConfirmation } from './tool-calls';
import { fanOutWhenOn, mixedParallelToolsOn, parallelEnabled, toolConfirmationOn } from './options';
import { isSetValue, llmLimits, paramsSchema, preview, toJson, truncate } from './values';
import { Suspend, TOOL_RESULT_CHARS, type ToolOutcome, type TurnContext } from './turn-context';

const SKIPPED_AFTER_BLOCK: Json = { error: 'Not run: another call in this answer was blocked by a guardrail.' };
const SKIPPED_IN_BATCH: ToolOutcome = { ok: false, blocked: true, error: { kind: 'guardrail', message: SKIPPED_AFTER_BLOCK.error as string } };

export class Reasoning {
  constructor(private readonly t: TurnContext) {}

  private systemPrompt(th: ThreadState, agent: AgentIR, step: FlowStepIR | null, returnNote: string | null): string {
    const id = agent.identity;
    const lines: string[] = [`You are ${agent.metadata.name}${id.role ? `, ${id.role}` : ''}.`, `Goal: ${step?.llm?.goal ?? id.goal}`];
    if (id.persona) lines.push(`Persona: ${id.persona}`);
    if (id.instructions) lines.push(`Instructions: ${id.instructions}`);
    if (id.expertise.length) lines.push(`Expertise: ${id.expertise.join(', ')}`);
    if (id.limitations.length) lines.push('Limitations:', ...id.limitations.map((l) => `- ${l}`));
    const rules = agent.constraints.map((c) => `- ${c.kind.toUpperCase()} ${c.condition.src}${c.checkpoint.kind === 'before_tool' ? ` (before calling ${c.checkpoint.tool})` : ''}`);
    if (rules.length) lines.push('Rules you must respect:', ...rules);
    if (agent.gather.length) {
      lines.push('Information to collect:');
      const sensitive = sensitiveFields(agent);
      for (const f of agent.gather) {
        const v = th.vars[f.name];
        const shown = !isSetValue(v) ? 'missing' : sensitive.has(f.name) ? 'given (sensitive, not shown)' : JSON.stringify(v);
        lines.push(`- ${f.name}${f.required ? '' : ' (optional)'}: ${shown}`);
      }
    }
    if (typeof th.vars._handoff_summary === 'string') lines.push(`Context from the previous agent: ${th.vars._handoff_summary}`);
    if (returnNote !== null) lines.push(`The agent you handed over to has returned. Now: ${returnNote}`);
    const readable = this.t.memory.readable(th);
    const facts = Object.entries(this.t.s.memory).filter(([k]) => !readable || readable.has(k));
    lines.push(...this.t.memory.promptLines(th));
    if (facts.length) lines.push('Known facts:', ...facts.slice(0, 30).map(([k, v]) => `- ${k}: ${truncate(JSON.stringify(v), 200)}`));
    lines.push('Call __complete__ when the task is finished.');
    return lines.join('\n');
  }

  private llmTools(th: ThreadState, agent: AgentIR, step: FlowStepIR | null): { name: string; description: string; parameters: Json }[] {
    const allowed = step?.llm?.available_tools.length ? new Set(step.llm.available_tools) : null;
    const tools: { name: string; description: string; parameters: Json }[] = [];
    const seen = new Set<string>();
    const add = (name: string, description: string, parameters: Json): void => {
      if (seen.has(name)) return;
      seen.add(name);
      tools.push({ name, description, parameters });
    };
    for (const t of agent.tools) if (!allowed || allowed.has(t.name)) add(t.name, t.description ?? t.name, paramsSchema(t.params));
    const reasonParam: Json = { type: 'object', properties: { reason: { type: 'string' } }, required: [] };
    for (const h of agent.coordination.handoffs) {
      if (h.when.ast !== null || h.to === th.agent || this.t.handoffs.onStack(h.to)) continue;
      add(`handoff_to_${h.to}`, h.when.src, reasonParam);
    }
    for (const d of agent.coordination.delegates) {
      if (d.when?.ast) continue;
      add(`delegate_to_${d.agent}`, d.purpose ?? d.when?.src ?? `Delegate a task to ${d.agent}`, { type: 'object', properties: {}, required: [] });
    }
    const fanOut = fanOutToolSpec(agent, this.whenHolds(th, agent));
    if (fanOut) add(fanOut.name, fanOut.description, fanOut.parameters);
    if (agent.coordination.escalation) add('__escalate_to_human__', 'Pass the conversation to a human.', reasonParam);
    if (th.returnTo) add('__return_to_parent__', 'Return to the agent that handed this conversation over.', { type: 'object', properties: { message: { type: 'string' } }, required: [] });
    add('__complete__', 'The task is finished; optionally give a final message.', { type: 'object', properties: { message: { type: 'string' } }, required: [] });
    return tools;
  }

  /** How `__fan_out__` reads DELEGATE entries with an expression WHEN (fan-out.ts), for this run. */
  private whenHolds(th: ThreadState, agent: AgentIR): WhenHolds {
    if (!hasWhenTargets(agent) || !fanOutWhenOn(this.t.options)) return null;
    return (d) => !!d.when && this.t.cond(th, d.when);
  }

  private llmMessages(th: ThreadState, system: string): ChatTurn[] {
    const hist = answersFirst(th.history);
    while (hist.length && hist[0]?.role === 'tool') hist.shift();
    return [{ role: 'system', content: system }, ...hist];
  }

  /** The LLM loop. Returns true when it ended by a control tool (complete, handoff, escalate). */
  runReasoning(th: ThreadState, _input: string | null, step: FlowStepIR | null): boolean {
    const agent = this.t.agent(th);
    const max = step?.llm?.max_turns ?? agent.execution.max_reasoning_iterations;
    const tools = this.llmTools(th, agent, step);
    const blocks = this.t.guardBlocks;
    // ON_RETURN's instruction is for this reasoning run only (every call of its loop), then gone.
    const returnNote = th.returnInstruction ?? null;
    delete th.returnInstruction;
    for (let i = 0; i < max; i++) {
      const ev = this.t.effect({
        type: 'call_llm',
        agent: th.agent,
        purpose: 'reasoning',
        request: {
          model: agent.execution.model,
          tier: 'balanced',
          ...(agent.execution.temperature !== null ? { temperature: agent.execution.temperature } : {}),
          ...(agent.execution.max_tokens !== null ? { maxTokens: agent.execution.max_tokens } : {}),
          ...llmLimits(agent),
          messages: this.llmMessages(th, this.systemPrompt(th, agent, step, returnNote)),
          tools,
        },
      }, null);
      if (ev.type !== 'llm_result' || !ev.ok) {
        const err = ev.type === 'llm_result' && !ev.ok ? ev.error : { kind: 'llm_error', message: `Unexpected ${ev.type}` };
        this.t.error(th, 'llm_error', err.message);
        if (step) this.t.reasoningFailure = this.t.errors.handleError(th, step, 'llm_error');
        else this.t.errors.agentLevelError(th, 'llm_error');
        return true;
      }
      if (ev.toolCalls.length === 0) {
        if (ev.content) this.t.guards.respond(th, ev.content);
        return false;
      }
      const asked: ChatTurn = { role: 'assistant', content: ev.content, toolCalls: ev.toolCalls };
      this.t.pushHistory(th, asked);
      const redactedBefore = this.t.inputRedactions.length;
      // The options are asked only for answers that qualify (the workflow's patch checks).
      const batched = this.batchOf(th, agent, ev.toolCalls);
      for (const [i, call] of ev.toolCalls.entries()) {
        // After a guardrail block the answer's other calls are answered without running.
        const result = batched?.has(i)
          ? (batched.get(i) as Json)
          : this.t.guardBlocks !== blocks
            ? SKIPPED_AFTER_BLOCK
            : this.reasoningToolCall(th, agent, call.name, parseArgs(call.arguments), ev.content);
        // What a tool_input guardrail removed from the arguments leaves the LLM's history too.
        if (this.t.inputRedactions.length > redactedBefore) asked.toolCalls = redactToolCalls(ev.toolCalls, this.t.inputRedactions.slice(redactedBefore));
        if (result === 'ended') return true;
        this.t.pushHistory(th, { role: 'tool', toolCallId: call.id, content: truncate(JSON.stringify(result) ?? 'null', TOOL_RESULT_CHARS) });
        if (!this.t.isActive(th)) return true;
      }
      // A guardrail blocked a call or handoff: its message is the reply.
      if (this.t.guardBlocks !== blocks) return false;
      if (step?.llm?.exit_when && this.t.cond(th, step.llm.exit_when)) return false;
    }
    this.t.error(th, 'max_reasoning_iterations', `Stopped after ${max} LLM iterations`);
    this.t.guards.respond(th, this.t.message(th, 'max_iterations', "Sorry, I couldn't finish that. Could you rephrase?"));
    return false;
  }

  private reasoningToolCall(th: ThreadState, agent: AgentIR, name: string, args: Record<string, Json>, content: string): Json | 'ended' {
    const text = (k: string): string | null => (typeof args[k] === 'string' && args[k] ? (args[k] as string) : null);
    if (name.startsWith('handoff_to_')) {
      const to = name.slice('handoff_to_'.length);
      const rule = agent.coordination.handoffs.find((h) => h.to === to && h.when.ast === null) ?? agent.coordination.handoffs.find((h) => h.to === to);
      if (rule && this.t.handoffs.handoff(th, rule, this.t.input, text('reason') ?? rule.when.src)) return 'ended';
      return { error: `Handoff to ${to} is not possible.` };
    }
    if (name === '__complete__' || name === '__return_to_parent__') {
      if (this.t.handoffs.completeAgent(th, text('message') ?? (content || null))) return 'ended';
      return { error: 'Completion was blocked.' };
    }
    if (name === '__escalate_to_human__') {
      if (this.t.escalation.escalate(th, text('reason') ?? 'The agent asked for a human') === 'stop') return 'ended';
      return { human: th.vars.human ?? null };
    }
    if (name === FAN_OUT_TOOL) {
      const plan = planFanOut(agent, args, this.whenHolds(th, agent));
      const branches = branchesOf(plan);
      const outcomes = branches.length > 0 ? this.t.delegation.runDelegates(th, branches.map((b) => b.entry), null, branches) : [];
      return fanOutResult(plan, outcomes);
    }
    if (name.startsWith('delegate_to_')) {
      const to = name.slice('delegate_to_'.length);
      const entry = agent.coordination.delegates.find((d) => d.agent === to);
      if (!entry) return { error: `Unknown delegate ${to}` };
      const outcomes = this.t.delegation.runDelegates(th, [entry], Object.keys(args).length ? args : null);
      return toJson(outcomes ?? { error: 'Delegation was blocked.' });
    }
    const tool = this.t.tools.toolOf(th, name);
    if (!tool) {
      this.t.error(th, 'tool_error', `The LLM called unknown tool ${name}`);
      return { error: `Unknown tool ${name}` };
    }
    const out = this.t.tools.invokeTool(th, tool, args);
    this.t.tools.bindResult(th, tool, null, out);
    return out.ok ? preview(out.value, TOOL_RESULT_CHARS) : { error: out.error.message };
  }

  /**
   * The results of the answer's calls that run as one parallel batch, by call index, or null when
   * none do: every call when all are ordinary tools (parallel-tools.ts `batchable`), else, in an
   * answer that mixes kinds, its ordinary calls (`ordinaryBatch`), issued together before the
   * control calls run in order.
   */
  private batchOf(th: ThreadState, agent: AgentIR, calls: readonly { name: string; arguments: string }[]): Map<number, Json> | null {
    // A call that waits for the user's confirmation runs on its own, so the answer finds the turn where it asked.
    const confirming = calls.some((c) => {
      const tool = agent.tools.find((x) => x.name === c.name);
      return tool !== undefined && needsConfirmation(tool);
    });
    if (confirming && toolConfirmationOn(this.t.options)) return null;
    if (batchable(agent, calls, this.t.options.mockedTools)) {
      if (!parallelEnabled(this.t.options)) return null;
      return new Map(this.toolBatch(th, calls).map((r, i) => [i, r]));
    }
    const ordinary = ordinaryBatch(agent, calls, this.t.options.mockedTools);
    if (ordinary === null || !parallelEnabled(this.t.options) || !mixedParallelToolsOn(this.t.options)) return null;
    const results = this.toolBatch(th, ordinary.map((i) => calls[i]!));
    return new Map(ordinary.map((callIndex, k) => [callIndex, results[k] as Json]));
  }

  /**
   * Ordinary tool calls of one answer, run in parallel (parallel-tools.ts). Issue: every call goes
   * through invokeTool in order (constraints against the state before any result) and its command
   * is recorded; the turn suspends until all are answered. Bind: with every result journaled,
   * invokeTool runs again per call with the issued ids (no second constraint check) and the results
   * are bound in call order. Both phases are the same on every replay, so ids and trace line up.
   */
  private toolBatch(th: ThreadState, calls: readonly { name: string; arguments: string }[]): Json[] {
    const planned = calls.map((c) => ({ tool: this.t.tools.toolOf(th, c.name) as ToolIR, args: parseArgs(c.arguments) }));
    const ids: string[] = [];
    const blocked = new Map<number, ToolOutcome>();
    const guardBlocks = this.t.guardBlocks;
    this.t.batch = { mode: 'issue', ids };
    try {
      planned.forEach((p, i) => {
        // After a guardrail block the answer's other calls are answered without running.
        if (this.t.guardBlocks !== guardBlocks) {
          blocked.set(i, SKIPPED_IN_BATCH);
          return;
        }
        try {
          blocked.set(i, this.t.tools.invokeTool(th, p.tool, p.args));
        } catch (e) {
          if (!(e instanceof Issued)) throw e;
        }
      });
    } finally {
      this.t.batch = null;
    }
    if (ids.some((id) => !this.t.exec.journal[id])) throw new Suspend();
    this.t.batch = { mode: 'bind', ids: [...ids] };
    try {
      return planned.map((p, i) => {
        const out = blocked.get(i) ?? this.t.tools.invokeTool(th, p.tool, p.args);
        this.t.tools.bindResult(th, p.tool, null, out);
        return out.ok ? preview(out.value, TOOL_RESULT_CHARS) : { error: out.error.message };
      });
    } finally {
      this.t.batch = null;
    }
  }
}

function parseArgs(text: string): Record<string, Json> {
  try {
    const v = JSON.parse(text || '{}') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (toJson(v) as Record<string, Json>) : {};
  } catch {
    return {};
  }
}
