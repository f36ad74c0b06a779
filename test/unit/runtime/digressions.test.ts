// Flow digressions: step DIGRESSIONS, SUB_INTENTS and FLOW global_digressions take a matching
// message while a step waits, before gather extraction; `digressions: false` (runs recorded before
// the patch `digressions-v1`) keeps the old behaviour.

import { compileProject, type CompilationOutput, type ProjectFile } from '../../../abl';
import type { RuntimeCommand, RuntimeEvent } from '../../../abl/runtime';
import { Driver, scripted } from './driver';

const BOOKER = `AGENT: Booker
GOAL: "Book a table."
FLOW:
  steps: [ask_name, ask_size, confirm, done]
  global_digressions:
    - INTENT: "cancel"
      KEYWORDS: [cancel booking, stop]
      RESPOND: "Booking cancelled."
      THEN: COMPLETE
    - INTENT: "hours"
      KEYWORDS: [opening hours]
      RESPOND: "We open at 9."
      RESUME: true
    - INTENT: "start_over"
      CLEAR: [name, size]
      RESPOND: "Starting over."
      GOTO: ask_name
    - INTENT: "menu"
      KEYWORDS: [menu]
      DELEGATE: Chef
      RESPOND: "Today: {{dish}}."
  ask_name:
    REASONING: false
    GATHER:
      - name: required
        prompt: "What name is the booking under?"
    SUB_INTENTS:
      - INTENT: "spelling"
        KEYWORDS: [spell]
        RESPOND: "Any spelling is fine."
    THEN: ask_size
  ask_size:
    REASONING: false
    GATHER:
      - size: required
        type: number
        prompt: "How many people?"
    DIGRESSIONS:
      - INTENT: "hours"
        KEYWORDS: [opening hours]
        RESPOND: "Kitchen hours: 9 to 5."
        RESUME: true
      - INTENT: "vip"
        KEYWORDS: [vip]
        CONDITION: name == "Ada"
        RESPOND: "VIP noted."
        GOTO: confirm
      - INTENT: "parking"
        KEYWORDS: [parking]
        RESPOND: "Parking is free."
    THEN: confirm
  confirm:
    REASONING: false
    RESPOND: "Table for {{size}} under {{name}}. Confirm?"
    ON_INPUT:
      - IF: yes
        THEN: done
      - IF: no
        THEN: ask_size
  done:
    REASONING: false
    RESPOND: "Booked."

DELEGATE:
  - AGENT: Chef
    RETURNS:
      dish: dish
`;

const CHEF = `AGENT: Chef
GOAL: "Say the dish of the day."
ON_START:
  SET: dish = "soup"
COMPLETE:
  - WHEN: dish IS SET
    RESPOND: "Soup."
`;

function project(extra = ''): CompilationOutput {
  const files: ProjectFile[] = [
    { path: 'agents/Booker.agent.abl', content: BOOKER + extra },
    { path: 'agents/Chef.agent.abl', content: CHEF },
  ];
  const compiled = compileProject(files);
  expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: 'Booker' };
}

function booker(digressions?: boolean, delegates: RuntimeCommand[] = [], extra = ''): Driver {
  const d = new Driver(
    scripted({
      delegate: (cmd): RuntimeEvent => {
        delegates.push(cmd);
        return { type: 'delegate_result', commandId: cmd.id, results: [{ agent: 'Chef', status: 'completed', response: 'Soup.', returns: { dish: 'soup' } }] };
      },
    }),
    project(extra),
    1_700_000_000_000,
    digressions === undefined ? {} : { digressions },
  );
  expect(d.start()).toEqual(['What name is the booking under?']);
  return d;
}

const digressionDecisions = (d: Driver) => d.traceOf('decision').filter((x) => x.decisionKind === 'digression');

