// The one registry of ABL diagnostics: stable codes, severities, messages and fixes.
// Every problem the front end reports is created here via `diag()`, so codes never drift.

export type Severity = 'error' | 'warning';

/** A problem found in ABL source. Plain JSON; render it with `formatDiagnostic`. */
export interface Diagnostic {
  severity: Severity;
  code: string;
  message: string;
  path: string;
  /** 1-based. */
  line: number;
  /** 1-based. */
  column: number;
}

export interface DiagnosticDef {
  severity: Severity;
  /** What the code means (used in docs/abl.md). */
  title: string;
  /** Message template; `{name}` placeholders are filled from the arguments. */
  message: string;
  /** How to fix it (appended to the message). */
  fix: string;
}

const def = (severity: Severity, title: string, message: string, fix: string): DiagnosticDef => ({
  severity,
  title,
  message,
  fix,
});

/** Code → definition. Codes are stable: never renumber, only add. E = error, W = warning. */
export const DIAGNOSTICS = {
  // Source format (E1xx)
  E100: def('error', 'Inconsistent indentation', 'This line is indented to column {column} but its siblings start at column {expected}.', 'Indent it like the lines above it, or deeper to make it a child.'),
  W101: def('warning', 'Tab used for indentation', 'A tab was used for indentation; it counts as 2 spaces.', 'Indent with spaces.'),
  E102: def('error', 'Unterminated string', 'The string starting here is never closed.', 'Add the closing {quote}.'),
  E103: def('error', 'Unclosed inline list or map', 'The inline {kind} starting here is not closed on this line.', 'Close it with "{close}" on the same line.'),
  E104: def('error', 'List items mixed with keys', 'This block mixes "- item" lines with "key: value" lines.', 'Use either a list (every line starts with "- ") or a map (every line is "key: value").'),
  E105: def('error', 'Text outside a section', 'Expected a section such as "GOAL:" at column 1, found "{text}".', 'Start sections at column 1 with "KEYWORD:", and indent their contents.'),
  E106: def('error', 'Input too large or too deeply nested', '{what} exceeds the limit of {limit}.', 'Split the file or reduce nesting.'),
  E107: def('error', 'Empty document', 'The file {path} has no sections.', 'Start it with "AGENT: Name", "SUPERVISOR: Name" or "TOOLS:".'),
  E108: def('error', 'Duplicate key', 'The key "{key}" appears more than once in this block.', 'Keep one "{key}:" and remove the other.'),
  E109: def('error', 'Invalid inline value', 'Cannot read the inline {kind}: {detail}.', 'Write it as [a, "b"] or {key: value}.'),
  E110: def('error', 'Unexpected nested block', '"{key}:" has a value on its line and an indented block under it (starting with {found}); the block cannot belong to that value.', 'Indent the block like "{key}:" to make it a sibling key, or remove the value on the line and put everything in the block.'),
  E111: def('error', 'Invalid YAML', 'Cannot read this YAML agent: {detail}.', 'Fix the YAML (see "The YAML agent format" in docs/abl.md), or write the agent as a .agent.abl file.'),
  W199: def('warning', 'Too many problems', 'Stopped reporting after {limit} problems.', 'Fix the problems above and compile again.'),

  // Documents and sections (E2xx)
  E200: def('error', 'Missing document header', 'The first section of {path} is "{found}", but a document must start with AGENT:, SUPERVISOR: or TOOLS:.', 'Add "AGENT: Name" (or SUPERVISOR:/TOOLS:) as the first line.'),
  E201: def('error', 'Missing GOAL', '{kind} "{name}" has no GOAL section.', 'Add GOAL: "what this agent is for".'),
  E202: def('error', 'MODE is not supported', 'MODE: is not part of ABL: an agent with a FLOW is a state machine, one without is a reasoning agent.', 'Remove the MODE: line.'),
  E203: def('error', 'Unknown section', 'Unknown section "{name}".', 'Check the spelling; valid sections include GOAL, PERSONA, TOOLS, GATHER, FLOW, HANDOFF, DELEGATE, ESCALATE, COMPLETE.'),
  E204: def('error', 'Duplicate section', 'The section {name} appears more than once (first on line {first}).', 'Merge the two {name} sections into one.'),
  W205: def('warning', 'Non-uppercase section keyword', 'Section keyword "{found}" is not uppercase.', 'Write it as "{expected}:".'),
  W206: def('warning', 'Phase-2 section not executed', 'Section {name} is parsed and kept in IR.extra but is not executed yet.', 'Remove it or keep it knowing it has no effect (docs/not-supported.md).'),
  E207: def('error', 'Invalid name', '"{name}" is not a valid {what} name.', 'Use letters, digits and underscores, starting with a letter (e.g. Billing_Agent).'),
  E208: def('error', 'Duplicate agent name', 'Agent "{name}" is also defined in {other}.', 'Agent names must be unique in a project; rename one of them.'),
  E209: def('error', 'Section not allowed here', 'Section {name} is not allowed in a {kind} document.', '{fix}'),
  E210: def('error', 'Wrong value shape', '{what} expects {expected}, found {found}.', 'Rewrite it as {expected}.'),
  E211: def('error', 'Invalid value', '{what} must be one of {allowed}; found "{value}".', 'Use one of {allowed}.'),
  E212: def('error', 'Missing required property', '{what} is missing "{key}".', 'Add "{key}: ..." to it.'),
  W213: def('warning', 'Unknown property', 'Unknown property "{key}" in {where}; it is stored but has no effect.', 'Check the spelling.'),
  W218: def('warning', 'EXECUTION setting not run', 'EXECUTION {key} is stored but the runtime does not read it, so it changes nothing.', 'Use model, fallback_model, temperature, max_tokens, tool_timeout, llm_timeout, session_idle_timeout, max_reasoning_iterations, max_flow_iterations or max_fan_out, or remove it (docs/not-supported.md).'),
  W219: def('warning', 'LANGUAGE not used', 'LANGUAGE: {value} is stored but the runtime does not use it: replies are in whatever language the texts and the model use.', 'Say it in INSTRUCTIONS (e.g. "Always answer in Spanish") and write the RESPOND texts in it (docs/not-supported.md).'),
  W214: def('warning', 'Ignored key', '"{key}" in {where} is not read, so it does nothing there.', 'Use one of {known}, or move it where it belongs.'),
  E214: def('error', 'Invalid number or duration', '{what} expects {expected}, found "{value}".', 'Write a number, or a duration such as 500ms, 15s, 5m, 2h, 90d.'),
  E215: def('error', 'Invalid project.json', 'project.json cannot be read: {detail}.', 'Write a JSON object such as {"name": "x", "entryAgent": "Main"}.'),
  E216: def('error', 'Empty tool library', 'The tool library {path} declares no tools.', 'Declare at least one tool: name(param: type) -> ReturnType.'),
  E217: def('error', 'Unknown ABL file', '{path} is not an agent or tool file (expected agents/*.abl or tools/*.tools.abl).', 'Rename or move the file.'),

  // Expressions and templates (E3xx)
  E300: def('error', 'Expression does not parse', 'Cannot parse the expression "{src}": {detail}.', '{fix}'),
  E301: def('error', 'Unknown function', 'Unknown function {name}().', 'Use a built-in function such as COALESCE, UPPER, LENGTH, ROUND, FORMAT_CURRENCY (see docs/abl.md).'),
  E303: def('error', 'Expression too complex', 'The expression exceeds the limit of {limit} {what}.', 'Split it into smaller SET steps.'),
  E304: def('error', 'IMPLIES outside constraints', 'IMPLIES is only allowed in CONSTRAINTS conditions.', 'Rewrite "p IMPLIES q" as "NOT p OR q".'),
  E305: def('error', 'Template syntax error', 'Template error: {detail}.', 'Balance every {{#if}} with {{/if}} and every {{#each}} with {{/each}}, and close every "{{" with "}}".'),
  W306: def('warning', 'Unknown template filter', 'Unknown filter "{name}" renders as an empty string.', 'Use one of upper, lower, json, ago.'),
  E307: def('error', 'Invalid regular expression', 'Invalid regular expression /{pattern}/: {detail}.', 'Fix the pattern.'),
  E308: def('error', 'Invalid SET assignment', 'Cannot read the assignment "{src}".', 'Write "variable = expression" (the target may be dotted, e.g. user.tier = "gold").'),
  E309: def('error', 'Wrong number of arguments', '{name}() takes {expected} argument(s), found {found}.', 'Pass {expected} argument(s).'),
  W311: def('warning', 'Quoted value looks like an expression', '{what} is the text "{value}" because it is quoted, but it reads like an expression.', 'Write it without quotes to use its value, or keep the quotes if the text itself is meant (docs/abl.md, "Values and conditions").'),
  E312: def('error', 'Template form not allowed in a value', '{what} uses {form}, which only a reply text can render.', 'Use {{expr}} (with | upper or | lower) inside a quoted value, or compute it with SET first.'),
  E310: def('error', 'Regular expression not supported', 'The regular expression /{pattern}/ cannot be matched in linear time: {detail}.', 'Rewrite it without backreferences (\\1, \\k<name>) and lookaround ((?=, (?!, (?<=, (?<!), with counted repetitions of at most 1000 in all and at most 2000 characters (docs/abl.md, "Regular expressions").'),

  // Tools (E4xx)
  E400: def('error', 'Invalid tool signature', 'Cannot read the tool signature "{src}": {detail}.', 'Write name(param: type, other: type = default) -> ReturnType.'),
  E401: def('error', 'Duplicate tool', 'Tool "{name}" is defined more than once (also line {first}).', 'Rename or remove one of the definitions.'),
  E402: def('error', 'Unknown tool type', 'Tool "{name}" has unknown type "{type}".', 'Use http, async_webhook, sandbox, workflow, mcp or lambda, or omit type for a contract-only tool.'),
  E403: def('error', 'Missing tool binding property', '{type} tool "{name}" needs "{key}".', 'Add "{key}: ..." to the tool.'),
  E404: def('error', 'Invalid sandbox tool', 'Sandbox tool "{name}": {detail}.', 'Give runtime: javascript|python and either code: | or entrypoint:.'),
  E407: def('error', 'Imported file not found', 'Cannot find the tool library "{file}" (resolved to {resolved}).', 'Paths are relative to the importing file, e.g. "../tools/billing.tools.abl".'),
  E408: def('error', 'Imported tool not in library', 'Tool "{name}" is not defined in {file}.', 'Check the name, or define it in that library.'),
  W409: def('warning', 'Side effects without confirmation', 'Tool "{name}" declares side_effects: true but has no confirmation policy.', 'Add confirmation: {require: always} (the user confirms each call, seeing its arguments) or {require: when_side_effects}, or write confirmation: {require: never} to say none is needed.'),
  W410: def('warning', 'Undeclared type', 'Type "{name}" is not declared; it is treated as an opaque object.', 'Use a primitive type, object, T[] or {field: type}.'),
  E411: def('error', 'Invalid type', 'Cannot read the type "{src}".', 'Use string, number, boolean, date, datetime, object, T[], {f: T, g?: T} or nullable<T>.'),
  E412: def('error', 'Duplicate parameter', 'Parameter "{name}" is declared twice in tool "{tool}".', 'Rename or remove one of them.'),
  E413: def('error', 'Import of a non-library file', '"{file}" is not a tool library (it does not start with TOOLS:).', 'Import from a tools/*.tools.abl file.'),
  E414: def('error', 'Invalid import', 'Cannot read the import "{src}".', 'Write FROM "../tools/x.tools.abl" USE: a, b  or  file: "../tools/x.tools.abl" [a, b].'),
  W415: def('warning', 'Tool kind not executed yet', 'Tool "{name}" is {what}, which the runtime cannot execute yet: a call to it fails with a tool_error unless a test mock answers it.', 'Bind it: to an HTTP endpoint (type: http or async_webhook), an MCP server\'s tool (type: mcp), a project function (type: lambda) or code of its own (type: sandbox); or keep it for tests with tool mocks (docs/not-supported.md).'),
  W419: def('warning', 'Tool auth not applied', 'Tool "{name}" declares auth: {kind}, which the runtime does not apply: its calls go out {what}.', 'Send the credential through headers (e.g. Authorization: "Bearer {{secrets.TOKEN}}") with auth: custom, or use auth: bearer, api_key, oauth2_client or oauth2_user (docs/not-supported.md).'),
  W420: def('warning', 'Tool immutable_params not applied', 'Tool "{name}" lists immutable_params ({what}) but asks no confirmation ({why}), so nothing holds them: the call goes out with the arguments as given.', 'Write confirmation: {require: always} (or when_side_effects on a tool with hints.side_effects: true), whose question fixes the arguments until the user answers, or remove immutable_params (docs/not-supported.md).'),
  W424: def('warning', 'Tool result caching not applied', 'Tool "{name}" is hinted cacheable, which the runtime does not act on: every call goes to the endpoint.', 'Keep the result with AS: and CALL again only when it IS NOT SET, or remove the hint (docs/not-supported.md).'),
  W425: def('warning', 'Tool body type not applied', 'Tool "{name}" sets body_type: {type}, which the runtime does not encode: {what}.', 'Write the body with body_template (docs/not-supported.md).'),
  E418: def('error', 'Incomplete OAuth2 client credentials', 'Tool "{name}" uses auth: oauth2_client but its auth_config has no {key}, so no access token can be obtained.', 'Give auth_config.token_url (the token endpoint), client_id and client_secret (e.g. "{{secrets.CLIENT_SECRET}}"); each call exchanges them for an access token (docs/secrets.md, "OAuth2 client credentials").'),
  E441: def('error', 'Custom auth without headers', 'Tool "{name}" uses auth: custom but writes no auth_config.custom_headers and no headers, so its calls would carry no credential.', 'Write the credential as auth_config.custom_headers (e.g. X-Signature: "{{secrets.SIGNING_KEY}}") or under headers, or use auth: bearer, api_key or oauth2_client.'),
  E442: def('error', 'OAuth2 kind not given', 'Tool "{name}" uses auth: oauth2, but its auth_config says neither which OAuth2 flow it uses: no token_url (client credentials) and no access_token (a user\'s token).', 'Write auth: oauth2_client with auth_config token_url, client_id and client_secret, or auth: oauth2_user with auth_config.access_token (or give auth_config.grant_type: client_credentials | authorization_code).'),
  E443: def('error', 'Vault secret outside headers and body', 'Tool "{name}" uses {{_secret.{key}}} outside its headers and body_template, where vault secrets may not go.', 'Move it into a header or the body_template (a URL or query string is logged by servers and proxies).'),
  E444: def('error', 'Invalid RESULT_SECRETS entry', 'Tool "{name}" RESULT_SECRETS: cannot read "{src}".', 'Write one line per secret: result.path -> key (consumers: [tool_a, tool_b], ttl: 300, single_use: true); the parenthesis is optional.'),
  E445: def('error', 'Vault secret not readable', 'Tool "{name}" uses {{_secret.{key}}} but its SECRET_ACCESS does not list "{key}" under READ, so the placeholder could only ever be empty.', 'Add SECRET_ACCESS: READ: [{key}] to the tool.'),
  E417: def('error', 'Invalid tool access', 'Tool "{name}" {key}: {detail}.', 'Write pii_access: full|masked|none or a list of PII kinds (email, phone, card, ssn) and sensitive GATHER fields, and context_access: all|none or a list of message metadata keys (docs/abl.md, "What a tool receives").'),

  // GATHER (E45x)
  E450: def('error', 'Duplicate gather field', 'Gather field "{name}" is declared more than once in {where}.', 'Remove or rename the duplicate.'),
  E451: def('error', 'Invalid gather type', 'Gather field "{name}" has unknown type "{type}".', 'Use string, number, boolean, date, datetime, email or phone.'),
  E452: def('error', 'Invalid validation rule', 'Gather field "{name}": {detail}.', 'Write min(n), max(n), enum(a, b), email() or pattern(regex).'),
  E453: def('error', 'Unknown gather dependency', 'Gather field "{name}" depends on "{dep}", which is not a gather field here.', 'Declare "{dep}" or remove it from depends_on.'),

  W454: def('warning', 'Gather range not applied', 'Gather field "{name}" is a {type} field, and range bounds only number, date, datetime and string fields: its values are not checked against it.', 'Check the value with validate: pattern(...) or enum(...) (docs/not-supported.md).'),

  // FLOW (E5xx)
  E500: def('error', 'Step without REASONING', "Step '{name}' must declare REASONING: true or REASONING: false.", 'Add "REASONING: false" for a scripted step or "REASONING: true" for an LLM step.'),
  E501: def('error', 'Unknown step', '{what} refers to step "{name}", which does not exist in this FLOW.', 'Use one of: {steps}.'),
  E502: def('error', 'Duplicate step', 'Step "{name}" is defined more than once.', 'Rename or remove one of them.'),
  W503: def('warning', 'Unreachable step', 'Step "{name}" cannot be reached from the entry step "{entry}".', 'Add a transition to it (THEN, ON_FAIL, GOTO...) or remove it.'),
  E504: def('error', 'Listed step not defined', 'Step "{name}" is listed in steps but has no block.', 'Add a "{name}:" block under FLOW or remove it from steps.'),
  W505: def('warning', 'Step not listed', 'Step "{name}" is defined but missing from the steps list; it is appended to the order.', 'Add it to steps: [...].'),
  W509: def('warning', 'Voice settings not used', 'Step "{name}" has VOICE settings that nothing uses ({keys}): the voice channel reads voice, language, barge_in, speech_timeout, silence_timeout, ssml and plain_text, and text channels send RESPOND as written.', 'Use those keys, or remove the others (docs/not-supported.md).'),
  W510: def('warning', 'Voice instructions not used', 'Step "{name}" has VOICE instructions, which only a realtime speech model follows: the voice channel speaks through Twilio <Say>, which cannot, so the style is not applied.', 'Say it with ssml (prosody, emphasis) or plain_text, or remove instructions (docs/not-supported.md).'),
  E507: def('error', 'Invalid CALL', 'Cannot read the CALL "{src}": {detail}.', 'Write CALL: tool_name with WITH:/AS:, CALL: tool(a, "x") or CALL: tool(p = expr).'),
  E508: def('error', 'Empty FLOW', 'The FLOW has no steps.', 'Add at least one step block with REASONING: true|false.'),

  // Templates (E6xx)
  E601: def('error', 'Undefined template', 'TEMPLATE({name}) is not defined in TEMPLATES.', 'Define it under TEMPLATES: {name}: {DEFAULT: "..."} or fix the name.'),
  W602: def('warning', 'Unused template', 'Template "{name}" is never used.', 'Use it with RESPOND: TEMPLATE({name}) or remove it.'),

  W603: def('warning', 'Reply variant not sent', 'The {variant} variant of {what} is kept but never sent: every channel gets the DEFAULT text.', 'Write the text every channel should get in DEFAULT; give a channel rich content with the step\'s RICH_CONTENT (docs/not-supported.md).'),

  // Cross-references (E7xx)
  E701: def('error', 'Unknown agent', '{what} targets agent "{name}", which is not in this project.', 'Add agents/{name}.agent.abl or fix the name (known agents: {agents}).'),
  E702: def('error', 'Agent targets itself', '{what}: agent "{name}" cannot target itself.', 'Remove the rule or target another agent.'),
  W703: def('warning', 'Handoff cycle without a way out', 'Agents {cycle} hand off to each other in a cycle with no COMPLETE or RETURN to end it.', 'Give one agent in the cycle a COMPLETE rule or use RETURN: true.'),
  E704: def('error', 'Delegation cycle', 'Agents {cycle} delegate to each other in a cycle.', 'Delegation must form a tree; remove one DELEGATE entry.'),
  E705: def('error', 'Entry agent not found', 'project.json names entry agent "{name}", which is not in this project.', 'Set entryAgent to one of: {agents}.'),
  W706: def('warning', 'No agents', 'The project has no agent or supervisor documents.', 'Add agents/<Name>.agent.abl.'),
  W707: def('warning', 'Delegation retry not run', 'DELEGATE {agent} ON_FAILURE asks for a retry, which the runtime does not run: a failed delegation is skipped, as with continue.', 'Write ON_FAILURE: respond (with FAILURE_MESSAGE), escalate or continue; the delegated agent\'s tool calls retry on their own (docs/not-supported.md).'),
  W708: def('warning', 'Handoff ON_FAILURE not run', 'HANDOFF to {to} has ON_FAILURE: {value}, which the runtime does not run: a refused handoff is traced as an error and the agent stays, answering the message itself.', 'Remove it, and let the agent\'s own instructions or FLOW cover the case (docs/not-supported.md).'),
  W709: def('warning', 'Remote agent not used', '{what} {name} has {key}: a remote (A2A) agent, which the runtime does not call: it runs the project\'s own agent {name}.', 'Remove it and run the agent in this project, or call the remote agent through an http tool (docs/not-supported.md).'),
  E721: def('error', 'Tool not found', 'Tool {name} not found in project.', 'Declare it under TOOLS: (or import it with FROM "../tools/x.tools.abl" USE: {name}).'),

  // MEMORY, CONSTRAINTS, GUARDRAILS, ESCALATE (E8xx)
  E801: def('error', 'Invalid memory entry', 'Cannot read the {kind} memory entry: {detail}.', 'See MEMORY in docs/abl.md for the shape of each entry.'),
  W802: def('warning', 'Deprecated recall form', 'The recall entry "{key}: …" is the deprecated form; it is read as ON: {on} (a text under it is the instruction, with ACTION: prompt_llm).', 'Write - ON: {on} with ACTION: and PATHS: (docs/abl.md, MEMORY).'),
  W806: def('warning', 'Memory recall not run', 'The recall entry ON: {on} is not run: the runtime runs recall at ON: session:start and ON: tool:<name>:after only.', 'Use ON: session:start (the facts are then there for the whole session), or remove it (docs/not-supported.md).'),
  E803: def('error', 'Write to read-only memory', 'SET writes "{path}", which is declared with ACCESS: {access}.', 'Declare it with ACCESS: readwrite or write, or write a session variable instead.'),
  E850: def('error', 'Invalid constraint', 'Cannot read the constraint "{src}".', 'Start it with REQUIRE, RESTRICT, LIMIT or WARN followed by a condition, optionally BEFORE calling <tool> or BEFORE returning results.'),
  E851: def('error', 'Invalid ON_FAIL', 'Cannot read ON_FAIL "{src}".', 'Use a message ("text" or RESPOND "text"), BLOCK, ESCALATE, HANDOFF Agent or a block {RESPOND, COLLECT, GOTO, THEN}.'),
  E852: def('error', 'Invalid guardrail', 'Guardrail "{name}": {detail}.', 'Give it kind, check and action (see GUARDRAILS in docs/abl.md).'),
  E856: def('error', 'Invalid provider guardrail', 'Guardrail "{name}": {detail}.', 'Write provider: openai (or openai_moderation, local), category: a moderation category (hate, harassment, self-harm, sexual, violence, illicit, or an id such as violence/graphic), threshold: a number from 0 to 1, and optionally on_error: block|allow (docs/abl.md, "Provider guardrails").'),
  W857: def('warning', 'Guardrail llm_check not used', 'Guardrail "{name}" has {what}: the llm_check is not used.', 'Split it: one guardrail with the check or provider, another with the llm_check (docs/not-supported.md).'),
  W854: def('warning', 'ON_ERROR retry not applied', 'ON_ERROR {type} sets {key}: {value}, which the runtime does not apply: {instead}.', '{fix} (docs/not-supported.md).'),
  W855: def('warning', 'Error type never raised', 'ON_ERROR {type} never runs: the runtime raises only tool_timeout, tool_error, validation_error and llm_error (timeout also takes tool timeouts){instead}.', 'Handle it where it happens, or remove it (docs/not-supported.md).'),
  W859: def('warning', 'Routing skills not matched', '{where} routing skills [{skills}] are stored on the human task, but nothing matches people by them: the task waits in its queue for anyone who may resolve it.', 'Route by queue (one queue per skill), or keep skills as a note for the person (docs/not-supported.md).'),
  E853: def('error', 'Invalid escalation rule', 'Cannot read on_human_complete rule "{src}".', 'Write - IF <condition>: CONTINUE | COMPLETE | HANDOFF to Agent | RESPOND "message", or the condition with a block of RESPOND and THEN: CONTINUE | COMPLETE | HANDOFF to Agent under it.'),

  // NLU (E86x)
  E860: def('error', 'Invalid NLU definition', '{what}: {detail}.', '{fix}'),
  W861: def('warning', 'NLU setting not run', '{what} is stored but not run: {detail}.', '{fix} (docs/not-supported.md).'),
} as const satisfies Record<string, DiagnosticDef>;

