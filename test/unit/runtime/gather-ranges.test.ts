// GATHER rules beyond number fields (patch gather-ranges-v1): `range` on date, datetime and string
// fields (text by length), `type: enum` with its values, `transient` on an agent's top-level
// GATHER, and `STRATEGY` on the top-level GATHER (the model extracts, as in a flow step).

import { compileProject, type CompilationOutput } from '../../../abl';
import { localExtractionAnswer } from '../../../abl/gather-llm';
import { compileAgentBody } from '../abl/helpers';
import { Driver, llmText, scripted } from './driver';

function project(files: Array<{ path: string; content: string }>, entry: string): CompilationOutput {
  const compiled = compileProject(files);
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: entry };
}

const booking = project([{
  path: 'agents/Stay.agent.abl',
  content: `AGENT: Stay
GOAL: "Book a stay."
FLOW:
  steps: [ask, done]
  ask:
    REASONING: false
    GATHER:
      - arrival: required
        type: date
        prompt: "Arrival date?"
        retry_prompt: "We are open from 2026-06-01 to 2026-09-30. Arrival date?"
        range: ["2026-06-01", "2026-09-30"]
      - nickname: required
        prompt: "A name for the booking?"
        retry_prompt: "Between 2 and 10 letters, please."
        range: [2, 10]
      - room: required
        type: enum
        values: [single, double, suite]
        prompt: "Single, double or suite?"
        retry_prompt: "We have single, double and suite rooms."
    THEN: done
  done:
    REASONING: false
    RESPOND: "{{room}} for {{nickname}} from {{arrival}}."
`,
}], 'Stay');

describe('range on dates and text, type enum', () => {
  it('refuses a date outside the range and text of the wrong length, and takes an enum value', () => {
    const d = new Driver(scripted({}), booking);
    expect(d.start()).toEqual(['Arrival date?']);
    expect(d.send('2026-12-24')).toEqual(['We are open from 2026-06-01 to 2026-09-30. Arrival date?']);
    expect(d.send('2026-07-14')).toEqual(['A name for the booking?']);
    expect(d.send('Bartholomew the Great')).toEqual(['Between 2 and 10 letters, please.']);
    expect(d.send('Bart')).toEqual(['Single, double or suite?']);
    expect(d.send('a penthouse')).toEqual(['We have single, double and suite rooms.']);
    expect(d.send('a double please')).toEqual(['double for Bart from 2026-07-14.']);
  });

  it('runs recorded before the patch ignore the new ranges (gatherRanges false)', () => {
    const d = new Driver(scripted({}), booking, 1_700_000_000_000, { gatherRanges: false });
    d.start();
    expect(d.send('2026-12-24')).toEqual(['A name for the booking?']);
  });

  it('compiles ranges by type; bad bounds, and enum without values, are errors', () => {
    const codes = (body: string) => compileAgentBody(body).diagnostics.map((x) => `${x.code} ${x.message}`);
    expect(codes('GATHER:\n  when:\n    type: datetime\n    range: {min: "2026-01-01T00:00"}\n  n:\n    range: [1, 3]\n')).toEqual([]);
    expect(codes('GATHER:\n  when:\n    type: date\n    range: [1, 3]\n')).toEqual([expect.stringMatching(/^E452 .*range bounds of a date field must be ISO dates/)]);
    expect(codes('GATHER:\n  n:\n    range: ["a", "b"]\n')).toEqual([expect.stringMatching(/^E452 .*bounds of a string field are lengths/)]);
    expect(codes('GATHER:\n  ok:\n    type: boolean\n    range: [0, 1]\n')).toEqual([expect.stringMatching(/^W454 /)]);
    expect(codes('GATHER:\n  size:\n    type: enum\n')).toEqual([expect.stringMatching(/^E451 .*enum/)]);
    expect(codes('GATHER:\n  size:\n    values: [a, b]\n')).toEqual([expect.stringMatching(/^E210 .*type: enum/)]);
  });
});

describe('transient on the top-level GATHER', () => {
  const files = [
    {
      path: 'agents/Hub.agent.abl',
      content: `AGENT: Hub
GOAL: "Route."
HANDOFF:
  - TO: Verify
    WHEN: input contains "verify"
    RETURN: true
COMPLETE:
  - WHEN: code IS SET OR account IS SET
    RESPOND: "Back with {{COALESCE(account, 'no account')}} and {{COALESCE(code, 'no code')}}."
`,
    },
    {
      path: 'agents/Verify.agent.abl',
      content: `AGENT: Verify
GOAL: "Check a one-time code."
GATHER:
  account:
    prompt: "Account number?"
    validate: pattern(^AC\\d{4}$)
  code:
    prompt: "The code we sent you?"
    validate: pattern(^\\d{6}$)
    transient: true
COMPLETE:
  - WHEN: account IS SET AND code IS SET
    RESPOND: "Verified {{account}} with {{code}}."
`,
    },
  ];

  it('is used while its agent works, then not copied up to the parent', () => {
    const compiled = project(files, 'Hub');
    const d = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, 'ok') }), compiled);
    d.start();
    expect(d.send('verify AC1234 123456')).toEqual(['Verified AC1234 with 123456.']);
    expect(d.vars('Hub')).toMatchObject({ account: 'AC1234' });
    expect(d.vars('Hub').code).toBeUndefined();
  });

  it('runs recorded before the patch copy it up too', () => {
    const d = new Driver(scripted({ llm: (cmd) => llmText(cmd.id, 'ok') }), project(files, 'Hub'), 1_700_000_000_000, { gatherRanges: false });
    d.start();
    expect(d.send('verify AC1234 123456')).toEqual(['Verified AC1234 with 123456.']);
    expect(d.vars('Hub')).toMatchObject({ account: 'AC1234', code: '123456' });
  });
});

describe('STRATEGY on the top-level GATHER', () => {
  it('asks the model to extract the fields (the offline model too)', () => {
    const compiled = project([{
      path: 'agents/Trip.agent.abl',
      content: `AGENT: Trip
GOAL: "Plan a trip."
GATHER:
  STRATEGY: llm
  destination:
    prompt: "Where to?"
COMPLETE:
  - WHEN: destination IS SET
    RESPOND: "Going to {{destination}}."
`,
    }], 'Trip');
    expect(compiled.agents.Trip?.gather_strategy).toBe('llm');
    expect(compiled.agents.Trip?.gather.map((f) => f.name)).toEqual(['destination']);
    const purposes: string[] = [];
    const d = new Driver(scripted({
      llm: (cmd) => {
        purposes.push(cmd.purpose);
        const [system, user] = cmd.request.messages;
        return llmText(cmd.id, cmd.purpose === 'extraction' ? '{"destination": "Lisbon"}' : localExtractionAnswer(system!.content, user!.content) ?? 'ok');
      },
    }), compiled);
    d.start();
    expect(d.send('I would love to see Lisbon in spring')).toEqual(['Going to Lisbon.']);
    expect(purposes[0]).toBe('extraction');
  });
});
