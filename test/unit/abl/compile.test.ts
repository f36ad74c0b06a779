// Golden tests: for every construct of ABL.md, source → IR snapshot (the relevant part of AgentIR).

import { compileProject, IR_VERSION, type AgentIR } from '../../../abl';
import { agentProject } from './helpers';

function agentOf(body: string, extra: Parameters<typeof agentProject>[1] = []): AgentIR {
  const out = compileProject(agentProject(body, extra));
  const errors = out.diagnostics.filter((d) => d.severity === 'error');
  expect(errors).toEqual([]);
  return out.agents.A as AgentIR;
}

const other = (name: string): { path: string; content: string } => ({ path: `agents/${name}.agent.abl`, content: `AGENT: ${name}\nGOAL: "x"\n` });

describe('golden IR per construct', () => {
  it('identity: GOAL block, PERSONA, LIMITATIONS, INSTRUCTIONS, IDENTITY, VERSION', () => {
    const a = agentOf(`PERSONA: "Calm"
LIMITATIONS:
  - No legal advice
  - No refunds over 500
INSTRUCTIONS: |
  Be brief.
  Confirm amounts.
IDENTITY:
  role: "Billing specialist"
  expertise: [invoices, refunds]
VERSION: "2.1.0"
DESCRIPTION: "Handles invoices"
LANGUAGE: en
`);
    expect({ identity: a.identity, metadata: { ...a.metadata, source_hash: '<hash>' } }).toMatchSnapshot();
  });

  it('EXECUTION with defaults and stored extras', () => {
    expect(agentOf('EXECUTION:\n  model: gpt-x\n  temperature: 0.2\n  tool_timeout: 5s\n  seed: 7\n').execution).toMatchSnapshot();
    expect(agentOf('').execution).toMatchSnapshot('defaults');
  });

  it('TOOLS: every binding, async spellings, confirmation, hints, on_result, parameters', () => {
    const a = agentOf(`TOOLS:
  get_x(id: string, limit: number = 10) -> {id: string, tags?: string[]}
    type: http
    endpoint: "https://api.example.com/x/{id}"
    retry: 2
    circuit_breaker:
      threshold: 3
      resetMs: 1000
    on_result:
      SET:
        last_id = result.id
  notify(to: string) -> object
    type: async_webhook
    endpoint: "https://hooks.example.com/n"
    method: POST
    timeout_seconds: 60
  poll(job: string)
    type: http
    endpoint: "https://jobs.example.com/{job}"
    async: true
    timeout: 90000
  calc(a: number, b: number) -> number
    type: sandbox
    runtime: python
    code: |
      def main(params):
          return params["a"] + params["b"]
  search(q: string) -> nullable<object>
    type: mcp
    server: docs
    server_tool: find
  resize(url: string)
    type: lambda
    function: resize-image
  pay(amount: number)
    description: "Contract-only: supplied by the registry"
    hints:
      side_effects: true
    confirm: always
    immutable: [amount]
    parameters:
      amount:
        description: "In cents"
`);
    expect(a.tools).toMatchSnapshot();
  });

  it('tool library defaults and imports (both spellings)', () => {
    const lib = { path: 'tools/crm.tools.abl', content: 'TOOLS:\n  base_url: "https://crm.example.com/api"\n  auth: bearer\n  timeout: 8s\n  lookup(email: string)\n    type: http\n    endpoint: "/people"\n  touch(id: string)\n    type: http\n    endpoint: "/touch/{id}"\n    method: PUT\n' };
    const a = agentOf('TOOLS:\n  FROM "../tools/crm.tools.abl" USE: lookup\n  file: "../tools/crm.tools.abl" [touch]\n  local_one()\n', [lib]);
    expect(a.tools.map((t) => ({ name: t.name, binding: t.binding, timeout_ms: t.timeout_ms, imported_from: t.imported_from }))).toMatchSnapshot();
  });

  it('agent GATHER: types, validation, activation, inline form', () => {
    expect(agentOf(`GATHER:
  invoice_id:
    prompt: "Invoice number?"
    validate: pattern(^INV-\\d{6}$)
  amount:
    type: number
    validate: min(1) max(500)
    required: false
  plan:
    validate: enum(basic, pro)
    activation: progressive
  email:
    type: email
    depends_on: [plan]
    sensitive: true
  note:
    validate: must be polite
    activation:
      when: plan == "pro"
`).gather).toMatchSnapshot();
    expect(agentOf('GATHER: a, b').gather.map((f) => [f.name, f.required])).toEqual([['a', true], ['b', true]]);
  });

  it('MEMORY: session, persistent, remember, recall', () => {
    expect(agentOf(`MEMORY:
  session:
    - cart
      TYPE: array
      INITIAL: []
      RESET: per_step
  persistent:
    - user.tier
      SCOPE: user
      ACCESS: readwrite
      DEFAULT: "basic"
  remember:
    - WHEN: tier IS SET
      STORE: tier -> user.tier
      TTL: "90d"
  recall:
    - ON: session:start
      ACTION: inject_context
      PATHS: [user.tier]
`).memory).toMatchSnapshot();
  });

  it('FLOW: every step key, branches, transitions, digressions, legacy step line', () => {
    const a = agentOf(`TOOLS:
  find(q: string) -> object[]
FLOW:
  entry_point: ask
  global_digressions:
    - INTENT: "help"
      KEYWORDS: [help, support]
      RESPOND: "I can find things."
      RESUME: true
  ask:
    REASONING: false
    WHEN: q IS NOT SET
    RESPOND: "What should I look for?"
    GATHER:
      - q: required
        prompt: "Search term?"
      - limit: optional
        type: number
    STRATEGY: pattern
    CORRECTIONS: true
    COMPLETE_WHEN: q IS SET
    MAX_ATTEMPTS: 3
    ON_EXHAUSTED: done
    THEN: search
  search:
    REASONING: false
    CALL: find(q = UPPER(q))
    AS: hits
    SET:
      count = LENGTH(hits)
    TRANSFORM:
      SOURCE: hits
      AS: h
      INTO: top
      FILTER: h.score > 0.5
      MAP:
        title: h.name
      SORT_BY: score desc
      LIMIT: 3
    ON_RESULT:
      - IF: count == 0
        RESPOND: "Nothing found."
        THEN: ask
      - ELSE:
        THEN: pick
    ON_FAILURE:
      RESPOND: "Search is down."
      THEN: ESCALATE
  pick:
    REASONING: true
    GOAL: "Help the user choose one result"
    AVAILABLE_TOOLS: [find]
    EXIT_WHEN: chosen IS SET
    MAX_TURNS: 4
    DIGRESSIONS:
      - INTENT: "restart"
        KEYWORDS: [restart]
        GOTO: ask
    ON_INPUT:
      - IF: cancel
        THEN: done
      - IF: input == "again"
        CLEAR: [q]
        THEN: ask
    ON_ERROR:
      - TYPE: tool_error
        RESPOND: "Sorry."
        THEN: backtrack
        BACKTRACK_TO: ask
    THEN: done
  done:
    REASONING: false
    RESPOND: "Bye"
    THEN: COMPLETE
`);
    expect(a.flow).toMatchSnapshot();
  });

  it('FLOW: legacy "a -> b" order and CHECK + ON_FAIL step', () => {
    const a = agentOf('FLOW:\n  a -> b\n  a:\n    REASONING: false\n    CHECK: x > 0\n    ON_FAIL: b\n    THEN: b\n  b:\n    REASONING: false\n    DELEGATE: [B]\n', [other('B')]);
    expect(a.flow?.order).toEqual(['a', 'b']);
    expect(a.flow?.steps.a?.on_fail).toMatchSnapshot();
    expect(a.flow?.steps.b?.delegate).toEqual(['B']);
  });

  it('HANDOFF: expression and natural-language WHENs, context, return, map', () => {
    const a = agentOf(`HANDOFF:
  - TO: B
    WHEN: intent.category == "billing"
    PRIORITY: 1
    CONTEXT:
      pass: [customer_id]
      summary: "From {{customer_id}}"
      history: last_n: 5
    EXPECT_RETURN: true
    ON_RETURN: resume_intent
    MAP:
      refund_id: last_refund_id
    ON_FAILURE: RESPOND "Billing is unavailable."
  - TO: B
    WHEN: user asks about invoices or refunds
  - TO: B
    WHEN: "billing"
`, [other('B')]);
    expect(a.coordination.handoffs).toMatchSnapshot();
    expect(a.coordination.handoffs.map((h) => h.when.ast === null)).toEqual([false, true, true]);
  });

  it('DELEGATE: input, returns, timeout, failure policies', () => {
    expect(agentOf(`DELEGATE:
  - AGENT: B
    WHEN: change_type IS SET
    PURPOSE: "Compute change fees"
    INPUT:
      booking_id: booking_id
      doubled: amount * 2
    RETURNS:
      total_fee: quoted_fee
    USE_RESULT: fee_note
    TIMEOUT: 10
    ON_FAILURE:
      type: retry
      count: 2
    FAILURE_MSG: "I couldn't compute the fee."
  - AGENT: B
    TIMEOUT: "500ms"
    ON_FAILURE: escalate
`, [other('B')]).coordination.delegates).toMatchSnapshot();
  });

  it('ESCALATE: triggers, context, on_human_complete forms', () => {
    expect(agentOf(`ESCALATE:
  triggers:
    - WHEN: refund_amount > 500
      REASON: "Refund of {{refund_amount}} needs approval"
      PRIORITY: high
      TAGS: [refund, approval]
    - WHEN: the customer threatens legal action
      DUE: 2h
  CONTEXT_FOR_HUMAN: [invoice_id, conversation_history]
  ON_HUMAN_COMPLETE:
    - IF human.approved == true: CONTINUE
    - IF human.needs_agent == true: HANDOFF to B
    - IF: human.rejected
      THEN: COMPLETE
`, [other('B')]).coordination.escalation).toMatchSnapshot();
  });

  it('ESCALATE: ON_DUE raise_priority with THEN_EXPIRE_AFTER; expire is the default', () => {
    const triggers = agentOf(`ESCALATE:
  triggers:
    - WHEN: a == 1
      DUE: 30m
      ON_DUE: raise_priority
      THEN_EXPIRE_AFTER: 4h
    - WHEN: a == 2
      DUE: 30m
      ON_DUE: raise_priority
    - WHEN: a == 3
      DUE: 30m
      ON_DUE: expire
`).coordination.escalation!.triggers;
    expect(triggers.map((t) => t.on_due ?? null)).toEqual([
      { action: 'raise_priority', then_expire_after_ms: 4 * 3_600_000 },
      { action: 'raise_priority', then_expire_after_ms: null },
      null,
    ]);
  });

  it('COMPLETE: respond forms and STORE', () => {
    expect(agentOf(`TEMPLATES:
  bye:
    DEFAULT: "Bye {{name}}"
    MARKDOWN: "**Bye**"
COMPLETE:
  - WHEN: done == true
    RESPOND: TEMPLATE(bye)
    STORE: {name, tier: "gold"} -> user.profile
  - WHEN: cancelled
    RESPOND: |
      Cancelled.
      {{#if reason}}Reason: {{reason}}{{/if}}
    STORE: "cancelled"
`).completion).toMatchSnapshot();
  });

  it('CONSTRAINTS: kinds, labels, checkpoints, ON_FAIL forms, IMPLIES', () => {
    expect(agentOf(`TOOLS:
  issue_refund(amount: number)
CONSTRAINTS:
  refunds:
    - REQUIRE customer_verified == true
      ON_FAIL: "Please verify your identity first."
    - RESTRICT account_status IN ["frozen", "closed"]
      ON_FAIL: ESCALATE
    - REQUIRE reason IS SET BEFORE calling issue_refund
      ON_FAIL:
        RESPOND: "What's the reason?"
        COLLECT: [reason]
        THEN: retry
  general:
    - LIMIT amount <= 500 BEFORE returning results
      ON_FAIL: HANDOFF B
    - WARN vip == true IMPLIES tier == "gold"
      WHEN: tier IS SET
`, [other('B')]).constraints).toMatchSnapshot();
  });

  it('GUARDRAILS: both expands, priority order', () => {
    expect(agentOf(`GUARDRAILS:
  no_card_numbers:
    kind: both
    check: not_matches_pattern(input, "\\\\d{4}[ -]?\\\\d{4}")
    action: redact
    msg: "Card numbers are removed."
  short:
    kind: output
    check: word_count(output) < 200
    action: warn
    priority: 5
`).guardrails).toMatchSnapshot();
  });

  it('ON_START, HOOKS, ON_ERROR, MESSAGES', () => {
    const a = agentOf(`TOOLS:
  load_profile(id: string)
ON_START:
  SET:
    greeted = true
    count = 0
  CALL: load_profile(customer_id)
  DELEGATE: B
  RESPOND: "Welcome back"
HOOKS:
  before_turn:
    SET: turns = COALESCE(turns, 0) + 1
  after_agent:
    RESPOND: "Bye"
ON_ERROR:
  tool_timeout:
    RESPOND: "That took too long."
    RETRY: 2
    RETRY_BACKOFF: exponential
    THEN: ESCALATE with REASON: "timeouts"
  routing_failure:
    THEN: HANDOFF B
MESSAGES:
  error_default: "Something went wrong."
`, [other('B')]);
    expect({ on_start: a.on_start, hooks: a.hooks, error_handlers: a.error_handlers, messages: a.messages }).toMatchSnapshot();
  });

  it('phase-2 sections are kept in extra with a warning', () => {
    const out = compileProject(agentProject('ROUTING:\n  strategy: llm\nUSE BEHAVIOR_PROFILE: polite\nSYSTEM_PROMPT: |\n  You are nice.\n'));
    expect(out.agents.A?.extra).toMatchSnapshot();
    expect(out.diagnostics.map((d) => d.code)).toEqual(['W206', 'W206', 'W206']);
  });

  it('supervisor kind, aliases and case-insensitive keys', () => {
    const out = compileProject([
      { path: 'agents/Hub.abl', content: 'supervisor: Hub\ngoal: "route"\nhandoff:\n  - to: B\n    when: x == 1\n    expect_return: TRUE\n' },
      other('B'),
    ]);
    expect(out.agents.Hub?.metadata.kind).toBe('supervisor');
    expect(out.agents.Hub?.coordination.handoffs[0]?.return).toBe(true);
    expect(out.entry_agent).toBe('Hub');
    expect(out.diagnostics.every((d) => d.code === 'W205')).toBe(true);
  });
});

