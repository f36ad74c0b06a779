// A tool's pii_access / context_access through the interpreter: the call_tool command carries the
// arguments as the tool may receive them and the metadata keys it may get; runs recorded before
// the change (`toolAccess: false`) send them whole, and the patch is asked only for such a tool.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { Driver, scripted, toolOk } from './driver';

function kyc(access: string): CompilationOutput {
  const compiled = compileProject([
    {
      path: 'agents/Kyc.agent.abl',
      content: `AGENT: Kyc
GOAL: "Check an identity."
TOOLS:
  check_id(id: string, contact: string) -> object
    type: http
    endpoint: "https://kyc.example.com/check"
    method: POST
${access}
FLOW:
  steps: [ask, check, done]
  ask:
    REASONING: false
    GATHER:
      - contact: required
        prompt: "How do we reach you?"
      - id_number: required
        prompt: "Your ID number?"
        validate: pattern(^[A-Z0-9]{6,12}$)
        sensitive: true
    THEN: check
  check:
    REASONING: false
    CALL: check_id
      WITH:
        id: id_number
        contact: "{{contact}} (id {{id_number}})"
      AS: result
    THEN: done
  done:
    REASONING: false
    RESPOND: "Checked."
`,
    },
  ]);
  expect(compiled.diagnostics).toEqual([]);
  return compiled;
}

function run(compiled: CompilationOutput, options: { toolAccess?: boolean | (() => boolean) } = {}) {
  const seen: Record<string, Json>[] = [];
  const d = new Driver(scripted({ tools: { check_id: (args, id) => (seen.push(args), toolOk(id, { ok: true })) } }), compiled, undefined, options);
  d.start();
  d.send('ann@example.com');
  expect(d.send('AB123456')).toEqual(['Checked.']);
  return { seen, call: d.commands.find((c) => c.type === 'call_tool')! };
}

it('masks PII and sensitive values, and lists the metadata keys the tool may get', () => {
  const { seen, call } = run(kyc('    pii_access: masked\n    context_access: [locale]'));
  expect(seen).toEqual([{ id: '[sensitive]', contact: 'a***@example.com (id [sensitive])' }]);
  expect(call).toMatchObject({ contextKeys: ['locale'] });
  expect(call).not.toHaveProperty('sensitiveArgs');
});

it('withholds them with none, and passes what a list names', () => {
  expect(run(kyc('    pii_access: none')).seen).toEqual([{ id: '[sensitive]', contact: '[REDACTED] (id [sensitive])' }]);
  const listed = run(kyc('    pii_access: [id_number]'));
  expect(listed.seen).toEqual([{ id: 'AB123456', contact: '[REDACTED] (id AB123456)' }]);
  expect(listed.call).not.toHaveProperty('contextKeys');
});

it('sends everything for runs recorded before the change', () => {
  const { seen, call } = run(kyc('    pii_access: none\n    context_access: [locale]'), { toolAccess: false });
  expect(seen).toEqual([{ id: 'AB123456', contact: 'ann@example.com (id AB123456)' }]);
  expect(call).not.toHaveProperty('contextKeys');
});

it('asks the patch only when a tool with a limit is called', () => {
  let asked = 0;
  run(kyc('    timeout: 5000'), { toolAccess: () => (asked++, true) });
  expect(asked).toBe(0);
  run(kyc('    pii_access: masked'), { toolAccess: () => (asked++, true) });
  expect(asked).toBeGreaterThan(0);
});
