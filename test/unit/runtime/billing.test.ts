// Billing_Agent: FLOW with GATHER validation, tool success/failure, ON_INPUT, CHECK, constraint
// and a human approval escalation that suspends and resumes.

import type { Json } from '../../../abl';
import { Driver, scripted, toolFail, toolOk } from './driver';

function billing(invoice: Record<string, Json> | null = { id: 'INV-123456', amount: 900, status: 'paid' }, refund: 'ok' | 'fail' = 'ok'): Driver {
  return new Driver(scripted({
    tools: {
      get_invoice: (a, id) => (invoice ? toolOk(id, { ...invoice, id: a.invoice_id as string }) : toolFail(id, 'not found')),
      issue_refund: (a, id) => (refund === 'ok' ? toolOk(id, { refund_id: 'RF-1', status: 'issued', amount: a.amount as number }) : toolFail(id)),
    },
  }));
}
const startBilling = { type: 'start' as const, sessionVariables: { customer_id: 'C-1' } };

function asEntry(d: Driver): string[] {
  // Billing_Agent is not the entry agent; route there by expression WHEN first.
  d.start(startBilling);
  return d.send('I have a billing question', { intent: { category: 'billing' } });
}

describe('Billing_Agent flow', () => {
  test('asks for the invoice, retries on an invalid id, loads it and offers a refund', () => {
    const d = billing();
    expect(asEntry(d)).toEqual(['What is the invoice number? (INV-123456)']);
    expect(d.active()).toBe('Billing_Agent');
    expect(d.send('it is INV-12')).toEqual(['What is the invoice number? (INV-123456)']);
    expect(d.send('INV-123456 please')).toEqual(['INV-123456: $900.00, paid. Want a refund?']);
    expect(d.vars().invoice).toEqual({ id: 'INV-123456', amount: 900, status: 'paid' });
    expect(d.vars().last_get_invoice_result).toEqual(d.vars().invoice);
    expect(d.traceOf('state_change').some((c) => c.variable === 'invoice_id' && c.value === 'INV-123456')).toBe(true);
    expect(d.traceOf('decision').some((x) => x.decisionKind === 'flow_transition' && x.decision === 'load_invoice -> offer')).toBe(true);
  });

  test('tool failure runs ON_FAIL: clears the id and asks again', () => {
    const d = billing(null);
    asEntry(d);
    expect(d.send('INV-654321')).toEqual(["I couldn't find that invoice.", 'What is the invoice number? (INV-123456)']);
    expect(d.vars().invoice_id).toBeUndefined();
  });

  test('ON_INPUT no goes to done (the flow ends and returns to the hub)', () => {
    const d = billing({ id: '', amount: 50, status: 'paid' });
    asEntry(d);
    d.send('INV-123456');
    expect(d.send('No')).toEqual(['Anything else?']);
    expect(d.active()).toBe('Support_Hub');
    expect(d.vars('Support_Hub').invoice_id).toBe('INV-123456');
  });

  test('ON_INPUT that matches nothing stays on the step (ELSE re-offers)', () => {
    const d = billing();
    asEntry(d);
    d.send('INV-123456');
    expect(d.send('hmm')).toEqual(['INV-123456: $900.00, paid. Want a refund?']);
  });

  test('small refund goes straight through and completes', () => {
    const d = billing();
    asEntry(d);
    d.send('INV-123456');
    expect(d.send('yes')).toEqual(['How much should be refunded?']);
    expect(d.send('120')).toEqual(["What's the reason?"]);
    // The tool's confirmation (require: always): the user sees the call's arguments and says yes.
    expect(d.send('damaged item')).toEqual(['Please confirm: issue_refund (Refund part or all of an invoice) with invoice_id: INV-123456, amount: 120, reason: damaged item. Reply yes to go ahead or no to cancel.']);
    expect(d.commands.some((c) => c.type === 'call_tool' && c.tool === 'issue_refund')).toBe(false);
    expect(d.send('yes')).toEqual(['Refund RF-1 is issued.']);
    const refund = d.commands.find((c) => c.type === 'call_tool' && c.tool === 'issue_refund');
    expect(refund).toMatchObject({ args: { invoice_id: 'INV-123456', amount: 120, reason: 'damaged item' } });
    expect(d.active()).toBe('Support_Hub');
  });

  test('refund over 500 escalates, holds, and resumes on approval', () => {
    const d = billing();
    asEntry(d);
    d.send('INV-123456');
    d.send('yes');
    d.send('refund 600');
    d.send('it arrived broken');
    expect(d.last.outcome).toBe('suspended');
    expect(d.state.status).toBe('suspended');
    const esc = d.open.find((c) => c.type === 'escalate');
    expect(esc).toMatchObject({ type: 'escalate', priority: 'high', tags: ['refund', 'approval'], reason: 'Refund of 600 on INV-123456 needs manager approval' });
    expect(esc && esc.type === 'escalate' && esc.context).toMatchObject({ invoice_id: 'INV-123456', refund_amount: 600, refund_reason: 'it arrived broken' });
    expect(d.state.pending).toMatchObject({ kind: 'human_task', commandId: esc?.id });
    const hold = d.send('hello?');
    expect(hold).toHaveLength(1);
    expect(hold[0]).toMatch(/team/);
    expect(d.open.some((c) => c.type === 'call_tool')).toBe(false);
    expect(d.feed({ type: 'human_resolved', commandId: esc?.id as string, resolution: { decision: 'approved' } })).toEqual([
      'Please confirm: issue_refund (Refund part or all of an invoice) with invoice_id: INV-123456, amount: 600, reason: it arrived broken. Reply yes to go ahead or no to cancel.',
    ]);
    expect(d.send('yes')).toEqual(['Refund RF-1 is issued.']);
    expect(d.state.status).toBe('active');
    expect(d.active()).toBe('Support_Hub');
  });

  test('the escalation carries the task type, deadline, form and routing; expiry and cancellation resume without a refund', () => {
    const d = billing();
    asEntry(d);
    d.send('INV-123456');
    d.send('yes');
    d.send('600');
    d.send('it arrived broken');
    const esc = d.open.find((c) => c.type === 'escalate');
    expect(esc).toMatchObject({
      taskType: 'approval',
      dueMs: 24 * 3_600_000,
      fields: [{ name: 'manager_note', type: 'textarea', label: "Note for the customer's file", required: false, options: [] }],
      routing: { queue: 'billing-managers' },
    });
    expect(d.feed({ type: 'wait_expired', commandId: esc?.id as string })).toEqual(['No manager answered in time, so the refund was not made. Anything else?']);

    const c = billing();
    asEntry(c);
    c.send('INV-123456');
    c.send('yes');
    c.send('600');
    c.send('it arrived broken');
    const cancelled = c.open.find((x) => x.type === 'escalate');
    // Neither approved (no refund), nor rejected, nor expired.
    expect(c.feed({ type: 'human_resolved', commandId: cancelled?.id as string, resolution: {}, cancelled: true })).toEqual(['Anything else?']);
    expect(c.commands.some((x) => x.type === 'call_tool' && x.tool === 'issue_refund')).toBe(false);
  });

  test('refund over 500 rejected goes to done', () => {
    const d = billing();
    asEntry(d);
    d.send('INV-123456');
    d.send('yes');
    d.send('600');
    d.send('it arrived broken');
    const esc = d.open.find((c) => c.type === 'escalate');
    expect(d.feed({ type: 'human_resolved', commandId: esc?.id as string, resolution: { decision: 'rejected' } }))
      .toEqual(['A manager declined the refund. Anything else?']);
    expect(d.commands.some((c) => c.type === 'call_tool' && c.tool === 'issue_refund')).toBe(false);
  });

  test('a constraint blocks issue_refund on a refunded invoice', () => {
    const d = billing({ id: '', amount: 100, status: 'refunded' });
    asEntry(d);
    d.send('INV-123456');
    d.send('yes');
    d.send('50');
    expect(d.send('duplicate charge')).toEqual(['That invoice was already refunded.']);
    expect(d.commands.some((c) => c.type === 'call_tool' && c.tool === 'issue_refund')).toBe(false);
    expect(d.traceOf('decision').some((x) => x.decisionKind === 'constraint')).toBe(true);
  });

  test('failed refund escalates (THEN: ESCALATE)', () => {
    const d = billing({ id: '', amount: 100, status: 'paid' }, 'fail');
    asEntry(d);
    d.send('INV-123456');
    d.send('yes');
    d.send('50');
    d.send('duplicate charge');
    expect(d.send('yes')).toEqual(["The refund failed; I'm passing this to the team."]);
    expect(d.last.outcome).toBe('suspended');
    expect(d.open.find((c) => c.type === 'escalate')).toBeDefined();
  });
});
