// W703: agents that hand off to each other in a cycle where none can end (no COMPLETE rule,
// no flow, no RETURN: true on the cycle's edges) would bounce the user forever.

import type { AgentIR } from '../ir';
import type { Rule } from './context';
import { findCycles, formatCycle } from './cycles';

function canEnd(a: AgentIR): boolean {
  return a.completion.length > 0 || a.flow !== null;
}

export const handoffCycles: Rule = (ctx) => {
  const edges = new Map<string, string[]>();
  for (const a of ctx.byName.values()) {
    edges.set(a.metadata.name, a.coordination.handoffs.filter((h) => !h.return && ctx.byName.has(h.to) && h.to !== a.metadata.name).map((h) => h.to));
  }
  for (const cycle of findCycles(edges)) {
    if (cycle.some((c) => canEnd(ctx.byName.get(c) as AgentIR))) continue;
    const first = ctx.byName.get(cycle[0] as string) as AgentIR;
    ctx.report('W703', first.loc, { cycle: formatCycle(cycle) });
  }
};
