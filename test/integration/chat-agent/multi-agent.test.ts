// Multi-agent paths through the real runtime: parallel delegation (fan-out) with one failed
// branch, input and tool/handoff guardrails, and flow digressions (one delegating); each leaves
// the trace events the spec names.
import { seedDevProject } from '../../../infra/seed-project';
import { startTestStack, seedTenant, type SeededTenant, type TestStack } from '../../support/stack';
import { client } from '../../support/http';
import { flushProjection } from '../../support/projection';
import { publishAgent } from '../../support/agents';

let stack: TestStack;
let t: SeededTenant;
let api: ReturnType<typeof client>;

beforeAll(async () => {
  stack = await startTestStack({ worker: true });
  t = await seedTenant(stack.ctx);
  await seedDevProject(stack.ctx.models, { tenantId: t.tenantId, projectId: t.projectId });
  api = client(stack.baseUrl);
});
afterAll(() => stack.close());

type Trace = { type: string; spanId: string; parentSpanId: string | null; data: Record<string, unknown> };
const chat = (json: Record<string, unknown>) => api.post('/api/v1/chat/agent', { key: t.adminKey, json: { projectId: t.projectId, ...json } });

it('fans out to two delegates in parallel and survives one failing', async () => {
  const toolMocks = [
    { toolName: 'search_flights', response: { best_price: 420, summary: 'Round trip for 420 EUR' } },
    { toolName: 'search_hotels', error: 'no inventory' },
  ];
  const first = await chat({ agentId: 'Trip_Planner', message: 'I want a trip', testContext: { toolMocks } });
  expect(first.status).toBe(200);
  expect(first.body.response).toContain('Where to?');
  const sessionId = first.body.sessionId;
  await chat({ sessionId, message: 'Paris', testContext: { toolMocks } });
  await chat({ sessionId, message: '2027-01-10', testContext: { toolMocks } });
  const last = await chat({ sessionId, message: '2027-01-15', testContext: { toolMocks } });
  expect(last.status).toBe(200);
  expect(last.body.response).toContain('Paris');
  expect(last.body.response).toContain('Round trip for 420 EUR');
  expect(last.body.action.type).toBe('complete');

  const events: Trace[] = last.body.traceEvents;
  const delegates = events.filter((e) => e.type === 'delegate');
  expect(delegates.map((d) => d.data.toAgent).sort()).toEqual(['Flight_Search', 'Hotel_Search']);
  for (const d of delegates) {
    expect(d.data).toEqual(expect.objectContaining({ fromAgent: 'Trip_Planner', task: expect.any(String), duration_ms: expect.any(Number) }));
  }
  // The children's own tool calls are part of the session trace, under their delegate span.
  const flights = delegates.find((d) => d.data.toAgent === 'Flight_Search')!;
  const childCall = events.find((e) => e.type === 'tool_call' && e.data.tool === 'search_flights');
  expect(childCall?.parentSpanId).toBe(flights.spanId);
  const hotelResult = events.find((e) => e.type === 'tool_result' && e.data.tool === 'search_hotels');
  expect(hotelResult?.data).toMatchObject({ success: false });
  await flushProjection(stack.ctx, sessionId);
  const stored = await stack.ctx.models.TraceEvent.countDocuments({ sessionId, type: 'delegate' });
  expect(stored).toBe(2);
  const summary = await stack.ctx.models.Session.findById(sessionId).lean();
  expect(summary?.status).toBe('ended');
});

it('evaluates input guardrails and records the verdict', async () => {
  const res = await chat({ agentId: 'Complaints_Agent', message: 'You charged my card 4111 1111 1111 1111 twice!' });
  expect(res.status).toBe(200);
  const evals = (res.body.traceEvents as Trace[]).filter((e) => e.type === 'guardrail_eval');
  expect(evals).toEqual(
    expect.arrayContaining([expect.objectContaining({ data: expect.objectContaining({ guardrail: 'no_card_numbers', passed: false, action: 'redact' }) })]),
  );
  expect(res.body.response).not.toContain('4111');
  await flushProjection(stack.ctx, res.body.sessionId);
  const stored = await stack.ctx.models.TranscriptMessage.find({ sessionId: res.body.sessionId, role: 'user' }).lean();
  expect(stored.map((m) => m.content)).toEqual(['You charged my card [REDACTED] twice!']);
});

