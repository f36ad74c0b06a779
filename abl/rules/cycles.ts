// Cycle search over an agent graph (name → targets), shared by the handoff and delegation rules.

/**
 * Every distinct cycle reachable by depth-first search from the nodes in sorted order, each
 * reported once (as first met) whatever node it was entered from.
 */
export function findCycles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const seen = new Set<string>();
  const cycles: string[][] = [];
  const visit = (n: string): void => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 'open') {
        const cycle = stack.slice(stack.indexOf(m));
        const key = [...cycle].sort().join(',');
        if (!seen.has(key)) {
          seen.add(key);
          cycles.push(cycle);
        }
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...edges.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

/** `A → B → A`, the way diagnostics print a cycle. */
export const formatCycle = (cycle: readonly string[]): string => [...cycle, cycle[0]].join(' → ');
