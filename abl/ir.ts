// The compiled IR (ABL.md §13): plain JSON, versioned, one AgentIR per agent. The workflow
// interpreter walks it step by step; every node carries its source file and line in `loc`.

import type { Diagnostic } from './diagnostics';
import type { Expr } from './expr/ast';

/** Bumped on any incompatible IR change. */
export const IR_VERSION = 1;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Where a node came from. */
export interface IRLoc {
  file: string;
  line: number;
  column: number;
}

/** An expression: `ast: null` means natural language, judged by the LLM (HANDOFF/DELEGATE/ESCALATE WHENs only). */
export interface ExprIR {
  src: string;
  ast: Expr | null;
}

// ---------------------------------------------------------------- types
export type TypeIR =
  | { kind: 'primitive'; name: 'string' | 'number' | 'boolean' | 'date' | 'datetime' | 'object' | 'any' | 'email' | 'phone' }
  | { kind: 'array'; of: TypeIR }
  | { kind: 'object'; fields: Array<{ name: string; type: TypeIR; optional: boolean }> }
  | { kind: 'nullable'; of: TypeIR }
  /** An undeclared named type such as `Hotel`: an opaque object. */
  | { kind: 'named'; name: string };

// ---------------------------------------------------------------- tools
export interface ParamIR {
  name: string;
  type: TypeIR;
  required: boolean;
  default: Json | undefined;
  description: string | null;
}

export interface HttpAsyncIR {
  /** Dot-path in the JSON body where the callback URL is written. @default "callbackUrl" */
  callbackUrlField: string;
  timeoutMs: number;
}

export type BindingIR =
  | {
      type: 'http';
      endpoint: string;
      method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
      auth: 'none' | 'bearer' | 'api_key' | 'oauth2_client' | 'oauth2_user' | 'saml' | 'custom';
      auth_config: Record<string, Json>;
      headers: Record<string, string>;
      query_params: Record<string, string>;
      body_template: string | null;
      body_type: 'json' | 'form' | 'xml' | 'text';
      /** Retries after the first attempt (`retry`, or `retry_policy.max_retries`): a call is tried retry + 1 times. */
      retry: number;
      retry_delay_ms: number;
      /** `retry_policy`, when written: how long to wait before each retry (abl/tool-retry.ts). */
      retry_policy?: ToolRetryPolicyIR;
      /** Calls per second, per tenant, project and tool, across every worker. */
      rate_limit: number | null;
      circuit_breaker: { threshold: number; reset_ms: number } | null;
      /** Set for `type: async_webhook` and `type: http` + `async: true`: the call suspends until a callback. */
      async: HttpAsyncIR | null;
    }
  | { type: 'sandbox'; runtime: 'javascript' | 'python'; code: string | null; entrypoint: string | null; timeout_ms: number; memory_mb: number }
  | { type: 'mcp'; server: string; tool: string }
  | { type: 'lambda'; function: string; runtime: string | null }
  /**
   * Starts a workflow the worker offers to agents (workflows/agent-workflows.ts) as a child:
   * `sync` waits up to `timeout_ms` for its result, `async` answers with its id at once.
   * `param_mapping`: workflow input field → the tool argument (a dotted path) that fills it; empty
   * passes the arguments as they are. The version comes from the deployment's workflowVersionManifest.
   */
  | { type: 'workflow'; workflow_id: string; mode: 'sync' | 'async'; timeout_ms: number; param_mapping: Record<string, string> }
  /** No body in ABL: the project registry or a test mock supplies it. */
  | { type: 'contract' };

export interface ToolRetryPolicyIR {
  strategy: 'fixed' | 'exponential' | 'linear';
  initial_delay_ms: number;
  multiplier: number;
  max_delay_ms: number;
  /** Share of each delay drawn at random (0 = none, 1 = anywhere from 0 to the delay). */
  jitter: number;
}

