// The session's first turn as a new user meets it: a first message sent with the start that does
// not answer the first step's GATHER gets its question once (not again as a failed answer), and an
// escalation says its notice unless what escalated said its own message, also in a turn a
// callback resumed. Each with its option off, as runs recorded before the patches replay.

import { compileProject, type CompilationOutput } from '../../../abl';
import type { RuntimeOptions } from '../../../abl/runtime';
import { Driver, scripted, toolOk } from './driver';

const QUESTION = 'Which order should I refund?';
const NOTICE = 'I have passed this to a member of our team. I will continue as soon as they respond.';

const DESK = `AGENT: Desk
GOAL: "Refund an order."
TOOLS:
  look_up(order_id: string) -> {amount: number}
    type: http
    endpoint: "https://orders.example.com/lookup"
    method: POST
  look_up_later(order_id: string) -> {amount: number}
    type: async_webhook
    endpoint: "https://orders.example.com/lookup"
    method: POST
ESCALATE:
  triggers:
    - WHEN: order.amount > 100 AND human IS NOT SET
      REASON: "Refund {{order.amount}}"
FLOW:
  steps: [ask, check, done]
  ask:
    REASONING: false
    GATHER:
      - order_id: required
        prompt: "${QUESTION}"
        validate: pattern(^ORD-\\d{4}$)
    THEN: check
  check:
    REASONING: false
    CALL: TOOL_NAME(order_id)
      AS: order
    ON_SUCCESS:
      RESPOND: "Found {{order_id}}."
      THEN: done
  done:
    REASONING: false
    RESPOND: "Done."
`;

function compiled(tool = 'look_up', text = DESK): CompilationOutput {
  const out = compileProject([{ path: 'agents/Desk.agent.abl', content: text.replace('TOOL_NAME', tool) }]);
  expect(out.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return out;
}

const amounts = (amount: number) => scripted({ tools: { look_up: (_a, id) => toolOk(id, { amount }) } });

describe("a first message sent with the start that does not answer the first step's GATHER", () => {
  test('gets no second question and counts no retry; the next message is a failed answer', () => {
    const d = new Driver(amounts(5), compiled());
    expect(d.start()).toEqual([QUESTION]);
    expect(d.sendWithStart('Hi')).toEqual([]);
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'gather_held').map((x) => x.decision)).toEqual(['ask: order_id']);
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'ask', phase: 'gather', attempts: { ask: 1 } });
    expect(d.send('Hello?')).toEqual([QUESTION]);
    expect(d.state.threads[0]?.flow?.attempts).toMatchObject({ 'gather:ask': 1 });
    expect(d.send('ORD-1234')).toEqual(['Found ORD-1234.', 'Done.']);
  });

  test('that answers it goes on as before', () => {
    const d = new Driver(amounts(5), compiled());
    d.start();
    expect(d.sendWithStart('Refund ORD-1234 please')).toEqual(['Found ORD-1234.', 'Done.']);
  });

  test('that fills another field of it gets no second question either', () => {
    const two = DESK.replace('        validate: pattern(^ORD-\\d{4}$)\n', '        validate: pattern(^ORD-\\d{4}$)\n      - email: required\n        type: email\n        prompt: "Your email?"\n');
    const d = new Driver(amounts(5), compiled('look_up', two));
    expect(d.start()).toEqual([QUESTION]);
    expect(d.sendWithStart('Hi, I am ann@example.com')).toEqual([]);
    expect(d.vars().email).toBe('ann@example.com');
    expect(d.send('ORD-1234')).toEqual(['Found ORD-1234.', 'Done.']);
  });

  test('a message in a later request (after a start-only greeting) is a failed answer', () => {
    const d = new Driver(amounts(5), compiled());
    d.start();
    expect(d.send('Hi')).toEqual([QUESTION]);
  });

  test('with the option off the question is asked again (runs recorded before the patch)', () => {
    const d = new Driver(amounts(5), compiled(), undefined, { startGatherHold: false });
    d.start();
    expect(d.sendWithStart('Hi')).toEqual([QUESTION]);
  });
});

describe('the escalation notice', () => {
  const run = (amount: number, options: Partial<RuntimeOptions> = {}, text = DESK) => {
    const d = new Driver(amounts(amount), compiled('look_up', text), undefined, options);
    d.start();
    return { d, said: d.send('ORD-1234') };
  };

  test('is said when a trigger fires after a step said something in the turn', () => {
    const { d, said } = run(250);
    expect(said).toEqual(['Found ORD-1234.', NOTICE]);
    expect(d.commands.filter((c) => c.type === 'escalate')).toHaveLength(1);
  });

  test('is said in a turn a callback resumed, after the replies sent before the callback', () => {
    const d = new Driver(scripted({}), compiled('look_up_later'));
    d.start();
    d.send('ORD-1234');
    const wait = d.open.find((c) => c.type === 'suspend_for_callback');
    expect(wait).toBeDefined();
    expect(d.feed({ type: 'callback', commandId: wait!.id, payload: { amount: 250 } })).toEqual(['Found ORD-1234.', NOTICE]);
  });

  test("is not said when the branch that escalates said its own message", () => {
    const own = DESK.replace('      RESPOND: "Found {{order_id}}."\n      THEN: done', '      RESPOND: "A manager will look at {{order_id}}."\n      THEN: ESCALATE');
    const { said } = run(5, {}, own);
    expect(said).toEqual(['A manager will look at ORD-1234.']);
  });

  test('is said when the branch that escalates says nothing, after what the step said', () => {
    const silent = DESK.replace('    ON_SUCCESS:\n      RESPOND: "Found {{order_id}}."\n      THEN: done', '    RESPOND: "Looking."\n    ON_SUCCESS:\n      THEN: ESCALATE');
    const { said } = run(5, {}, silent);
    expect(said).toEqual(['Looking.', NOTICE]);
  });

  test('with the option off it is said only when nothing else was said in the turn (runs recorded before the patch)', () => {
    expect(run(250, { escalationNotice: false }).said).toEqual(['Found ORD-1234.']);
  });
});
