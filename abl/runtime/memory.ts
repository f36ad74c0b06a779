// Agent memory in a turn (ABL.md §7; docs/memory.md, "Agent memory"): who may read and write a
// persistent path (ACCESS, HANDOFF grant_memory), writes recorded for the workflow to save with
// their TTL, session variables' RESET policies, and recall entries (what they make readable and
// what they add to the model's prompt). The facts themselves are loaded and saved by the workflow.

import type { AgentIR, Json } from '../ir';
import type { SessionRuntimeState, ThreadState } from './contract';
import { agentMemoryOn } from './options';
import { toJson, truncate } from './values';
import type { TurnContext } from './turn-context';

export type FactAccess = 'read' | 'write' | 'readwrite';

/** Where a `RESET: never` session variable is kept between sessions (not a fact path: those are dotted names). */
export const keptPath = (agent: string, name: string): string => `session:${agent}.${name}`;

/** How many recalled facts a prompt lists, and how much of each. */
const RECALLED_FACTS = 30;
const RECALLED_CHARS = 500;

/** Whether an agent uses memory beyond per-session variables (the option is asked only for such agents). */
export function usesMemory(agent: AgentIR): boolean {
  const m = agent.memory;
  return (
    m.persistent.length > 0 ||
    m.remember.length > 0 ||
    m.recall.length > 0 ||
    m.session.some((v) => v.reset !== 'per_session') ||
    agent.coordination.handoffs.some((h) => (h.context.grant_memory?.length ?? 0) > 0) ||
    agent.completion.some((c) => c.store?.kind === 'fact')
  );
}

/** A session variable's starting value in a new thread: a `RESET: never` one as last kept, else INITIAL. */
export function startingVars(state: SessionRuntimeState, agent: AgentIR): Record<string, Json> {
  const own: Record<string, Json> = {};
  const kept = state.kept?.[agent.metadata.name];
  for (const m of agent.memory.session) {
    if (m.reset === 'never' && kept && Object.hasOwn(kept, m.name)) own[m.name] = kept[m.name] as Json;
    else if (m.initial !== undefined) own[m.name] = toJson(m.initial);
  }
  return own;
}

export class Memory {
  constructor(private readonly t: TurnContext) {}

  /** Memory rules apply to this thread (asks the option only for an agent that uses memory, or a granted thread). */
  on(th: ThreadState): boolean {
    const agent = this.t.compiled.agents[th.agent];
    if (!agent || (!usesMemory(agent) && !th.grants)) return false;
    return agentMemoryOn(this.t.options);
  }

  /** The thread's access to a persistent path: its agent's declaration, else a grant; null when neither. */
  access(th: ThreadState, path: string): FactAccess | null {
    const own = this.t.compiled.agents[th.agent]?.memory.persistent.find((p) => p.path === path);
    if (own) return own.access;
    return th.grants?.[path] ?? null;
  }

  /**
   * The fact paths a thread reads, or null for all (runs recorded before agent memory, or a session
   * without facts): its agent's declared paths (not write-only), its grants (not write-only), its
   * own remember and COMPLETE STORE targets, and the PATHS of its recall entries that fired.
   */
  readable(th: ThreadState): Set<string> | null {
    if (Object.keys(this.t.s.memory).length === 0) return null;
    const agent = this.t.compiled.agents[th.agent];
    if (!agent || !agentMemoryOn(this.t.options)) return null;
    const out = new Set<string>();
    for (const p of agent.memory.persistent) if (p.access !== 'write') out.add(p.path);
    for (const [path, access] of Object.entries(th.grants ?? {})) if (access !== 'write') out.add(path);
    for (const r of agent.memory.remember) if (this.access(th, r.to) !== 'write') out.add(r.to);
    for (const c of agent.completion) if (c.store?.kind === 'fact' && this.access(th, c.store.path) !== 'write') out.add(c.store.path);
    for (const i of th.recalled ?? []) for (const p of agent.memory.recall[i]?.paths ?? []) if (this.access(th, p) !== 'write') out.add(p);
    return out;
  }

  /**
   * Writes a persistent fact and records it for the workflow to save (`ttlMs` from a remember
   * rule's TTL). A path the thread may only read is refused with a `memory_access` error.
   */
  write(th: ThreadState, path: string, value: unknown, ttlMs: number | null, via: string): boolean {
    if (this.access(th, path) === 'read') {
      this.t.error(th, 'memory_access', `${via} refused: ${th.agent} may only read "${path}" (ACCESS: read)`);
      return false;
    }
    this.t.s.memory[path] = toJson(value);
    (this.t.s.memoryWrites ??= {})[path] = { ttlMs };
    return true;
  }