describe('CompilationOutput', () => {
  it('is versioned, hashed, JSON round-trips and carries locations', () => {
    const files = agentProject('FLOW:\n  a:\n    REASONING: false\n    RESPOND: "hi"\n');
    const out = compileProject(files);
    expect(out.irVersion).toBe(IR_VERSION);
    expect(out.sourceHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.parse(JSON.stringify(out))).toEqual(out);
    expect(out.agents.A?.flow?.steps.a?.loc).toEqual({ file: 'agents/A.agent.abl', line: 4, column: 3 });
    expect(out.ok).toBe(true);
    // order of files does not matter; content does
    expect(compileProject([...files].reverse()).sourceHash).toBe(out.sourceHash);
    expect(compileProject(agentProject('PERSONA: x\n')).sourceHash).not.toBe(out.sourceHash);
  });

  it('honours the entry agent option and project.json', () => {
    const files = [...agentProject(''), other('B'), { path: 'project.json', content: '{"name":"p","entryAgent":"B"}' }];
    expect(compileProject(files).entry_agent).toBe('B');
    expect(compileProject(files, { entryAgent: 'A' }).entry_agent).toBe('A');
    expect(compileProject(files).project).toEqual({ name: 'p', entryAgent: 'B', description: null });
  });

  it('caps diagnostics on hostile input', () => {
    const body = Array.from({ length: 500 }, (_, i) => `BAD${i}: x`).join('\n');
    const out = compileProject(agentProject(body), { maxDiagnostics: 50 });
    expect(out.diagnostics).toHaveLength(51);
    expect(out.diagnostics.some((d) => d.code === 'W199')).toBe(true);
  });

  it('caps nesting depth', () => {
    const deep = Array.from({ length: 100 }, (_, i) => `${' '.repeat(i * 2)}k${i}:`).join('\n');
    const out = compileProject(agentProject(`EXECUTION:\n${deep.split('\n').map((l) => `  ${l}`).join('\n')}\n`));
    expect(out.diagnostics.some((d) => d.code === 'E106')).toBe(true);
  });
});
