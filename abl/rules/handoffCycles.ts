// W703: agents that hand off to each other in a cycle where none can end (no COMPLETE rule,
// no flow, no RETURN: true on the cycle's edges) would bounce the user forever.

import type { AgentIR } from '../ir';
import type { Rule } from './context';

function canEnd(a: AgentIR): boolean {
  return a.completion.length > 0 || a.flow !== null;
}

export const handoffCycles: Rule = (ctx) => {
  const edges = new Map<string, string[]>();
  for (const a of ctx.byName.values()) {
    edges.set(a.metadata.name, a.coordination.handoffs.filter((h) => !h.return && ctx.byName.has(h.to) && h.to !== a.metadata.name).map((h) => h.to));
  }
  const reported = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 'open') {
        const cycle = stack.slice(stack.indexOf(m));
        const key = [...cycle].sort().join(',');
        if (!reported.has(key) && !cycle.some((c) => canEnd(ctx.byName.get(c) as AgentIR))) {
          reported.add(key);
          const first = ctx.byName.get(cycle[0] as string) as AgentIR;
          ctx.report('W703', first.loc, { cycle: [...cycle, cycle[0]].join(' → ') });
        }
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...edges.keys()].sort()) if (!state.has(n)) visit(n);
};
