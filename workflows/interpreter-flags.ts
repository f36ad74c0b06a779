// The interpreter's feature flags, decided in one place for every workflow that drives it (the
// session and each Delegation child): which behaviour a run gets, by the patch markers it records.
import * as wf from '@temporalio/workflow';
import type { RuntimeOptions } from '../abl/runtime/contract';
import { parallelToolCallsOption } from './parallel-tool-calls';
import {
  AGENT_ERROR_TRANSITIONS_PATCH,
  AGENT_HOOKS_PATCH,
  BRANCH_GATHER_PATCH,
  CODE_UNIT_SORT_PATCH,
  DIGRESSIONS_PATCH,
  GATHER_FIELD_RULES_PATCH,
  GATHER_INFER_PATCH,
  GATHER_LLM_PATCH,
  HANDOFF_RETURN_ACTIONS_PATCH,
  MODERATION_GUARDRAILS_PATCH,
  NLU_PATCH,
  patchDecidedOnce,
  RULE_CHECKPOINTS_PATCH,
  TOOL_ACCESS_PATCH,
  START_BLOCK_HOLD_PATCH,
  START_GATHER_HOLD_PATCH,
  ESCALATION_NOTICE_PATCH,
  AGENT_MEMORY_PATCH,
  GUARDRAIL_ACTIONS_PATCH,
  GATHER_RANGES_PATCH,
  NUMERIC_TEXT_PATCH,
  FAN_OUT_WHEN_PATCH,
  MIXED_PARALLEL_TOOLS_PATCH,
  FAILURE_HOOKS_PATCH,
  DIGRESSION_INTENTS_PATCH,
  TOOL_CONFIRMATION_PATCH,
} from './patches';

/** Flags asked lazily (only when the interpreter reaches the behaviour) and kept for the whole run. */
export type RunFlags = Required<Pick<RuntimeOptions, 'parallelToolCalls' | 'agentErrorTransitions' | 'gatherInfer' | 'branchGather' | 'gatherFieldRules' | 'codeUnitSort' | 'toolAccess' | 'handoffReturnActions' | 'startBlockHold' | 'startGatherHold' | 'escalationNotice' | 'nlu' | 'moderationGuardrails' | 'guardrailActions' | 'gatherRanges' | 'numericText' | 'fanOutWhen' | 'mixedParallelTools' | 'failureHooks' | 'digressionIntents' | 'toolConfirmation'>> & {
  /** Asked by the interpreter when an agent uses memory, and by the session before it loads or saves facts. */
  agentMemory: () => boolean;
};

/** Every patch-decided interpreter option. */
export type InterpreterFlags = RunFlags & Required<Pick<RuntimeOptions, 'ruleCheckpoints' | 'digressions' | 'agentHooks' | 'gatherLlm'>>;

/**
 * The lazily asked flags of one workflow run. Create them once per run: each remembers its first
 * answer, so a turn the interpreter replays as results arrive stays on one path. Creating them
 * asks nothing and records no marker.
 */
export function runFlags(): RunFlags {
  return {
    parallelToolCalls: parallelToolCallsOption(),
    agentErrorTransitions: patchDecidedOnce(AGENT_ERROR_TRANSITIONS_PATCH),
    gatherInfer: patchDecidedOnce(GATHER_INFER_PATCH),
    branchGather: patchDecidedOnce(BRANCH_GATHER_PATCH),
    gatherFieldRules: patchDecidedOnce(GATHER_FIELD_RULES_PATCH),
    codeUnitSort: patchDecidedOnce(CODE_UNIT_SORT_PATCH),
    toolAccess: patchDecidedOnce(TOOL_ACCESS_PATCH),
    handoffReturnActions: patchDecidedOnce(HANDOFF_RETURN_ACTIONS_PATCH),
    startBlockHold: patchDecidedOnce(START_BLOCK_HOLD_PATCH),
    startGatherHold: patchDecidedOnce(START_GATHER_HOLD_PATCH),
    escalationNotice: patchDecidedOnce(ESCALATION_NOTICE_PATCH),
    nlu: patchDecidedOnce(NLU_PATCH),
    moderationGuardrails: patchDecidedOnce(MODERATION_GUARDRAILS_PATCH),
    agentMemory: patchDecidedOnce(AGENT_MEMORY_PATCH),
    guardrailActions: patchDecidedOnce(GUARDRAIL_ACTIONS_PATCH),
    gatherRanges: patchDecidedOnce(GATHER_RANGES_PATCH),
    numericText: patchDecidedOnce(NUMERIC_TEXT_PATCH),
    fanOutWhen: patchDecidedOnce(FAN_OUT_WHEN_PATCH),
    mixedParallelTools: patchDecidedOnce(MIXED_PARALLEL_TOOLS_PATCH),
    failureHooks: patchDecidedOnce(FAILURE_HOOKS_PATCH),
    digressionIntents: patchDecidedOnce(DIGRESSION_INTENTS_PATCH),
    toolConfirmation: patchDecidedOnce(TOOL_CONFIRMATION_PATCH),
  };
}

/**
 * The flags for one interpreter: the run's lazy ones plus those asked now, when it is created (a
 * session creates one per turn, so a run recorded before them keeps them off while it replays).
 * The markers are asked in this order, the order recorded histories carry them in.
 */
export function interpreterFlags(run: RunFlags): InterpreterFlags {
  return {
    ...run,
    ruleCheckpoints: wf.patched(RULE_CHECKPOINTS_PATCH),
    digressions: wf.patched(DIGRESSIONS_PATCH),
    agentHooks: wf.patched(AGENT_HOOKS_PATCH),
    gatherLlm: wf.patched(GATHER_LLM_PATCH),
  };
}
