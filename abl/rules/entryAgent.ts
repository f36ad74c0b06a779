// E705/W706: the manifest's entry agent exists, and the project has at least one agent.

import type { Rule } from './context';

export const entryAgent: Rule = (ctx) => {
  const at = { file: ctx.manifestPath ?? 'project.json', line: 1, column: 1 };
  if (ctx.agents.length === 0) {
    ctx.report('W706', at);
    return;
  }
  const name = ctx.manifest.entryAgent;
  if (name && !ctx.byName.has(name)) ctx.report('E705', at, { name, agents: [...ctx.byName.keys()].sort().join(', ') });
};
