// E803: SET may write a persistent path only when MEMORY declares it writable.

import type { SetIR } from '../ir';
import type { Rule } from './context';

export const persistentWrites: Rule = (ctx) => {
  for (const a of ctx.agents) {
    const readOnly = new Map(a.memory.persistent.filter((p) => p.access === 'read').map((p) => [p.path, p.access]));
    if (readOnly.size === 0) continue;
    const sets: SetIR[] = [...(a.on_start?.set ?? [])];
    for (const h of Object.values(a.hooks)) sets.push(...(h?.set ?? []));
    for (const s of Object.values(a.flow?.steps ?? {})) {
      sets.push(...s.set);
      for (const b of [...s.on_result, ...s.on_success, ...s.on_fail, ...s.on_input]) sets.push(...b.actions.set);
    }
    for (const s of sets) {
      const access = readOnly.get(s.target);
      if (access) ctx.report('E803', s.loc, { path: s.target, access });
    }
  }
};