export type DiagnosticCode = keyof typeof DIAGNOSTICS;

/**
 * The warnings that say a construct compiles but is not run (or not fully): each has a row in
 * docs/not-supported.md, and test/unit/abl/not-supported.test.ts keeps the two equal.
 */
export const UNSUPPORTED_WARNINGS = [
  'W206', 'W218', 'W219', 'W415', 'W419', 'W420', 'W424', 'W425', 'W454', 'W509', 'W510', 'W603',
  'W707', 'W708', 'W709', 'W806', 'W854', 'W855', 'W857', 'W859', 'W861',
] as const satisfies readonly DiagnosticCode[];
export type DiagnosticArgs = Readonly<Record<string, string | number>>;

/** Where a diagnostic points. */
export interface Position {
  path: string;
  line: number;
  column: number;
}

function fill(template: string, args: DiagnosticArgs): string {
  if (!template.includes('{')) return template;
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => {
    const v = args[name];
    return v === undefined ? whole : String(v);
  });
}

/** Builds a diagnostic from the registry. */
export function diag(code: DiagnosticCode, at: Position, args: DiagnosticArgs = {}): Diagnostic {
  const d: DiagnosticDef = DIAGNOSTICS[code];
  const fix = fill(d.fix, args);
  return {
    severity: d.severity,
    code,
    message: `${fill(d.message, args)}${fix ? ` ${fix}` : ''}`,
    path: at.path,
    line: at.line,
    column: at.column,
  };
}

