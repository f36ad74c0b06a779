// A flow step whose CALL a constraint blocks while the session starts: the first message, which
// shares the API turn with the start, does not run it again (one ON_FAIL message); the next does.

import { compileProject, type CompilationOutput } from '../../../abl';
import { Driver, scripted, toolOk } from './driver';

const GUARDED = `AGENT: Guarded
GOAL: "Refund within policy."
TOOLS:
  refund(amount: number) -> {id: string}
    type: http
    endpoint: "https://pay.example.com/refunds"
    method: POST
CONSTRAINTS:
  - REQUIRE amount <= 500 BEFORE calling refund
    ON_FAIL: RESPOND "Refunds over 500 need a manager."
FLOW:
  steps: [ask, pay]
  ask:
    REASONING: false
    SET: amount = 900
    THEN: pay
  pay:
    REASONING: false
    CALL: refund(amount)
    ON_SUCCESS:
      RESPOND: "Refunded."
`;

function compiled(): CompilationOutput {
  const out = compileProject([{ path: 'agents/Guarded.agent.abl', content: GUARDED }]);
  expect(out.diagnostics).toEqual([]);
  return out;
}

describe('a CALL blocked at session start', () => {
  test('the first message does not run the step again; the one after does', () => {
    const d = new Driver(scripted({ tools: { refund: (_a, id) => toolOk(id, { id: 'R-1' }) } }), compiled());
    expect(d.start()).toEqual(['Refunds over 500 need a manager.']);
    expect(d.send('hello')).toEqual([]);
    expect(d.traceOf('decision').filter((x) => x.decisionKind === 'step_held').map((x) => x.decision)).toEqual(['pay']);
    expect(d.state.threads[0]?.flow).toEqual({ step: 'pay', phase: 'enter', attempts: { ask: 1, pay: 1 } });
    expect(d.send('please')).toEqual(['Refunds over 500 need a manager.']);
    expect(d.send('again')).toEqual(['Refunds over 500 need a manager.']);
    expect(d.commands.filter((c) => c.type === 'call_tool')).toEqual([]);
  });

  test('with the option off the first message runs it again (runs recorded before the patch)', () => {
    const d = new Driver(scripted({}), compiled(), undefined, { startBlockHold: false });
    d.start();
    expect(d.send('hello')).toEqual(['Refunds over 500 need a manager.']);
  });
});
