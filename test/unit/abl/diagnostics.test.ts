// One error (or warning) test per construct: code, message, line, column — and rendered code frames.

import { compileProject, DIAGNOSTICS, formatDiagnostic, parse, type ProjectFile } from '../../../abl';
import { agentProject } from './helpers';

interface Case {
  name: string;
  files: ProjectFile[];
  code: string;
  line: number;
  column: number;
  message: RegExp;
  path?: string;
}

const A = (body: string, extra: ProjectFile[] = []): ProjectFile[] => agentProject(body, extra);
const other = (name: string, body = ''): ProjectFile => ({ path: `agents/${name}.agent.abl`, content: `AGENT: ${name}\nGOAL: "x"\n${body}` });
const lib = (content: string): ProjectFile => ({ path: 'tools/lib.tools.abl', content });
const step = (name: string, body: string): string => `  ${name}:\n${body.split('\n').map((l) => `    ${l}`).join('\n')}\n`;

const cases: Case[] = [
  // source format
  { name: 'inconsistent indentation', files: A('GATHER:\n    a:\n      prompt: "x"\n  b:\n    prompt: "y"\n'), code: 'E100', line: 6, column: 3, message: /indented to column 3 but its siblings start at column 5/ },
  { name: 'tab indentation', files: A('PERSONA:\n\t"x"\n'), code: 'W101', line: 4, column: 1, message: /tab/ },
  { name: 'unterminated string', files: A('PERSONA: "friendly\n'), code: 'E102', line: 3, column: 10, message: /never closed/ },
  { name: 'unclosed inline list', files: A('LIMITATIONS: [a, b\n'), code: 'E103', line: 3, column: 14, message: /inline list .* not closed/ },
  { name: 'list mixed with keys', files: A('LIMITATIONS:\n  - a\n  b: c\n'), code: 'E104', line: 5, column: 3, message: /mixes "- item" lines/ },
  { name: 'text outside a section', files: A('just some words\n'), code: 'E105', line: 3, column: 1, message: /Expected a section such as "GOAL:"/ },
  { name: 'invalid YAML agent', files: [{ path: 'agents/Y.agent.yaml', content: 'agent: Y\ngoal: "g"\nflow:\n  a: [1, 2\n' }], code: 'E111', line: 5, column: 1, message: /Cannot read this YAML agent: Flow sequence in block collection must be sufficiently indented and end with a \]\. Fix the YAML/, path: 'agents/Y.agent.yaml' },
  { name: 'value with an unexpected nested block', files: A(`FLOW:\n${step('a', 'REASONING: false\nRESPOND: "Hi"\n  TONE: "slowly"')}`), code: 'E110', line: 7, column: 7, message: /"RESPOND:" has a value on its line and an indented block under it \(starting with "TONE:"\)/ },
  { name: 'duplicate key', files: A('EXECUTION:\n  model: a\n  model: b\n'), code: 'E108', line: 5, column: 3, message: /"model" appears more than once/ },
  { name: 'empty document', files: [{ path: 'agents/E.agent.abl', content: '# nothing here\n' }], code: 'E107', line: 1, column: 1, message: /has no sections/, path: 'agents/E.agent.abl' },
  // documents and sections
  { name: 'missing header', files: [{ path: 'agents/X.agent.abl', content: 'GOAL: "x"\n' }], code: 'E200', line: 1, column: 1, message: /must start with AGENT:/, path: 'agents/X.agent.abl' },
  { name: 'missing GOAL', files: [{ path: 'agents/B.agent.abl', content: 'AGENT: B\nPERSONA: "p"\n' }], code: 'E201', line: 1, column: 1, message: /Agent "B" has no GOAL/, path: 'agents/B.agent.abl' },
  { name: 'MODE', files: A('MODE: flow\n'), code: 'E202', line: 3, column: 1, message: /MODE: is not part of ABL/ },
  { name: 'unknown section', files: A('FOO: bar\n'), code: 'E203', line: 3, column: 1, message: /Unknown section "FOO"/ },
  { name: 'duplicate section', files: A('PERSONA: a\nPERSONA: b\n'), code: 'E204', line: 4, column: 1, message: /PERSONA appears more than once \(first on line 3\)/ },
  { name: 'lower-case section', files: A('persona: "p"\n'), code: 'W205', line: 3, column: 1, message: /"persona" is not uppercase\. Write it as "PERSONA:"/ },
  { name: 'phase-2 section', files: A('ROUTING:\n  mode: x\n'), code: 'W206', line: 3, column: 1, message: /ROUTING is parsed and kept in IR.extra/ },
  { name: 'EXECUTION setting not run', files: A('EXECUTION:\n  model: local\n  top_p: 0.9\n'), code: 'W218', line: 5, column: 3, message: /EXECUTION top_p is stored but the runtime does not read it/ },
  { name: 'LANGUAGE not used', files: A('LANGUAGE: es\n'), code: 'W219', line: 3, column: 11, message: /LANGUAGE: es is stored but the runtime does not use it/ },
  { name: 'invalid agent name', files: [{ path: 'agents/b.agent.abl', content: 'AGENT: 9lives\nGOAL: g\n' }], code: 'E207', line: 1, column: 8, message: /"9lives" is not a valid agent name/, path: 'agents/b.agent.abl' },
  { name: 'duplicate agent name', files: [...A(''), { path: 'agents/A2.agent.abl', content: 'AGENT: A\nGOAL: g\n' }], code: 'E208', line: 1, column: 1, message: /Agent "A" is also defined in agents\/A.agent.abl/, path: 'agents/A2.agent.abl' },
  { name: 'section in a tool library', files: [...A(''), lib('TOOLS:\n  t()\nGOAL: x\n')], code: 'E209', line: 3, column: 1, message: /GOAL is not allowed in a tool library/, path: 'tools/lib.tools.abl' },
  { name: 'wrong value shape', files: A('HANDOFF: nope\n'), code: 'E210', line: 3, column: 10, message: /HANDOFF expects a list of "- KEY: value" entries/ },
  { name: 'invalid enum value', files: A('MEMORY:\n  session:\n    - cart\n      RESET: sometimes\n'), code: 'E211', line: 6, column: 14, message: /RESET must be one of per_session, per_step, never, per_activation; found "sometimes"/ },
  { name: 'missing required property', files: A('HANDOFF:\n  - WHEN: x == 1\n'), code: 'E212', line: 4, column: 5, message: /A HANDOFF rule is missing "TO"/ },
  { name: 'unknown property', files: A('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n    COLOR: red\n', [other('B')]), code: 'W213', line: 6, column: 5, message: /Unknown property "COLOR" in HANDOFF/ },
  { name: 'unknown gather field property', files: A('GATHER:\n  a:\n    prompt: "A?"\n    colour: red\n'), code: 'W213', line: 6, column: 5, message: /Unknown property "colour" in gather field a; it is stored but has no effect/ },
  { name: 'invalid duration', files: A('DELEGATE:\n  - AGENT: B\n    TIMEOUT: soon\n', [other('B')]), code: 'E214', line: 5, column: 14, message: /TIMEOUT expects a duration, found "soon"/ },
  { name: 'invalid project.json', files: [...A(''), { path: 'project.json', content: '{nope' }], code: 'E215', line: 1, column: 1, message: /project.json cannot be read/, path: 'project.json' },
  { name: 'empty tool library', files: [...A(''), lib('TOOLS:\n  base_url: "https://x"\n')], code: 'E216', line: 1, column: 1, message: /declares no tools/, path: 'tools/lib.tools.abl' },
  // expressions and templates
  { name: 'quoted value that reads like an expression', files: A(`FLOW:\n${step('a', 'REASONING: false\nSET:\n  total: "amount * 2"')}`), code: 'W311', line: 7, column: 14, message: /SET total is the text "amount \* 2" because it is quoted, but it reads like an expression\. Write it without quotes/ },
  { name: 'template block in a value', files: A(`FLOW:\n${step('a', 'REASONING: false\nSET:\n  label: "{{#if vip}}VIP{{/if}}"')}`), code: 'E312', line: 7, column: 15, message: /SET label uses \{\{#if\}\}, which only a reply text can render/ },
  { name: 'expression does not parse', files: A('COMPLETE:\n  - WHEN: amount >\n'), code: 'E300', line: 4, column: 19, message: /Cannot parse the expression "amount >": unexpected end of expression/ },
  { name: 'natural language outside HANDOFF', files: A('COMPLETE:\n  - WHEN: the user is happy\n'), code: 'E300', line: 4, column: 15, message: /Natural-language conditions are only allowed in HANDOFF, DELEGATE and ESCALATE/ },
  { name: 'unknown function', files: A('COMPLETE:\n  - WHEN: FROB(x) > 1\n'), code: 'E301', line: 4, column: 11, message: /Unknown function FROB\(\)/ },
  { name: 'expression too deep', files: A(`COMPLETE:\n  - WHEN: ${'('.repeat(40)}1${')'.repeat(40)}\n`), code: 'E303', line: 4, column: 43, message: /exceeds the limit/ },
  { name: 'IMPLIES outside constraints', files: A('COMPLETE:\n  - WHEN: a IMPLIES b\n'), code: 'E304', line: 4, column: 11, message: /IMPLIES is only allowed in CONSTRAINTS/ },
  { name: 'template syntax', files: A('ON_START:\n  RESPOND: "{{#if x}}hi"\n'), code: 'E305', line: 4, column: 13, message: /\{\{#if\}\} is never closed/ },
  { name: 'unknown filter', files: A('ON_START:\n  RESPOND: "{{name | shout}}"\n'), code: 'W306', line: 4, column: 15, message: /Unknown filter "shout"/ },
  { name: 'invalid regex', files: A('COMPLETE:\n  - WHEN: x matches /(/\n'), code: 'E307', line: 4, column: 21, message: /Invalid regular expression/ },
  { name: 'regex the linear-time matcher cannot run', files: A('COMPLETE:\n  - WHEN: x matches /(a)\\1/\n'), code: 'E310', line: 4, column: 21, message: /cannot be matched in linear time: it uses a backreference/ },
  { name: 'invalid SET', files: A('ON_START:\n  SET: 5 = x\n'), code: 'E308', line: 4, column: 8, message: /Cannot read the assignment "5 = x"/ },
  { name: 'wrong arity', files: A('COMPLETE:\n  - WHEN: UPPER(a, b) == "X"\n'), code: 'E309', line: 4, column: 11, message: /UPPER\(\) takes 1 argument\(s\), found 2/ },
  // tools
  { name: 'invalid tool signature', files: A('TOOLS:\n  get-thing(a: string)\n'), code: 'E400', line: 4, column: 3, message: /Cannot read the tool signature "get-thing\(a: string\)"/ },
  { name: 'duplicate tool', files: A('TOOLS:\n  t()\n  t()\n'), code: 'E401', line: 5, column: 3, message: /Tool "t" is defined more than once \(also line 4\)/ },
  { name: 'unknown tool type', files: A('TOOLS:\n  t()\n    type: carrier_pigeon\n'), code: 'E402', line: 5, column: 11, message: /Tool "t" has unknown type "carrier_pigeon"/ },
  { name: 'http tool without endpoint', files: A('TOOLS:\n  t()\n    type: http\n'), code: 'E403', line: 4, column: 3, message: /http tool "t" needs "endpoint"/ },
  { name: 'sandbox without code', files: A('TOOLS:\n  t()\n    type: sandbox\n    runtime: javascript\n'), code: 'E404', line: 4, column: 3, message: /neither code nor entrypoint/ },
  { name: 'import not found', files: A('TOOLS:\n  FROM "../tools/missing.tools.abl" USE: a\n'), code: 'E407', line: 4, column: 3, message: /Cannot find the tool library "..\/tools\/missing.tools.abl" \(resolved to tools\/missing.tools.abl\)/ },
  { name: 'imported tool missing', files: A('TOOLS:\n  FROM "../tools/lib.tools.abl" USE: nope\n', [lib('TOOLS:\n  t()\n')]), code: 'E408', line: 4, column: 3, message: /Tool "nope" is not defined in ..\/tools\/lib.tools.abl/ },
  { name: 'side effects without confirmation', files: A('TOOLS:\n  t()\n    hints:\n      side_effects: true\n'), code: 'W409', line: 4, column: 3, message: /side_effects: true but has no confirmation policy/ },
  { name: 'undeclared type', files: A('TOOLS:\n  t() -> Hotel[]\n'), code: 'W410', line: 4, column: 3, message: /Type "Hotel" is not declared/ },
  { name: 'invalid type', files: A('TOOLS:\n  t(a: {x) -> string\n'), code: 'E411', line: 4, column: 3, message: /Cannot read the type/ },
  { name: 'duplicate parameter', files: A('TOOLS:\n  t(a: string, a: number)\n'), code: 'E412', line: 4, column: 3, message: /Parameter "a" is declared twice in tool "t"/ },
  { name: 'import of an agent file', files: A('TOOLS:\n  FROM "./B.agent.abl" USE: a\n', [other('B')]), code: 'E413', line: 4, column: 3, message: /is not a tool library/ },
  { name: 'invalid import', files: A('TOOLS:\n  file: ../tools/x.tools.abl\n'), code: 'E414', line: 4, column: 3, message: /Cannot read the import/ },
  { name: 'tool kind not executed yet', files: A('TOOLS:\n  t()\n    description: "no binding"\n'), code: 'W415', line: 4, column: 3, message: /Tool "t" is contract-only \(no type\), which the runtime cannot execute yet/ },
  { name: 'saml tool auth', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    auth: saml\n'), code: 'W419', line: 7, column: 5, message: /Tool "t" declares auth: saml, which the runtime does not apply/ },
  { name: 'custom tool auth without headers', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    auth: custom\n'), code: 'E441', line: 7, column: 5, message: /Tool "t" uses auth: custom but writes no auth_config.custom_headers and no headers/ },
  { name: 'oauth2 tool auth of no known kind', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    auth: oauth2\n'), code: 'E442', line: 7, column: 11, message: /Tool "t" uses auth: oauth2, but its auth_config says neither/ },
  { name: 'vault secret in the endpoint', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com/{{_secret.tok}}"\n    SECRET_ACCESS:\n      READ: [tok]\n'), code: 'E443', line: 6, column: 5, message: /Tool "t" uses \{\{_secret.tok\}\} outside its headers and body_template/ },
  { name: 'unreadable RESULT_SECRETS line', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    RESULT_SECRETS:\n      - token into vault\n'), code: 'E444', line: 8, column: 9, message: /Tool "t" RESULT_SECRETS: cannot read "token into vault"/ },
  { name: 'vault secret the tool may not read', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    headers:\n      X-Token: "{{_secret.tok}}"\n'), code: 'E445', line: 7, column: 5, message: /Tool "t" uses \{\{_secret.tok\}\} but its SECRET_ACCESS does not list "tok"/ },
  { name: 'oauth2_client tool', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    auth: oauth2_client\n'), code: 'E418', line: 7, column: 5, message: /Tool "t" uses auth: oauth2_client but its auth_config has no token_url/ },
  { name: 'immutable_params without a confirmation', files: A('TOOLS:\n  t(amount: number)\n    type: http\n    endpoint: "https://x.example.com"\n    confirmation:\n      require: never\n      immutable_params: [amount]\n'), code: 'W420', line: 7, column: 5, message: /Tool "t" lists immutable_params \(amount\) but asks no confirmation \(require: never\)/ },
  { name: 'tool caching hint not applied', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    hints:\n      cacheable: true\n'), code: 'W424', line: 8, column: 7, message: /Tool "t" is hinted cacheable, which the runtime does not act on: every call goes to the endpoint/ },
  { name: 'tool body type not applied', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    method: POST\n    body_type: xml\n'), code: 'W425', line: 8, column: 5, message: /Tool "t" sets body_type: xml, which the runtime does not encode: without a body_template its arguments go as JSON/ },
  { name: 'invalid tool access', files: A('TOOLS:\n  t()\n    type: http\n    endpoint: "https://x.example.com"\n    pii_access: 3\n'), code: 'E417', line: 7, column: 5, message: /Tool "t" pii_access: expected full, masked, none or a list/ },
  // gather
  { name: 'duplicate gather field', files: A('FLOW:\n' + step('s', 'REASONING: false\nGATHER:\n  - a: required\n  - a: optional')), code: 'E450', line: 8, column: 9, message: /Gather field "a" is declared more than once/ },
  { name: 'invalid gather type', files: A('GATHER:\n  a:\n    type: colour\n'), code: 'E451', line: 5, column: 11, message: /unknown type "colour"/ },
  { name: 'invalid validation rule', files: A('GATHER:\n  a:\n    validate: pattern([)\n'), code: 'E452', line: 5, column: 15, message: /invalid pattern/ },
  { name: 'gather range on a yes/no field', files: A('GATHER:\n  a:\n    type: boolean\n    range: [0, 1]\n'), code: 'W454', line: 6, column: 5, message: /Gather field "a" is a boolean field, and range bounds only number, date, datetime and string fields/ },
  { name: 'unknown dependency', files: A('GATHER:\n  a:\n    depends_on: [b]\n'), code: 'E453', line: 4, column: 3, message: /depends on "b", which is not a gather field/ },
  // flow
  { name: 'step without REASONING', files: A('FLOW:\n  greet:\n    RESPOND: "hi"\n'), code: 'E500', line: 4, column: 3, message: /Step 'greet' must declare REASONING: true or REASONING: false\./ },
  { name: 'unknown step', files: A('FLOW:\n' + step('a', 'REASONING: false\nTHEN: nowhere')), code: 'E501', line: 4, column: 3, message: /THEN in step 'a' refers to step "nowhere", which does not exist/ },
  { name: 'unknown entry point', files: A('FLOW:\n  entry_point: b\n' + step('a', 'REASONING: false')), code: 'E501', line: 4, column: 3, message: /entry_point refers to step "b"/ },
  { name: 'duplicate step', files: A('FLOW:\n' + step('a', 'REASONING: false') + step('a', 'REASONING: false')), code: 'E502', line: 6, column: 3, message: /Step "a" is defined more than once/ },
  { name: 'unreachable step', files: A('FLOW:\n' + step('a', 'REASONING: false') + step('b', 'REASONING: false')), code: 'W503', line: 6, column: 3, message: /Step "b" cannot be reached from the entry step "a"/ },
  { name: 'listed step not defined', files: A('FLOW:\n  steps: [a, b]\n' + step('a', 'REASONING: false')), code: 'E504', line: 4, column: 3, message: /Step "b" is listed in steps but has no block/ },
  { name: 'step not listed', files: A('FLOW:\n  steps: [a]\n' + step('a', 'REASONING: false\nTHEN: b') + step('b', 'REASONING: false')), code: 'W505', line: 8, column: 3, message: /Step "b" is defined but missing from the steps list/ },
  { name: 'invalid CALL', files: A('FLOW:\n' + step('a', 'REASONING: false\nCALL: 42')), code: 'E507', line: 6, column: 11, message: /Cannot read the CALL "42"/ },
  { name: 'empty FLOW', files: A('FLOW:\n  steps: []\n'), code: 'E508', line: 3, column: 1, message: /The FLOW has no steps/ },
  // templates
  { name: 'undefined template', files: A('ON_START:\n  RESPOND: TEMPLATE(hello)\n'), code: 'E601', line: 4, column: 12, message: /TEMPLATE\(hello\) is not defined in TEMPLATES/ },
  { name: 'unused template', files: A('TEMPLATES:\n  hello:\n    DEFAULT: "hi"\n'), code: 'W602', line: 1, column: 1, message: /Template "hello" is never used/ },
  // cross-references
  { name: 'unknown handoff target', files: A('HANDOFF:\n  - TO: Ghost\n    WHEN: x == 1\n'), code: 'E701', line: 4, column: 5, message: /HANDOFF targets agent "Ghost", which is not in this project/ },
  { name: 'unknown delegate target', files: A('DELEGATE:\n  - AGENT: Ghost\n'), code: 'E701', line: 4, column: 5, message: /DELEGATE targets agent "Ghost"/ },
  { name: 'self handoff', files: A('HANDOFF:\n  - TO: A\n    WHEN: x == 1\n'), code: 'E702', line: 4, column: 5, message: /agent "A" cannot target itself/ },
  { name: 'handoff cycle', files: [...A('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n'), other('B', 'HANDOFF:\n  - TO: A\n    WHEN: x == 2\n')], code: 'W703', line: 1, column: 1, message: /A → B → A hand off to each other in a cycle/ },
  { name: 'delegation cycle', files: [...A('DELEGATE:\n  - AGENT: B\n'), other('B', 'DELEGATE:\n  - AGENT: A\n')], code: 'E704', line: 1, column: 1, message: /A → B → A delegate to each other in a cycle/ },
  { name: 'entry agent not found', files: [...A(''), { path: 'project.json', content: '{"entryAgent": "Nope"}' }], code: 'E705', line: 1, column: 1, message: /entry agent "Nope"/, path: 'project.json' },
  { name: 'delegation retry not run', files: A('DELEGATE:\n  - AGENT: B\n    ON_FAILURE: retry\n', [other('B')]), code: 'W707', line: 5, column: 17, message: /DELEGATE B ON_FAILURE asks for a retry, which the runtime does not run: a failed delegation is skipped, as with continue/ },
  { name: 'handoff ON_FAILURE not run', files: A('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n    ON_FAILURE: "Sorry."\n', [other('B')]), code: 'W708', line: 6, column: 5, message: /HANDOFF to B has ON_FAILURE: Sorry\., which the runtime does not run: a refused handoff is traced as an error/ },
  { name: 'remote handoff not used', files: A('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n    remote:\n      endpoint: "https://b.example.com"\n', [other('B')]), code: 'W709', line: 6, column: 5, message: /HANDOFF to B has remote: a remote \(A2A\) agent, which the runtime does not call: it runs the project's own agent B/ },
  { name: 'voice settings not used', files: A(`FLOW:\n${step('a', 'REASONING: false\nRESPOND: "Hi"\nVOICE:\n  speed: slow')}`), code: 'W509', line: 7, column: 5, message: /Step "a" has VOICE settings that nothing uses \(speed\)/ },
  { name: 'voice instructions not used', files: A(`FLOW:\n${step('a', 'REASONING: false\nRESPOND: "Hi"\nVOICE:\n  plain_text: "Hi"\n  instructions: "warmly"')}`), code: 'W510', line: 9, column: 7, message: /Step "a" has VOICE instructions, which only a realtime speech model follows/ },
  { name: 'reply variant not sent', files: A('TEMPLATES:\n  bye:\n    DEFAULT: "Bye"\n    MARKDOWN: "**Bye**"\nON_START:\n  RESPOND: TEMPLATE(bye)\n'), code: 'W603', line: 6, column: 5, message: /The MARKDOWN variant of template bye is kept but never sent: every channel gets the DEFAULT text/ },
  { name: 'no agents', files: [{ path: 'project.json', content: '{}' }], code: 'W706', line: 1, column: 1, message: /no agent or supervisor documents/, path: 'project.json' },
  { name: 'tool not found', files: A('FLOW:\n' + step('a', 'REASONING: false\nCALL: lookup')), code: 'E721', line: 6, column: 5, message: /Tool lookup not found in project/ },
  { name: 'tool not found before calling', files: A('CONSTRAINTS:\n  - REQUIRE x IS SET BEFORE calling nope\n'), code: 'E721', line: 4, column: 5, message: /Tool nope not found in project/ },
  // memory, constraints, guardrails, escalation
  { name: 'invalid remember', files: A('MEMORY:\n  remember:\n    - WHEN: x IS SET\n      STORE: x\n'), code: 'E801', line: 6, column: 7, message: /STORE must be "expression -> path"/ },
  { name: 'write to read-only fact', files: A('MEMORY:\n  persistent:\n    - user.tier\n      ACCESS: read\nON_START:\n  SET: user.tier = "gold"\n'), code: 'E803', line: 8, column: 8, message: /SET writes "user.tier", which is declared with ACCESS: read/ },
  { name: 'recall not run', files: A('MEMORY:\n  recall:\n    - ON: search:before\n      ACTION: inject_context\n'), code: 'W806', line: 5, column: 7, message: /The recall entry ON: search:before is not run: the runtime runs recall at ON: session:start and ON: tool:<name>:after only/ },
  { name: 'invalid constraint', files: A('CONSTRAINTS:\n  - ENSURE x > 1\n'), code: 'E850', line: 4, column: 5, message: /Cannot read the constraint "ENSURE x > 1"/ },
  { name: 'invalid guardrail', files: A('GUARDRAILS:\n  g:\n    check: LENGTH(input) < 10\n'), code: 'E852', line: 4, column: 3, message: /Guardrail "g": kind is missing/ },
  { name: 'invalid provider guardrail', files: A('GUARDRAILS:\n  g:\n    kind: input\n    provider: perspective\n    action: block\n'), code: 'E856', line: 6, column: 15, message: /Guardrail "g": unknown provider "perspective".*Write provider: openai/ },
  { name: 'guardrail llm_check not used', files: A('GUARDRAILS:\n  g:\n    kind: output\n    check: length(output) < 9\n    llm_check: "No refund promises."\n    action: warn\n'), code: 'W857', line: 7, column: 5, message: /Guardrail "g" has an llm_check beside a check or provider .*: the llm_check is not used/ },
  { name: 'guardrail reask on output', files: A('GUARDRAILS:\n  g:\n    kind: output\n    check: length(output) < 500\n    action: reask\n'), code: 'E852', line: 7, column: 5, message: /Guardrail "g": action reask asks the user to rephrase, so it applies to input guardrails only \(this one is output\); use fix or block/ },
  { name: 'ON_ERROR retry backoff not applied', files: A('ON_ERROR:\n  tool_error:\n    RETRY: 2\n    RETRY_BACKOFF: exponential\n'), code: 'W854', line: 6, column: 5, message: /ON_ERROR tool_error sets RETRY_BACKOFF: exponential, which the runtime does not apply: its RETRY attempts follow one another at once/ },
  { name: 'ON_ERROR RETRY on a model error not applied', files: A('ON_ERROR:\n  llm_error:\n    RESPOND: "x"\n    RETRY: 2\n'), code: 'W854', line: 6, column: 5, message: /ON_ERROR llm_error sets RETRY: 2, which the runtime does not apply: RETRY repeats only tool calls; a failed model call is already retried by the platform\. Remove RETRY \(docs\/not-supported\.md\)\./ },
  { name: 'ON_ERROR type never raised', files: A('ON_ERROR:\n  routing_failure:\n    RESPOND: "x"\n'), code: 'W855', line: 4, column: 3, message: /ON_ERROR routing_failure never runs: .*: a refused handoff is traced as an error and the agent stays/ },
  { name: 'routing skills not matched', files: A('ESCALATE:\n  routing:\n    queue: q\n    skills: [fraud]\n  triggers:\n    - WHEN: x == 1\n'), code: 'W859', line: 6, column: 5, message: /ESCALATE routing skills \[fraud\] are stored on the human task, but nothing matches people by them/ },
  { name: 'key an action block does not read', files: A(`FLOW:\n${step('a', 'REASONING: false\nCHECK: x > 1\nON_FAIL:\n  RESPOND: "no"\n  DELEGATE: B')}`, [other('B')]), code: 'W214', line: 9, column: 7, message: /"DELEGATE" in ON_FAIL is not read, so it does nothing there\. Use one of SET, CLEAR, RESPOND/ },
  { name: 'constraint ON_FAIL action that does not read', files: A('CONSTRAINTS:\n  - REQUIRE x == 1\n    ON_FAIL: RESPOND without quotes\n'), code: 'E851', line: 5, column: 14, message: /Cannot read ON_FAIL "RESPOND without quotes"\. Use a message \("text" or RESPOND "text"\)/ },
  { name: 'deprecated recall form', files: A('MEMORY:\n  recall:\n    - ON_START: "Greet the user by name"\n'), code: 'W802', line: 5, column: 7, message: /"ON_START: …" is the deprecated form; it is read as ON: session:start/ },
  { name: 'unknown human task TYPE', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      TYPE: chore\n'), code: 'E211', line: 6, column: 13, message: /TYPE must be one of approval, data_entry, review, decision, escalation; found "chore"/ },
  { name: 'DUE that is not a duration', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      DUE: soon\n'), code: 'E214', line: 6, column: 12, message: /DUE expects a duration, found "soon"/ },
  { name: 'unknown ON_DUE', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      DUE: 1h\n      ON_DUE: panic\n'), code: 'E211', line: 7, column: 15, message: /ON_DUE must be one of expire, raise_priority; found "panic"/ },
  { name: 'ON_DUE without DUE', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      ON_DUE: raise_priority\n'), code: 'E212', line: 5, column: 7, message: /An ESCALATE trigger with ON_DUE is missing "DUE"/ },
  { name: 'THEN_EXPIRE_AFTER without raise_priority', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      DUE: 1h\n      THEN_EXPIRE_AFTER: 2h\n'), code: 'E210', line: 7, column: 26, message: /THEN_EXPIRE_AFTER expects ON_DUE: raise_priority on the same trigger, found no ON_DUE/ },
  { name: 'THEN_EXPIRE_AFTER that is not a duration', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      DUE: 1h\n      ON_DUE: raise_priority\n      THEN_EXPIRE_AFTER: later\n'), code: 'E214', line: 8, column: 26, message: /THEN_EXPIRE_AFTER expects a duration, found "later"/ },
  { name: 'FIELDS entry without a name', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      FIELDS:\n        - type: number\n'), code: 'E212', line: 7, column: 11, message: /A FIELDS entry is missing "name"/ },
  { name: 'FIELDS select without options', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      FIELDS:\n        - name: channel\n          type: select\n'), code: 'E212', line: 7, column: 11, message: /The select field channel is missing "options"/ },
  { name: 'FIELDS named after an outcome', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      FIELDS:\n        - name: approved\n          type: boolean\n'), code: 'E210', line: 7, column: 11, message: /FIELDS approved .*a name other than approved, rejected/ },
  { name: 'FIELDS unknown field type', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n      FIELDS:\n        - name: a\n          type: colour\n'), code: 'E211', line: 8, column: 17, message: /FIELDS a type must be one of text, textarea, number, boolean, select, date/ },
  { name: 'invalid on_human_complete', files: A('ESCALATE:\n  triggers:\n    - WHEN: x == 1\n  on_human_complete:\n    - IF x == 1: DANCE\n'), code: 'E853', line: 7, column: 7, message: /Cannot read on_human_complete rule "DANCE"/ },
  // NLU
  { name: 'NLU intent naming an undeclared entity', files: A('NLU:\n  intents:\n    - NAME: billing\n      PATTERNS: [invoice]\n      ENTITIES: [amount]\n'), code: 'E860', line: 7, column: 17, message: /NLU intent billing ENTITIES: "amount" is not declared under entities:\. Declare it under NLU entities:/ },
  { name: 'documented NLU setting that is not run', files: A('NLU:\n  intents:\n    - NAME: billing\n      PATTERNS: [invoice]\n  embeddings:\n    enabled: true\n'), code: 'W861', line: 7, column: 3, message: /NLU embeddings is stored but not run: .*embeddings-based matching is not available/ },
];

describe('diagnostics: one per construct', () => {
  it.each(cases)('$code $name', (c) => {
    const out = compileProject(c.files);
    const found = out.diagnostics.filter((d) => d.code === c.code);
    expect(found.length).toBeGreaterThan(0);
    const d = found[0]!;
    expect({ path: d.path, line: d.line, column: d.column }).toEqual({ path: c.path ?? 'agents/A.agent.abl', line: c.line, column: c.column });
    expect(d.message).toMatch(c.message);
    expect(d.severity).toBe(DIAGNOSTICS[c.code as keyof typeof DIAGNOSTICS].severity);
  });

  it('covers every registry code except the input caps', () => {
    const tested = new Set(cases.map((c) => c.code));
    const missing = Object.keys(DIAGNOSTICS).filter((c) => !tested.has(c) && !['E106', 'E109', 'W199', 'E217'].includes(c));
    expect(missing).toEqual([]);
  });
});

describe('code frames', () => {
  it('renders an unknown section with a caret under the keyword', () => {
    const src = 'AGENT: A\nGOAL: "g"\nFOO: bar\nPERSONA: "p"\n';
    const out = compileProject([{ path: 'agents/A.agent.abl', content: src }]);
    const d = out.diagnostics.find((x) => x.code === 'E203')!;
    expect(formatDiagnostic(d, src)).toBe(
      [
        'agents/A.agent.abl:3:1 error E203 Unknown section "FOO". Check the spelling; valid sections include GOAL, PERSONA, TOOLS, GATHER, FLOW, HANDOFF, DELEGATE, ESCALATE, COMPLETE.',
        '  2 | GOAL: "g"',
        '> 3 | FOO: bar',
        '    | ^',
        '  4 | PERSONA: "p"',
      ].join('\n'),
    );
  });

  it('points into an expression at the failing token', () => {
    const src = 'AGENT: A\nGOAL: "g"\nCOMPLETE:\n  - WHEN: amount > > 3\n';
    const d = compileProject([{ path: 'agents/A.agent.abl', content: src }]).diagnostics[0]!;
    expect(d.code).toBe('E300');
    expect(formatDiagnostic(d, src)).toBe(
      [
        'agents/A.agent.abl:4:20 error E300 Cannot parse the expression "amount > > 3": unexpected ">". COMPLETE WHEN must be an expression such as amount > 100 AND status == "open". Natural-language conditions are only allowed in HANDOFF, DELEGATE and ESCALATE WHENs.',
        '  3 | COMPLETE:',
        '> 4 |   - WHEN: amount > > 3',
        '    |                    ^',
      ].join('\n'),
    );
  });

  it('renders the REASONING error exactly as ABL.md words it', () => {
    const src = 'AGENT: A\nGOAL: "g"\nFLOW:\n  greet:\n    RESPOND: "hi"\n';
    const d = compileProject([{ path: 'agents/A.agent.abl', content: src }]).diagnostics.find((x) => x.code === 'E500')!;
    expect(formatDiagnostic(d, src)).toMatchInlineSnapshot(`
"agents/A.agent.abl:4:3 error E500 Step 'greet' must declare REASONING: true or REASONING: false. Add "REASONING: false" for a scripted step or "REASONING: true" for an LLM step.
  3 | FLOW:
> 4 |   greet:
    |   ^
  5 |     RESPOND: "hi""
`);
  });

  it('parse() alone reports block errors without compiling', () => {
    const r = parse('AGENT: A\n  - x\n  y: 1\n', 'a.abl');
    expect(r.diagnostics.map((d) => [d.code, d.line, d.column])).toEqual([['E104', 3, 3]]);
  });
});
