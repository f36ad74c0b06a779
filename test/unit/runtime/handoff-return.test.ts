// HANDOFF ON_RETURN when the child returns: a step name resumes the parent's FLOW there in the same
// turn, an instruction reaches the parent's next reasoning call once, resume_intent hands the
// triggering message back; with the option off (runs recorded before) the parent just waits.

import { compileProject, type CompilationOutput } from '../../../abl';
import type { RuntimeCommand } from '../../../abl/runtime';
import { Driver, llmText, scripted } from './driver';

type LlmCommand = Extract<RuntimeCommand, { type: 'call_llm' }>;

const VERIFY = `AGENT: Verify
GOAL: "Verify the guest"
FLOW:
  ask:
    REASONING: false
    GATHER:
      - name: required
        prompt: "Your name?"
`;

function project(front: string): CompilationOutput {
  const out = compileProject([
    { path: 'agents/Front.agent.abl', content: front },
    { path: 'agents/Verify.agent.abl', content: VERIFY },
  ]);
  expect(out.diagnostics).toEqual([]);
  return out;
}

const HANDOFF = (onReturn: string): string => `HANDOFF:
  - TO: Verify
    WHEN: intent.category == "account" AND name IS NOT SET
    RETURN: true
    ON_RETURN: ${onReturn}
`;

const FLOW_FRONT = `AGENT: Front
GOAL: "Route guests"
${HANDOFF('wrap_up')}FLOW:
  entry_point: menu
  menu:
    REASONING: false
    RESPOND: "How can I help?"
    ON_INPUT:
      - ELSE:
        THEN: menu
  wrap_up:
    REASONING: false
    RESPOND: "Thanks {{name}}, you are verified. Anything else?"
    ON_INPUT:
      - ELSE:
        THEN: menu
`;

const reasoningFront = (onReturn: string): string => `AGENT: Front
GOAL: "Help guests with their account"
${HANDOFF(onReturn)}`;

function llmDriver(onReturn: string, options = {}): { d: Driver; calls: LlmCommand[] } {
  const calls: LlmCommand[] = [];
  const d = new Driver(scripted({ llm: (cmd) => { calls.push(cmd); return llmText(cmd.id, `answer ${calls.length}`); } }), project(reasoningFront(onReturn)), undefined, options);
  return { d, calls };
}

describe('HANDOFF ON_RETURN', () => {
  test('a step name moves the parent FLOW to that step and runs it in the returning turn', () => {
    const d = new Driver(scripted({}), project(FLOW_FRONT));
    expect(d.start()).toEqual(['How can I help?']);
    expect(d.send('my account', { intent: { category: 'account' } })).toEqual(['Your name?']);
    expect(d.active()).toBe('Verify');
    expect(d.send('Ada')).toEqual(['Thanks Ada, you are verified. Anything else?']);
    expect(d.active()).toBe('Front');
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'wrap_up', phase: 'input' });
    expect(d.traceOf('decision').map((x) => x.decision)).toContain('ON_RETURN -> wrap_up');
  });

  test('with the option off the parent waits where it was (runs recorded before the patch)', () => {
    const d = new Driver(scripted({}), project(FLOW_FRONT), undefined, { handoffReturnActions: false });
    d.start();
    d.send('my account', { intent: { category: 'account' } });
    expect(d.send('Ada')).toEqual([]);
    expect(d.state.threads[0]?.flow).toMatchObject({ step: 'menu', phase: 'enter' });
  });

  test('an instruction is in the parent\'s next reasoning call only, rendered', () => {
    const { d, calls } = llmDriver('"Ask {{name}} whether they need anything else"');
    d.start();
    expect(d.send('my account', { intent: { category: 'account' } })).toEqual(['Your name?']);
    expect(d.send('Ada')).toEqual([]);
    expect(calls).toHaveLength(0);
    expect(d.send('thanks')).toEqual(['answer 1']);
    expect(calls[0]?.request.messages[0]?.content).toContain('The agent you handed over to has returned. Now: Ask Ada whether they need anything else');
    d.send('bye');
    expect(calls).toHaveLength(2);
    expect(calls[1]?.request.messages[0]?.content).not.toContain('has returned');
  });

  test('resume_intent hands the triggering message to the parent in the returning turn', () => {
    const { d, calls } = llmDriver('resume_intent');
    d.start();
    expect(d.send('show my balance', { intent: { category: 'account' } })).toEqual(['Your name?']);
    expect(calls).toHaveLength(0);
    expect(d.send('Ada')).toEqual(['answer 1']);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.request.messages.at(-1)).toEqual({ role: 'user', content: 'show my balance' });
    expect(d.active()).toBe('Front');
  });

  test('continue (and resume_intent with the option off) waits for the next message', () => {
    for (const [onReturn, options] of [['continue', {}], ['resume_intent', { handoffReturnActions: false }]] as const) {
      const { d, calls } = llmDriver(onReturn, options);
      d.start();
      d.send('show my balance', { intent: { category: 'account' } });
      expect(d.send('Ada')).toEqual([]);
      expect(calls).toHaveLength(0);
      expect(d.active()).toBe('Front');
    }
  });

  test('the ON_RETURN of the rule that fired applies when two rules hand over to the same agent', () => {
    const front = FLOW_FRONT.replace(HANDOFF('wrap_up'), `HANDOFF:
  - TO: Verify
    WHEN: intent.category == "other" AND name IS NOT SET
    RETURN: true
    ON_RETURN: continue
${HANDOFF('wrap_up').replace('HANDOFF:\n', '')}`);
    const d = new Driver(scripted({}), project(front));
    d.start();
    d.send('my account', { intent: { category: 'account' } });
    expect(d.send('Ada')).toEqual(['Thanks Ada, you are verified. Anything else?']);
  });

  test('PASS: on the rule reaches the target', () => {
    const front = `AGENT: Front
GOAL: "Route"
HANDOFF:
  - TO: Verify
    WHEN: intent.category == "account"
    PASS: [customer_id]
`;
    const d = new Driver(scripted({}), project(front));
    d.start({ type: 'start', sessionVariables: { customer_id: 'C-9' } });
    d.send('my account', { intent: { category: 'account' } });
    expect(d.vars('Verify')).toMatchObject({ customer_id: 'C-9' });
  });
});
