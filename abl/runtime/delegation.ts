// DELEGATE: auto-triggered and explicit delegations to child agents (one `delegate` effect for a
// set of tasks, answered by the workflow's child runs), their RETURNS, and a delegated child that
// cannot go on.

import type { DelegateIR, Json } from '../ir';
import type { DelegateOutcome, RuntimeError, ThreadState } from './contract';
import type { FanOutBranch } from './fan-out';
import { toJson } from './values';
import { EndTurn, type TurnContext } from './turn-context';

export class Delegation {
  constructor(private readonly t: TurnContext) {}

  failDelegate(error: RuntimeError): never {
    const th = this.t.active();
    this.t.error(th ?? null, error.kind, error.message);
    // HOOKS after_agent: the child stops being active (its reply, if any, becomes the child's response).
    if (th) this.t.lifecycle.runFailureHook(th, `failed (${error.kind})`);
    this.t.s.status = 'completed';
    this.t.s.pending = null;
    this.t.s.result = { ok: false, response: th?.lastReply ?? null, label: null, error };
    throw new EndTurn();
  }

  autoDelegates(th: ThreadState): void {
    const entries = this.t.agent(th).coordination.delegates.filter((d, i) => {
      const key = `${i}:${d.agent}`;
      return d.when?.ast && !th.firedDelegates.includes(key) && this.t.cond(th, d.when);
    });
    if (entries.length > 0) this.runDelegates(th, entries, null);
  }

  /** `branches` (fan-out): per entry, the input merged over its INPUT and the task (the trace's PURPOSE). */
  runDelegates(th: ThreadState, entries: DelegateIR[], inputOverride: Record<string, Json> | null, branches?: FanOutBranch[]): DelegateOutcome[] | null {
    if (!this.t.guards.constraintsOk(th, null, `delegate to ${entries.map((d) => d.agent).join(', ')}`)) return null;
    const all = this.t.agent(th).coordination.delegates;
    for (const d of entries) {
      const key = `${all.indexOf(d)}:${d.agent}`;
      if (!th.firedDelegates.includes(key)) th.firedDelegates.push(key);
    }
    const tasks = entries.map((d, i) => {
      const input: Record<string, Json> = {};
      for (const [k, e] of Object.entries(d.input)) input[k] = toJson(this.t.eval(th, e));
      const own = branches?.[i] ?? null;
      const override = own ? own.input : inputOverride;
      return { agent: d.agent, input: override ? { ...input, ...override } : input, timeoutMs: d.timeout_ms, purpose: own?.task ?? d.purpose ?? '', returns: Object.keys(d.returns) };
    });
    const ev = this.t.effect({ type: 'delegate', agent: th.agent, tasks }, null);
    const results = ev.type === 'delegate_result' ? ev.results : [];
    const outcomes: DelegateOutcome[] = [];
    const summary: string[] = [];
    entries.forEach((d, i) => {
      const byIndex = results[i];
      const o: DelegateOutcome = (byIndex && byIndex.agent === d.agent ? byIndex : results.find((r) => r.agent === d.agent))
        ?? { agent: d.agent, status: 'failed', error: { kind: 'agent_unavailable', message: 'No result returned' } };
      outcomes.push(o);
      summary.push(`${d.agent}: ${o.status}`);
      if (o.status === 'completed') {
        for (const [childVar, parentVar] of Object.entries(d.returns)) {
          if (o.returns && o.returns[childVar] !== undefined) this.t.setVar(th, parentVar, o.returns[childVar]);
        }
        if (d.use_result && /^[A-Za-z_][A-Za-z0-9_]*$/.test(d.use_result)) this.t.setVar(th, d.use_result, o.response ?? null);
        return;
      }
      this.t.error(th, 'delegate_failed', `${d.agent} ${o.status}: ${o.error?.message ?? 'no detail'}`);
      if (d.on_failure.type === 'respond') this.t.guards.respond(th, this.t.render(th, d.failure_message ?? `${d.agent} is unavailable right now.`));
      else if (d.on_failure.type === 'escalate') this.t.escalation.escalate(th, `Delegation to ${d.agent} failed`);
    });
    this.t.decision(th, 'delegate', summary.join(', '));
    return outcomes;
  }
}

const NOLOC = { file: '', line: 0, column: 0 };

/** A DELEGATE entry for an agent named where no DELEGATE states it (a step's or digression's). */
export function adHocDelegate(agent: string): DelegateIR {
  return { agent, when: null, purpose: null, input: {}, returns: {}, use_result: null, timeout_ms: null, on_failure: { type: 'continue', count: 0 }, failure_message: null, loc: NOLOC };
}
