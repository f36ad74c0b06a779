// ABL as people write it: the documented forms compile to the IR they mean, and no construct is
// silently turned into something else (quoted values, ON_FAIL actions, remember heads, nested blocks).

import { compileProject, evaluate, fixedContext, type AgentIR, type CompilationOutput } from '../../../abl';
import { agentProject } from './helpers';

const other = (name: string): { path: string; content: string } => ({ path: `agents/${name}.agent.abl`, content: `AGENT: ${name}\nGOAL: "x"\n` });

function compile(body: string, extra = [other('B')]): CompilationOutput {
  return compileProject(agentProject(body, extra));
}

function agentOf(body: string): AgentIR {
  const out = compile(body);
  expect(out.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return out.agents.A as AgentIR;
}

const codes = (out: CompilationOutput): string[] => out.diagnostics.map((d) => d.code);
const ctx = fixedContext(0, 1);

const callStep = (withLines: string): string => `TOOLS:
  route(currency: string, queue: string, note: string, metadata: object)
    type: http
    endpoint: "https://api.example.com/route"
FLOW:
  a:
    REASONING: false
    CALL: route
      WITH:
${withLines.split('\n').map((l) => `        ${l}`).join('\n')}
`;

describe('quoted values are strings, conditions stay conditions', () => {
  it('WITH: a quoted literal is the string, not a variable lookup', () => {
    const call = agentOf(callStep('currency: "USD"\nqueue: department')).flow?.steps.a?.call;
    expect(call?.with.currency?.ast).toEqual({ type: 'Literal', value: 'USD', pos: 0 });
    expect(evaluate(call!.with.currency!.ast!, { USD: 'wrong' }, ctx)).toBe('USD');
    expect(call?.with.queue?.ast).toMatchObject({ type: 'Ident', name: 'department' });
  });

  it('WITH: a quoted template is rendered from the scope when evaluated', () => {
    const call = agentOf(callStep('queue: "{{department}}_queue"\nnote: "{{name | upper}} / {{missing}}!"')).flow?.steps.a?.call;
    expect(evaluate(call!.with.queue!.ast!, { department: 'billing' }, ctx)).toBe('billing_queue');
    expect(evaluate(call!.with.note!.ast!, { name: 'ann' }, ctx)).toBe('ANN / !');
  });

  it('WITH: a nested block is an object whose entries follow the same rule', () => {
    const call = agentOf(callStep('metadata:\n  source: "chat"\n  attempt: attempts + 1\n  tags: ["a", kind]')).flow?.steps.a?.call;
    expect(evaluate(call!.with.metadata!.ast!, { attempts: 2, kind: 'k', chat: 'wrong' }, ctx)).toEqual({ source: 'chat', attempt: 3, tags: ['a', 'k'] });
    expect(call?.with.metadata?.src).toBe('{source: "chat", attempt: attempts + 1, tags: ["a", kind]}');
  });

  it('SET key: "value" is a string; SET x = "value" too', () => {
    const step = agentOf('FLOW:\n  a:\n    REASONING: false\n    SET:\n      currency: "EUR"\n').flow?.steps.a;
    expect(evaluate(step!.set[0]!.value.ast!, { EUR: 'wrong' }, ctx)).toBe('EUR');
    const inline = agentOf('FLOW:\n  a:\n    REASONING: false\n    SET: currency = "EUR"\n').flow?.steps.a;
    expect(evaluate(inline!.set[0]!.value.ast!, {}, ctx)).toBe('EUR');
  });

  it('DELEGATE INPUT quoted values are strings', () => {
    const d = agentOf('DELEGATE:\n  - AGENT: B\n    INPUT:\n      mode: "express"\n      id: booking_id\n').coordination.delegates[0];
    expect(evaluate(d!.input.mode!.ast!, { express: 'wrong' }, ctx)).toBe('express');
    expect(d!.input.id!.ast).toMatchObject({ type: 'Ident', name: 'booking_id' });
  });

  it('warns (W311) where a quoted value reads like an expression, and keeps it text', () => {
    const out = compile(callStep('note: "amount * 2"\ncurrency: "USD"'));
    expect(codes(out)).toEqual(['W311']);
    expect(out.agents.A?.flow?.steps.a?.call?.with.note?.ast).toEqual({ type: 'Literal', value: 'amount * 2', pos: 0 });
  });

  it('a quoted WHEN is still a condition; a quoted comparison in a HANDOFF WHEN is an expression', () => {
    const a = agentOf(`FLOW:
  a:
    REASONING: false
    WHEN: "amount > 3"
HANDOFF:
  - TO: B
    WHEN: "transfer_type == 'international'"
  - TO: B
    WHEN: "billing or refunds"
`);
    expect(a.flow?.steps.a?.when?.ast).toMatchObject({ type: 'Binary', op: '>' });
    expect(a.coordination.handoffs[0]?.when.ast).toMatchObject({ type: 'Binary', op: '==' });
    expect(a.coordination.handoffs[1]?.when.ast).toBeNull();
  });
});

describe('constructs that used to compile into something else', () => {
  it('constraint ON_FAIL: RESPOND "…" is the message action, without keyword or quotes', () => {
    const a = agentOf('CONSTRAINTS:\n  - RESTRICT status == "refunded"\n    ON_FAIL: RESPOND "Already refunded, {{name}}."\n  - REQUIRE ok == true\n    ON_FAIL: ESCALATE "needs review"\n');
    expect(a.constraints.map((c) => c.on_fail)).toEqual([
      { kind: 'message', message: 'Already refunded, {{name}}.' },
      { kind: 'escalate', reason: 'needs review' },
    ]);
  });

  it('remember `- WHEN cond` + STORE keeps its condition', () => {
    const r = agentOf('MEMORY:\n  remember:\n    - WHEN booking.confirmed\n      STORE: booking.id -> user.last_booking\n').memory.remember[0];
    expect(r?.when?.src).toBe('booking.confirmed');
    expect(r?.when?.ast).toMatchObject({ type: 'Member', property: 'confirmed' });
    expect(r?.to).toBe('user.last_booking');
  });

  it('a remember head that is not WHEN is an error, never an always-firing rule', () => {
    const out = compile('MEMORY:\n  remember:\n    - IF booking.confirmed\n      STORE: booking.id -> user.last_booking\n');
    expect(codes(out)).toEqual(['E801']);
    expect(out.agents.A?.memory.remember).toEqual([]);
  });

  it('RESPOND: "…" with an indented voice block keeps the reply and reads the block as the step\'s VOICE', () => {
    const out = compile('FLOW:\n  a:\n    REASONING: false\n    RESPOND: "Your booking is confirmed."\n      VOICE INSTRUCTIONS: "Say it slowly"\n');
    expect(codes(out)).toEqual(['W510']);
    expect(out.agents.A?.flow?.steps.a?.respond).toBe('Your booking is confirmed.');
  });

  it('RESPOND: "…" with an indented block of other keys is E110 and keeps the reply', () => {
    const out = compile('FLOW:\n  a:\n    REASONING: false\n    RESPOND: "Your booking is confirmed."\n      tone: slow\n');
    expect(codes(out)).toEqual(['E110']);
    expect(out.agents.A?.flow?.steps.a?.respond).toBe('Your booking is confirmed.');
  });

  it('RESPOND with variants (no value on the line) is still read', () => {
    expect(agentOf('FLOW:\n  a:\n    REASONING: false\n    RESPOND:\n      DEFAULT: "Hi"\n      MARKDOWN: "**Hi**"\n').flow?.steps.a?.respond).toBe('Hi');
  });
});

describe('phase-2 documents', () => {
  it('a behavior profile file is W206, not a missing-header error', () => {
    const out = compileProject([
      { path: 'agents/A.agent.abl', content: 'AGENT: A\nGOAL: "g"\n' },
      { path: 'behavior_profiles/polite.behavior_profile.abl', content: 'BEHAVIOR_PROFILE: polite\nTONE: warm\n' },
    ]);
    expect(out.diagnostics.map((d) => [d.code, d.path])).toEqual([['W206', 'behavior_profiles/polite.behavior_profile.abl']]);
    expect(Object.keys(out.agents)).toEqual(['A']);
  });
});

describe('unexpected shapes are reported, not defaulted', () => {
  it('a section value with an indented block is E110 (PERSONA keeps its text)', () => {
    const out = compile('PERSONA: "Calm"\n  tone: warm\n');
    expect(out.diagnostics.map((d) => [d.code, d.line])).toEqual([['E110', 4]]);
    expect(out.agents.A?.identity.persona).toBe('Calm');
  });

  it('HANDOFF CONTEXT written as a list is E210, not an empty pass list', () => {
    expect(codes(compile('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n    CONTEXT: [customer_id]\n'))).toEqual(['E210']);
  });

  it('an unknown key in an action block is W214, not dropped silently', () => {
    const out = compile('FLOW:\n  a:\n    REASONING: false\n    CHECK: x > 1\n    ON_FAIL:\n      RESPOND: "no"\n      ESCALATE: true\n');
    expect(codes(out)).toEqual(['W214']);
  });

  it('bare lines in key: value blocks are E210 (ON_ERROR, MESSAGES, tool parameters, MAP)', () => {
    expect(codes(compile('ON_ERROR:\n  tool_error: "Sorry"\n  just text\n'))).toEqual(['E210']);
    expect(codes(compile('MESSAGES:\n  error_default: "x"\n  oops\n'))).toEqual(['E210']);
    expect(codes(compile('TOOLS:\n  t(a: string)\n    parameters:\n      a: string\n      loose line\n'))).toEqual(['W415', 'E210']);
    expect(codes(compile('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n    RETURN: true\n    MAP:\n      a: b\n      c\n'))).toEqual(['E210']);
  });

  it('GATHER validate entries that are not rules are E210, not skipped', () => {
    expect(codes(compile('GATHER:\n  age:\n    type: number\n    validate:\n      - min(18)\n      - max:\n          value: 99\n'))).toEqual(['E210']);
  });

  it('COMPLETE STORE written as a block is E210, not "no store"', () => {
    expect(codes(compile('COMPLETE:\n  - WHEN: done == true\n    STORE:\n      a: b\n'))).toEqual(['E210']);
  });
});

describe('documented forms', () => {
  it('a tool return type may span lines', () => {
    const a = agentOf(`TOOLS:
  get_booking(id: string) -> {
    booking_id: string
    rewards: string[],
    total?: number
  }
    type: http
    endpoint: "https://api.example.com/b"
`);
    expect(a.tools[0]?.returns).toEqual({
      kind: 'object',
      fields: [
        { name: 'booking_id', type: { kind: 'primitive', name: 'string' }, optional: false },
        { name: 'rewards', type: { kind: 'array', of: { kind: 'primitive', name: 'string' } }, optional: false },
        { name: 'total', type: { kind: 'primitive', name: 'number' }, optional: true },
      ],
    });
    expect(a.tools[0]?.binding).toMatchObject({ type: 'http', endpoint: 'https://api.example.com/b' });
  });

  it('a multi-line return type may close a nested object and itself on one line', () => {
    const a = agentOf('TOOLS:\n  get(id: string) -> {\n    owner: {name: string}}\n    type: http\n    endpoint: "https://api.example.com/g"\n');
    expect(a.tools[0]?.returns).toEqual({ kind: 'object', fields: [{ name: 'owner', optional: false, type: { kind: 'object', fields: [{ name: 'name', type: { kind: 'primitive', name: 'string' }, optional: false }] } }] });
  });

  it('DELEGATE RETURNS with types copies the variable and keeps its type', () => {
    const out = compile('DELEGATE:\n  - AGENT: B\n    RETURNS:\n      rewards: Reward[]\n      points: number\n      fee: quoted_fee\n');
    expect(codes(out)).toEqual(['W410']); // Reward is not declared: an opaque object
    const d = out.agents.A?.coordination.delegates[0];
    expect(d?.returns).toEqual({ rewards: 'rewards', points: 'points', fee: 'quoted_fee' });
    expect(d?.return_types).toEqual({ rewards: { kind: 'array', of: { kind: 'named', name: 'Reward' } }, points: { kind: 'primitive', name: 'number' } });
  });

  it('NOT CONTAINS and NOT MATCHES negate the comparison', () => {
    const a = agentOf('COMPLETE:\n  - WHEN: message NOT CONTAINS "refund"\n  - WHEN: code NOT MATCHES /^A/\n');
    expect(evaluate(a.completion[0]!.when.ast!, { message: 'a refund please' }, ctx)).toBe(false);
    expect(evaluate(a.completion[0]!.when.ast!, { message: 'hello' }, ctx)).toBe(true);
    expect(evaluate(a.completion[1]!.when.ast!, { code: 'B1' }, ctx)).toBe(true);
  });

  it('tool auth: saml', () => {
    const a = agentOf('TOOLS:\n  sso_lookup(id: string)\n    type: http\n    endpoint: "https://idp.example.com/u"\n    auth: saml\n');
    expect(a.tools[0]?.binding).toMatchObject({ auth: 'saml' });
  });

  it('guardrail helpers sentence_count, contains_url, contains_email', () => {
    const a = agentOf(`GUARDRAILS:
  short:
    kind: output
    check: sentence_count(output) <= 2
    action: block
  no_links:
    kind: output
    check: NOT contains_url(output) AND NOT contains_email(output)
    action: block
`);
    const [noLinks, short] = [a.guardrails.find((g) => g.name === 'no_links')!, a.guardrails.find((g) => g.name === 'short')!];
    expect(evaluate(short.check!.ast!, { output: 'One. Two! Three?' }, ctx)).toBe(false);
    expect(evaluate(short.check!.ast!, { output: 'One. Two' }, ctx)).toBe(true);
    expect(evaluate(noLinks.check!.ast!, { output: 'see https://x.example.com' }, ctx)).toBe(false);
    expect(evaluate(noLinks.check!.ast!, { output: 'mail ann@example.com' }, ctx)).toBe(false);
    expect(evaluate(noLinks.check!.ast!, { output: 'plain text.' }, ctx)).toBe(true);
  });

  it('legacy recall `- ON_START: "instruction"` is normalised with W802', () => {
    const out = compile('MEMORY:\n  recall:\n    - ON_START: "Greet the user by name"\n    - ON_SESSION_END: "Summarise"\n    - ON: session:start\n      ACTION: inject_context\n      PATHS: [user.tier]\n');
    // Only session:end is W806: the runtime runs recall at session:start and tool:<name>:after.
    expect(codes(out)).toEqual(['W802', 'W802', 'W806']);
    expect(out.agents.A?.memory.recall.map(({ loc: _loc, ...r }) => r)).toEqual([
      { on: 'session:start', action: 'prompt_llm', paths: [], instruction: 'Greet the user by name' },
      { on: 'session:end', action: 'prompt_llm', paths: [], instruction: 'Summarise' },
      { on: 'session:start', action: 'inject_context', paths: ['user.tier'] },
    ]);
  });

  it('legacy recall `- ON_START:` with ACTION/PATHS lines under it reads them', () => {
    const out = compile('MEMORY:\n  recall:\n    - ON_START:\n        ACTION: inject_context\n        PATHS: [user.tier]\n');
    expect(codes(out)).toEqual(['W802']);
    expect(out.agents.A?.memory.recall.map(({ loc: _loc, ...r }) => r)).toEqual([{ on: 'session:start', action: 'inject_context', paths: ['user.tier'] }]);
  });

  it('MEMORY: every RESET, SCOPE, TTL and recall event the runtime runs compiles without a warning; search:before and DOMAIN say they do nothing', () => {
    const out = compile(`TOOLS:
  lookup(id: string) -> {tier: string}
    type: http
    endpoint: "https://tiers.example.com/lookup"
    method: GET
MEMORY:
  session:
    - a
      RESET: per_step
    - b
      RESET: never
    - c
      RESET: per_activation
  persistent:
    - user.tier
      SCOPE: user
    - team.plan
      SCOPE: project
      ACCESS: read
    - run.note
      SCOPE: execution_tree
      ACCESS: write
  remember:
    - WHEN: a IS SET
      STORE: a -> user.tier
      TTL: "2s"
  recall:
    - ON: session:start
      ACTION: load_memory
      PATHS: [user.tier]
    - ON: tool:lookup:after
      ACTION: prompt_llm
      INSTRUCTION: "Use the tier"
      PATHS: [user.tier]
    - ON: search:before
      ACTION: inject_context
      PATHS: [user.tier]
    - ON: session:start
      DOMAIN: billing
      PATHS: [user.tier]
`);
    expect(out.diagnostics.map((d) => `${d.code} ${d.line}`)).toEqual(['W806 37', 'W213 41']);
    expect(out.diagnostics[0]?.message).toMatch(/ON: search:before is not run: the runtime runs recall at ON: session:start and ON: tool:<name>:after only/);
    const mem = out.agents.A!.memory;
    expect(mem.session.map((v) => v.reset)).toEqual(['per_step', 'never', 'per_activation']);
    expect(mem.persistent.map((p) => [p.path, p.scope, p.access])).toEqual([['user.tier', 'user', 'readwrite'], ['team.plan', 'project', 'read'], ['run.note', 'execution_tree', 'write']]);
    expect(mem.remember[0]?.ttl_ms).toBe(2000);
    expect(mem.recall[1]).toMatchObject({ on: 'tool:lookup:after', action: 'prompt_llm', instruction: 'Use the tier' });
  });

  it('HANDOFF grant_memory: under CONTEXT or on the rule, without a warning', () => {
    const out = compile(`HANDOFF:
  - TO: B
    WHEN: x == 1
    CONTEXT:
      pass: [x]
      grant_memory: [user.tier]
  - TO: C
    WHEN: x == 2
    grantMemory: [user.plan, user.tier]
`, [other('B'), other('C')]);
    expect(codes(out)).toEqual([]);
    const h = out.agents.A!.coordination.handoffs;
    expect(h[0]?.context.grant_memory).toEqual(['user.tier']);
    expect(h[1]?.context.grant_memory).toEqual(['user.plan', 'user.tier']);
  });

  it('HANDOFF ON_RETURN: keyword, step name, instruction', () => {
    const out = compile(`HANDOFF:
  - TO: B
    WHEN: x == 1
    RETURN: true
    ON_RETURN: resume_intent
  - TO: B
    WHEN: x == 2
    RETURN: true
    ON_RETURN: "check_additional_needs"
  - TO: B
    WHEN: x == 3
    RETURN: true
    ON_RETURN: "Ask whether the customer needs anything else"
FLOW:
  start:
    REASONING: false
    RESPOND: "hi"
  check_additional_needs:
    REASONING: false
    RESPOND: "Anything else?"
`);
    expect(codes(out)).toEqual([]); // and no W503: the step is reached from ON_RETURN
    const h = out.agents.A!.coordination.handoffs;
    expect(h.map((x) => [x.on_return, x.on_return_action])).toEqual([
      ['resume_intent', { kind: 'resume_intent' }],
      ['continue', { kind: 'step', step: 'check_additional_needs' }],
      ['continue', { kind: 'instruction', text: 'Ask whether the customer needs anything else' }],
    ]);
  });

  it('HANDOFF PASS: (rule level, inline or one per line) merges into CONTEXT pass without a warning', () => {
    const out = compile(`HANDOFF:
  - TO: B
    WHEN: x == 1
    PASS: [customer_id, issue]
    CONTEXT:
      pass: [tier, customer_id]
  - TO: B
    WHEN: x == 2
    PASS:
      - order_id
      - reason
`);
    expect(codes(out)).toEqual([]);
    expect(out.agents.A!.coordination.handoffs.map((h) => h.context.pass)).toEqual([['tier', 'customer_id', 'issue'], ['order_id', 'reason']]);
  });

  it('HANDOFF ON_RETURN naming a step the FLOW lacks is E501', () => {
    const out = compile('HANDOFF:\n  - TO: B\n    WHEN: x == 1\n    RETURN: true\n    ON_RETURN: wrap_up\nFLOW:\n  start:\n    REASONING: false\n    RESPOND: "hi"\n');
    expect(out.diagnostics.map((d) => [d.code, d.line])).toEqual([['E501', 4]]);
  });

  it('ESCALATE routing: queue, skills, priority boost (and per trigger)', () => {
    const e = agentOf(`ESCALATE:
  routing:
    queue: "billing_tier2"
    skill_tags: [refunds, disputes]
    priority_boost: 2
  triggers:
    - WHEN: amount > 500
      REASON: "Large refund"
      routing:
        queue: "{{region}}_managers"
`).coordination.escalation;
    expect(e?.routing).toEqual({ queue: 'billing_tier2', skills: ['refunds', 'disputes'], priority_boost: 2, extra: {} });
    expect(e?.triggers[0]?.routing).toEqual({ queue: '{{region}}_managers', skills: [], priority_boost: 0, extra: {} });
  });
});