/** One `RESULT_SECRETS` entry: the value at `path` of the tool's result goes to the session's vault as `key`. */
export interface ResultSecretIR {
  path: string;
  key: string;
  /** Tools that may read it (each must also list it in SECRET_ACCESS READ); empty = any tool that does. */
  consumers: string[];
  /** Seconds it stays readable; null = as long as the session. */
  ttl_s: number | null;
  /** Gone after its first read. */
  single_use: boolean;
}

export interface ConfirmationIR {
  require: 'always' | 'never' | 'when_side_effects';
  immutable_params: string[];
}

export interface SetIR {
  /** Variable or dotted path written. */
  target: string;
  value: ExprIR;
  loc: IRLoc;
}

export interface ToolIR {
  name: string;
  description: string | null;
  params: ParamIR[];
  returns: TypeIR;
  binding: BindingIR;
  timeout_ms: number;
  hints: { cacheable: boolean; latency: string | null; side_effects: boolean; requires_auth: boolean };
  confirmation: ConfirmationIR | null;
  store_result: boolean;
  on_result: SetIR[];
  on_error: SetIR[];
  /** The library file it came from, when imported. */
  imported_from: string | null;
  /**
   * `pii_access` / `context_access`: what the tool may receive. Absent when neither is written
   * (and in IR compiled before they were read, which kept them in `extra`).
   */
  access?: ToolAccessIR;
  /** `RESULT_SECRETS`: values of its result kept in the session's secret vault, never shown to the model. */
  result_secrets?: ResultSecretIR[];
  /** `SECRET_ACCESS: READ: [...]`: vault keys its `{{_secret.key}}` placeholders may read. */
  secret_access?: string[];
  /** `scrub_secrets: false` keeps vault values in its output; absent = scrubbed. */
  scrub_secrets?: boolean;
  extra: Record<string, Json>;
  loc: IRLoc;
}

/** PII kinds the runtime recognises in a tool's arguments (docs/abl.md, "What a tool receives"). */
export type PiiKind = 'email' | 'card' | 'ssn' | 'phone';

export interface ToolAccessIR {
  /**
   * `full`: arguments as given. `masked`: PII kept in a partial form, sensitive GATHER values
   * replaced. `none`: PII and sensitive values replaced. `allow`: those PII kinds and sensitive
   * fields in full, everything else as `none`.
   */
  pii: 'full' | 'masked' | 'none' | { allow: string[] };
  /** The message metadata keys the tool receives; null = all of them. */
  context: string[] | null;
}

export interface ToolLibraryIR {
  path: string;
  defaults: Record<string, Json>;
  tools: ToolIR[];
}

// ---------------------------------------------------------------- gather
export type GatherType = 'string' | 'number' | 'boolean' | 'date' | 'datetime' | 'email' | 'phone';

export type ValidationIR =
  | { kind: 'min'; value: number }
  | { kind: 'max'; value: number }
  | { kind: 'enum'; values: string[] }
  | { kind: 'email' }
  | { kind: 'pattern'; pattern: string }
  /** A date or datetime field's `range`: ISO bounds, compared as text (either may be null). */
  | { kind: 'between'; min: string | null; max: string | null }
  /** Free text: judged by the LLM. */
  | { kind: 'llm'; rule: string };

export interface GatherFieldIR {
  name: string;
  prompt: string | null;
  type: GatherType;
  required: boolean;
  default: Json | undefined;
  validate: ValidationIR[];
  retry_prompt: string | null;
  max_retries: number | null;
  infer: boolean;
  infer_confidence: number;
  infer_confirm: boolean;
  extraction_hints: string[];
  depends_on: string[];
  activation: 'required' | 'optional' | 'progressive' | { when: ExprIR };
  sensitive: boolean;
  transient: boolean;
  list: boolean;
  range: Json | null;
  extra: Record<string, Json>;
  loc: IRLoc;
}

