// HOOKS `before_agent` / `after_agent` (ABL.md §5): when they run. Turn runs the blocks with the
// same `lifecycle` machinery as ON_START and before_turn/after_turn (SET → CALL → DELEGATE →
// RESPOND); this module only decides whether there is a block to run and how the run is traced.
//
// before_agent: an agent becomes the active agent of a thread — session start (before ON_START),
//   a handoff into it (before its ON_START), a delegated child starting, and a parent resumed when
//   its RETURN child completes.
// after_agent: an agent stops being active — it hands off (after the handoff checks passed, before
//   the target starts), it completes (COMPLETE, a flow's end, `__complete__`, `__return_to_parent__`;
//   also a delegated child finishing), in which case it runs after COMPLETE's RESPOND and STORE;
//   a delegated child that fails, an agent that escalates to a human (before the task is created),
//   and the session ending from outside (the API's end, an idle timeout: an `end` event).

import type { AgentIR, LifecycleIR } from '../ir';
import type { RuntimeOptions } from './contract';
import { failureHooksOn } from './options';

export type AgentHookPoint = 'before_agent' | 'after_agent';

/** Why an agent hook runs (the `reasoning` of its `hook` decision trace). */
export type AgentHookTrigger =
  | 'session start' | 'delegated' | `handoff from ${string}` | `returned from ${string}` | `handoff to ${string}` | 'complete'
  | `failed (${string})` | 'escalation' | `session ended (${string})`;

/** The hook block to run, or null: none declared, or the option is off (runs recorded before `agent-hooks-v1`). */
export function agentHook(options: RuntimeOptions, agent: AgentIR, point: AgentHookPoint): LifecycleIR | null {
  if (options.agentHooks === false) return null;
  return agent.hooks[point] ?? null;
}

/**
 * The `after_agent` block for a failed delegated child or an escalation, or null: none declared, or
 * the run was recorded before such hooks ran (`failureHooks`, asked only when a block exists).
 */
export function failureHook(options: RuntimeOptions, agent: AgentIR): LifecycleIR | null {
  const block = agentHook(options, agent, 'after_agent');
  return block && failureHooksOn(options) ? block : null;
}
