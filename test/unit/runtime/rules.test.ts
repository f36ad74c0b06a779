// Guardrails, constraints before tool calls, ON_ERROR, determinism and robustness.

import fc from 'fast-check';
import { compileProject, type Json } from '../../../abl';
import type { RuntimeEvent, SessionRuntimeState } from '../../../abl/runtime';
import { agentProject } from '../abl/helpers';
import { Driver, examples, llmCall, llmText, scripted, toolOk } from './driver';

const GUARDED = agentProject(`
TOOLS:
  lookup(q: string) -> {answer: string}
    type: sandbox
    runtime: javascript
    code: |
      function main(p) { return { answer: p.q }; }

CONSTRAINTS:
  - REQUIRE verified == true BEFORE calling lookup
    ON_FAIL: "Please verify your identity first."

GUARDRAILS:
  no_passwords:
    kind: input
    check: not_matches_pattern(LOWER(input), "password")
    action: block
    message: "Please don't share passwords."
  long_messages:
    kind: input
    check: word_count(input) < 8
    action: warn
  no_cards:
    kind: both
    check: not_matches_pattern(input, "\\\\d{4}[ -]?\\\\d{4}[ -]?\\\\d{4}[ -]?\\\\d{4}")
    action: redact
`);

function guarded(llm: (id: string, n: number) => RuntimeEvent): Driver {
  let n = 0;
  const compiled = compileProject(GUARDED);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return new Driver(scripted({ llm: (cmd) => llm(cmd.id, n++), tools: { lookup: (a, id) => toolOk(id, { answer: String(a.q) }) } }), compiled);
}

describe('guardrails', () => {
  test('block replies with the message and ends the turn', () => {
    const d = guarded((id) => llmText(id, 'never'));
    d.start();
    expect(d.send('my password is hunter2')).toEqual(["Please don't share passwords."]);
    expect(d.commands.some((c) => c.type === 'call_llm')).toBe(false);
    expect(d.traceOf('guardrail_eval').find((g) => g.guardrail === 'no_passwords')).toEqual({ guardrail: 'no_passwords', kind: 'input', passed: false, action: 'block', agent: 'A' });
  });

  test('warn only traces; redact rewrites the input and the output', () => {
    const d = guarded((id) => llmText(id, 'Your card 4111 1111 1111 1111 is noted'));
    d.start();
    const out = d.send('please charge my card 4111-1111-1111-1111 for the monthly plan today');
    expect(out).toEqual(['Your card [REDACTED] is noted']);
    const evals = d.traceOf('guardrail_eval');
    expect(evals.find((g) => g.guardrail === 'long_messages')).toMatchObject({ passed: false, action: 'warn' });
    expect(evals.filter((g) => g.guardrail === 'no_cards_input' || g.guardrail === 'no_cards')[0]).toMatchObject({ passed: false, action: 'redact' });
    const llm = d.commands.find((c) => c.type === 'call_llm');
    expect(JSON.stringify(llm)).not.toContain('4111');
    expect(JSON.stringify(d.state)).not.toContain('4111');
  });

  test('Complaints_Agent redacts card numbers before extraction', () => {
    const d = new Driver(scripted({ llm: (cmd) => llmCall(cmd.id, 'handoff_to_Complaints_Agent') }));
    d.start();
    expect(d.send('I want to complain')).toEqual(["I'm sorry about that. What went wrong?"]);
    d.send('You charged card 4111 1111 1111 1111 twice');
    expect(d.vars().complaint_summary).toBe('You charged card [REDACTED] twice');
  });
});

