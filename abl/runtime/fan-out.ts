// The `__fan_out__` LLM tool (ABL.md §10, fan-out): a reasoning agent that can delegate asks for
// several delegations at once. reasoning.ts runs them as one `delegate` command (parallel Delegation
// child workflows, like FLOW-level fan-out); this module offers the tool, reads its arguments and
// shapes the joined outcomes, failed branches included, into the tool result. Its targets are the
// DELEGATE entries without an expression WHEN and, where the run allows it, those whose WHEN holds;
// EXECUTION `max_fan_out` caps the branches of one call.
import type { AgentIR, DelegateIR, Json } from '../ir';
import type { DelegateOutcome } from './contract';
import { toJson } from './values';

export const FAN_OUT_TOOL = '__fan_out__';
/** Branches beyond this are refused (reported as failed), not run, unless EXECUTION `max_fan_out` says otherwise. */
export const MAX_FAN_OUT_TASKS = 8;

/** The branch cap of one `__fan_out__` call for `agent`. */
export function fanOutCap(agent: AgentIR): number {
  return agent.execution.max_fan_out ?? MAX_FAN_OUT_TASKS;
}

/**
 * Whether a DELEGATE entry with an expression WHEN may be a target now (its WHEN holds); null: such
 * entries are never targets (runs recorded before they could be).
 */
export type WhenHolds = ((entry: DelegateIR) => boolean) | null;

/** True when some DELEGATE entry of `agent` has an expression WHEN (only then is the run's option asked). */
export function hasWhenTargets(agent: AgentIR): boolean {
  return agent.coordination.delegates.some((d) => !!d.when?.ast);
}

export interface FanOutBranch {
  entry: DelegateIR;
  /** The LLM's `input` (merged over the entry's INPUT) plus `task` when given. */
  input: Record<string, Json>;
  task: string | null;
}

export interface FanOutPlan {
  /** One slot per requested task, in the LLM's order: a branch to run, or why it was refused. */
  slots: ({ kind: 'run'; branch: FanOutBranch } | { kind: 'refused'; agent: string; error: string })[];
}

/**
 * DELEGATE entries the LLM may pick: those without an expression WHEN (as for `delegate_to_<A>`),
 * then those whose WHEN holds now when `holds` is given. One entry per agent: the first that qualifies.
 */
function targets(agent: AgentIR, holds: WhenHolds): DelegateIR[] {
  const seen = new Set<string>();
  const out: DelegateIR[] = [];
  const plain = agent.coordination.delegates.filter((d) => !d.when?.ast);
  const guarded = holds ? agent.coordination.delegates.filter((d) => !!d.when?.ast && holds(d)) : [];
  for (const d of [...plain, ...guarded]) {
    if (seen.has(d.agent)) continue;
    seen.add(d.agent);
    out.push(d);
  }
  return out;
}

/** The tool offered to a reasoning agent, or null when it has nothing to delegate to. */
export function fanOutToolSpec(agent: AgentIR, holds: WhenHolds = null): { name: string; description: string; parameters: Json } | null {
  const names = targets(agent, holds).map((d) => d.agent);
  if (names.length === 0) return null;
  return {
    name: FAN_OUT_TOOL,
    description: `Run several delegated tasks in parallel and get every result at once (failed ones are reported). Agents: ${names.join(', ')}.`,
    parameters: {
      type: 'object',
      properties: {
        tasks: {
          type: 'array',
          maxItems: fanOutCap(agent),
          items: {
            type: 'object',
            properties: {
              target: { type: 'string', enum: names, description: 'The agent to delegate to.' },
              task: { type: 'string', description: 'What this agent should do.' },
              input: { type: 'object', description: 'Values for the agent (merged over its DELEGATE INPUT).' },
            },
            required: ['target'],
          },
        },
      },
      required: ['tasks'],
    },
  };
}

/** Reads `{tasks: [{target (or agent), task?, input?}]}`; unknown agents and extra tasks are refused. */
export function planFanOut(agent: AgentIR, args: Record<string, Json>, holds: WhenHolds = null): FanOutPlan {
  const raw = Array.isArray(args.tasks) ? args.tasks : [];
  const allowed = targets(agent, holds);
  const cap = fanOutCap(agent);
  const slots: FanOutPlan['slots'] = raw.map((item, i) => {
    const t = item && typeof item === 'object' && !Array.isArray(item) ? item : {};
    const name = typeof t.target === 'string' ? t.target : typeof t.agent === 'string' ? t.agent : '';
    if (i >= cap) return { kind: 'refused', agent: name, error: `At most ${cap} tasks run at once` };
    const entry = allowed.find((d) => d.agent === name);
    if (!entry) return { kind: 'refused', agent: name, error: `Cannot delegate to ${name || '(no agent)'}` };
    const task = typeof t.task === 'string' && t.task ? t.task : null;
    const extra = t.input && typeof t.input === 'object' && !Array.isArray(t.input) ? (toJson(t.input) as Record<string, Json>) : {};
    return { kind: 'run', branch: { entry, input: task ? { ...extra, task } : extra, task } };
  });
  return { slots };
}

export function branchesOf(plan: FanOutPlan): FanOutBranch[] {
  return plan.slots.flatMap((s) => (s.kind === 'run' ? [s.branch] : []));
}

/**
 * The tool result: `[{target, status, result | error, returns?}]` in the LLM's order; `outcomes`
 * are those of `branchesOf(plan)` (null when a constraint blocked the delegation).
 */
export function fanOutResult(plan: FanOutPlan, outcomes: DelegateOutcome[] | null): Json {
  if (plan.slots.length === 0) return { error: 'No tasks given: pass {"tasks": [{"target": …, "task": …}]}.' };
  if (outcomes === null) return { error: 'Delegation was blocked.' };
  let next = 0;
  return plan.slots.map((s): Json => {
    if (s.kind === 'refused') return { target: s.agent, status: 'failed', error: s.error };
    const o = outcomes[next++];
    if (!o) return { target: s.branch.entry.agent, status: 'failed', error: 'No result returned' };
    if (o.status === 'completed') {
      return { target: o.agent, status: o.status, result: o.response ?? '', ...(o.returns && Object.keys(o.returns).length ? { returns: o.returns } : {}) };
    }
    return { target: o.agent, status: o.status, error: o.error?.message ?? o.status };
  });
}
