// Forms the language's guides write that the compiler used to refuse: on_human_complete rules with
// RESPOND (inline and as a block), RESPOND with a voice block under it, Handlebars helpers in a
// RESPOND, IS_NUMBER on ON_INPUT's text (patch numeric-text-v1) and NLU entities declared under
// their intent.

import { compileProject } from '../../../abl';
import type { RuntimeCommand } from '../../../abl/runtime';
import { compileAgentBody } from '../abl/helpers';
import { Driver, scripted } from './driver';

function compiled(body: string) {
  const out = compileAgentBody(body);
  expect(out.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return out;
}

describe('on_human_complete rules with RESPOND', () => {
  const agent = compiled(`ESCALATE:
  triggers:
    - WHEN: amount > 100 AND human IS NOT SET
      REASON: "Approve {{amount}}"
  on_human_complete:
    - IF human.approved == true: RESPOND "Approved: {{human.notes}}"
    - IF human.decision == "more_info":
        RESPOND: "The team needs more details."
        THEN: CONTINUE
    - IF human.rejected == true:
        RESPOND: "Sorry, {{human.notes}}"
        COMPLETE: true
FLOW:
  ask:
    REASONING: false
    GATHER:
      - amount: required
        type: number
        prompt: "Amount?"
    THEN: done
  done:
    REASONING: false
    RESPOND: "Done with {{amount}}."
`);

  const escalated = (d: Driver) => d.open.find((c) => c.type === 'escalate') as RuntimeCommand;

  test('compile to their actions, each with its message', () => {
    expect(agent.agents.A?.coordination.escalation?.on_human_complete.map((r) => [r.action.kind, r.respond])).toEqual([
      ['continue', 'Approved: {{human.notes}}'],
      ['continue', 'The team needs more details.'],
      ['complete', 'Sorry, {{human.notes}}'],
    ]);
  });

  test('an inline RESPOND is said with the human in scope, then the flow continues', () => {
    const d = new Driver(scripted({}), agent);
    d.start();
    d.send('250');
    expect(d.feed({ type: 'human_resolved', commandId: escalated(d).id, resolution: { decision: 'approved', notes: 'ok by Kim' } })).toEqual(['Approved: ok by Kim', 'Done with 250.']);
  });

  test('a block rule with COMPLETE ends the agent with its RESPOND', () => {
    const d = new Driver(scripted({}), agent);
    d.start();
    d.send('250');
    expect(d.feed({ type: 'human_resolved', commandId: escalated(d).id, resolution: { decision: 'rejected', notes: 'over budget' } })).toEqual(['Sorry, over budget']);
    expect(d.state.status).toBe('completed');
  });

  test('a rule with two actions, or with none, is E853', () => {
    const codes = (rule: string) => compileAgentBody(`ESCALATE:\n  triggers:\n    - WHEN: x > 1\n  on_human_complete:\n${rule}`).diagnostics.map((x) => x.code);
    expect(codes('    - IF human.approved:\n        COMPLETE: true\n        THEN: CONTINUE\n')).toEqual(['E853']);
    expect(codes('    - IF human.approved: RESPOND\n')).toEqual(['E853']);
  });
});

describe('RESPOND with a voice block', () => {
  test('the block is the step\'s voice settings: ssml and plain_text are the voice form, instructions W510', () => {
    const out = compileAgentBody(`FLOW:
  greet:
    REASONING: false
    RESPOND: "Welcome to the bank."
      SSML: "<speak>Welcome to the <emphasis>bank</emphasis>.</speak>"
      VOICE INSTRUCTIONS: "Speak warmly"
`);
    expect(out.diagnostics.map((x) => x.code)).toEqual(['W510']);
    const step = out.agents.A?.flow?.steps.greet;
    expect(step?.respond).toBe('Welcome to the bank.');
    expect(step?.voice_output).toEqual({ ssml: '<speak>Welcome to the <emphasis>bank</emphasis>.</speak>' });
  });

  test('a block of other keys under a RESPOND stays E110', () => {
    const out = compileAgentBody('FLOW:\n  greet:\n    REASONING: false\n    RESPOND: "Hi"\n      THEN: done\n');
    expect(out.diagnostics.map((x) => x.code)).toContain('E110');
  });
});

describe('IS_NUMBER on ON_INPUT text', () => {
  const agent = compiled(`FLOW:
  ask:
    REASONING: false
    RESPOND: "How many tickets?"
    ON_INPUT:
      - IF: is_number(input)
        SET: tickets = TO_NUMBER(input)
        THEN: done
      - ELSE:
        RESPOND: "A number, please."
        THEN: ask
  done:
    REASONING: false
    RESPOND: "{{tickets}} tickets, {{#each [1, 2]}}{{add @index 1}}{{/each}}."
`);

  test('a numeric answer matches', () => {
    const d = new Driver(scripted({}), agent);
    d.start();
    expect(d.send('many')).toEqual(['A number, please.', 'How many tickets?']);
    expect(d.send(' 3 ')).toEqual(['3 tickets, 12.']);
  });

  test('runs recorded before the patch keep IS_NUMBER false for text (numericText false)', () => {
    const d = new Driver(scripted({}), agent, 1_700_000_000_000, { numericText: false });
    d.start();
    expect(d.send('3')).toEqual(['A number, please.', 'How many tickets?']);
  });
});

describe('NLU entities declared under their intent', () => {
  test('join the section\'s entities and the intent names them', () => {
    const out = compileProject([{ path: 'agents/A.agent.abl', content: `AGENT: A
GOAL: "g"
NLU:
  intents:
    - NAME: book_flight
      EXAMPLES: ["book a flight to Paris"]
      ENTITIES:
        - NAME: city
          TYPE: string
        - NAME: seat
          TYPE: enum
          VALUES: [aisle, window]
    - NAME: cancel
      PATTERNS: [cancel]
      ENTITIES: [city]
` }]);
    expect(out.diagnostics).toEqual([]);
    const nlu = out.agents.A?.nlu;
    expect(nlu?.entities.map((e) => [e.name, e.type])).toEqual([['city', 'free_text'], ['seat', 'enum']]);
    expect(nlu?.intents.map((i) => [i.name, i.entities])).toEqual([['book_flight', ['city', 'seat']], ['cancel', ['city']]]);
  });
});