it('runs tool_input and handoff guardrails: a blocked call or handoff does not happen', async () => {
  const agents: Record<string, string> = {
    Tool_Gate: `AGENT: Tool_Gate
GOAL: "Look things up, never with secrets."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: sandbox
    runtime: javascript
    code: |
      function main(p) { return { answer: p.q }; }
GUARDRAILS:
  no_secret_args:
    kind: tool_input
    check: not_matches_pattern(input, "secret")
    action: block
    message: "I can't send secrets to {{tool}}."
FLOW:
  steps: [ask, look]
  ask:
    REASONING: false
    GATHER:
      - q: required
        prompt: "What should I look up?"
    THEN: look
  look:
    REASONING: false
    CALL: lookup
      WITH:
        q: q
      AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}."
`,
    Vault_Agent: 'AGENT: Vault_Agent\nGOAL: "Guard the vault."\nON_START:\n  RESPOND: "Vault here."\n',
    Gate_Hub: `AGENT: Gate_Hub
GOAL: "Route requests; the vault is off limits."
HANDOFF:
  - TO: Vault_Agent
    WHEN: intent == "vault"
    RETURN: false
GUARDRAILS:
  vault_closed:
    kind: handoff
    check: target != "Vault_Agent"
    action: block
    message: "The vault is closed today."
`,
  };
  for (const [name, dslContent] of Object.entries(agents)) {
    await publishAgent(api, t, name, dslContent);
  }
  const toolMocks = [{ toolName: 'lookup', response: { answer: 'mocked' } }];

  const blockedCall = await chat({ agentId: 'Tool_Gate', message: 'my secret plan', testContext: { toolMocks } });
  expect(blockedCall.status).toBe(200);
  expect(blockedCall.body.response).toContain("I can't send secrets to lookup.");
  expect(blockedCall.body.response).not.toContain('Found');
  let events: Trace[] = blockedCall.body.traceEvents;
  expect(events.filter((e) => e.type === 'tool_call')).toEqual([]);
  expect(events.filter((e) => e.type === 'guardrail_eval').map((e) => e.data)).toEqual([
    { guardrail: 'no_secret_args', kind: 'tool_input', passed: false, action: 'block', agent: 'Tool_Gate' },
  ]);
  // The same agent calls the tool when the guardrail passes.
  const allowed = await chat({ agentId: 'Tool_Gate', message: 'the weather', testContext: { toolMocks } });
  expect(allowed.body.response).toContain('Found mocked.');
  events = allowed.body.traceEvents;
  expect(events.filter((e) => e.type === 'tool_call').map((e) => e.data.input)).toEqual([{ q: 'the weather' }]);
  expect(events.find((e) => e.type === 'guardrail_eval')?.data).toMatchObject({ kind: 'tool_input', passed: true });

  const blockedHandoff = await chat({ agentId: 'Gate_Hub', message: 'open the vault', metadata: { intent: 'vault' } });
  expect(blockedHandoff.status).toBe(200);
  expect(blockedHandoff.body.response).toBe('The vault is closed today.');
  expect(blockedHandoff.body.state.agent).toBe('Gate_Hub');
  events = blockedHandoff.body.traceEvents;
  expect(events.filter((e) => e.type === 'handoff')).toEqual([]);
  expect(events.filter((e) => e.type === 'llm_call')).toEqual([]);
  expect(events.filter((e) => e.type === 'guardrail_eval').map((e) => e.data)).toEqual([
    { guardrail: 'vault_closed', kind: 'handoff', passed: false, action: 'block', agent: 'Gate_Hub' },
  ]);
  await flushProjection(stack.ctx, blockedHandoff.body.sessionId);
  const stored = await stack.ctx.models.TraceEvent.countDocuments({ sessionId: blockedHandoff.body.sessionId, type: 'guardrail_eval' });
  expect(stored).toBe(1);
});

