// A tool's `confirmation` through the pure interpreter: the call waits for the user's yes (a
// `confirm_tool` command, the question showing the arguments), runs with exactly those arguments
// on a yes, fails (ON_FAIL) on anything else, is never asked for `require: never` or a tool
// without side effects under `when_side_effects`, and runs recorded before it make the call at once.
import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { Driver, llmCall, llmText, scripted, toolOk } from './driver';

function refunds(confirmation: string, sideEffects = true): CompilationOutput {
  const out = compileProject([
    {
      path: 'agents/Refunds.agent.abl',
      content: `AGENT: Refunds
GOAL: "Refund invoices."
TOOLS:
  issue_refund(invoice_id: string, amount: number) -> {refund_id: string}
    type: http
    endpoint: "https://billing.example.com/refunds"
    method: POST
    hints:
      side_effects: ${sideEffects}
${confirmation}
FLOW:
  steps: [refund]
  refund:
    REASONING: false
    CALL: issue_refund(invoice_id = "INV-7", amount = 20)
    ON_SUCCESS:
      RESPOND: "Refund {{result.refund_id}} issued."
      THEN: COMPLETE
    ON_FAIL:
      RESPOND: "No refund was made."
      THEN: COMPLETE
`,
    },
  ]);
  expect(out.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return out;
}

function driver(compiled: CompilationOutput, calls: Record<string, Json>[], options = {}) {
  return new Driver(scripted({ tools: { issue_refund: (args, id) => (calls.push(args), toolOk(id, { refund_id: 'RF-1' })) } }), compiled, undefined, options);
}

const ALWAYS = '    confirmation:\n      require: always\n      immutable_params: [amount]';

it('asks with the arguments, then makes the call with them on a yes', () => {
  const calls: Record<string, Json>[] = [];
  const d = driver(refunds(ALWAYS), calls);
  const asked = d.start();
  expect(asked).toEqual(['Please confirm: issue_refund with invoice_id: INV-7, amount: 20. Reply yes to go ahead or no to cancel.']);
  expect(calls).toEqual([]);
  expect(d.open.map((c) => c.type)).toEqual(['confirm_tool']);
  expect(d.last.outcome).toBe('turn_complete');
  expect(d.state.status).toBe('active');
  expect(d.send('yes please')).toEqual(['Refund RF-1 issued.']);
  expect(calls).toEqual([{ invoice_id: 'INV-7', amount: 20 }]);
  expect(d.last.userText).toBe('yes please');
  expect(d.traceOf('decision').map((x) => x.decision)).toContain('confirmed');
});

it('declines on no: the call is not made and the step goes to ON_FAIL', () => {
  const calls: Record<string, Json>[] = [];
  const d = driver(refunds(ALWAYS), calls);
  d.start();
  expect(d.send('no, wait')).toEqual(['No refund was made.']);
  expect(calls).toEqual([]);
  expect(d.traceOf('error').map((e) => e.message)).toContain('The user did not confirm the call to issue_refund');
});

it('does not ask for require: never, nor for when_side_effects on a tool without side effects', () => {
  for (const c of [refunds('    confirmation:\n      require: never'), refunds('    confirm: when_side_effects', false)]) {
    const calls: Record<string, Json>[] = [];
    expect(driver(c, calls).start()).toEqual(['Refund RF-1 issued.']);
    expect(calls).toHaveLength(1);
  }
});

it('in a reasoning agent the model cannot change the arguments between the question and the call', () => {
  const compiled = compileProject([
    {
      path: 'agents/Desk.agent.abl',
      content: `AGENT: Desk
GOAL: "Refund invoices."
TOOLS:
  issue_refund(invoice_id: string, amount: number) -> {refund_id: string}
    type: http
    endpoint: "https://billing.example.com/refunds"
    method: POST
    confirm: always
    immutable: [amount]
`,
    },
  ]);
  const calls: Record<string, Json>[] = [];
  let llmCalls = 0;
  const d = new Driver(
    scripted({
      tools: { issue_refund: (args, id) => (calls.push(args), toolOk(id, { refund_id: 'RF-2' })) },
      // The first answer asks for 20; any later one would ask for 9999.
      llm: (cmd) => (++llmCalls === 1 ? llmCall(cmd.id, 'issue_refund', { invoice_id: 'INV-1', amount: 20 }) : cmd.request.messages.some((m) => m.role === 'tool') ? llmText(cmd.id, 'Done: RF-2.') : llmCall(cmd.id, 'issue_refund', { invoice_id: 'INV-1', amount: 9999 })),
    }),
    compiled,
  );
  d.start();
  expect(d.send('refund INV-1 by 20')).toEqual(['Please confirm: issue_refund with invoice_id: INV-1, amount: 20. Reply yes to go ahead or no to cancel.']);
  expect(d.send('yes')).toEqual(['Done: RF-2.']);
  expect(calls).toEqual([{ invoice_id: 'INV-1', amount: 20 }]);
});

it('runs recorded before confirmations (toolConfirmation false) make the call at once; the flag is asked only for such a call', () => {
  const calls: Record<string, Json>[] = [];
  let asked = 0;
  expect(driver(refunds(ALWAYS), calls, { toolConfirmation: () => (asked++, false) }).start()).toEqual(['Refund RF-1 issued.']);
  expect(asked).toBeGreaterThan(0);
  let askedNever = 0;
  driver(refunds('    confirmation:\n      require: never'), [], { toolConfirmation: () => (askedNever++, true) }).start();
  expect(askedNever).toBe(0);
});

it('an answer with several calls, one of them to confirm, runs them one by one and asks before that one', () => {
  const compiled = compileProject([
    {
      path: 'agents/Desk.agent.abl',
      content: `AGENT: Desk
GOAL: "Refund invoices."
TOOLS:
  get_invoice(invoice_id: string) -> object
    type: http
    endpoint: "https://billing.example.com/invoices/{invoice_id}"
  issue_refund(invoice_id: string, amount: number) -> {refund_id: string}
    type: http
    endpoint: "https://billing.example.com/refunds"
    method: POST
    confirm: always
`,
    },
  ]);
  const calls: string[] = [];
  const d = new Driver(
    scripted({
      tools: {
        get_invoice: (_a, id) => (calls.push('get_invoice'), toolOk(id, { status: 'paid' })),
        issue_refund: (_a, id) => (calls.push('issue_refund'), toolOk(id, { refund_id: 'RF-3' })),
      },
      llm: (cmd) => cmd.request.messages.some((m) => m.role === 'tool')
        ? llmText(cmd.id, 'Done.')
        : { type: 'llm_result', commandId: cmd.id, ok: true, content: '', toolCalls: [
          { id: 'a', name: 'get_invoice', arguments: JSON.stringify({ invoice_id: 'INV-2' }) },
          { id: 'b', name: 'issue_refund', arguments: JSON.stringify({ invoice_id: 'INV-2', amount: 5 }) },
        ] },
    }),
    compiled,
  );
  d.start();
  expect(d.send('check and refund INV-2')).toEqual(['Please confirm: issue_refund with invoice_id: INV-2, amount: 5. Reply yes to go ahead or no to cancel.']);
  expect(calls).toEqual(['get_invoice']);
  expect(d.send('ok')).toEqual(['Done.']);
  expect(calls).toEqual(['get_invoice', 'issue_refund']);
});