// ---------------------------------------------------------------- memory
export interface MemoryIR {
  /**
   * `reset`: `per_session` lives as long as the agent's thread; `per_step` goes back to INITIAL
   * whenever a flow step is entered; `per_activation` whenever the agent becomes active again (a
   * handoff returns to it); `never` is kept across sessions (docs/memory.md, "Agent memory").
   */
  session: Array<{ name: string; type: string | null; initial: Json | undefined; reset: SessionResetIR; description: string | null; loc: IRLoc }>;
  persistent: Array<{ path: string; scope: FactScopeIR; access: 'read' | 'write' | 'readwrite'; default: Json | undefined; loc: IRLoc }>;
  remember: Array<{ when: ExprIR | null; from: ExprIR; to: string; ttl_ms: number | null; loc: IRLoc }>;
  /** `instruction`: the legacy `- ON_START: "text"` form's text, for the LLM (absent otherwise). */
  recall: Array<{ on: string; action: 'inject_context' | 'load_memory' | 'prompt_llm'; paths: string[]; instruction?: string; loc: IRLoc }>;
}

export type SessionResetIR = 'per_session' | 'per_step' | 'never' | 'per_activation';
/** Whose a persistent fact is: the session's contact, the whole project, or the session and its delegated children. */
export type FactScopeIR = 'user' | 'project' | 'execution_tree';

// ---------------------------------------------------------------- rules
export type OnFailIR =
  | { kind: 'message'; message: string }
  | { kind: 'block' }
  | { kind: 'escalate'; reason: string | null }
  | { kind: 'handoff'; agent: string }
  | { kind: 'recover'; respond: string | null; collect: string[]; goto: string | null; then: 'continue' | 'retry' };

export interface ConstraintIR {
  kind: 'require' | 'restrict' | 'limit' | 'warn';
  label: string | null;
  condition: ExprIR;
  when: ExprIR | null;
  /** `default`: before every tool call and before HANDOFF/DELEGATE/COMPLETE. */
  checkpoint: { kind: 'default' } | { kind: 'before_tool'; tool: string } | { kind: 'before_returning' };
  on_fail: OnFailIR;
  loc: IRLoc;
}

export interface GuardrailIR {
  name: string;
  kind: 'input' | 'output' | 'tool_input' | 'tool_output' | 'handoff';
  /** A pass predicate: the guardrail fires when it is false. */
  check: ExprIR | null;
  action: 'block' | 'warn' | 'redact' | 'fix' | 'reask' | 'filter' | 'escalate';
  message: string | null;
  priority: number;
  /** Set for a provider guardrail (`provider`, `category`, `threshold`, no `check`). */
  provider?: GuardrailProviderIR;
  /** An LLM-judged guardrail (no `check`, no `provider`): the rule the model judges the text against. */
  llm_check?: string;
  /** `action: fix`: how the text is corrected (`fix_strategy`, `max_length`, `fix_expression`). */
  fix?: GuardrailFixIR;
  /** `action: reask`: how many times in a row the user is asked to rephrase before the message is blocked (default 2). */
  max_reasks?: number;
  extra: Record<string, Json>;
  loc: IRLoc;
}

/** The correction of a `fix` guardrail (docs/abl.md, "Guardrail actions"). */
export interface GuardrailFixIR {
  strategy: 'truncate' | 'strip_html' | 'redact_pii' | 'normalize' | 'custom';
  /** `truncate`: the longest text kept (`max_length`, else the bound of the check's `length(...) <`/`<=`). */
  max_length: number | null;
  /** `custom`: an expression whose value (with `input`/`output` bound to the text) replaces it. */
  expression: ExprIR | null;
}

