// W602: every declared TEMPLATE is used by some RESPOND: TEMPLATE(x).

import type { Rule } from './context';

export const unusedTemplates: Rule = (ctx) => {
  for (const a of ctx.agents) {
    const used = ctx.usedTemplates.get(a) ?? new Set<string>();
    for (const name of Object.keys(a.templates)) {
      if (!used.has(name)) ctx.report('W602', a.loc, { name });
    }
  }
};
