// E704: delegation must form a tree (ABL.md §9 "Guards": no cycles).

import type { Rule } from './context';

export const delegationCycles: Rule = (ctx) => {
  const edges = new Map<string, string[]>();
  for (const a of ctx.byName.values()) {
    const targets = new Set<string>(a.coordination.delegates.map((d) => d.agent));
    for (const s of Object.values(a.flow?.steps ?? {})) s.delegate.forEach((d) => targets.add(d));
    edges.set(a.metadata.name, [...targets].filter((t) => ctx.byName.has(t) && t !== a.metadata.name));
  }
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 'open') {
        const cycle = stack.slice(stack.indexOf(m));
        const key = [...cycle].sort().join(',');
        if (!reported.has(key)) {
          reported.add(key);
          const first = ctx.byName.get(cycle[0] as string);
          if (first) ctx.report('E704', first.loc, { cycle: [...cycle, cycle[0]].join(' → ') });
        }
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...edges.keys()].sort()) if (!state.has(n)) visit(n);
};
