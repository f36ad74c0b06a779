// Lifecycle blocks (ON_START, before_turn/after_turn, agent HOOKS) and REMEMBER rules at the end
// of a turn.

import type { LifecycleIR } from '../ir';
import { type AgentHookPoint, type AgentHookTrigger, agentHook, failureHook } from './agent-hooks';
import type { ThreadState } from './contract';
import { toJson } from './values';
import type { TurnContext } from './turn-context';

export class Lifecycle {
  /** Threads whose failure hook ran in this turn (runFailureHook). */
  private readonly failureHookRan = new Set<string>();

  constructor(private readonly t: TurnContext) {}

  runBlock(th: ThreadState, lc: LifecycleIR | null): void {
    if (!lc) return;
    for (const set of lc.set) this.t.setVar(th, set.target, this.t.eval(th, set.value));
    if (lc.call) this.t.tools.runCall(th, lc.call, null);
    if (lc.delegate.length > 0) {
      const entries = this.t.agent(th).coordination.delegates.filter((d) => lc.delegate.includes(d.agent));
      if (entries.length > 0) this.t.delegation.runDelegates(th, entries, null);
    }
    if (lc.respond) this.t.guards.respond(th, this.t.render(th, lc.respond));
  }

  /** HOOKS before_agent / after_agent (agent-hooks.ts), traced as a `hook` decision. True when a block ran. */
  runAgentHook(th: ThreadState, point: AgentHookPoint, trigger: AgentHookTrigger): boolean {
    const lc = agentHook(this.t.options, this.t.agent(th), point);
    if (!lc) return false;
    this.t.decision(th, 'hook', point, trigger);
    this.runBlock(th, lc);
    return true;
  }

  /**
   * `after_agent` for a failed delegated child or an escalation (agent-hooks.ts `failureHook`).
   * Runs at most once per thread and turn: a block that itself fails or escalates does not run again.
   */
  runFailureHook(th: ThreadState, trigger: AgentHookTrigger): void {
    if (this.failureHookRan.has(th.id)) return;
    const lc = failureHook(this.t.options, this.t.agent(th));
    if (!lc) return;
    this.failureHookRan.add(th.id);
    this.t.decision(th, 'hook', 'after_agent', trigger);
    this.runBlock(th, lc);
  }

  /** End of turn: the active agent's remember rules (with their TTL), then `RESET: never` variables kept. */
  remember(): void {
    const th = this.t.active();
    if (!th || this.t.s.mode === 'delegate') return;
    const memoryOn = this.t.memory.on(th);
    for (const r of this.t.agent(th).memory.remember) {
      if (r.when && !this.t.cond(th, r.when)) continue;
      const v = toJson(this.t.eval(th, r.from));
      if (v === null) continue;
      // An unchanged value is not written again: its TTL runs from when it was stored.
      if (!memoryOn) this.t.s.memory[r.to] = v;
      else if (JSON.stringify(this.t.s.memory[r.to]) !== JSON.stringify(v)) this.t.memory.write(th, r.to, v, r.ttl_ms, `remember → ${r.to}`);
    }
    this.t.memory.keepVars();
  }
}