describe('constraints', () => {
  test('a REQUIRE before a tool blocks the call; the LLM gets the refusal', () => {
    const d = guarded((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'x' }) : llmText(id, 'Sorry, verify first.')));
    d.start();
    expect(d.send('look it up')).toEqual(['Please verify your identity first.', 'Sorry, verify first.']);
    expect(d.commands.some((c) => c.type === 'call_tool')).toBe(false);
    const second = d.commands.filter((c) => c.type === 'call_llm')[1];
    expect(JSON.stringify(second)).toContain('blocked by a constraint');
  });

  test('the same call goes through once the REQUIRE holds', () => {
    const d = guarded((id, n) => (n === 0 ? llmCall(id, 'lookup', { q: 'x' }) : llmText(id, 'Done.')));
    d.start({ type: 'start', sessionVariables: { verified: true } });
    expect(d.send('look it up')).toEqual(['Done.']);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toHaveLength(1);
    expect(d.vars().last_lookup_result).toEqual({ answer: 'x' });
  });
});

describe('robustness', () => {
  test('an LLM error falls back to MESSAGES.error_default or a default reply', () => {
    const d = new Driver(scripted({ llm: (cmd) => ({ type: 'llm_result', commandId: cmd.id, ok: false, error: { kind: 'llm_error', message: 'down' } }) }));
    d.start();
    expect(d.send('hi')).toEqual(['Sorry, something went wrong. Please try again.']);
    expect(d.traceOf('error').some((e) => e.kind === 'llm_error')).toBe(true);
  });

  test('unknown command ids and mismatched events produce an error trace, not an exception', () => {
    const d = new Driver(scripted({}));
    d.start();
    const before = JSON.stringify(d.state);
    const r = d.interp.advance(d.state, { type: 'tool_result', commandId: 'nope', ok: true, value: 1 });
    expect(r.trace).toEqual([{ type: 'error', data: { agent: 'Support_Hub', kind: 'unknown_command', message: expect.any(String) } }]);
    expect(JSON.stringify(r.state)).toBe(before);
    const mid = d.interp.advance(d.state, { type: 'user_message', text: 'hi' });
    const id = mid.commands[0]?.id as string;
    const wrong = d.interp.advance(mid.state, { type: 'delegate_result', commandId: id, results: [] });
    expect(wrong.trace[0]).toMatchObject({ type: 'error', data: { kind: 'unexpected_event' } });
    expect(wrong.outcome).toBe('awaiting_effects');
  });

  test('same events give identical JSON results (determinism) and every state is JSON', () => {
    const script = (): string => {
      const d = new Driver(scripted({
        tools: { get_invoice: (a, id) => toolOk(id, { id: a.invoice_id as string, amount: 700, status: 'paid' }) },
      }));
      d.start({ type: 'start', sessionVariables: { customer_id: 'C-1' } });
      d.send('billing', { intent: { category: 'billing' } });
      d.send('INV-123456');
      d.send('yes');
      d.send('700 because it broke');
      d.send('it broke');
      for (const r of d.results) expect(JSON.parse(JSON.stringify(r.state))).toEqual(r.state);
      return JSON.stringify(d.results);
    };
    expect(script()).toBe(script());
  });

  test('property: random event sequences never throw and keep the state JSON', () => {
    const compiled = examples();
    const texts = fc.constantFrom('hi', 'INV-123456', 'yes', 'no', '600', 'Lisbon', '2025-05-01', 'my password', '', 'cancel');
    const agents = fc.constantFrom('Support_Hub', 'Billing_Agent', 'Trip_Planner', 'Onboarding_Agent', 'Complaints_Agent');
    const eventArb = fc.oneof(
      fc.record({ kind: fc.constant('msg'), text: texts, intent: fc.constantFrom(null, 'billing', 'open_account', 'goodbye') }),
      fc.record({ kind: fc.constantFrom('llm_text', 'llm_handoff', 'llm_fail', 'tool_ok', 'tool_fail', 'delegate', 'callback', 'human', 'expired', 'start'), pick: fc.nat(5), valid: fc.boolean() }),
    );
    fc.assert(
      fc.property(agents, fc.array(eventArb, { maxLength: 25 }), (entry, events) => {
        const d = new Driver(scripted({}), { ...compiled, entry_agent: entry });
        let state: SessionRuntimeState = d.interp.init({ type: 'start', sessionVariables: { customer_id: 'C' } }).state;
        for (const e of events) {
          const out = state.exec?.outstanding ?? [];
          const id = 'pick' in e && e.valid && out.length ? (out[e.pick % out.length] as string) : `x${'pick' in e ? e.pick : 0}`;
          let ev: RuntimeEvent;
          if (e.kind === 'msg') ev = { type: 'user_message', text: (e as { text: string }).text, ...((e as { intent: string | null }).intent ? { metadata: { intent: { category: (e as { intent: string }).intent } } as Record<string, Json> } : {}) };
          else if (e.kind === 'llm_text') ev = llmText(id, 'ok');
          else if (e.kind === 'llm_handoff') ev = llmCall(id, 'handoff_to_Billing_Agent');
          else if (e.kind === 'llm_fail') ev = { type: 'llm_result', commandId: id, ok: false, error: { kind: 'llm_error', message: 'x' } };
          else if (e.kind === 'tool_ok') ev = toolOk(id, { id: 'INV-1', amount: 1, status: 'paid', decision: 'approved' });
          else if (e.kind === 'tool_fail') ev = { type: 'tool_result', commandId: id, ok: false, error: { kind: 'tool_error', message: 'x' } };
          else if (e.kind === 'delegate') ev = { type: 'delegate_result', commandId: id, results: [{ agent: 'Flight_Search', status: 'completed', response: 'r', returns: { best_price: 1 } }] };
          else if (e.kind === 'callback') ev = { type: 'callback', commandId: id, payload: { decision: 'approved', reference: 'R' } };
          else if (e.kind === 'human') ev = { type: 'human_resolved', commandId: id, resolution: { decision: 'approved' } };
          else if (e.kind === 'expired') ev = { type: 'wait_expired', commandId: id };
          else ev = { type: 'start' };
          const r = d.interp.advance(state, ev);
          expect(JSON.parse(JSON.stringify(r.state))).toEqual(r.state);
          expect(r.trace.some((t) => t.type === 'error' && t.data.kind === 'internal_error')).toBe(false);
          state = r.state;
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('escalation and memory', () => {
  test('Complaints_Agent escalates once gathered; COMPLETE on resolution sends the template', () => {
    const d = new Driver(scripted({ llm: (cmd) => llmCall(cmd.id, 'handoff_to_Complaints_Agent') }));
    d.start();
    d.send('I want to complain');
    expect(d.send('The app lost my order')).toEqual(['Which email should the team lead use to reach you?']);
    expect(d.send('jane@example.com')).toEqual(['I have passed this to a member of our team. I will continue as soon as they respond.']);
    expect(d.last.outcome).toBe('suspended');
    const esc = d.open.find((c) => c.type === 'escalate');
    expect(esc).toMatchObject({ reason: 'Complaint: The app lost my order', priority: 'medium', tags: ['complaint'] });
    expect(d.feed({ type: 'human_resolved', commandId: esc?.id as string, resolution: { decision: 'resolved', notes: 'REF-9' } }))
      .toEqual(['Thanks, jane@example.com will hear from a team lead. Reference: REF-9']);
    expect(d.active()).toBe('Support_Hub');
  });

  test('remember rules write persistent facts after the turn', () => {
    const compiled = compileProject(agentProject(`
MEMORY:
  persistent:
    - user.tier
      ACCESS: readwrite
      DEFAULT: "basic"
  remember:
    - WHEN: tier IS SET
      STORE: tier -> user.tier
GATHER:
  tier:
    prompt: "Which tier?"
    validate: enum(gold, silver)
`));
    const d = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, `Tier noted.`) }), compiled);
    d.start();
    expect(d.state.memory['user.tier']).toBe('basic');
    d.send('I am gold');
    expect(d.state.memory['user.tier']).toBe('gold');
  });
});
