// Support_Hub handoffs (expression WHEN and LLM tool), Trip_Planner fan-out, delegated children
// and Onboarding_Agent's async callback tool.

import { createInterpreter, delegateOutcome, type RuntimeCommand, type RuntimeEvent } from '../../../abl/runtime';
import { Driver, examples, llmCall, llmText, scripted, toolOk } from './driver';

describe('Support_Hub handoff', () => {
  test('expression WHEN hands off, the target handles the same message, RETURN: true returns', () => {
    const d = new Driver(scripted({ tools: { get_invoice: (a, id) => toolOk(id, { id: a.invoice_id as string, amount: 40, status: 'paid' }) } }));
    expect(d.start({ type: 'start', sessionVariables: { customer_id: 'C-7' } })).toEqual(['Hi! I can help with billing, trip planning, opening an account or a complaint.']);
    expect(d.send('Question about INV-123456', { intent: { category: 'billing' } })).toEqual(['INV-123456: $40.00, paid. Want a refund?']);
    expect(d.traceOf('handoff')).toEqual([{ fromAgent: 'Support_Hub', toAgent: 'Billing_Agent', reason: 'WHEN intent.category == "billing"' }]);
    expect(d.state.handoffCount).toBe(1);
    const billing = d.state.threads.find((t) => t.agent === 'Billing_Agent');
    const hub = d.state.threads.find((t) => t.agent === 'Support_Hub');
    expect(hub?.status).toBe('waiting');
    expect(billing?.returnTo).toBe(hub?.id);
    expect(billing?.vars).toMatchObject({ customer_id: 'C-7', _handoff_summary: 'Billing question' });
    expect(d.commands.some((c) => c.type === 'call_llm')).toBe(false);
    d.send('no');
    expect(d.active()).toBe('Support_Hub');
    expect(d.state.threads.map((t) => t.agent)).toEqual(['Support_Hub']);
    expect(d.state.threads[0]?.history.at(-1)?.content).toBe('[Billing_Agent] Anything else?');
  });

  test('natural-language WHEN becomes an LLM tool; calling it hands off', () => {
    let request: Extract<RuntimeCommand, { type: 'call_llm' }> | null = null;
    const d = new Driver(scripted({
      llm: (cmd) => {
        request = cmd;
        return llmCall(cmd.id, 'handoff_to_Billing_Agent', { reason: 'asks about an invoice' });
      },
    }));
    d.start();
    expect(d.send('Why was I charged twice?')).toEqual(['What is the invoice number? (INV-123456)']);
    const req = request as unknown as Extract<RuntimeCommand, { type: 'call_llm' }>;
    const names = req.request.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['handoff_to_Billing_Agent', 'handoff_to_Trip_Planner', 'handoff_to_Onboarding_Agent', 'handoff_to_Complaints_Agent', '__complete__']));
    expect(req.request.tools.find((t) => t.name === 'handoff_to_Billing_Agent')?.description).toBe('user asks about billing, invoices, charges or refunds');
    expect(req.request.messages[0]?.role).toBe('system');
    expect(req.request.messages[0]?.content).toContain('Route each customer to the right specialist');
    expect(req.request.messages.at(-1)).toEqual({ role: 'user', content: 'Why was I charged twice?' });
    expect(d.traceOf('handoff')).toEqual([{ fromAgent: 'Support_Hub', toAgent: 'Billing_Agent', reason: 'asks about an invoice' }]);
    expect(d.state.handoffCount).toBe(1);
  });

  test('a reasoning reply without tool calls is the answer', () => {
    const d = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, 'We are open 9 to 5.') }));
    d.start();
    expect(d.send('When are you open?')).toEqual(['We are open 9 to 5.']);
    expect(d.last.outcome).toBe('turn_complete');
    expect(d.traceOf('response').at(-1)).toEqual({ agent: 'Support_Hub', text: 'We are open 9 to 5.' });
  });

  test('COMPLETE rule ends the session', () => {
    const d = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, 'unused') }));
    d.start();
    const out = d.send('bye', { intent: { category: 'goodbye' } });
    expect(out.at(-1)).toBe('Glad I could help. Bye!');
    expect(d.last.outcome).toBe('completed');
    expect(d.state.status).toBe('completed');
  });
});

