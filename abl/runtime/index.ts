// The ABL session interpreter: pure and deterministic; the AgentSession workflow drives it.
export * from './contract';
export { createInterpreter, delegateOutcome, initDelegateState, type Interpreter } from './interpreter';
export { GUARDRAIL_CHECK_IS_PASS, MAX_HISTORY } from './turn';
