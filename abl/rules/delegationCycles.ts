// E704: delegation must form a tree (ABL.md §9 "Guards": no cycles).

import type { Rule } from './context';
import { findCycles, formatCycle } from './cycles';

export const delegationCycles: Rule = (ctx) => {
  const edges = new Map<string, string[]>();
  for (const a of ctx.byName.values()) {
    const targets = new Set<string>(a.coordination.delegates.map((d) => d.agent));
    for (const s of Object.values(a.flow?.steps ?? {})) s.delegate.forEach((d) => targets.add(d));
    edges.set(a.metadata.name, [...targets].filter((t) => ctx.byName.has(t) && t !== a.metadata.name));
  }
  for (const cycle of findCycles(edges)) {
    const first = ctx.byName.get(cycle[0] as string);
    if (first) ctx.report('E704', first.loc, { cycle: formatCycle(cycle) });
  }
};