/** A guardrail whose check is a moderation provider's verdict (docs/abl.md, "Provider guardrails"). */
export interface GuardrailProviderIR {
  /** `openai` (`openai_moderation`): the platform's moderation provider; `local`: the offline word rules. */
  name: 'openai' | 'local';
  /** Moderation category ids (abl/moderation.ts); empty for every category. */
  categories: string[];
  /** Fires at or above this score (0..1); null: when the provider flags one of the categories. */
  threshold: number | null;
  /** A failed moderation call: `block` treats the guardrail as fired (fail closed), `allow` as passed. */
  on_error: 'block' | 'allow';
}

// ---------------------------------------------------------------- actions and flow
export type TransitionIR =
  | { kind: 'goto'; step: string }
  | { kind: 'complete' }
  | { kind: 'escalate'; reason: string | null };

export interface CallIR {
  tool: string;
  /** Named arguments: param → expression. Positional `t(a, b)` is mapped onto the params in order at compile time when the tool is known, else kept in `positional`. */
  with: Record<string, ExprIR>;
  positional: ExprIR[];
  as: string | null;
  loc: IRLoc;
}

/** What a branch (or ON_SUCCESS/ON_FAIL block) does, in this order: SET, CLEAR, RESPOND, CALL, GATHER, THEN. */
export interface ActionsIR {
  set: SetIR[];
  clear: string[];
  respond: string | null;
  call: CallIR | null;
  gather: StepGatherIR | null;
  then: TransitionIR | null;
}

export type ConditionIR =
  | { kind: 'expr'; expr: ExprIR }
  /** ON_INPUT bare keyword (`yes`, `no`, …) and the words that match it. */
  | { kind: 'keyword'; keyword: string; words: string[] }
  /** ON_ACTION: a channel's structured action (a button press) with this id. Kept among on_input. */
  | { kind: 'action'; id: string }
  | { kind: 'else' };

export interface BranchIR {
  condition: ConditionIR;
  actions: ActionsIR;
  loc: IRLoc;
}

export interface StepGatherIR {
  fields: GatherFieldIR[];
  strategy: 'llm' | 'pattern' | 'hybrid';
  /**
   * The step wrote `STRATEGY:` itself. Absent in IR compiled before the default became `pattern`,
   * where an unwritten strategy was stored as `hybrid`: the runtime treats such a `hybrid` as
   * `pattern`, so versions saved back then make no extraction calls their authors never asked for.
   */
  strategy_authored?: boolean;
  corrections: boolean;
  /** null: all required fields set. */
  complete_when: ExprIR | null;
}

export interface DigressionIR {
  intent: string;
  keywords: string[];
  condition: ExprIR | null;
  respond: string | null;
  clear: string[];
  action: { kind: 'goto'; step: string } | { kind: 'resume' } | { kind: 'delegate'; agent: string } | { kind: 'complete' } | { kind: 'none' };
  loc: IRLoc;
}

export interface TransformIR {
  source: ExprIR;
  as: string;
  into: string;
  filter: ExprIR | null;
  map: Record<string, ExprIR>;
  sort_by: { field: string; order: 'asc' | 'desc' } | null;
  limit: number | null;
}

export interface ErrorHandlerIR {
  type: string;
  respond: string | null;
  retry: number;
  retry_backoff: 'fixed' | 'exponential' | 'linear';
  then: { kind: 'continue' } | { kind: 'escalate'; reason: string | null } | { kind: 'handoff'; agent: string } | { kind: 'complete' } | { kind: 'backtrack'; step: string | null } | null;
  loc: IRLoc;
}

/**
 * One flow step. The interpreter runs, in order: when → respond/present → gather (wait if
 * incomplete) → delegate → call (may suspend) → set/clear/transform → check → on_result (first
 * match) else on_success/on_fail → on_input (wait) → then. No transition ends the flow.
 */
