// ESCALATE: the triggers checked at each turn and step transition, and the escalation itself
// (a human task effect; the turn waits for its resolution, then ON_HUMAN_COMPLETE applies).

import type { EscalationIR, EscalationRoutingIR, Json } from '../ir';
import type { ThreadState } from './contract';
import { toJson, truncate } from './values';
import type { TurnContext } from './turn-context';
import { syntheticHandoff } from './handoff';
import { escalationNoticeOn } from './options';

export class Escalation {
  constructor(private readonly t: TurnContext) {}

  checkEscalation(th: ThreadState): 'continue' | 'stop' {
    const esc = this.t.agent(th).coordination.escalation;
    if (!esc) return 'continue';
    for (const t of esc.triggers) {
      if (t.when.ast && this.t.cond(th, t.when)) {
        return this.escalate(th, t.reason ? this.t.render(th, t.reason) : `Escalation: ${t.when.src}`, t.priority, t.tags, t);
      }
    }
    return 'continue';
  }

  /**
   * Creates a human task, suspends, and applies on_human_complete once it is resolved. `trigger`:
   * the ESCALATE trigger that fired (its TYPE, DUE and FIELDS); other escalations (THEN/ON_FAIL:
   * ESCALATE, the escalate tool) make an `escalation` task with no deadline and no form.
   * `saidOwn`: what escalated said its own message for it (a RESPOND before its THEN: ESCALATE), so
   * the notice is not said.
   */
  escalate(
    th: ThreadState, reason: string, priority = 'medium', tags: string[] = [], trigger?: EscalationIR['triggers'][number], saidOwn = false,
    extraContext: Record<string, Json> = {},
  ): 'continue' | 'stop' {
    if (this.t.s.mode === 'delegate') this.t.delegation.failDelegate({ kind: 'escalation', message: `Delegated agent escalated: ${reason}` });
    const agent = this.t.agent(th);
    const esc = agent.coordination.escalation;
    const context: Record<string, Json> = { ...extraContext };
    for (const k of esc?.context_for_human ?? []) {
      if (k === 'conversation_history') context[k] = th.history.slice(-10).map((t) => `${t.role}: ${truncate(t.content, 300)}`);
      else context[k] = toJson(this.t.eval(th, { type: 'Ident', name: k, pos: 0 }));
    }
    this.t.decision(th, 'escalate', reason);
    // The user hears that a person takes over, unless what escalated said so in its own words.
    // Runs recorded before patch escalation-notice-v1 said it only when nothing else was said in
    // the turn (which, in a turn a callback resumed, holds the replies sent before the callback).
    const notice = this.t.responses.length === 0 || (!saidOwn && escalationNoticeOn(this.t.options));
    if (notice) this.t.guards.respond(th, this.t.message(th, 'escalated', 'I have passed this to a member of our team. I will continue as soon as they respond.'));
    // HOOKS after_agent: a person takes over from the agent (before the human task is created).
    this.t.lifecycle.runFailureHook(th, 'escalation');
    if (!this.t.isActive(th)) return 'stop';
    th.status = 'escalated';
    const routing = mergeRouting(esc?.routing, trigger?.routing);
    const task = {
      taskType: trigger?.type ?? 'escalation',
      dueMs: trigger?.due_ms ?? null,
      ...(trigger?.on_due ? { onDue: { action: trigger.on_due.action, thenExpireAfterMs: trigger.on_due.then_expire_after_ms } } : {}),
      ...(trigger?.fields ? { fields: trigger.fields } : {}),
      ...(routing ? { routing } : {}),
    };
    const ev = this.t.effect({ type: 'escalate', agent: th.agent, reason, priority, tags, context, ...task }, { kind: 'human_task', reason });
    th.status = 'active';
    this.t.s.status = 'active';
    this.t.s.pending = null;
    let human: Record<string, Json>;
    if (ev.type === 'human_resolved' && ev.cancelled) {
      human = { resolved: false, cancelled: true, expired: false, approved: false, rejected: false, decision: null, notes: null };
    } else if (ev.type === 'human_resolved') {
      const r = ev.resolution;
      const fields = r.fields && typeof r.fields === 'object' && !Array.isArray(r.fields) ? r.fields : {};
      const decision = typeof r.decision === 'string' ? r.decision : null;
      human = {
        ...fields,
        ...r,
        decision,
        notes: r.notes ?? null,
        resolved: true,
        expired: false,
        approved: typeof r.approved === 'boolean' ? r.approved : decision === 'approved',
        rejected: typeof r.rejected === 'boolean' ? r.rejected : decision === 'rejected',
      };
    } else {
      human = { resolved: false, expired: true, approved: false, rejected: false, decision: null };
    }
    this.t.setVar(th, 'human', human);
    for (const rule of esc?.on_human_complete ?? []) {
      if (rule.condition && !this.t.cond(th, rule.condition)) continue;
      this.t.decision(th, 'human_complete', rule.action.kind);
      // The rule's own RESPOND (`human` in scope): the closing message of a COMPLETE, else said first.
      const respond = rule.respond !== undefined ? this.t.render(th, rule.respond) : null;
      if (rule.action.kind === 'complete') {
        // A COMPLETE rule that now holds supplies the closing message (unless the rule has its own) and STORE.
        const c = agent.completion.find((x) => x.when.ast !== null && this.t.cond(th, x.when));
        this.t.handoffs.completeAgent(th, respond ?? (c?.respond ? this.t.render(th, c.respond) : null), c?.store ?? null);
        return 'stop';
      }
      if (respond) this.t.guards.respond(th, respond);
      if (rule.action.kind === 'handoff') {
        this.t.handoffs.handoff(th, syntheticHandoff(rule.action.agent), this.t.input, 'human task resolved');
        return 'stop';
      }
      return 'continue';
    }
    return 'continue';
  }
}

/** ESCALATE's `routing:` with a trigger's own overriding it field by field. */
function mergeRouting(base: EscalationRoutingIR | undefined, own: EscalationRoutingIR | undefined): EscalationRoutingIR | undefined {
  if (!base || !own) return own ?? base;
  return {
    queue: own.queue ?? base.queue,
    skills: own.skills.length > 0 ? own.skills : base.skills,
    priority_boost: own.priority_boost || base.priority_boost,
    extra: { ...base.extra, ...own.extra },
  };
}
