// The transitions a human task allows, as its workflow's validators check them.
import { boostedPriority, checkAssign, checkClaim, checkResolve, fieldProblems, initialTaskView, type TransitionRefused } from '../../../workflows/human-task-rules';
import type { HumanTaskView } from '../../../workflows/definitions';

const task = (over: Partial<HumanTaskView> = {}): HumanTaskView => ({
  ...initialTaskView(
    {
      taskId: 'ht_1',
      tenantId: 't',
      projectId: 'p',
      sessionId: null,
      agentName: null,
      type: 'approval',
      title: 'Refund',
      priority: 'medium',
      tags: [],
      context: {},
      fields: [
        { name: 'amount', type: 'number', label: null, required: true, options: [] },
        { name: 'channel', type: 'select', label: null, required: false, options: ['card', 'voucher'] },
        { name: 'on', type: 'date', label: null, required: false, options: [] },
        { name: 'ok', type: 'boolean', label: null, required: false, options: [] },
      ],
      dueAtMs: null,
      routing: null,
      createdBy: 'agent:A',
    },
    0,
  ),
  ...over,
});

const refusal = (f: () => void): TransitionRefused => {
  try {
    f();
  } catch (err) {
    return err as TransitionRefused;
  }
  throw new Error('not refused');
};

it('names every missing or mistyped field', () => {
  expect(fieldProblems(task().fields, { channel: 'cash', on: '31/01/2026', ok: 'yes' })).toEqual([
    'fields.amount: is required',
    'fields.channel: must be one of card, voucher',
    'fields.on: must be an ISO 8601 date such as 2026-01-31',
    'fields.ok: must be true or false',
  ]);
  expect(fieldProblems(task().fields, { amount: 5, channel: 'card', on: '2026-01-31', ok: false })).toEqual([]);
});

it('refuses a value for a field the form does not have, and any outcome name, even one a form declares', () => {
  expect(fieldProblems(task().fields, { amount: 5, approved: true, extra: 'x' })).toEqual([
    'fields.approved: is set by the decision and the outcome, not by a field',
    "fields.extra: is not a field of this task's form",
  ]);
  // An older form that declared such a field: it can be neither given nor required.
  const form = [{ name: 'approved', type: 'boolean' as const, label: null, required: true, options: [] }];
  expect(fieldProblems(form, {})).toEqual([]);
  expect(fieldProblems(form, { approved: true })).toEqual(['fields.approved: is set by the decision and the outcome, not by a field']);
});

it('refuses a resolution without a decision on an approval, and any transition once terminal, with the resolution', () => {
  expect(refusal(() => checkResolve(task(), { respondedBy: 'a', fields: { amount: 1 } })).message).toBe('decision: is required for an approval task');
  expect(refusal(() => checkResolve(task(), { respondedBy: 'a', fields: { amount: 1 } })).code).toBe('UNPROCESSABLE_ENTITY');
  const resolution = { respondedBy: 'a', decision: 'approved', fields: {}, notes: null, resolvedAt: 'x' };
  const done = refusal(() => checkResolve(task({ status: 'completed', resolution }), { respondedBy: 'b', decision: 'rejected', fields: { amount: 1 } }));
  expect(done.code).toBe('CONFLICT');
  expect(done.details).toEqual({ status: 'completed', resolution });
  expect(refusal(() => checkClaim(task({ status: 'expired' }), 'a')).code).toBe('CONFLICT');
});

it('keeps a claimed task to its claimer, and an assigned one to its assignee', () => {
  const claimed = task({ status: 'in_progress', assignedTo: 'ada' });
  expect(() => checkClaim(claimed, 'ada')).not.toThrow();
  expect(refusal(() => checkClaim(claimed, 'bob')).message).toBe('The task is claimed by ada');
  expect(refusal(() => checkResolve(claimed, { respondedBy: 'bob', decision: 'approved', fields: { amount: 1 } })).code).toBe('CONFLICT');
  expect(refusal(() => checkClaim(task({ status: 'assigned', assignedTo: 'carol' }), 'bob')).code).toBe('CONFLICT');
  expect(() => checkClaim(task({ status: 'assigned', assignedTo: null, assignedToTeam: 'ops' }), 'bob')).not.toThrow();
  expect(refusal(() => checkAssign(task(), { by: 'x' })).code).toBe('VALIDATION_ERROR');
});

it('raises the priority by the routing boost, up to critical', () => {
  expect(boostedPriority('medium', 1)).toBe('high');
  expect(boostedPriority('high', 5)).toBe('critical');
  expect(boostedPriority('low', 0)).toBe('low');
});
