// Deterministic gather extraction and validation (the `pattern` strategy).

import { allFieldsGathered, compileProject, extractGatherValues, validateGatherValue, type GatherFieldIR } from '../../../abl';
import { agentProject } from './helpers';

function fields(body: string): GatherFieldIR[] {
  const out = compileProject(agentProject(`GATHER:\n${body}`));
  expect(out.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return out.agents.A!.gather;
}

const F = fields(`  invoice_id:
    validate: pattern(^INV-\\d{6}$)
  refund_amount:
    type: number
    validate: max(1000)
  email:
    type: email
  depart_date:
    type: date
  phone:
    type: phone
  plan:
    validate: enum(basic, pro)
  reason:
    prompt: "Why?"
`);

describe('extractGatherValues', () => {
  it('extracts several typed fields from one message', () => {
    const r = extractGatherValues(F, 'Refund $120.50 on INV-123456, plan Pro, mail Bob@Example.com, call +1 (555) 010-9999, leaving March 5, 2025');
    expect(r.values).toEqual({
      invoice_id: 'INV-123456', refund_amount: 120.5, email: 'bob@example.com', depart_date: '2025-03-05', phone: '+15550109999', plan: 'pro',
    });
  });

  it('uses labels, and the expected free-text field takes the message', () => {
    const existing = { invoice_id: 'INV-000001', email: 'a@b.co', depart_date: '2025-01-01', phone: '5550100000', plan: 'pro' };
    expect(extractGatherValues(F, 'refund amount is 30', { existing }).values).toEqual({ refund_amount: 30 });
    expect(extractGatherValues(F, 'it arrived broken', { existing: { ...existing, refund_amount: 5 } }).values).toEqual({ reason: 'it arrived broken' });
  });

  it('rejects invalid values and respects corrections', () => {
    const r = extractGatherValues(F, 'refund 5000 please', { expecting: null });
    expect(r.values).toEqual({});
    expect(r.invalid).toEqual([{ field: 'refund_amount', raw: '5000', error: 'must be at most 1000' }]);
    expect(extractGatherValues(F, 'INV-222222', { existing: { invoice_id: 'INV-111111' } }).values.invoice_id).toBeUndefined();
    expect(extractGatherValues(F, 'INV-222222', { existing: { invoice_id: 'INV-111111' }, corrections: true }).values.invoice_id).toBe('INV-222222');
  });

  it('is deterministic', () => {
    const msg = 'INV-123456 for 99 on 2025-02-03';
    expect(extractGatherValues(F, msg)).toEqual(extractGatherValues(F, msg));
  });
});

describe('validateGatherValue', () => {
  it.each([
    ['number', '1,234.5', true, 1234.5],
    ['number', 'lots', false, 'lots'],
    ['boolean', 'yep', true, true],
    ['boolean', 'nah', true, false],
    ['date', '12/31/2025', true, '2025-12-31'],
    ['date', '2025-02-30', false, '2025-02-30'],
    ['datetime', '2025-01-02T03:04', true, '2025-01-02T03:04'],
    ['email', 'x@y.io', true, 'x@y.io'],
    ['email', 'nope', false, 'nope'],
    ['phone', '555 010 9999', true, '5550109999'],
  ] as const)('%s %s', (type, raw, ok, value) => {
    const r = validateGatherValue({ type, validate: [] }, raw);
    expect(r.ok).toBe(ok);
    expect(r.value).toEqual(value);
  });

  it('applies min/max/enum/pattern/email rules; llm rules pass', () => {
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'min', value: 3 }] }, 'ab').error).toBe('must be at least 3');
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'enum', values: ['a', 'b'] }] }, 'c').error).toBe('must be one of a, b');
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'pattern', pattern: '^\\d+$' }] }, 'x1').ok).toBe(false);
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'email' }] }, 'a@b.cd').ok).toBe(true);
    expect(validateGatherValue({ type: 'string', validate: [{ kind: 'llm', rule: 'polite' }] }, 'rude').ok).toBe(true);
  });

  it('allFieldsGathered counts required fields only', () => {
    const fs = fields('  a:\n    prompt: x\n  b:\n    required: false\n');
    expect(allFieldsGathered(fs, { a: 'x' })).toBe(true);
    expect(allFieldsGathered(fs, { b: 'x' })).toBe(false);
  });
});
