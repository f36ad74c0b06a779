// The session's side of agent memory (docs/memory.md, "Agent memory"): which persistent facts its
// agents use and in which scope, loading them (and `RESET: never` variables) as the session
// starts, and saving what a turn changed after it, both as local activities. The interpreter keeps
// the facts in its state and records the writes (abl/runtime/memory.ts); nothing here is held only
// in the workflow: the facts live in MongoDB.
import * as wf from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CompilationOutput, FactScopeIR, Json } from '../abl/ir';
import type { SessionRuntimeState } from '../abl/runtime/contract';
import { keptPath, usesMemory } from '../abl/runtime/memory';
import type { SessionContact } from './definitions';
import type { TurnTrace } from './session-trace';

const { loadAgentMemory, saveAgentMemory } = wf.proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 10 },
});

/** The facts a project's agents use: each path's scope (its first declaration; undeclared: `user`), and what is loaded. */
export interface MemoryPlan {
  scopes: Map<string, FactScopeIR>;
  /** Paths some agent may read (declared not write-only, remember and STORE targets, recall PATHS). */
  reads: string[];
  /** `RESET: never` variables, as `session:<Agent>.<name>`. */
  kept: string[];
  /** Whether any agent uses memory beyond per-session variables. */
  used: boolean;
}

export function memoryPlan(compiled: CompilationOutput): MemoryPlan {
  const scopes = new Map<string, FactScopeIR>();
  const reads = new Set<string>();
  const kept: string[] = [];
  const agents = Object.values(compiled.agents);
  for (const a of agents) for (const p of a.memory.persistent) if (!scopes.has(p.path)) scopes.set(p.path, p.scope);
  const writeOnly = (path: string) => agents.every((a) => a.memory.persistent.every((p) => p.path !== path || p.access === 'write')) && scopes.has(path);
  const use = (path: string) => {
    if (!scopes.has(path)) scopes.set(path, 'user');
    if (!writeOnly(path)) reads.add(path);
  };
  for (const a of agents) {
    for (const p of a.memory.persistent) use(p.path);
    for (const r of a.memory.remember) use(r.to);
    for (const c of a.completion) if (c.store?.kind === 'fact') use(c.store.path);
    // `user.*` fields of the contact are not facts unless declared.
    for (const r of a.memory.recall) for (const p of r.paths) if (scopes.has(p) || !p.startsWith('user.')) use(p);
    for (const h of a.coordination.handoffs) for (const p of h.context.grant_memory ?? []) use(p);
    for (const v of a.memory.session) if (v.reset === 'never') kept.push(keptPath(a.metadata.name, v.name));
  }
  return { scopes, reads: [...reads], kept, used: agents.some(usesMemory) };
}

/** The session's contact as its agents read it: `user.id`, `user.display_name`, …; `user.is_known` false without one. */
export function contactAsUser(contact: SessionContact | undefined): Record<string, Json> {
  if (!contact) return { is_known: false, id: null };
  return {
    id: contact.contactId,
    type: contact.type,
    display_name: contact.displayName,
    identity_type: contact.identityType,
    company: contact.company,
    department: contact.department,
    account_ref: contact.accountRef,
    tags: [...contact.tags],
    is_known: true,
  };
}

export interface MemoryOwner {
  tenantId: string;
  projectId: string;
  /** The root session: `execution_tree` facts are keyed by it. */
  sessionId: string;
  contact?: SessionContact;
}

/** What the session's start event carries: the loaded facts and the kept variables by agent. */
export async function loadSessionMemory(
  owner: MemoryOwner,
  plan: MemoryPlan,
  trace: TurnTrace,
  agent: string,
): Promise<{ memory: Record<string, Json>; kept: Record<string, Record<string, Json>> }> {
  const contactId = owner.contact?.contactId ?? null;
  const userPaths = plan.reads.filter((p) => plan.scopes.get(p) === 'user');
  if (!contactId && (userPaths.length > 0 || plan.kept.length > 0)) {
    // Not silent: the agent starts from DEFAULTs and nothing it learns about the user outlives the session.
    trace.add('decision', {
      decisionKind: 'memory',
      decision: 'session_only',
      agent,
      reasoning: 'The session has no contact: user-scoped facts and RESET: never variables start from their DEFAULT/INITIAL and are kept for this session only.',
      paths: [...userPaths, ...plan.kept].slice(0, 20),
    });
  }
  const facts = [
    ...plan.reads.map((path) => ({ path, scope: plan.scopes.get(path) as FactScopeIR })),
    ...plan.kept.map((path) => ({ path, scope: 'user' as const })),
  ].filter((f) => f.scope !== 'user' || contactId !== null);
  if (facts.length === 0) return { memory: {}, kept: {} };
  const loaded = await loadAgentMemory({ tenantId: owner.tenantId, projectId: owner.projectId, treeId: owner.sessionId, contactId, facts });
  const memory: Record<string, Json> = {};
  const kept: Record<string, Record<string, Json>> = {};
  for (const [path, value] of Object.entries(loaded.facts)) {
    const k = /^session:(\w+)\.(\w+)$/.exec(path);
    if (k) (kept[k[1] as string] ??= {})[k[2] as string] = value;
    else memory[path] = value;
  }
  trace.add('decision', { decisionKind: 'memory', decision: 'loaded', agent, reasoning: `${Object.keys(loaded.facts).length} of ${facts.length} facts found`, paths: Object.keys(loaded.facts).slice(0, 20) });
  return { memory, kept };
}

/**
 * Saves the facts the turn wrote (one local activity, only when something changed) and clears
 * them from the state. A `user` fact of an anonymous session stays in the session only.
 */
export async function saveSessionMemory(owner: MemoryOwner, plan: MemoryPlan, runtime: SessionRuntimeState, trace: TurnTrace, agent: string): Promise<void> {
  const written = runtime.memoryWrites;
  if (!written) return;
  delete runtime.memoryWrites;
  const contactId = owner.contact?.contactId ?? null;
  const writes: Array<{ path: string; scope: FactScopeIR; value: Json; ttlMs: number | null }> = [];
  for (const [path, { ttlMs }] of Object.entries(written)) {
    const k = /^session:(\w+)\.(\w+)$/.exec(path);
    const value = k ? (runtime.kept?.[k[1] as string]?.[k[2] as string] ?? null) : (runtime.memory[path] ?? null);
    const scope: FactScopeIR = k ? 'user' : (plan.scopes.get(path) ?? 'user');
    if (scope === 'user' && contactId === null) continue;
    writes.push({ path, scope, value, ttlMs });
  }
  if (writes.length === 0) return;
  try {
    const result = await saveAgentMemory({ tenantId: owner.tenantId, projectId: owner.projectId, treeId: owner.sessionId, contactId, writes });
    trace.add('decision', { decisionKind: 'memory', decision: 'saved', agent, reasoning: `${result.saved} facts saved`, paths: writes.map((w) => w.path).slice(0, 20) });
    for (const r of result.refused) trace.add('error', { agent, kind: 'memory_error', message: `Fact ${r.path} not saved: ${r.reason}` });
  } catch (err) {
    trace.add('error', { agent, kind: 'memory_error', message: `The turn's facts were not saved: ${err instanceof Error ? err.message : String(err)}` });
  }
}