describe('Trip_Planner fan-out', () => {
  function trip(failHotel = true): Driver {
    return new Driver(scripted({
      llm: (cmd) => llmCall(cmd.id, 'handoff_to_Trip_Planner'),
      delegate: (cmd): RuntimeEvent => ({
        type: 'delegate_result',
        commandId: cmd.id,
        results: [
          { agent: 'Flight_Search', status: 'completed', response: 'Round trip to Lisbon from $222', returns: { best_price: 222 } },
          failHotel
            ? { agent: 'Hotel_Search', status: 'timed_out', error: { kind: 'timeout', message: 'took too long' } }
            : { agent: 'Hotel_Search', status: 'completed', response: 'Harbor Inn in Lisbon', returns: {} },
        ],
      }),
    }));
  }

  test('gathers, delegates both tasks in one command, tolerates one failure and completes', () => {
    const d = trip();
    d.start({ type: 'start', sessionVariables: { customer_id: 'C-1' } });
    expect(d.send('I want to plan a trip')).toEqual(['Where to?']);
    expect(d.send('Lisbon')).toEqual(['Departure date? (YYYY-MM-DD)']);
    expect(d.send('2025-05-01')).toEqual(['Return date? (YYYY-MM-DD)']);
    const out = d.send('2025-05-08');
    const delegates = d.commands.filter((c) => c.type === 'delegate');
    expect(delegates).toHaveLength(1);
    const cmd = delegates[0] as Extract<RuntimeCommand, { type: 'delegate' }>;
    expect(cmd.tasks).toEqual([
      { agent: 'Flight_Search', input: { destination: 'Lisbon', depart: '2025-05-01', return: '2025-05-08' }, timeoutMs: 15000, purpose: 'Cheapest round trips', returns: ['best_price'] },
      { agent: 'Hotel_Search', input: { city: 'Lisbon', checkin: '2025-05-01', checkout: '2025-05-08' }, timeoutMs: 15000, purpose: 'Three well-rated hotels', returns: [] },
    ]);
    // ON_RETURN: continue: back at the hub, which waits for the next message.
    expect(out).toEqual(['Lisbon, 2025-05-01 to 2025-05-08\nFlights: Round trip to Lisbon from $222\n']);
    expect(d.traceOf('error').some((e) => e.kind === 'delegate_failed')).toBe(true);
    expect(d.traceOf('decision').find((x) => x.decisionKind === 'delegate')?.decision).toBe('Flight_Search: completed, Hotel_Search: timed_out');
    // RETURN: true: back at the hub with the gathered fields and the returned price copied up.
    expect(d.active()).toBe('Support_Hub');
    expect(d.vars('Support_Hub')).toMatchObject({ destination: 'Lisbon', depart_date: '2025-05-01', return_date: '2025-05-08' });
  });

  test('RETURNS and USE_RESULT land in the parent', () => {
    const d = trip(false);
    d.start();
    d.send('plan a trip');
    d.send('Lisbon');
    d.send('2025-05-01');
    const out = d.send('2025-05-08');
    expect(out[0]).toContain('Hotels: Harbor Inn in Lisbon');
    const setVars = d.traceOf('state_change').filter((c) => c.agent === 'Trip_Planner').map((c) => [c.variable, c.value]);
    expect(setVars).toEqual(expect.arrayContaining([['best_flight_price', 222], ['flight_summary', 'Round trip to Lisbon from $222'], ['hotel_summary', 'Harbor Inn in Lisbon']]));
  });
});

describe('delegated children (initDelegateState)', () => {
  test('Flight_Search runs to completion and reports RETURNS', () => {
    const d = new Driver(scripted({ tools: { search_flights: (a, id) => toolOk(id, { best_price: 250, summary: `Round trip to ${String(a.destination)} from $250` }) } }));
    const state = d.interp.initDelegateState('Flight_Search', { destination: 'Rome', depart: '2025-06-01', return: '2025-06-09' });
    const r1 = d.interp.advance(state, { type: 'start' });
    expect(r1.commands).toEqual([expect.objectContaining({ type: 'call_tool', tool: 'search_flights', args: { destination: 'Rome', depart: '2025-06-01', return_date: '2025-06-09' } })]);
    const r2 = d.interp.advance(r1.state, toolOk(r1.commands[0]?.id as string, { best_price: 250, summary: 'Round trip to Rome from $250' }));
    expect(r2.outcome).toBe('completed');
    expect(delegateOutcome(r2.state, ['best_price'])).toEqual({ agent: 'Flight_Search', status: 'completed', response: 'Round trip to Rome from $250', returns: { best_price: 250 } });
  });

  test('a child that needs user input fails', () => {
    const d = new Driver(scripted({}));
    const r = d.interp.advance(d.interp.initDelegateState('Billing_Agent', {}), { type: 'start' });
    expect(r.outcome).toBe('completed');
    expect(delegateOutcome(r.state)).toMatchObject({ agent: 'Billing_Agent', status: 'failed', error: { kind: 'needs_input' } });
  });
});

