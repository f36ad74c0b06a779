// ON_ERROR's THEN after model failures and top-level GATHER retries (patch
// agent-error-transitions-v1): a top-level GATHER field is re-asked at most `max_retries` times
// before a `validation_error` goes to the agent's ON_ERROR (else MESSAGES.error_default), a
// reasoning agent's ON_ERROR THEN COMPLETE / ESCALATE is carried out, and a failure in a flow's
// reasoning step goes where its handler says. With the option off (runs recorded before the patch)
// the old behaviour stays: re-asking without limit, handlers that only respond, steps that go on.

import { compileProject, type CompilationOutput } from '../../../abl';
import type { RuntimeEvent } from '../../../abl/runtime';
import { billingAgent } from '../../fixtures/agents/gather-and-errors';
import { Driver, llmText, scripted } from './driver';

function agent(onError = '', maxRetries = 2): CompilationOutput {
  const compiled = compileProject([{ path: 'agents/Billing.agent.abl', content: billingAgent(onError, maxRetries) }]);
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: 'Billing' };
}

/** A Billing session whose reasoning calls answer "About that invoice…"; `option` is agentErrorTransitions. */
function session(compiled: CompilationOutput, option?: boolean | (() => boolean), llm: (id: string) => RuntimeEvent = (id) => llmText(id, 'About that invoice…')): Driver {
  return new Driver(scripted({ llm: (cmd) => llm(cmd.id) }), compiled, 1_700_000_000_000, option === undefined ? {} : { agentErrorTransitions: option });
}

describe('agent-level GATHER max_retries', () => {
  it('re-asks max_retries times, then answers with error_default and records a validation_error', () => {
    const d = session(agent());
    d.start();
    expect(d.send('hello')).toEqual(['Invoice number?']);
    expect(d.send('12')).toEqual(['That is not an invoice number (INV-123456). Invoice number?']);
    expect(d.send('34')).toEqual(['That is not an invoice number (INV-123456). Invoice number?']);
    expect(d.traceOf('error')).toEqual([]);
    expect(d.send('56')).toEqual(["Let's leave the invoice for now."]);
    expect(d.traceOf('error')).toEqual([expect.objectContaining({ agent: 'Billing', kind: 'validation_error', message: 'No valid invoice_id after 2 retries' })]);
    // The agent carries on: the field is asked afresh, with a fresh count.
    expect(d.send('what now?')).toEqual(['Invoice number?']);
    expect(d.send('nope')).toEqual(['That is not an invoice number (INV-123456). Invoice number?']);
    expect(d.send('INV-123456')).toEqual(['About that invoice…']);
    expect(d.vars().invoice_id).toBe('INV-123456');
  });

  it('a valid answer resets the count', () => {
    const d = session(agent('', 1));
    d.start();
    d.send('hello');
    expect(d.send('12')).toEqual(['That is not an invoice number (INV-123456). Invoice number?']);
    expect(d.send('INV-000001')).toEqual(['About that invoice…']);
    expect(d.state.threads[0]?.askedRetries).toBeUndefined();
  });

  it('ON_ERROR validation_error with THEN: COMPLETE ends the session after its RESPOND', () => {
    const d = session(agent('ON_ERROR:\n  validation_error:\n    RESPOND: "I could not read that invoice number."\n    THEN: COMPLETE\n', 1));
    d.start();
    d.send('hello');
    d.send('12');
    expect(d.send('34')).toEqual(['I could not read that invoice number.']);
    expect(d.last.outcome).toBe('completed');
    expect(d.traceOf('decision')).toContainEqual(expect.objectContaining({ decisionKind: 'on_error', decision: 'validation_error -> COMPLETE' }));
  });

  it('ON_ERROR validation_error with THEN: ESCALATE escalates', () => {
    const d = session(agent('ON_ERROR:\n  validation_error:\n    THEN: ESCALATE with REASON: "invoice number unreadable"\n', 1));
    d.start();
    d.send('hello');
    d.send('12');
    d.send('34');
    expect(d.commands.filter((c) => c.type === 'escalate')).toEqual([expect.objectContaining({ reason: 'invoice number unreadable' })]);
    expect(d.last.outcome).toBe('suspended');
  });

  it('THEN: CONTINUE stops insisting for this turn: the reasoning loop answers', () => {
    const d = session(agent('ON_ERROR:\n  validation_error:\n    THEN: CONTINUE\n', 1));
    d.start();
    d.send('hello');
    d.send('12');
    expect(d.send('34')).toEqual(['About that invoice…']);
    expect(d.send('hm')).toEqual(['Invoice number?']);
  });

  it('with the option off (a run recorded before the patch) re-asks without limit', () => {
    const d = session(agent('', 1), false);
    d.start();
    d.send('hello');
    for (let i = 0; i < 5; i++) expect(d.send(`${i}`)).toEqual(['That is not an invoice number (INV-123456). Invoice number?']);
    expect(d.traceOf('error')).toEqual([]);
  });

  it('asks a lazy option only when the limit is reached', () => {
    let asked = 0;
    const d = session(agent('', 2), () => (asked++, true));
    d.start();
    d.send('hello');
    d.send('12');
    d.send('34');
    expect(asked).toBe(0);
    expect(d.send('56')).toEqual(["Let's leave the invoice for now."]);
    expect(asked).toBe(1);
  });
});