export interface FlowStepIR {
  name: string;
  reasoning: boolean;
  /** REASONING: true steps: LLM loop settings. */
  llm: { goal: string | null; available_tools: string[]; exit_when: ExprIR | null; max_turns: number } | null;
  when: ExprIR | null;
  max_attempts: number | null;
  on_exhausted: ActionsIR | null;
  respond: string | null;
  present: string | null;
  gather: StepGatherIR | null;
  delegate: string[];
  call: CallIR | null;
  set: SetIR[];
  clear: string[];
  transform: TransformIR | null;
  check: ExprIR | null;
  on_result: BranchIR[];
  on_success: BranchIR[];
  on_fail: BranchIR[];
  on_input: BranchIR[];
  then: TransitionIR | null;
  digressions: DigressionIR[];
  sub_intents: DigressionIR[];
  on_error: ErrorHandlerIR[];
  /** ACTIONS / ON_ACTION / VOICE / RICH_CONTENT, passed to channels untouched. */
  channel: Record<string, Json>;
  /** The step's VOICE settings the voice channel reads; absent without a VOICE block. */
  voice?: VoiceConfigIR;
  /** The voice form of the step's RESPOND (VOICE ssml / plain_text, templates); absent without either. */
  voice_output?: VoiceOutputIR;
  extra: Record<string, Json>;
  loc: IRLoc;
}

/**
 * What the voice channel says instead of a RESPOND's text: `ssml` (a W3C SSML document, its
 * `{{ }}` values escaped as XML text when rendered) and `plain_text` (the words to speak).
 * Both are templates like RESPOND; either may be absent.
 */
export interface VoiceOutputIR {
  ssml?: string;
  plain_text?: string;
}

/**
 * Voice settings (the agent's VOICE section, a step's VOICE block): the TTS voice and language of
 * what the agent says on a call, whether the caller may interrupt it, and how long to wait for the
 * end of speech and for speech at all (whole seconds). Unset keys take the platform's defaults.
 */
export interface VoiceConfigIR {
  voice?: string;
  language?: string;
  barge_in?: boolean;
  /** Seconds of silence that end the caller's utterance, or `auto` (the provider decides). */
  speech_timeout?: number | 'auto';
  /** Seconds to wait for the caller to start speaking. */
  silence_timeout?: number;
}

export interface FlowIR {
  entry: string;
  order: string[];
  steps: Record<string, FlowStepIR>;
  global_digressions: DigressionIR[];
  loc: IRLoc;
}

// ---------------------------------------------------------------- coordination
export interface HandoffIR {
  to: string;
  when: ExprIR;
  priority: number;
  /** `grant_memory`: persistent paths the target may read and write; absent when the rule grants none. */
  context: { pass: string[]; summary: string | null; history: 'none' | 'summary_only' | 'full' | { last_n: number }; grant_memory?: string[] };
  return: boolean;
  /** The ON_RETURN keyword; `continue` also when `on_return_action` names a step or an instruction. */
  on_return: 'continue' | 'resume_intent';
  /**
   * What the agent does when the child returns. A step name resumes the FLOW at that step; any
   * other text is an instruction for the agent's next LLM call. Absent in IR compiled before it
   * existed (read it as `{kind: on_return}`).
   */
  on_return_action?: HandoffReturnIR;
  /** child variable → parent variable; null = copy all gathered fields up. */
  map: Record<string, string> | null;
  on_failure: string | null;
  loc: IRLoc;
}

export type HandoffReturnIR =
  | { kind: 'continue' }
  | { kind: 'resume_intent' }
  | { kind: 'step'; step: string }
  | { kind: 'instruction'; text: string };

export interface DelegateIR {
  agent: string;
  when: ExprIR | null;
  purpose: string | null;
  input: Record<string, ExprIR>;
  /** child variable → parent variable. */
  returns: Record<string, string>;
  /** `RETURNS: rewards: Reward[]` declares a child variable's type (copied to the same name); absent when none is typed. */
  return_types?: Record<string, TypeIR>;
  use_result: string | null;
  timeout_ms: number | null;
  on_failure: { type: 'respond' | 'continue' | 'escalate' | 'retry'; count: number };
  failure_message: string | null;
  loc: IRLoc;
}

