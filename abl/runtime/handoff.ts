// HANDOFF and completion: choosing a handoff rule, switching the conversation to another agent
// (context, history, guardrails, hooks), and completing an agent, which returns to the agent that
// handed over when it asked for the conversation back.

import type { Expr } from '../expr/ast';
import type { AgentIR, HandoffIR, HandoffReturnIR, Json } from '../ir';
import { redactJson } from './checkpoints';
import type { ThreadState } from './contract';
import { handoffReturnActionsOn } from './options';
import { clone, toJson } from './values';
import { type TurnContext, newThread } from './turn-context';

const MAX_HANDOFFS_PER_TURN = 5;

export class Handoffs {
  constructor(private readonly t: TurnContext) {}

  /** The agent is on the stack (a handoff to it would be a cycle), or just returned a message to replay. */
  onStack(agent: string): boolean {
    return this.t.resumedFrom.includes(agent) || this.t.s.threads.some((t) => t.agent === agent && t.status !== 'completed');
  }

  selectHandoff(th: ThreadState): HandoffIR | null {
    const rules = this.t.agent(th).coordination.handoffs
      .map((h, i) => ({ h, i }))
      .sort((a, b) => a.h.priority - b.h.priority || a.i - b.i);
    for (const { h } of rules) {
      if (!h.when.ast || h.to === th.agent || this.onStack(h.to)) continue;
      if (this.t.cond(th, h.when)) return h;
    }
    return null;
  }

  /** Transfers the conversation to `rule.to`; the target handles `input` in this same turn. */
  handoff(from: ThreadState, rule: HandoffIR, input: string | null, reason: string): boolean {
    const target = this.t.compiled.agents[rule.to];
    if (!target || rule.to === from.agent || this.onStack(rule.to) || this.t.handoffsThisTurn >= MAX_HANDOFFS_PER_TURN) {
      this.t.error(from, 'routing_failure', `Handoff from ${from.agent} to ${rule.to} refused (${!target ? 'unknown agent' : 'self-handoff, cycle or too many handoffs'}).`);
      return false;
    }
    if (this.t.s.mode === 'delegate') this.t.delegation.failDelegate({ kind: 'handoff', message: 'A delegated agent cannot hand off.' });
    if (!this.t.guards.constraintsOk(from, null, `handoff to ${rule.to}`)) return false;
    const vars: Record<string, Json> = {};
    for (const p of rule.context.pass) {
      const v = toJson(this.t.eval(from, { src: p, ast: pathExpr(p) }));
      if (v !== null) vars[p] = v;
    }
    vars._handoff_summary = rule.context.summary ? this.t.render(from, rule.context.summary) : reason;
    const redact = this.t.guards.guardHandoff(from, rule.to, vars);
    if (!redact) return false;
    if (this.t.lifecycle.runAgentHook(from, 'after_agent', `handoff to ${rule.to}`) && (from.status !== 'active' || !this.t.s.threads.includes(from))) return false;
    const child = newThread(this.t.s, target, vars);
    const grants = this.t.memory.grantsFor(from, rule.context.grant_memory);
    if (grants) child.grants = grants;
    const hist = rule.context.history;
    if (hist === 'full') child.history = clone(from.history);
    else if (typeof hist === 'object') child.history = clone(from.history.slice(-hist.last_n));
    else if (hist === 'summary_only') child.history = [{ role: 'system', content: `Handoff from ${from.agent}: ${String(vars._handoff_summary)}` }];
    child.history = child.history.filter((t) => t.role !== 'tool' && !t.toolCalls);
    for (const t of child.history) t.content = redactJson(t.content, redact) as string;
    if (rule.return) {
      from.status = 'waiting';
      child.returnTo = from.id;
      const index = this.t.agent(from).coordination.handoffs.indexOf(rule);
      if (index >= 0) child.returnRule = index;
      from.resumeInput = input ?? lastUserMessage(from);
    } else {
      from.status = 'completed';
      child.returnTo = from.returnTo;
      this.t.s.threads = this.t.s.threads.filter((t) => t.id !== from.id);
    }
    this.t.s.threads.push(child);
    this.t.s.handoffCount++;
    this.t.handoffsThisTurn++;
    this.t.trace.push({ type: 'handoff', data: { fromAgent: from.agent, toAgent: rule.to, reason } });
    this.t.decision(from, 'handoff', rule.to, reason);
    this.t.memory.recall(child, 'session:start');
    this.t.lifecycle.runAgentHook(child, 'before_agent', `handoff from ${from.agent}`);
    this.t.lifecycle.runBlock(child, target.on_start);
    child.startedOnce = true;
    if (input !== null && child.history[child.history.length - 1]?.content !== input) this.t.pushHistory(child, { role: 'user', content: input });
    if (child.status === 'active') this.t.order.agentTurn(child, input, false);
    return true;
  }

  completionReady(th: ThreadState): boolean {
    return this.t.agent(th).completion.some((c) => c.when.ast !== null && this.t.cond(th, c.when));
  }

  checkCompletion(th: ThreadState): void {
    for (const c of this.t.agent(th).completion) {
      if (!c.when.ast || !this.t.cond(th, c.when)) continue;
      this.completeAgent(th, c.respond ? this.t.render(th, c.respond) : null, c.store);
      return;
    }
  }