it('keeps what a tool_output guardrail redacts out of the stored trace and the response', async () => {
  const dslContent = `AGENT: Mail_Lookup
GOAL: "Look contacts up without showing addresses."
TOOLS:
  lookup(q: string) -> {answer: string}
    type: sandbox
    runtime: javascript
    code: |
      function main(p) { return { answer: p.q }; }
GUARDRAILS:
  no_addresses:
    kind: tool_output
    check: not_matches_pattern(output, "[a-z]+@[a-z]+\\\\.com")
    action: redact
FLOW:
  steps: [ask, look]
  ask:
    REASONING: false
    GATHER:
      - q: required
        prompt: "Who should I look up?"
    THEN: look
  look:
    REASONING: false
    CALL: lookup
      WITH:
        q: q
      AS: found
    ON_SUCCESS:
      RESPOND: "Found {{found.answer}}."
`;
  await publishAgent(api, t, 'Mail_Lookup', dslContent);
  const toolMocks = [{ toolName: 'lookup', response: { answer: 'write to ann@example.com' } }];

  const res = await chat({ agentId: 'Mail_Lookup', message: 'Ann', testContext: { toolMocks } });
  expect(res.status).toBe(200);
  expect(res.body.response).toContain('Found write to [REDACTED].');
  const result = (res.body.traceEvents as Trace[]).find((e) => e.type === 'tool_result');
  expect(result?.data).toMatchObject({ tool: 'lookup', success: true, output: { answer: 'write to [REDACTED]' }, outputRedacted: true });
  expect(JSON.stringify(res.body)).not.toContain('ann@example.com');

  await flushProjection(stack.ctx, res.body.sessionId);
  const stored = await stack.ctx.models.TraceEvent.find({ sessionId: res.body.sessionId }).lean();
  expect(stored.find((e) => e.type === 'tool_result')?.data).toMatchObject({ output: { answer: 'write to [REDACTED]' }, outputRedacted: true });
  expect(JSON.stringify(stored)).not.toContain('ann@example.com');
});

it('takes flow digressions before gather extraction: resume, delegate and complete', async () => {
  const agents: Record<string, string> = {
    Menu_Chef: `AGENT: Menu_Chef
GOAL: "Say the dish of the day."
ON_START:
  SET: dish = "soup"
COMPLETE:
  - WHEN: dish IS SET
    RESPOND: "Soup."
`,
    Table_Booker: `AGENT: Table_Booker
GOAL: "Book a table."
DELEGATE:
  - AGENT: Menu_Chef
    RETURNS:
      dish: dish
FLOW:
  steps: [ask_name, ask_size, done]
  global_digressions:
    - INTENT: "cancel"
      KEYWORDS: [stop]
      RESPOND: "Booking cancelled."
      THEN: COMPLETE
    - INTENT: "menu"
      KEYWORDS: [menu]
      DELEGATE: Menu_Chef
      RESPOND: "Today: {{dish}}."
  ask_name:
    REASONING: false
    GATHER:
      - name: required
        prompt: "What name is the booking under?"
    THEN: ask_size
  ask_size:
    REASONING: false
    GATHER:
      - size: required
        type: number
        prompt: "How many people?"
    DIGRESSIONS:
      - INTENT: "hours"
        KEYWORDS: [opening hours]
        RESPOND: "Kitchen hours: 9 to 5."
        RESUME: true
    THEN: done
  done:
    REASONING: false
    RESPOND: "Booked for {{size}}."
`,
  };
  for (const [name, dslContent] of Object.entries(agents)) {
    await publishAgent(api, t, name, dslContent);
  }
  const digressions = (events: Trace[]) => events.filter((e) => e.type === 'decision' && e.data.decisionKind === 'digression').map((e) => e.data);

  const first = await chat({ agentId: 'Table_Booker', message: 'Ada' });
  expect(first.status).toBe(200);
  expect(first.body.response).toContain('How many people?');
  const sessionId = first.body.sessionId;

  // "4" would fill size, but the step digression takes the message first and asks again.
  const hours = await chat({ sessionId, message: 'What are your opening hours for 4 people?' });
  expect(hours.status).toBe(200);
  expect(hours.body.response).toContain('Kitchen hours: 9 to 5.');
  expect(hours.body.response).toContain('How many people?');
  expect(hours.body.response).not.toContain('Booked');
  let events: Trace[] = hours.body.traceEvents;
  expect(digressions(events)).toEqual([
    expect.objectContaining({ decisionKind: 'digression', decision: 'ask_size: hours -> RESUME', agent: 'Table_Booker' }),
  ]);
  expect(events.filter((e) => e.type === 'state_change' && e.data.variable === 'size')).toEqual([]);

  // A global digression delegating runs the Delegation child workflow, then resumes.
  const menu = await chat({ sessionId, message: 'What is on the menu?' });
  expect(menu.body.response).toContain('Today: soup.');
  expect(menu.body.response).toContain('How many people?');
  events = menu.body.traceEvents;
  expect(digressions(events)).toEqual([expect.objectContaining({ decision: 'ask_size: menu -> DELEGATE Menu_Chef' })]);
  expect(events.filter((e) => e.type === 'delegate').map((e) => e.data.toAgent)).toEqual(['Menu_Chef']);

  const stop = await chat({ sessionId, message: 'Please stop' });
  expect(stop.body.response).toContain('Booking cancelled.');
  expect(stop.body.action.type).toBe('complete');
  expect(digressions(stop.body.traceEvents)).toEqual([expect.objectContaining({ decision: 'ask_size: cancel -> COMPLETE' })]);
});

