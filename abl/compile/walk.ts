// Walkers over compiled agents: every CALL, transition and handoff target, with its location.
// Shared by the compiler (positional arguments) and the project rules.

import type { ActionsIR, AgentIR, BranchIR, CallIR, FlowStepIR, IRLoc, TransitionIR } from '../ir';

function actionsOf(step: FlowStepIR): ActionsIR[] {
  const out: ActionsIR[] = [];
  const branches: BranchIR[] = [...step.on_result, ...step.on_success, ...step.on_fail, ...step.on_input];
  for (const b of branches) out.push(b.actions);
  if (step.on_exhausted) out.push(step.on_exhausted);
  return out;
}

export function forEachCall(agent: AgentIR, fn: (call: CallIR) => void): void {
  if (agent.on_start?.call) fn(agent.on_start.call);
  for (const h of Object.values(agent.hooks)) if (h?.call) fn(h.call);
  if (!agent.flow) return;
  for (const name of agent.flow.order) {
    const step = agent.flow.steps[name];
    if (!step) continue;
    if (step.call) fn(step.call);
    for (const a of actionsOf(step)) if (a.call) fn(a.call);
  }
}

/** Every step-name reference in a flow: THEN, branch THEN/GOTO, digression GOTO, ON_FAIL GOTO, BACKTRACK_TO. */
export function forEachStepRef(agent: AgentIR, fn: (step: string, what: string, loc: IRLoc, from: string | null) => void): void {
  const flow = agent.flow;
  if (!flow) return;
  const t = (tr: TransitionIR | null, what: string, loc: IRLoc, from: string | null): void => {
    if (tr?.kind === 'goto') fn(tr.step, what, loc, from);
  };
  for (const d of flow.global_digressions) if (d.action.kind === 'goto') fn(d.action.step, 'A global digression GOTO', d.loc, null);
  for (const c of agent.constraints) if (c.on_fail.kind === 'recover' && c.on_fail.goto) fn(c.on_fail.goto, 'A constraint ON_FAIL GOTO', c.loc, null);
  for (const h of agent.coordination.handoffs) if (h.on_return_action?.kind === 'step') fn(h.on_return_action.step, `ON_RETURN of the HANDOFF to ${h.to}`, h.loc, null);
  for (const name of flow.order) {
    const step = flow.steps[name];
    if (!step) continue;
    t(step.then, `THEN in step '${name}'`, step.loc, name);
    for (const b of [...step.on_result, ...step.on_success, ...step.on_fail, ...step.on_input]) t(b.actions.then, `A branch in step '${name}'`, b.loc, name);
    if (step.on_exhausted) t(step.on_exhausted.then, `ON_EXHAUSTED in step '${name}'`, step.loc, name);
    for (const d of [...step.digressions, ...step.sub_intents]) if (d.action.kind === 'goto') fn(d.action.step, `A digression in step '${name}'`, d.loc, name);
    for (const h of step.on_error) if (h.then?.kind === 'backtrack' && h.then.step) fn(h.then.step, `BACKTRACK_TO in step '${name}'`, h.loc, name);
  }
  for (const h of agent.error_handlers) if (h.then?.kind === 'backtrack' && h.then.step) fn(h.then.step, 'BACKTRACK_TO in ON_ERROR', h.loc, null);
}

/** Every agent an agent can transfer control to or call, with what refers to it. */
export function forEachAgentRef(agent: AgentIR, fn: (target: string, what: string, loc: IRLoc, kind: 'handoff' | 'delegate') => void): void {
  for (const h of agent.coordination.handoffs) fn(h.to, 'HANDOFF', h.loc, 'handoff');
  for (const d of agent.coordination.delegates) fn(d.agent, 'DELEGATE', d.loc, 'delegate');
  for (const r of agent.coordination.escalation?.on_human_complete ?? []) if (r.action.kind === 'handoff') fn(r.action.agent, 'on_human_complete', r.loc, 'handoff');
  for (const c of agent.constraints) if (c.on_fail.kind === 'handoff') fn(c.on_fail.agent, 'A constraint ON_FAIL', c.loc, 'handoff');
  for (const h of agent.error_handlers) if (h.then?.kind === 'handoff') fn(h.then.agent, 'ON_ERROR', h.loc, 'handoff');
  for (const name of agent.on_start?.delegate ?? []) fn(name, 'ON_START DELEGATE', agent.on_start?.loc ?? agent.loc, 'delegate');
  for (const hook of Object.values(agent.hooks)) for (const name of hook?.delegate ?? []) fn(name, 'A hook DELEGATE', hook?.loc ?? agent.loc, 'delegate');
  if (!agent.flow) return;
  for (const d of agent.flow.global_digressions) if (d.action.kind === 'delegate') fn(d.action.agent, 'A digression DELEGATE', d.loc, 'delegate');
  for (const name of agent.flow.order) {
    const step = agent.flow.steps[name];
    if (!step) continue;
    for (const target of step.delegate) fn(target, `DELEGATE in step '${name}'`, step.loc, 'delegate');
    for (const d of [...step.digressions, ...step.sub_intents]) if (d.action.kind === 'delegate') fn(d.action.agent, 'A digression DELEGATE', d.loc, 'delegate');
    for (const h of step.on_error) if (h.then?.kind === 'handoff') fn(h.then.agent, `ON_ERROR in step '${name}'`, h.loc, 'handoff');
  }
}
