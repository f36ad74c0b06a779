// ON_ACTION button handlers are flow branches: their THEN is an edge (no W503 for the step a button
// leads to), a structured action with the handler's id takes it, typed text never does, and an id
// the waiting step does not handle gets the step's no-match behaviour (its RESPOND again).

import { compileProject, type CompilationOutput } from '../../../abl';
import { Driver, scripted } from './driver';

const shop = (onAction: string): CompilationOutput =>
  compileProject([
    {
      path: 'agents/Shop.agent.abl',
      content: `AGENT: Shop
GOAL: "Take a payment."
FLOW:
  steps: [menu, pay, talk]
  menu:
    REASONING: false
    RESPOND: "Pay now or talk to someone?"
    ACTIONS:
      - id: pay_now
        label: "Pay now"
      - id: talk
        label: "Talk to someone"
${onAction}
  pay:
    REASONING: false
    RESPOND: "Paying {{amount}}."
    THEN: COMPLETE
  talk:
    REASONING: false
    RESPOND: "Connecting you."
    THEN: COMPLETE
`,
    },
  ]);

const MAP_FORM = `    ON_ACTION:
      pay_now:
        SET: amount = action.value
        THEN: pay
      talk: talk`;
const LIST_FORM = `    ON_ACTION:
      - ACTION: pay_now
        SET: amount = action.value
        THEN: pay
      - ACTION_ID: talk
        THEN: talk`;

describe.each([['map', MAP_FORM], ['list', LIST_FORM]])('ON_ACTION, %s form', (_form, onAction) => {
  const compiled = shop(onAction);

  it('compiles the handlers into flow edges: no unreachable step', () => {
    expect(compiled.diagnostics).toEqual([]);
    const menu = compiled.agents.Shop!.flow!.steps.menu!;
    expect(menu.on_input.map((b) => [b.condition, b.actions.then])).toEqual([
      [{ kind: 'action', id: 'pay_now' }, { kind: 'goto', step: 'pay' }],
      [{ kind: 'action', id: 'talk' }, { kind: 'goto', step: 'talk' }],
    ]);
    expect(menu.channel).toEqual({ actions: expect.any(Array) });
  });

  it('takes the handler of the pressed button, with its value', () => {
    const d = new Driver(scripted({}), compiled);
    expect(d.start()).toEqual(['Pay now or talk to someone?']);
    expect(d.press('pay_now', 42, 'Pay now')).toEqual(['Paying 42.']);
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'on_action', decision: 'menu: pay_now' }));
  });

  it('answers an unknown action, or typed text, with the step again', () => {
    const d = new Driver(scripted({}), compiled);
    d.start();
    expect(d.press('refund')).toEqual(['Pay now or talk to someone?']);
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'on_action', decision: 'menu: no match for action "refund"' }));
    expect(d.send('talk')).toEqual(['Pay now or talk to someone?']);
    expect(d.press('talk')).toEqual(['Connecting you.']);
  });
});

it('without ON_ACTION the step a button names stays unreachable', () => {
  const compiled = shop('    THEN: COMPLETE');
  expect(compiled.diagnostics.map((d) => d.code).sort()).toEqual(['W503', 'W503']);
});
