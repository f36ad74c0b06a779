// pii_access / context_access on tools: how they compile into ToolIR.access (no "stored but has no
// effect" warning any more, E417 for what cannot be read), and what the helpers do to arguments.

import { applyPiiAccess, pickContext, toolAccessOf } from '../../../abl/tool-access';
import type { ToolIR } from '../../../abl';
import { compileAgentBody } from './helpers';

function tool(props: string) {
  const out = compileAgentBody(`TOOLS:
  notify(email: string, note: string) -> {ok: boolean}
    type: http
    endpoint: "https://api.example.com/notify"
    method: POST
${props}
`);
  return { out, tool: out.agents.A!.tools[0] as ToolIR };
}

describe('compiling pii_access / context_access', () => {
  it.each([
    ['pii_access: masked', { pii: 'masked', context: null }],
    ['pii_access: none', { pii: 'none', context: null }],
    ['pii_access: FULL', { pii: 'full', context: null }],
    ['pii_access: [email, account_number]', { pii: { allow: ['email', 'account_number'] }, context: null }],
    ['context_access: [locale, channel]', { pii: 'full', context: ['locale', 'channel'] }],
    ['context_access: [message_metadata.locale, session.messageMetadata.tier]', { pii: 'full', context: ['locale', 'tier'] }],
    ['context_access: none', { pii: 'full', context: [] }],
    ['context_access: all', { pii: 'full', context: null }],
    ['pii_access: none\n    context_access:\n      - locale', { pii: 'none', context: ['locale'] }],
  ])('%s', (props, access) => {
    const { out, tool: t } = tool(`    ${props}`);
    expect(out.diagnostics).toEqual([]);
    expect(t.access).toEqual(access);
    expect(t.extra).toEqual({});
  });

  it('leaves the IR without access when neither key is written', () => {
    const { out, tool: t } = tool('    timeout: 5000');
    expect(out.diagnostics).toEqual([]);
    expect('access' in t).toBe(false);
  });

  it('reports E417 for a value it cannot read, and keeps the strictest reading', () => {
    const { out, tool: t } = tool('    pii_access:\n      level: high\n    context_access: ["a.b"]');
    expect(out.diagnostics.map((d) => [d.code, d.line])).toEqual([['E417', 8], ['E417', 10]]);
    expect(out.diagnostics[0]!.message).toContain('Tool "notify" pii_access: expected full, masked, none or a list');
    expect(out.diagnostics[1]!.message).toContain('"a.b" is not a message metadata key');
    expect(t.access).toEqual({ pii: 'none', context: [] });
  });

  it('reads the keys of IR compiled before they were, from extra', () => {
    const { tool: t } = tool('');
    expect(toolAccessOf({ ...t, extra: { pii_access: 'masked', context_access: ['locale'] } })).toEqual({ pii: 'masked', context: ['locale'] });
    expect(toolAccessOf(t)).toBeUndefined();
  });
});

describe('applying pii_access', () => {
  const args = {
    email: 'jane.doe@example.com',
    note: 'card 4111 1111 1111 1234, ssn 123-45-6789, call +1 (555) 123-4567, id X9-77731',
    nested: { list: ['write to jane.doe@example.com'] },
    id: 'X9-77731',
    amount: 120,
  };
  const sensitive = new Map([['id_number', 'X9-77731']]);

  it('full passes everything', () => {
    expect(applyPiiAccess(args, 'full', sensitive)).toBe(args);
  });

  it('masked keeps a partial form of PII and replaces sensitive values', () => {
    expect(applyPiiAccess(args, 'masked', sensitive)).toEqual({
      email: 'j***@example.com',
      note: 'card **** **** **** 1234, ssn ***-**-6789, call +* (***) ***-4567, id [sensitive]',
      nested: { list: ['write to j***@example.com'] },
      id: '[sensitive]',
      amount: 120,
    });
  });

  it('none withholds PII and sensitive values', () => {
    expect(applyPiiAccess(args, 'none', sensitive)).toEqual({
      email: '[REDACTED]',
      note: 'card [REDACTED], ssn [REDACTED], call [REDACTED], id [sensitive]',
      nested: { list: ['write to [REDACTED]'] },
      id: '[sensitive]',
      amount: 120,
    });
  });

  it('a list passes the PII kinds and sensitive fields it names, and withholds the rest', () => {
    expect(applyPiiAccess(args, { allow: ['email', 'id_number'] }, sensitive)).toEqual({
      ...args,
      note: 'card [REDACTED], ssn [REDACTED], call [REDACTED], id X9-77731',
    });
  });
});

it('pickContext keeps only the listed metadata keys', () => {
  const meta = { locale: 'fr', tier: 'gold', internal_score: 7 };
  expect(pickContext(meta, ['locale', 'missing'])).toEqual({ locale: 'fr' });
  expect(pickContext(meta, [])).toEqual({});
  expect(pickContext(meta, null)).toBe(meta);
  expect(pickContext(undefined, ['locale'])).toBeUndefined();
});
