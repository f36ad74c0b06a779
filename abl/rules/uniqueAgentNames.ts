// E208: agent names are unique per project.

import type { Rule } from './context';

export const uniqueAgentNames: Rule = (ctx) => {
  for (const a of ctx.agents) {
    const first = ctx.byName.get(a.metadata.name);
    if (first && first !== a) ctx.report('E208', a.loc, { name: a.metadata.name, other: first.metadata.file });
  }
};