/** Default cap on reported problems per project (hostile input). */
export const MAX_DIAGNOSTICS = 200;

/** Collects diagnostics up to a cap; dedupes identical reports. */
export class DiagnosticSink {
  readonly list: Diagnostic[] = [];
  private readonly seen = new Set<string>();
  private capped = false;

  constructor(private readonly max: number = MAX_DIAGNOSTICS) {}

  report(code: DiagnosticCode, at: Position, args: DiagnosticArgs = {}): void {
    this.add(diag(code, at, args));
  }

  add(d: Diagnostic): void {
    const key = `${d.code}|${d.path}|${d.line}|${d.column}|${d.message}`;
    if (this.seen.has(key)) return;
    if (this.list.length >= this.max) {
      if (!this.capped) {
        this.capped = true;
        this.list.push(diag('W199', d, { limit: this.max }));
      }
      return;
    }
    this.seen.add(key);
    this.list.push(d);
  }

  get errorCount(): number {
    return this.list.filter((d) => d.severity === 'error').length;
  }
}

/** Sorts diagnostics by path, line, column, code (stable output). */
export function sortDiagnostics(list: readonly Diagnostic[]): Diagnostic[] {
  return [...list].sort(
    (a, b) =>
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0) ||
      a.line - b.line ||
      a.column - b.column ||
      (a.code < b.code ? -1 : a.code > b.code ? 1 : 0),
  );
}

