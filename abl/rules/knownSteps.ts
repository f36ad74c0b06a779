// E501: every transition (THEN, branch THEN/GOTO, digression GOTO, BACKTRACK_TO) names a step of the flow.

import { forEachStepRef } from '../compile/walk';
import type { Rule } from './context';

export const knownSteps: Rule = (ctx) => {
  for (const a of ctx.agents) {
    const flow = a.flow;
    if (!flow) continue;
    forEachStepRef(a, (step, what, loc) => {
      if (!Object.hasOwn(flow.steps, step)) ctx.report('E501', loc, { what, name: step, steps: flow.order.join(', ') });
    });
  }
};
