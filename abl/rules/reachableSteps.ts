// W503: every flow step is reachable from the entry step. A warning, not an error: digressions
// and the runtime's startAtStep can still enter a step no transition names.

import { forEachStepRef } from '../compile/walk';
import type { Rule } from './context';

export const reachableSteps: Rule = (ctx) => {
  for (const a of ctx.agents) {
    const flow = a.flow;
    if (!flow) continue;
    const edges = new Map<string | null, Set<string>>();
    forEachStepRef(a, (step, _what, _loc, from) => {
      const set = edges.get(from) ?? new Set<string>();
      set.add(step);
      edges.set(from, set);
    });
    const seen = new Set<string>();
    const queue = [flow.entry, ...(edges.get(null) ?? [])];
    while (queue.length > 0) {
      const s = queue.pop() as string;
      if (seen.has(s) || !Object.hasOwn(flow.steps, s)) continue;
      seen.add(s);
      for (const n of edges.get(s) ?? []) queue.push(n);
    }
    for (const name of flow.order) {
      const step = flow.steps[name];
      if (step && !seen.has(name)) ctx.report('W503', step.loc, { name, entry: flow.entry });
    }
  }
};