export type HumanCompleteActionIR = { kind: 'continue' } | { kind: 'complete' } | { kind: 'handoff'; agent: string };

/** The human task's type (ABL.md "ESCALATE and human tasks"). */
export const HUMAN_TASK_TYPES = ['approval', 'data_entry', 'review', 'decision', 'escalation'] as const;
export type HumanTaskType = (typeof HUMAN_TASK_TYPES)[number];
/** Form field types a human task may collect. */
export const HUMAN_TASK_FIELD_TYPES = ['text', 'textarea', 'number', 'boolean', 'select', 'date'] as const;
/**
 * Names a human task's form may not use: the `human` object's outcome flags, which come only from
 * the resolution's decision and the task's outcome, and the resolution's own keys.
 */
export const HUMAN_TASK_RESERVED_FIELDS = ['approved', 'rejected', 'resolved', 'expired', 'cancelled', 'decision', 'notes', 'respondedBy', 'displayName'] as const;

/** One field of a human task's form: what the person fills in when resolving it. */
export interface HumanTaskFieldIR {
  name: string;
  type: (typeof HUMAN_TASK_FIELD_TYPES)[number];
  label: string | null;
  required: boolean;
  /** The choices of a `select`. */
  options: string[];
}

export interface EscalationIR {
  triggers: Array<{
    when: ExprIR;
    reason: string | null;
    priority: 'low' | 'medium' | 'high' | 'critical';
    tags: string[];
    type: HumanTaskType;
    due_ms: number | null;
    /**
     * `ON_DUE: raise_priority` (absent: the task expires at DUE): at DUE the priority goes up one
     * level; `THEN_EXPIRE_AFTER` is the expiry after that (null: none).
     */
    on_due?: { action: 'raise_priority'; then_expire_after_ms: number | null };
    /** `FIELDS:` the form the person fills in (data entry); absent when none. */
    fields?: HumanTaskFieldIR[];
    routing?: EscalationRoutingIR;
    loc: IRLoc;
  }>;
  context_for_human: string[];
  /** ESCALATE-level `routing:`; a trigger's own `routing:` overrides it field by field. */
  routing?: EscalationRoutingIR;
  /** `respond`: a message sent (rendered with `human` in scope) before the action. */
  on_human_complete: Array<{ condition: ExprIR | null; action: HumanCompleteActionIR; respond?: string; loc: IRLoc }>;
  loc: IRLoc;
}

/** Where the human task goes: a queue, the skills asked of the person, and a priority boost. */
export interface EscalationRoutingIR {
  queue: string | null;
  skills: string[];
  priority_boost: number;
  extra: Record<string, Json>;
}

export interface CompletionRuleIR {
  when: ExprIR;
  respond: string | null;
  store: { kind: 'fact'; value: ExprIR; path: string } | { kind: 'label'; label: string } | null;
  loc: IRLoc;
}

/** ON_START and HOOKS: run SET → CALL → DELEGATE → RESPOND. */
export interface LifecycleIR {
  set: SetIR[];
  call: CallIR | null;
  delegate: string[];
  respond: string | null;
  loc: IRLoc;
}

// ---------------------------------------------------------------- agent
/** NLU entity extractor kinds (ABL NLU reference: enum, pattern, location, date, number, free text). */
export type NluEntityType = 'enum' | 'pattern' | 'number' | 'date' | 'location' | 'free_text';

/** One `NLU: intents:` entry. */
export interface NluIntentIR {
  name: string;
  description: string | null;
  /** Case-insensitive substrings; the deterministic tier (a failed model call falls back to it). */
  patterns: string[];
  /** Example utterances the model classifies against. */
  examples: string[];
  /** Entity names expected with this intent (declared under `entities:`). */
  entities: string[];
  loc: IRLoc;
}

