// Reading the interpreter's feature options, which a workflow may pass as functions so that its
// patch check (`wf.patched`) is asked only when the feature would change what a turn does.
import type { RuntimeOptions } from './contract';

type LazyFlag = boolean | (() => boolean) | undefined;

/** The flag's value; a function is called only now. `undefined` is `whenUnset`. */
export function flagOn(flag: LazyFlag, whenUnset: boolean): boolean {
  return typeof flag === 'function' ? flag() : (flag ?? whenUnset);
}

/** Several ordinary tool calls of one LLM answer are issued together. Off unless set. */
export function parallelEnabled(options: RuntimeOptions): boolean {
  return flagOn(options.parallelToolCalls, false);
}

/** ON_ERROR's THEN runs after model failures, and agent-level GATHER has max_retries. On unless false. */
export function agentErrorTransitionsOn(options: RuntimeOptions): boolean {
  return flagOn(options.agentErrorTransitions, true);
}

/** GATHER `infer` fields may be inferred by the model. On unless false. */
export function gatherInferOn(options: RuntimeOptions): boolean {
  return flagOn(options.gatherInfer, true);
}

/** The answer to a branch's GATHER fills it and the branch's THEN follows. On unless false. */
export function branchGatherOn(options: RuntimeOptions): boolean {
  return flagOn(options.branchGather, true);
}

/** TRANSFORM sort_by compares text by code units, not by the worker's locale. On unless false. */
export function codeUnitSortOn(options: RuntimeOptions): boolean {
  return flagOn(options.codeUnitSort, true);
}

/** GATHER fields' `depends_on`, `activation` and `default` apply. On unless false. */
export function gatherFieldRulesOn(options: RuntimeOptions): boolean {
  return flagOn(options.gatherFieldRules, true);
}

/** A tool's `pii_access` / `context_access` apply to what it receives. On unless false. */
export function toolAccessOn(options: RuntimeOptions): boolean {
  return flagOn(options.toolAccess, true);
}

/** A tool's `confirmation` asks the user before the call. On unless false. */
export function toolConfirmationOn(options: RuntimeOptions): boolean {
  return flagOn(options.toolConfirmation, true);
}

/** HANDOFF ON_RETURN step / instruction / resume_intent act when the child returns. On unless false. */
export function handoffReturnActionsOn(options: RuntimeOptions): boolean {
  return flagOn(options.handoffReturnActions, true);
}

/** A step blocked at session start waits for the message after the first. On unless false. */
export function startBlockHoldOn(options: RuntimeOptions): boolean {
  return flagOn(options.startBlockHold, true);
}

/** A first message that came with the start and answers nothing is not a failed answer to its GATHER. On unless false. */
export function startGatherHoldOn(options: RuntimeOptions): boolean {
  return flagOn(options.startGatherHold, true);
}

/** An escalation's notice is said unless what escalated said its own message. On unless false. */
export function escalationNoticeOn(options: RuntimeOptions): boolean {
  return flagOn(options.escalationNotice, true);
}

/** An agent's NLU section classifies each user message into `intent`. On unless false. */
export function nluOn(options: RuntimeOptions): boolean {
  return flagOn(options.nlu, true);
}

/** Provider guardrails ask the moderation provider. On unless false. */
export function moderationGuardrailsOn(options: RuntimeOptions): boolean {
  return flagOn(options.moderationGuardrails, true);
}

/** Agent memory (RESET policies, ACCESS, grants, TTLs, recall, writes to save). On unless false. */
export function agentMemoryOn(options: RuntimeOptions): boolean {
  return flagOn(options.agentMemory, true);
}

/** Guardrail actions fix, reask, filter and escalate act (before: logged as warn). On unless false. */
export function guardrailActionsOn(options: RuntimeOptions): boolean {
  return flagOn(options.guardrailActions, true);
}

/** GATHER range on dates and text, and transient top-level fields. On unless false. */
export function gatherRangesOn(options: RuntimeOptions): boolean {
  return flagOn(options.gatherRanges, true);
}

/** IS_NUMBER is true for text that reads as a number (ON_INPUT's `input`). On unless false. */
export function numericTextOn(options: RuntimeOptions): boolean {
  return flagOn(options.numericText, true);
}

/** `__fan_out__` may target DELEGATE entries with an expression WHEN while it holds. On unless false. */
export function fanOutWhenOn(options: RuntimeOptions): boolean {
  return flagOn(options.fanOutWhen, true);
}

/** Ordinary tool calls of an answer that mixes kinds are issued together. On unless false. */
export function mixedParallelToolsOn(options: RuntimeOptions): boolean {
  return flagOn(options.mixedParallelTools, true);
}

/** HOOKS after_agent runs for a failed delegated child and on escalation. On unless false. */
export function failureHooksOn(options: RuntimeOptions): boolean {
  return flagOn(options.failureHooks, true);
}

/** A digression naming an NLU intent is taken on that classification. On unless false. */
export function digressionIntentsOn(options: RuntimeOptions): boolean {
  return flagOn(options.digressionIntents, true);
}