describe('Onboarding_Agent async tool', () => {
  function onboarding(): Driver {
    const d = new Driver(scripted({ tools: { open_account: (_a, id) => toolOk(id, { account_number: '9876543210' }) } }));
    d.start({ type: 'start', sessionVariables: { customer_id: 'C-3' } });
    d.send('I want to open an account', { intent: { category: 'open_account' } });
    return d;
  }

  test('suspends for the callback, holds, and resumes at ON_RESULT', () => {
    const d = onboarding();
    expect(d.responses.at(-1)).toBe('Your full legal name?');
    expect(d.state.threads.map((t) => t.agent)).toEqual(['Onboarding_Agent']);
    d.send('Jane Doe');
    const out = d.send('AB123456');
    expect(out).toEqual(['Running the identity check; this can take up to two hours.']);
    expect(d.last.outcome).toBe('suspended');
    const wait = d.open.find((c) => c.type === 'suspend_for_callback');
    expect(wait).toMatchObject({ tool: 'start_kyc_check', args: { customer_id: 'C-3', full_name: 'Jane Doe', id_number: 'AB123456' }, timeoutMs: 7_200_000 });
    expect(d.state.pending).toMatchObject({ kind: 'callback', tool: 'start_kyc_check', commandId: wait?.id, expiresAtMs: 1_700_000_000_000 + 7_200_000 });
    expect(d.send('any news?')[0]).toMatch(/still waiting for start_kyc_check/);
    expect(d.feed({ type: 'callback', commandId: wait?.id as string, payload: { decision: 'approved', reference: 'K-1' } })).toEqual(['Verified. Account ******3210 is open.']);
    expect(d.last.outcome).toBe('completed');
    expect(d.vars().kyc).toEqual({ decision: 'approved', reference: 'K-1' });
  });

  test('a rejected verdict goes to the rejected step', () => {
    const d = onboarding();
    d.send('Jane Doe');
    d.send('AB123456');
    const wait = d.open.find((c) => c.type === 'suspend_for_callback');
    expect(d.feed({ type: 'callback', commandId: wait?.id as string, payload: { decision: 'rejected', reference: 'K-2' } })).toEqual(["We couldn't verify your identity (ref K-2)."]);
  });

  test('wait_expired runs ON_FAIL → timed_out', () => {
    const d = onboarding();
    d.send('Jane Doe');
    d.send('AB123456');
    const wait = d.open.find((c) => c.type === 'suspend_for_callback');
    expect(d.feed({ type: 'wait_expired', commandId: wait?.id as string })).toEqual(['The check timed out. Please try again later.']);
    expect(d.state.pending).toBeNull();
  });
});

test('the examples compile', () => {
  expect(examples().ok).toBe(true);
});

test('a mocked async tool is emitted as call_tool, not a suspension', () => {
  const interp = createInterpreter({ ...examples(), entry_agent: 'Onboarding_Agent' }, { now: () => 0, random: () => 0.5, mockedTools: new Set(['start_kyc_check']) });
  let r = interp.init({ type: 'start', sessionVariables: { full_name: 'A B', id_number: 'AB123456' }, startAtStep: 'verify' });
  expect(r.commands).toEqual([expect.objectContaining({ type: 'call_tool', tool: 'start_kyc_check' })]);
  expect(r.outcome).toBe('awaiting_effects');
  r = interp.advance(r.state, toolOk(r.commands[0]?.id as string, { decision: 'rejected', reference: 'M-1' }));
  expect(r.responses).toEqual(["We couldn't verify your identity (ref M-1)."]);
});
