// E721: every tool an agent calls (CALL, AVAILABLE_TOOLS, BEFORE calling, recall tool:x:after) is declared or imported.

import { forEachCall } from '../compile/walk';
import type { Rule } from './context';

export const knownTools: Rule = (ctx) => {
  for (const a of ctx.agents) {
    const tools = new Set(a.tools.map((t) => t.name));
    forEachCall(a, (call) => {
      if (!tools.has(call.tool)) ctx.report('E721', call.loc, { name: call.tool });
    });
    for (const name of a.flow?.order ?? []) {
      const step = a.flow?.steps[name];
      for (const t of step?.llm?.available_tools ?? []) if (!tools.has(t)) ctx.report('E721', step?.loc ?? a.loc, { name: t });
    }
    for (const c of a.constraints) {
      if (c.checkpoint.kind === 'before_tool' && !tools.has(c.checkpoint.tool)) ctx.report('E721', c.loc, { name: c.checkpoint.tool });
    }
    for (const r of a.memory.recall) {
      const m = /^tool:([^:]+):after$/.exec(r.on);
      if (m && !tools.has(m[1] as string)) ctx.report('E721', r.loc, { name: m[1] as string });
    }
  }
};
