// GATHER field properties that decide what is asked (patch gather-field-rules-v1): `depends_on`
// and `activation: {when}` keep a field out of the questions and of completion until they hold,
// `activation: progressive` asks a field after every other required one, and a `default` fills an
// unset active field. `sensitive: true` masks the value in traces, tool-call traces, the LLM's
// prompt and the session's views, while tools still receive it.

import { compileProject, type CompilationOutput } from '../../../abl';
import { SENSITIVE_MASK } from '../../../abl/gather';
import { localExtractionAnswer } from '../../../abl/gather-llm';
import { Driver, llmText, scripted, toolOk } from './driver';

function project(path: string, content: string, entry: string): CompilationOutput {
  const compiled = compileProject([{ path, content }]);
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: entry };
}

const signup = project(
  'agents/Signup.agent.abl',
  `AGENT: Signup
GOAL: "Open an account."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - newsletter: required
        prompt: "Newsletter: weekly, monthly or never?"
        validate: enum(weekly, monthly, never)
        activation: progressive
      - vat_id: required
        prompt: "Your VAT number?"
        activation:
          when: business == true
      - region: required
        prompt: "Which region?"
        depends_on: [country]
      - country: required
        prompt: "Which country?"
        default: "NL"
      - business: required
        type: boolean
        prompt: "Is this for a business?"
    THEN: done
  done:
    REASONING: false
    RESPOND: "Account for {{country}}/{{region}}, business {{business}}, newsletter {{newsletter}}."
`,
  'Signup',
);

describe('GATHER field rules in a flow step', () => {
  it('fills the default, waits for depends_on and activation, and asks progressive fields last', () => {
    const d = new Driver(scripted({}), signup);
    // country has a default (never asked), so region, which depends on it, is the first question.
    expect(d.start()).toEqual(['Which region?']);
    expect(d.vars()).not.toHaveProperty('country');
    expect(d.send('North')).toEqual(['Is this for a business?']);
    // business: no, so vat_id stays inactive and is never asked; the progressive field comes last.
    expect(d.send('no')).toEqual(['Newsletter: weekly, monthly or never?']);
    expect(d.send('weekly')).toEqual(['Account for NL/North, business false, newsletter weekly.']);
    expect(d.vars().country).toBe('NL');
    expect(d.vars()).not.toHaveProperty('vat_id');
  });

  it('asks a field whose activation condition holds', () => {
    const d = new Driver(scripted({}), signup);
    d.start();
    d.send('North');
    expect(d.send('yes')).toEqual(['Your VAT number?']);
    expect(d.send('NL123')).toEqual(['Newsletter: weekly, monthly or never?']);
  });

  it('a value given before the GATHER completes wins over the default', () => {
    const d = new Driver(scripted({}), signup);
    d.start();
    d.send('region: North, country: BE');
    d.send('no');
    expect(d.send('never')).toEqual(['Account for BE/North, business false, newsletter never.']);
  });

  it('with the option off (runs recorded before the patch) asks in field order and ignores the rules', () => {
    let asked = 0;
    const d = new Driver(scripted({}), signup, 1_700_000_000_000, { gatherFieldRules: () => (asked++, false) });
    expect(d.start()).toEqual(['Newsletter: weekly, monthly or never?']);
    expect(asked).toBeGreaterThan(0);
  });

  it('never asks the option for a GATHER without such fields', () => {
    let asked = 0;
    const plain = project('agents/Plain.agent.abl', 'AGENT: Plain\nGOAL: "g"\nFLOW:\n  steps: [ask]\n  ask:\n    REASONING: false\n    GATHER:\n      - name: required\n        prompt: "Name?"\n    THEN: COMPLETE\n', 'Plain');
    const d = new Driver(scripted({}), plain, 1_700_000_000_000, { gatherFieldRules: () => (asked++, true) });
    expect(d.start()).toEqual(['Name?']);
    d.send('Ann');
    expect(asked).toBe(0);
  });
});

describe('sensitive GATHER fields', () => {
  const kyc = project(
    'agents/Kyc.agent.abl',
    `AGENT: Kyc
GOAL: "Check an identity."
TOOLS:
  check_id(id: string, name: string) -> object
    description: "Check the ID"
FLOW:
  steps: [ask, check, done]
  ask:
    REASONING: false
    GATHER:
      - full_name: required
        prompt: "Your name?"
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
        name: full_name
      AS: result
    THEN: done
  done:
    REASONING: false
    RESPOND: "Checked."
`,
    'Kyc',
  );

  it('masks the value in state_change traces and marks the tool argument, which still carries it', () => {
    const seen: unknown[] = [];
    const d = new Driver(scripted({ tools: { check_id: (args, id) => (seen.push(args), toolOk(id, { ok: true })) } }), kyc);
    d.start();
    d.send('Ann Lee');
    expect(d.send('AB123456')).toEqual(['Checked.']);
    expect(seen).toEqual([{ id: 'AB123456', name: 'Ann Lee' }]);
    const changes = d.traceOf('state_change');
    expect(changes).toContainEqual(expect.objectContaining({ variable: 'id_number', value: SENSITIVE_MASK }));
    expect(changes).toContainEqual(expect.objectContaining({ variable: 'full_name', value: 'Ann Lee' }));
    expect(JSON.stringify(d.trace)).not.toContain('AB123456');
    const call = d.commands.find((c) => c.type === 'call_tool');
    expect(call).toMatchObject({ args: { id: 'AB123456' }, sensitiveArgs: ['id'] });
  });

  it("keeps a reasoning agent's sensitive value out of its prompt", () => {
    const agent = project(
      'agents/Helper.agent.abl',
      'AGENT: Helper\nGOAL: "Help."\nGATHER:\n  pin:\n    prompt: "Your PIN?"\n    validate: pattern(^\\d{4}$)\n    sensitive: true\n',
      'Helper',
    );
    const prompts: string[] = [];
    const d = new Driver(scripted({ llm: (cmd) => (prompts.push(cmd.request.messages[0]!.content), llmText(cmd.id, 'Thanks.')) }), agent);
    d.start();
    expect(d.send('hi')).toEqual(['Your PIN?']);
    expect(d.send('4321')).toEqual(['Thanks.']);
    expect(prompts[0]).toContain('- pin: given (sensitive, not shown)');
    expect(prompts[0]).not.toContain('4321');
  });
});