/**
 * Renders a diagnostic with a code frame:
 *
 *     agents/A.agent.abl:3:5 error E203 Unknown section "FOO". ...
 *       2 | GOAL: "x"
 *     > 3 | FOO: bar
 *         | ^
 */
export function formatDiagnostic(d: Diagnostic, sourceText?: string): string {
  const head = `${d.path}:${d.line}:${d.column} ${d.severity} ${d.code} ${d.message}`;
  if (sourceText === undefined) return head;
  const lines = sourceText.split(/\r\n|\r|\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const first = Math.max(1, d.line - 1);
  const last = Math.min(lines.length, d.line + 1);
  const width = String(last).length;
  const out = [head];
  for (let n = first; n <= last; n++) {
    const text = (lines[n - 1] ?? '').replace(/\t/g, '  ');
    const gutter = String(n).padStart(width, ' ');
    out.push(`${n === d.line ? '>' : ' '} ${gutter} | ${text}`.trimEnd());
    if (n === d.line) out.push(`  ${' '.repeat(width)} | ${' '.repeat(Math.max(0, d.column - 1))}^`);
  }
  return out.join('\n');
}

/** Renders many diagnostics, looking up each file's text by path. */
export function formatDiagnostics(
  list: readonly Diagnostic[],
  files: ReadonlyArray<{ path: string; content: string }>,
): string {
  const byPath = new Map(files.map((f) => [f.path, f.content]));
  return list.map((d) => formatDiagnostic(d, byPath.get(d.path))).join('\n\n');
}
