// The per-turn order of ABL.md §9: a session start, a user message, and one agent's part of the
// turn (NLU classification, digressions, GATHER, escalation, handoff and delegation triggers, then
// the flow or the reasoning loop, then completion). Re-entered for the target agent after a handoff.

import type { Json } from '../ir';
import type { RuntimeEvent, ThreadState } from './contract';
import { truncate } from './values';
import { TOOL_RESULT_CHARS, type TurnContext } from './turn-context';

/** Characters of a user message the conversation history (what the model reads) keeps. */
export const USER_MESSAGE_HISTORY_CHARS = 4000;

export class TurnOrder {
  constructor(private readonly t: TurnContext) {}

  run(event: RuntimeEvent): void {
    if (event.type === 'start') this.runStart(event);
    else if (event.type === 'user_message') {
      this.t.action = event.action ?? null;
      this.runMessage(event.text, event.metadata ?? {});
    } else if (event.type === 'end') this.runEnd(event.reason);
  }

  /**
   * The session ends from outside the interpreter: the active agent's HOOKS after_agent runs (its
   * CALL and DELEGATE are effects like any turn's; nobody reads a RESPOND but the transcript), then
   * every thread is completed.
   */
  private runEnd(reason: string): void {
    const th = this.t.active();
    if (th) this.t.lifecycle.runAgentHook(th, 'after_agent', `session ended (${reason})`);
    for (const t of this.t.s.threads) if (t.status !== 'completed') t.status = 'completed';
    this.t.s.status = 'completed';
    this.t.s.pending = null;
    this.t.s.result ??= { ok: true, response: th?.lastReply ?? null, label: reason, error: null };
  }

  private runStart(ev: Extract<RuntimeEvent, { type: 'start' }>): void {
    this.t.s.turn++;
    const th = this.t.active();
    if (!th) return;
    const agent = this.t.agent(th);
    this.seedMemory(th, ev);
    for (const [k, v] of Object.entries({ ...(ev.sessionVariables ?? {}), ...(ev.gatherValues ?? {}) })) this.t.setVar(th, k, v);
    if (ev.startAtStep && agent.flow?.steps[ev.startAtStep]) th.flow = { step: ev.startAtStep, phase: 'enter', attempts: {} };
    this.t.memory.recall(th, 'session:start');
    this.t.lifecycle.runAgentHook(th, 'before_agent', this.t.s.mode === 'delegate' ? 'delegated' : 'session start');
    if (!ev.skipOnStart) this.t.lifecycle.runBlock(th, agent.on_start);
    th.startedOnce = true;
    if (this.t.s.mode === 'delegate') {
      const task = `Task for ${agent.metadata.name}. Input: ${JSON.stringify(th.vars)}`;
      if (!agent.flow) this.t.pushHistory(th, { role: 'user', content: truncate(task, TOOL_RESULT_CHARS) });
      if (th.status === 'active') this.agentTurn(th, null, true);
      const still = this.t.s.threads.find((t) => t.id === th.id);
      if (this.t.s.status !== 'completed' && still && still.status !== 'completed') {
        this.t.delegation.failDelegate({ kind: 'needs_input', message: `${agent.metadata.name} needs user input, which a delegated agent cannot get.` });
      }
      return;
    }
    if (agent.flow && th.status === 'active') {
      this.t.flow.runFlow(th, null);
      if (th.status === 'active' && this.t.active() === th) this.t.handoffs.checkCompletion(th);
    }
    this.t.lifecycle.remember();
  }

  /**
   * What the workflow loaded for the session: facts over their DEFAULTs, `RESET: never` variables
   * (the entry agent's thread exists already: it takes them now) and the contact as `user.*`.
   */
  private seedMemory(th: ThreadState, ev: Extract<RuntimeEvent, { type: 'start' }>): void {
    if (ev.user) this.t.s.user = ev.user;
    if (ev.memory) Object.assign(this.t.s.memory, ev.memory);
    if (ev.kept) {
      this.t.s.kept = ev.kept;
      const mine = ev.kept[th.agent] ?? {};
      for (const m of this.t.agent(th).memory.session) if (m.reset === 'never' && Object.hasOwn(mine, m.name)) th.vars[m.name] = mine[m.name] as Json;
    }
  }

  private runMessage(text: string, meta: Record<string, Json>): void {
    this.t.s.turn++;
    const th = this.t.active();
    if (!th) {
      this.t.error(null, 'no_active_thread', 'The session has no active agent.');
      return;
    }
    const agent = this.t.agent(th);
    this.t.meta = meta;
    const g = this.t.guards.guardrails(th, agent, 'input', text);
    // A message an escalate guardrail holds reaches the agent only if a person releases it.
    if (g.held && !this.t.guards.hold(th, g.held, g.text)) return;
    if (g.blocked !== null) {
      this.t.guards.respond(th, g.blocked, false);
      return;
    }
    this.t.input = g.text;
    this.t.pushHistory(th, { role: 'user', content: truncate(g.text, USER_MESSAGE_HISTORY_CHARS) });
    this.t.lifecycle.runBlock(th, agent.hooks.before_turn ?? null);
    this.agentTurn(th, g.text, false);
    const after = this.t.active();
    if (after && after.status === 'active') this.t.lifecycle.runBlock(after, this.t.agent(after).hooks.after_turn ?? null);
    this.t.lifecycle.remember();
  }

  /** Steps 3–7 and 9 of the per-turn order for one thread (re-entered after a handoff). */
  agentTurn(th: ThreadState, input: string | null, delegated: boolean): void {
    const agent = this.t.agent(th);
    // NLU first: digressions, GATHER, ESCALATE, HANDOFF, the flow and COMPLETE all see `intent`.
    if (input !== null) this.t.nlu.classify(th, agent, input);
    // Digressions take the message before any gather extraction sees it (ABL.md §8).
    if (input !== null && this.t.flow.digress(th, agent, input)) {
      if (this.t.isActive(th)) this.t.handoffs.checkCompletion(th);
      return;
    }
    if (input !== null) this.t.gathering.extractTopGather(th, agent, input);
    // A flow waiting inside a step (GATHER, ON_INPUT) checks 4–6 at its next step transition instead,
    // so a trigger on a field being gathered fires once the step completes (ABL.md §15.2).
    const midStep = !!agent.flow && !!th.flow && th.flow.phase !== 'enter' && th.flow.phase !== 'done';
    if (!midStep) {
      if (this.t.escalation.checkEscalation(th) === 'stop' || !this.t.isActive(th)) return;
      const h = this.t.handoffs.selectHandoff(th);
      if (h) {
        this.t.handoffs.handoff(th, h, input, `WHEN ${h.when.src}`);
        return;
      }
      this.t.delegation.autoDelegates(th);
      if (!this.t.isActive(th)) return;
    }
    if (agent.flow) this.t.flow.runFlow(th, input);
    else if (!this.t.handoffs.completionReady(th)) {
      const missing = agent.gather.length > 0 && !delegated ? this.t.gathering.askTopGather(th, agent) : false;
      if (!missing) this.t.reasoning.runReasoning(th, input, null);
    }
    if (this.t.isActive(th)) this.t.handoffs.checkCompletion(th);
  }
}
