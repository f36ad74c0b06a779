// E701/E702: every HANDOFF, DELEGATE and escalation target names another agent in the project.

import { forEachAgentRef } from '../compile/walk';
import type { Rule } from './context';

export const knownAgents: Rule = (ctx) => {
  const known = [...ctx.byName.keys()].sort().join(', ') || 'none';
  for (const a of ctx.agents) {
    forEachAgentRef(a, (target, what, loc) => {
      if (target === a.metadata.name) ctx.report('E702', loc, { what, name: target });
      else if (!ctx.byName.has(target)) ctx.report('E701', loc, { what, name: target, agents: known });
    });
  }
};
