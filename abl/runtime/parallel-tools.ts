// Parallel tool calls: when one LLM answer asks for several ordinary tools, the turn issues all
// their commands at once (the workflow runs them concurrently) and binds the results in the
// LLM's call order once every result is back. This module decides which answers qualify;
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
  return calls.every(({ name }) => {
    const tool = agent.tools.find((t) => t.name === name);
    if (!tool) return false;
    if (tool.binding.type === 'http' && tool.binding.async && !mocked?.has(name)) return false;
    return !agent.constraints.some((c) => {
      const applies = c.checkpoint.kind === 'default' || (c.checkpoint.kind === 'before_tool' && c.checkpoint.tool === name);
      return applies && (c.on_fail.kind === 'escalate' || c.on_fail.kind === 'handoff');
    });
  });
}