describe("a reasoning agent's ON_ERROR THEN", () => {
  const failing = (id: string): RuntimeEvent => ({ type: 'llm_result', commandId: id, ok: false, error: { kind: 'llm_error', message: 'provider down' } });
  const withHandler = (then: string) =>
    agent(`ON_ERROR:\n  llm_error:\n    RESPOND: "Our assistant is unavailable."\n    THEN: ${then}\n`);

  it('COMPLETE ends the session after an llm_error', () => {
    const d = session(withHandler('COMPLETE'), undefined, failing);
    d.start();
    expect(d.send('INV-123456')).toEqual(['Our assistant is unavailable.']);
    expect(d.traceOf('error')).toContainEqual(expect.objectContaining({ kind: 'llm_error' }));
    expect(d.last.outcome).toBe('completed');
  });

  it('ESCALATE escalates after an llm_error', () => {
    const d = session(withHandler('ESCALATE with REASON: "assistant down"'), undefined, failing);
    d.start();
    d.send('INV-123456');
    expect(d.commands.filter((c) => c.type === 'escalate')).toEqual([expect.objectContaining({ reason: 'assistant down' })]);
  });

  it('with the option off only responds, as before the patch', () => {
    let asked = 0;
    const d = session(withHandler('COMPLETE'), () => (asked++, false), failing);
    d.start();
    expect(d.send('INV-123456')).toEqual(['Our assistant is unavailable.']);
    expect(d.last.outcome).toBe('turn_complete');
    expect(asked).toBe(1);
  });
});

describe("ON_ERROR's THEN for an llm_error in a flow's REASONING: true step", () => {
  const advisor = (onError: string) => {
    const compiled = compileProject([
      {
        path: 'agents/Advisor.agent.abl',
        content: `AGENT: Advisor
GOAL: "Advise, then wrap up."
FLOW:
  steps: [advise, wrap]
  advise:
    REASONING: true
    GOAL: "Give one piece of advice"
    RESPOND: "Let me think."
    THEN: wrap
  wrap:
    REASONING: false
    RESPOND: "Anything else?"
${onError}MESSAGES:
  error_default: "Sorry, I could not think that through."
`,
      },
    ]);
    expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    return { ...compiled, entry_agent: 'Advisor' };
  };
  /** The model fails its first `failures` calls, then answers. */
  const flaky = (failures: number) => {
    let calls = 0;
    return (id: string): RuntimeEvent =>
      ++calls <= failures ? { type: 'llm_result', commandId: id, ok: false, error: { kind: 'llm_error', message: 'provider down' } } : llmText(id, 'Save a little every month.');
  };

  it('without a handler: error_default, and the flow stays on the step for the next message', () => {
    const d = session(advisor(''), undefined, flaky(1));
    expect(d.start()).toEqual(['Let me think.', 'Sorry, I could not think that through.']);
    expect(d.state.threads[0]?.flow?.step).toBe('advise');
    expect(d.send('any advice?')).toEqual(['Let me think.', 'Save a little every month.', 'Anything else?']);
  });

  it('an agent handler with THEN: ESCALATE escalates instead of moving on', () => {
    const d = session(advisor('ON_ERROR:\n  llm_error:\n    THEN: ESCALATE with REASON: "advice unavailable"\n'), undefined, flaky(1));
    expect(d.start()).not.toContain('Anything else?');
    expect(d.commands.filter((c) => c.type === 'escalate')).toEqual([expect.objectContaining({ reason: 'advice unavailable' })]);
  });

  it('with the option off the step goes on to its THEN, as before the patch', () => {
    const d = session(advisor(''), false, flaky(1));
    expect(d.start()).toEqual(['Let me think.', 'Sorry, I could not think that through.', 'Anything else?']);
  });
});