describe('range on a number field', () => {
  const party = project(
    'agents/Party.agent.abl',
    `AGENT: Party
GOAL: "Book a table."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - guests: required
        type: number
        prompt: "How many guests?"
        retry_prompt: "Between 1 and 8 guests, please. How many?"
        range: [1, 8]
    THEN: done
  done:
    REASONING: false
    RESPOND: "Table for {{guests}}."
`,
    'Party',
  );

  it('rejects a value outside the range like a failed validation', () => {
    const d = new Driver(scripted({}), party);
    d.start();
    expect(d.send('12')).toEqual(['Between 1 and 8 guests, please. How many?']);
    expect(d.send('4')).toEqual(['Table for 4.']);
  });

  it('is not applied on runs recorded before the patch', () => {
    const d = new Driver(scripted({}), party, 1_700_000_000_000, { gatherFieldRules: false });
    d.start();
    expect(d.send('12')).toEqual(['Table for 12.']);
  });
});

describe('list fields', () => {
  const pizza = (strategy = '') =>
    project(
      'agents/Pizza.agent.abl',
      `AGENT: Pizza
GOAL: "Take a pizza order."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - toppings: required
        prompt: "Which toppings?"
        retry_prompt: "We have ham, cheese and olives. Which ones?"
        validate: enum(ham, cheese, olives)
        list: true
      - guests: required
        prompt: "Names of the guests?"
        list: true
${strategy}    THEN: done
  done:
    REASONING: false
    RESPOND: "Done."
`,
      'Pizza',
    );

  it('takes several values from the answer to its question, each validated', () => {
    const d = new Driver(scripted({}), pizza());
    expect(d.start()).toEqual(['Which toppings?']);
    expect(d.send('ham, pineapple')).toEqual(['We have ham, cheese and olives. Which ones?']);
    expect(d.send('ham, cheese and olives')).toEqual(['Names of the guests?']);
    expect(d.vars().toppings).toEqual(['ham', 'cheese', 'olives']);
    expect(d.send('Ann; Bo')).toEqual(['Done.']);
    expect(d.vars().guests).toEqual(['Ann', 'Bo']);
  });

  it('takes a labelled list up to the end of the sentence', () => {
    const d = new Driver(scripted({}), pizza());
    d.start();
    expect(d.send('guests: Ann, Bo and Cy. toppings: olives')).toEqual(['Done.']);
    expect(d.vars()).toMatchObject({ guests: ['Ann', 'Bo', 'Cy'], toppings: ['olives'] });
  });

  it('is answered as an array through the model (the offline model included)', () => {
    const calls: { system: string }[] = [];
    const d = new Driver(
      scripted({
        llm: (cmd) => {
          const system = cmd.request.messages[0]!.content;
          calls.push({ system });
          return llmText(cmd.id, localExtractionAnswer(system, cmd.request.messages[1]!.content) ?? '{}');
        },
      }),
      pizza('    STRATEGY: llm\n'),
    );
    d.start();
    d.send('ham and cheese');
    expect(calls[0]!.system).toContain('"toppings":{"type":"array","items":{"type":"string"');
    expect(d.vars().toppings).toEqual(['ham', 'cheese']);
  });

  it('takes one value on runs recorded before the patch', () => {
    const d = new Driver(scripted({}), pizza(), 1_700_000_000_000, { gatherFieldRules: false });
    d.start();
    d.send('ham');
    d.send('Ann, Bo');
    expect(d.vars()).toMatchObject({ toppings: 'ham', guests: 'Ann, Bo' });
  });
});

describe('transient fields', () => {
  const otp = project(
    'agents/Otp.agent.abl',
    `AGENT: Otp
GOAL: "Verify a code."
TOOLS:
  check_code(code: string) -> object
    description: "Check the code"
FLOW:
  steps: [verify, done]
  verify:
    REASONING: false
    GATHER:
      - code: required
        prompt: "The code we sent you?"
        validate: pattern(^\\d{6}$)
        transient: true
    CALL: check_code(code)
    THEN: done
  done:
    REASONING: false
    RESPOND: "Verified."
`,
    'Otp',
  );
  const checked: unknown[] = [];
  const responder = scripted({ tools: { check_code: (args, id) => (checked.push(args.code), toolOk(id, { ok: true })) } });

  it('is used in its step, then cleared when the flow moves on', () => {
    const d = new Driver(responder, otp);
    d.start();
    expect(d.send('123456')).toEqual(['Verified.']);
    expect(checked).toContain('123456');
    expect(d.vars()).not.toHaveProperty('code');
    expect(d.traceOf('state_change').filter((c) => c.variable === 'code').map((c) => c.value)).toEqual(['123456', null]);
  });

  it('is kept on runs recorded before the patch', () => {
    const d = new Driver(responder, otp, 1_700_000_000_000, { gatherFieldRules: false });
    d.start();
    d.send('654321');
    expect(d.vars().code).toBe('654321');
  });
});