  completeAgent(th: ThreadState, respond: string | null, store: AgentIR['completion'][number]['store'] = null): boolean {
    if (!this.t.guards.constraintsOk(th, null, 'complete')) return false;
    if (respond) this.t.guards.respond(th, respond);
    let label: string | null = null;
    if (store?.kind === 'fact') {
      const value = toJson(this.t.eval(th, store.value));
      if (this.t.memory.on(th)) this.t.memory.write(th, store.path, value, null, `COMPLETE STORE → ${store.path}`);
      else this.t.s.memory[store.path] = value;
    }
    if (store?.kind === 'label') label = store.label;
    // A hook that ended the agent itself (e.g. a constraint's ON_FAIL HANDOFF on its CALL) already moved on.
    if (this.t.lifecycle.runAgentHook(th, 'after_agent', 'complete') && (th.status === 'completed' || !this.t.s.threads.includes(th))) return true;
    th.status = 'completed';
    if (th.flow) th.flow = { ...th.flow, phase: 'done' };
    this.t.decision(th, 'complete', label ?? 'completed');
    const parent = th.returnTo ? this.t.s.threads.find((t) => t.id === th.returnTo && t.status === 'waiting') : undefined;
    if (parent && this.t.s.mode !== 'delegate') {
      this.t.s.threads = this.t.s.threads.filter((t) => t.id !== th.id);
      const agent = this.t.agent(th);
      const rules = this.t.agent(parent).coordination.handoffs;
      const rule = rules.find((h) => h.to === th.agent && h.return);
      if (rule?.map) {
        for (const [childVar, parentVar] of Object.entries(rule.map)) {
          if (th.vars[childVar] !== undefined) this.t.setVar(parent, parentVar, th.vars[childVar]);
        }
      } else {
        const fields = [...agent.gather.map((f) => f.name), ...Object.values(agent.flow?.steps ?? {}).flatMap((s) => s.gather?.fields.map((f) => f.name) ?? [])];
        // A transient top-level field is not kept beyond its agent.
        const transient = this.t.gathering.transientTop(agent);
        for (const f of fields) if (th.vars[f] !== undefined && th.vars[f] !== null && !transient.has(f)) this.t.setVar(parent, f, th.vars[f]);
      }
      parent.status = 'active';
      this.t.memory.resetForActivation(parent);
      if (th.lastReply) this.t.pushHistory(parent, { role: 'assistant', content: `[${th.agent}] ${th.lastReply}` });
      this.t.decision(parent, 'return', `${th.agent} returned to ${parent.agent}`);
      this.t.lifecycle.runAgentHook(parent, 'before_agent', `returned from ${th.agent}`);
      // ON_RETURN is the fired rule's (MAP keeps the first rule to this agent, as runs recorded before it do).
      this.onReturn(parent, th.agent, (th.returnRule !== undefined ? rules[th.returnRule] : undefined) ?? rule);
      return true;
    }
    if (this.t.s.mode !== 'delegate') for (const f of this.t.gathering.transientTop(this.t.agent(th))) this.t.clearVar(th, f);
    this.t.s.status = 'completed';
    this.t.s.pending = null;
    this.t.s.result = { ok: true, response: th.lastReply ?? null, label, error: null };
    return true;
  }

  /**
   * HANDOFF ON_RETURN once the child has returned (ABL.md §9): a step name moves the parent's FLOW
   * there and runs it now, an instruction waits for the parent's next reasoning call, and
   * `resume_intent` hands the message that triggered the handoff to the parent again.
   */
  private onReturn(parent: ThreadState, child: string, rule: HandoffIR | undefined): void {
    const input = parent.resumeInput ?? null;
    delete parent.resumeInput;
    const action: HandoffReturnIR = rule?.on_return_action ?? { kind: rule?.on_return ?? 'continue' };
    if (action.kind === 'continue' || !this.t.isActive(parent)) return;
    // Asked only here, so runs where no such return happens record no marker.
    if (!handoffReturnActionsOn(this.t.options)) return;
    switch (action.kind) {
      case 'instruction':
        parent.returnInstruction = this.t.render(parent, action.text);
        this.t.decision(parent, 'on_return', 'instruction', `${child} returned`);
        return;
      case 'step': {
        if (!this.t.agent(parent).flow?.steps[action.step]) {
          this.t.error(parent, 'unknown_step', `ON_RETURN step ${action.step} does not exist`);
          return;
        }
        this.t.decision(parent, 'flow_transition', `ON_RETURN -> ${action.step}`, `${child} returned`);
        parent.flow = { step: action.step, phase: 'enter', attempts: parent.flow?.attempts ?? {} };
        this.t.flow.runFlow(parent, null);
        return;
      }
      case 'resume_intent':
        if (input === null) return;
        this.t.decision(parent, 'on_return', 'resume_intent', `${child} returned`);
        this.t.resumedFrom.push(child);
        this.t.pushHistory(parent, { role: 'user', content: input });
        this.t.order.agentTurn(parent, input, false);
        return;
    }
  }
}

/** The thread's last user message (the triggering one when a handoff fires at a step transition). */
function lastUserMessage(th: ThreadState): string | null {
  for (let i = th.history.length - 1; i >= 0; i--) if (th.history[i]?.role === 'user') return th.history[i]?.content ?? null;
  return null;
}

function pathExpr(path: string): Expr {
  const parts = path.split('.');
  let e: Expr = { type: 'Ident', name: parts[0] as string, pos: 0 };
  for (const p of parts.slice(1)) e = { type: 'Member', object: e, property: p, pos: 0 };
  return e;
}

const NOLOC = { file: '', line: 0, column: 0 };

/** A HANDOFF rule for a transfer that no rule states (ON_FAIL, ON_ERROR, ON_HUMAN_COMPLETE). */
export function syntheticHandoff(to: string): HandoffIR {
  return {
    to,
    when: { src: '', ast: null },
    priority: 100,
    context: { pass: [], summary: null, history: 'summary_only' },
    return: false,
    on_return: 'continue',
    map: null,
    on_failure: null,
    loc: NOLOC,
  };
}