/** One `NLU: entities:` entry. */
export interface NluEntityIR {
  name: string;
  type: NluEntityType;
  description: string | null;
  /** `enum`: the canonical values. */
  values: string[];
  /** `enum`: canonical value → other spellings that mean it. */
  synonyms: Record<string, string[]>;
  /** `pattern`: the regular expression a value must match. */
  pattern: string | null;
  loc: IRLoc;
}

/** The NLU section: each user message is classified into `intent.*` before the agent's turn runs. */
export interface NluIR {
  intents: NluIntentIR[];
  entities: NluEntityIR[];
  /** Domain terms given to the model with the intents. */
  glossary: string[];
  /** Below this confidence the model's intent is not used (`intent.category` is the fallback or null). */
  threshold: number;
  /** The intent used when none is decided (low confidence, none fits, unreadable answer, failed call). */
  fallback_intent: string | null;
  /** The model that classifies; null: the agent's EXECUTION model. */
  model: string | null;
  /** Keys stored but not run (embeddings, languages, …), reported at compile time. */
  other: Record<string, Json>;
  loc: IRLoc;
}

export interface AgentIR {
  metadata: {
    name: string;
    kind: 'agent' | 'supervisor';
    version: string;
    description: string | null;
    language: string | null;
    /** SHA-256 of the agent file and the tool libraries it imports. */
    source_hash: string;
    file: string;
  };
  identity: { goal: string; persona: string | null; role: string | null; instructions: string | null; expertise: string[]; limitations: string[] };
  execution: {
    model: string | null;
    fallback_model: string | null;
    temperature: number | null;
    max_tokens: number | null;
    tool_timeout_ms: number;
    llm_timeout_ms: number;
    /** Null when not written: the platform's SESSION_IDLE_TIMEOUT_MS applies. */
    session_idle_timeout_ms: number | null;
    max_reasoning_iterations: number;
    max_flow_iterations: number;
    /** `max_fan_out`: how many branches one `__fan_out__` call may run (absent: 8). */
    max_fan_out?: number;
    other: Record<string, Json>;
  };
  tools: ToolIR[];
  gather: GatherFieldIR[];
  /** Top-level GATHER `STRATEGY: llm|hybrid|pattern`; absent when not written (the pattern strategy). */
  gather_strategy?: 'llm' | 'pattern' | 'hybrid';
  memory: MemoryIR;
  constraints: ConstraintIR[];
  guardrails: GuardrailIR[];
  coordination: { handoffs: HandoffIR[]; delegates: DelegateIR[]; escalation: EscalationIR | null };
  completion: CompletionRuleIR[];
  on_start: LifecycleIR | null;
  hooks: Partial<Record<'before_agent' | 'after_agent' | 'before_turn' | 'after_turn', LifecycleIR>>;
  error_handlers: ErrorHandlerIR[];
  /** MESSAGES section (e.g. error_default). */
  messages: Record<string, string>;
  flow: FlowIR | null;
  /** The NLU section; absent when the agent has none (so the IR of other agents is unchanged). */
  nlu?: NluIR;
  /** The VOICE section; absent when the agent has none. */
  voice?: VoiceConfigIR;
  /** TEMPLATES as declared (already expanded where used). */
  templates: Record<string, Record<string, string>>;
  /** Phase-2 sections, kept verbatim as JSON. */
  extra: Record<string, Json>;
  loc: IRLoc;
}

export interface ProjectManifest {
  name: string | null;
  entryAgent: string | null;
  description: string | null;
}

export interface CompilationOutput {
  irVersion: number;
  /** SHA-256 over every input file (path + content), order-independent. */
  sourceHash: string;
  project: ProjectManifest;
  agents: Record<string, AgentIR>;
  /** Tool libraries by path. */
  tool_libraries: Record<string, ToolLibraryIR>;
  entry_agent: string | null;
  diagnostics: Diagnostic[];
  /** True when there is no error diagnostic. */
  ok: boolean;
}