describe('flow digressions', () => {
  test('a step digression keyword resumes the gather step and asks its prompt again', () => {
    const d = booker();
    expect(d.send('Ada')).toEqual(['How many people?']);
    expect(d.send('What are your Opening Hours?')).toEqual(['Kitchen hours: 9 to 5.', 'How many people?']);
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'ask_size', phase: 'gather' });
    expect(digressionDecisions(d)).toEqual([
      { decisionKind: 'digression', decision: 'ask_size: hours -> RESUME', agent: 'Booker', reasoning: 'step matched "opening hours"' },
    ]);
    expect(d.send('4')).toEqual(['Table for 4 under Ada. Confirm?']);
  });

  test('step digressions win over global ones with the same phrase', () => {
    const d = booker();
    // In ask_name only the global "hours" digression applies.
    expect(d.send('opening hours please')).toEqual(['We open at 9.', 'What name is the booking under?']);
    expect(d.send('Ada')).toEqual(['How many people?']);
    expect(d.send('opening hours please')).toEqual(['Kitchen hours: 9 to 5.', 'How many people?']);
    expect(digressionDecisions(d).map((x) => x.reasoning)).toEqual(['global matched "opening hours"', 'step matched "opening hours"']);
  });

  test('a SUB_INTENT resumes by default and re-asks the pending prompt; the field stays unset', () => {
    const d = booker();
    expect(d.send('How do I spell it?')).toEqual(['Any spelling is fine.', 'What name is the booking under?']);
    expect(d.vars().name).toBeUndefined();
    expect(digressionDecisions(d)[0]).toMatchObject({ decision: 'ask_name: spelling -> RESUME', reasoning: 'sub_intent matched "spell"' });
  });

  test('matching happens before extraction: a digression message that carries a gather value does not fill the field', () => {
    const d = booker();
    d.send('Ada');
    expect(d.send('opening hours for 4 people?')).toEqual(['Kitchen hours: 9 to 5.', 'How many people?']);
    expect(d.vars().size).toBeUndefined();
    expect(d.traceOf('state_change').filter((x) => x.variable === 'size')).toEqual([]);
  });

  test('whole words only: a keyword inside another word does not match', () => {
    const d = booker();
    d.send('Ada');
    // "stopover" contains "stop" but not as a word; "4" fills the field as usual.
    expect(d.send('4 after our stopover')).toEqual(['Table for 4 under Ada. Confirm?']);
    expect(digressionDecisions(d)).toEqual([]);
  });

  test('GOTO moves to the step and runs it', () => {
    const d = booker();
    d.send('Ada');
    expect(d.send('I am a VIP')).toEqual(['VIP noted.', 'Table for  under Ada. Confirm?']);
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'confirm', phase: 'input' });
    expect(digressionDecisions(d)[0]?.decision).toBe('ask_size: vip -> GOTO confirm');
  });

  test('a false CONDITION means no match: the message goes on to extraction', () => {
    const d = booker();
    d.send('Bob');
    expect(d.send('I am a VIP')).toEqual(['How many people?']);
    expect(digressionDecisions(d)).toEqual([]);
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'ask_size', phase: 'gather' });
  });

  test('the INTENT itself is a phrase; CLEAR empties the variables before GOTO', () => {
    const d = booker();
    d.send('Ada');
    d.send('3');
    expect(d.vars()).toMatchObject({ name: 'Ada', size: 3 });
    // While waiting in ON_INPUT (confirm), the global digression's INTENT "start_over" matches "start over".
    expect(d.send('Let us start over')).toEqual(['Starting over.', 'What name is the booking under?']);
    expect(d.vars().name).toBeUndefined();
    expect(d.vars().size).toBeUndefined();
    expect(digressionDecisions(d)[0]).toMatchObject({ decision: 'confirm: start_over -> GOTO ask_name', reasoning: 'global matched "start_over"' });
    expect(d.send('Grace')).toEqual(['How many people?']);
  });

  test('THEN: COMPLETE completes the agent', () => {
    const d = booker();
    expect(d.send('Please stop.')).toEqual(['Booking cancelled.']);
    expect(d.last.outcome).toBe('completed');
    expect(d.state.result).toMatchObject({ ok: true, response: 'Booking cancelled.' });
    expect(d.traceOf('decision').map((x) => x.decisionKind)).toEqual(['digression', 'complete']);
  });

  test('DELEGATE runs the agent through the delegate command, then RESPOND and resume', () => {
    const delegates: RuntimeCommand[] = [];
    const d = booker(undefined, delegates);
    expect(d.send('what is on the menu')).toEqual(['Today: soup.', 'What name is the booking under?']);
    expect(delegates).toHaveLength(1);
    expect(delegates[0]).toMatchObject({ type: 'delegate', tasks: [{ agent: 'Chef', returns: ['dish'] }] });
    expect(d.traceOf('decision').map((x) => x.decisionKind)).toEqual(['digression', 'delegate']);
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'ask_name', phase: 'gather' });
  });

  test('a DELEGATE digression blocked by a constraint sends the ON_FAIL message, not RESPOND, and resumes', () => {
    const delegates: RuntimeCommand[] = [];
    const d = booker(undefined, delegates, '\nCONSTRAINTS:\n  - REQUIRE name IS SET\n    ON_FAIL: "Name first, please."\n');
    expect(d.send('what is on the menu')).toEqual(['Name first, please.', 'What name is the booking under?']);
    expect(delegates).toEqual([]);
  });

  test('a digression without an action answers and keeps waiting, without re-asking', () => {
    const d = booker();
    d.send('Ada');
    expect(d.send('is there parking?')).toEqual(['Parking is free.']);
    expect(d.send('2')).toEqual(['Table for 2 under Ada. Confirm?']);
  });

  test('digressions: false keeps the old behaviour (the message is gathered, no digression)', () => {
    const d = booker(false);
    expect(d.send('Ada')).toEqual(['How many people?']);
    expect(d.send('opening hours for 4 people?')).toEqual(['Table for 4 under Ada. Confirm?']);
    const off = booker(false);
    expect(off.send('Please stop.')).toEqual(['How many people?']);
    expect(off.vars().name).toBe('Please stop.');
    expect(digressionDecisions(d)).toEqual([]);
    expect(digressionDecisions(off)).toEqual([]);
  });
});
