// Parallel tool calls: when one LLM answer asks for several ordinary tools, the turn issues all
// their commands at once (the workflow runs them concurrently) and binds the results in the
// LLM's call order once every result is back. An answer that mixes them with control calls
// (delegate_to_<A>, __fan_out__, handoff, complete, escalate) issues its ordinary calls together
// first, then runs the control calls in order. This module decides which answers qualify;
// Reasoning.toolBatch (reasoning.ts) runs the two phases through the ordinary invokeTool path.
import type { AgentIR } from '../ir';

/** Unwinds one tool call while a batch is being issued (its command is recorded, not awaited). */
export class Issued {
  readonly issued = true;
}

/**
 * True when every call of the answer is an ordinary tool of the agent (at least two of them):
 * no control tools (handoff, delegate, complete, escalate), no unknown names, no async tool that
 * would suspend, and no constraint on them whose ON_FAIL escalates or hands off (a constraint is
 * checked for every call before any runs, so it must not move the conversation elsewhere).
 */
export function batchable(agent: AgentIR, calls: readonly { name: string }[], mocked: ReadonlySet<string> | undefined): boolean {
  if (calls.length < 2) return false;
  return calls.every(({ name }) => ordinaryCall(agent, name, mocked));
}

/** An ordinary tool of the agent that may run in a batch (see `batchable`). */
function ordinaryCall(agent: AgentIR, name: string, mocked: ReadonlySet<string> | undefined): boolean {
  const tool = agent.tools.find((t) => t.name === name);
  if (!tool) return false;
  if (tool.binding.type === 'http' && tool.binding.async && !mocked?.has(name)) return false;
  return !agent.constraints.some((c) => {
    const applies = c.checkpoint.kind === 'default' || (c.checkpoint.kind === 'before_tool' && c.checkpoint.tool === name);
    return applies && (c.on_fail.kind === 'escalate' || c.on_fail.kind === 'handoff');
  });
}

/** Control tools the reasoning loop handles itself; an answer with them and ordinary calls is mixed. */
export function isControlCall(name: string): boolean {
  return name.startsWith('handoff_to_') || name.startsWith('delegate_to_') || name === '__fan_out__'
    || name === '__complete__' || name === '__return_to_parent__' || name === '__escalate_to_human__';
}

/**
 * For an answer that mixes kinds: the indexes of its ordinary calls when there are at least two of
 * them and every other call is a control call, else null. (An answer with an unknown name, or an
 * ordinary call that cannot batch, runs one call after another as before.)
 */
export function ordinaryBatch(agent: AgentIR, calls: readonly { name: string }[], mocked: ReadonlySet<string> | undefined): number[] | null {
  const ordinary: number[] = [];
  for (const [i, { name }] of calls.entries()) {
    if (isControlCall(name)) continue;
    if (!ordinaryCall(agent, name, mocked)) return null;
    ordinary.push(i);
  }
  return ordinary.length >= 2 && ordinary.length < calls.length ? ordinary : null;
}

