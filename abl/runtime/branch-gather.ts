// A GATHER inside a flow branch (ON_FAIL, ON_RESULT, ON_SUCCESS, ON_INPUT, ON_EXHAUSTED): while it
// waits for the user, the thread's flow remembers which branch of the step opened it, so the answer
// fills that GATHER and the branch's THEN follows (patch `branch-gather-v1`). The IR is not stored
// in the state, only where to find it again in the step.

import type { ActionsIR, FlowStepIR } from '../ir';

export interface BranchGatherRef {
  source: 'on_exhausted' | 'on_fail' | 'on_result' | 'on_success' | 'on_input';
  index: number;
  /** ON_RESULT / ON_SUCCESS without THEN: the step goes on (ON_INPUT, then THEN) afterwards. */
  soft: boolean;
}

const LISTS = ['on_fail', 'on_result', 'on_success', 'on_input'] as const;

/** Where `actions` sits in `step`, or null when it is not one of the step's branches. */
export function locateBranch(step: FlowStepIR, actions: ActionsIR, soft: boolean): BranchGatherRef | null {
  if (step.on_exhausted === actions) return { source: 'on_exhausted', index: 0, soft };
  for (const source of LISTS) {
    const index = step[source].findIndex((b) => b.actions === actions);
    if (index >= 0) return { source, index, soft };
  }
  return null;
}

/** The branch `ref` points at, when it still has a GATHER. */
export function branchOf(step: FlowStepIR, ref: BranchGatherRef): ActionsIR | null {
  const actions = ref.source === 'on_exhausted' ? step.on_exhausted : step[ref.source][ref.index]?.actions;
  return actions?.gather ? actions : null;
}
