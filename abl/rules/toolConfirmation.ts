// W409: a tool with side_effects: true should state a confirmation policy.

import type { Rule } from './context';

export const toolConfirmation: Rule = (ctx) => {
  const seen = new Set<string>();
  for (const a of ctx.agents) {
    for (const t of a.tools) {
      const key = `${t.loc.file}:${t.loc.line}`;
      if (seen.has(key)) continue;
      seen.add(key);
      if (t.hints.side_effects && !t.confirmation) ctx.report('W409', t.loc, { name: t.name });
    }
  }
};