  /** Grants of a HANDOFF rule for the thread it starts, with the granting thread's access to each path. */
  grantsFor(from: ThreadState, paths: readonly string[] | undefined): Record<string, FactAccess> | undefined {
    if (!paths?.length || !this.on(from)) return undefined;
    const out: Record<string, FactAccess> = {};
    for (const p of paths) out[p] = this.access(from, p) ?? 'readwrite';
    return out;
  }

  /** RESET: per_step variables go back to INITIAL (or unset) as a flow step is entered. */
  resetForStep(th: ThreadState): void {
    this.resetWhere(th, 'per_step');
  }

  /** RESET: per_activation variables go back to INITIAL (or unset) as the agent becomes active again. */
  resetForActivation(th: ThreadState): void {
    this.resetWhere(th, 'per_activation');
  }

  private resetWhere(th: ThreadState, reset: 'per_step' | 'per_activation'): void {
    const vars = this.t.compiled.agents[th.agent]?.memory.session.filter((m) => m.reset === reset) ?? [];
    if (vars.length === 0 || !this.on(th)) return;
    for (const m of vars) {
      if (m.initial !== undefined) {
        if (JSON.stringify(th.vars[m.name]) !== JSON.stringify(m.initial)) this.t.setVar(th, m.name, m.initial);
      } else this.t.clearVar(th, m.name);
    }
  }

  /** After the turn: `RESET: never` variables that changed are kept (and recorded for the workflow to save). */
  keepVars(): void {
    for (const th of this.t.s.threads) {
      const agent = this.t.compiled.agents[th.agent];
      const never = agent?.memory.session.filter((m) => m.reset === 'never') ?? [];
      if (never.length === 0 || !this.on(th)) continue;
      for (const m of never) {
        const kept = this.t.s.kept?.[th.agent];
        const before = kept && Object.hasOwn(kept, m.name) ? kept[m.name] : m.initial !== undefined ? toJson(m.initial) : null;
        const now = th.vars[m.name] ?? null;
        if (JSON.stringify(now) === JSON.stringify(before ?? null)) continue;
        ((this.t.s.kept ??= {})[th.agent] ??= {})[m.name] = now;
        (this.t.s.memoryWrites ??= {})[keptPath(th.agent, m.name)] = { ttlMs: null };
      }
    }
  }

  /** Fires the thread's recall entries for `event` (`session:start`, `tool:<name>:after`). */
  recall(th: ThreadState, event: string): void {
    const entries = this.t.compiled.agents[th.agent]?.memory.recall ?? [];
    if (!entries.some((r) => r.on === event) || !this.on(th)) return;
    entries.forEach((r, i) => {
      if (r.on !== event) return;
      const fired = (th.recalled ??= []);
      if (!fired.includes(i)) fired.push(i);
      this.t.decision(th, 'recall', `${r.action}: ${r.paths.join(', ') || '(no paths)'}`, event);
    });
  }

  /** What fired recall entries add to a reasoning call's system prompt (`inject_context`, `prompt_llm`). */
  promptLines(th: ThreadState): string[] {
    const agent = this.t.compiled.agents[th.agent];
    if (!agent || !th.recalled?.length) return [];
    const instructions: string[] = [];
    const paths: string[] = [];
    for (const i of th.recalled) {
      const r = agent.memory.recall[i];
      if (!r || r.action === 'load_memory') continue;
      if (r.action === 'prompt_llm' && r.instruction) instructions.push(this.t.render(th, r.instruction));
      for (const p of r.paths) if (!paths.includes(p)) paths.push(p);
    }
    const lines: string[] = [];
    const facts = paths
      .map((p) => [p, this.valueOf(th, p)] as const)
      .filter(([, v]) => v !== undefined && v !== null)
      .slice(0, RECALLED_FACTS);
    if (facts.length) lines.push('Recalled from memory:', ...facts.map(([p, v]) => `- ${p}: ${truncate(JSON.stringify(v), RECALLED_CHARS)}`));
    if (instructions.length) lines.push('Memory instructions:', ...instructions.map((x) => `- ${x}`));
    return lines;
  }

  /** A path's value as the thread reads it (a fact, else a `user.*` field of the contact). */
  private valueOf(th: ThreadState, path: string): Json | undefined {
    if (this.access(th, path) === 'write') return undefined;
    if (Object.hasOwn(this.t.s.memory, path)) return this.t.s.memory[path];
    if (path.startsWith('user.') && this.t.s.user) return this.t.s.user[path.slice(5)];
    return undefined;
  }
}