it('runs HOOKS before_agent/after_agent around a handoff and a COMPLETE (agent-hooks-v1)', async () => {
  const agents: Record<string, string> = {
    Hook_Vault: `AGENT: Hook_Vault
GOAL: "Open the vault."
HOOKS:
  before_agent:
    SET: vault_visits = 1
    RESPOND: "Vault hook in (hub entered: {{hub_entered}})."
  after_agent:
    RESPOND: "Vault hook out."
FLOW:
  steps: [open]
  open:
    REASONING: false
    RESPOND: "Vault open for visit {{vault_visits}}."
    THEN: COMPLETE
`,
    Hook_Hub: `AGENT: Hook_Hub
GOAL: "Route to the vault."
HOOKS:
  before_agent:
    SET: hub_entered = true
  after_agent:
    RESPOND: "Passing you on."
HANDOFF:
  - TO: Hook_Vault
    WHEN: intent == "vault"
    CONTEXT:
      pass: [hub_entered]
    RETURN: false
`,
  };
  for (const [name, dslContent] of Object.entries(agents)) {
    await publishAgent(api, t, name, dslContent);
  }

  const res = await chat({ agentId: 'Hook_Hub', message: 'open the vault', metadata: { intent: 'vault' } });
  expect(res.status).toBe(200);
  // Hub's after_agent, Vault's before_agent (seeing the variable Hub's before_agent set at session
  // start), Vault's flow (seeing its before_agent SET), then Vault's after_agent on COMPLETE.
  const replies = ['Passing you on.', 'Vault hook in (hub entered: true).', 'Vault open for visit 1.', 'Vault hook out.'];
  expect(res.body.response).toBe(replies.join('\n\n'));
  expect(res.body.action.type).toBe('complete');
  const events: Trace[] = res.body.traceEvents;
  const hooks = events.filter((e) => e.type === 'decision' && e.data.decisionKind === 'hook').map((e) => `${String(e.data.agent)} ${String(e.data.decision)} (${String(e.data.reasoning)})`);
  expect(hooks).toEqual([
    'Hook_Hub before_agent (session start)',
    'Hook_Hub after_agent (handoff to Hook_Vault)',
    'Hook_Vault before_agent (handoff from Hook_Hub)',
    'Hook_Vault after_agent (complete)',
  ]);
  expect(events.filter((e) => e.type === 'state_change' && e.data.variable === 'hub_entered').map((e) => e.data)).toEqual([
    expect.objectContaining({ agent: 'Hook_Hub', value: true }),
  ]);
  expect(events.filter((e) => e.type === 'handoff').map((e) => e.data)).toEqual([expect.objectContaining({ fromAgent: 'Hook_Hub', toAgent: 'Hook_Vault' })]);
});
