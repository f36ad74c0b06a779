// A GATHER inside a flow branch (patch branch-gather-v1): the answer fills that GATHER (with its
// own validation and retry prompt), then the branch's THEN follows; a digression's RESUME asks the
// branch's question again. Runs recorded before the patch keep the old path, where the answer went
// to the step's own GATHER (here: none) and the step went on.

import { compileProject, type CompilationOutput, type Json } from '../../../abl';
import { ASK_ORDER_ON_FAIL, shopAgent } from '../../fixtures/agents/gather-and-errors';
import { Driver, scripted, toolFail, toolOk } from './driver';

function shop(onFail: string, extra = ''): CompilationOutput {
  const compiled = compileProject([{ path: 'agents/Shop.agent.abl', content: shopAgent(onFail, extra) }]);
  expect(compiled.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
  return { ...compiled, entry_agent: 'Shop' };
}

/** `lookup` fails until it is called with an order id, then finds it; every call's arguments are kept. */
function session(compiled: CompilationOutput, branchGather?: boolean) {
  const calls: Record<string, Json>[] = [];
  const d = new Driver(
    scripted({ tools: { lookup: (args, id) => (calls.push(args), args.order_id ? toolOk(id, { status: 'shipped' }) : toolFail(id, 'no order id')) } }),
    compiled,
    1_700_000_000_000,
    branchGather === undefined ? {} : { branchGather },
  );
  return { d, calls };
}

describe('a GATHER opened by a flow branch', () => {
  it("fills the branch's field from the answer, then follows the branch's THEN", () => {
    const { d, calls } = session(shop(ASK_ORDER_ON_FAIL));
    expect(d.start()).toEqual(['I could not find it.', 'Which order number?']);
    expect(d.send('A-42')).toEqual(['Found A-42.']);
    expect(calls).toEqual([{ order_id: null }, { order_id: 'A-42' }]);
    expect(d.state.threads[0]?.flow?.branchGather).toBeUndefined();
  });

  it("validates the answer with the branch field's rules and retry prompt", () => {
    const { d, calls } = session(shop(ASK_ORDER_ON_FAIL));
    d.start();
    expect(d.send('the blue one')).toEqual(['Order numbers look like A-123. Which one?']);
    expect(calls).toHaveLength(1);
    expect(d.send('A-7')).toEqual(['Found A-7.']);
  });

  it("a digression's RESUME asks the branch's question again", () => {
    const digressions = `    DIGRESSIONS:
      - INTENT: "help"
        KEYWORDS: [help]
        RESPOND: "I look orders up by their number."
        RESUME: true
`;
    const { d } = session(shop(ASK_ORDER_ON_FAIL, digressions));
    d.start();
    expect(d.send('help')).toEqual(['I look orders up by their number.', 'Which order number?']);
    expect(d.send('A-9')).toEqual(['Found A-9.']);
  });

  it('an ON_SUCCESS branch without THEN goes on to the step THEN once answered', () => {
    const compiled = compileProject([
      {
        path: 'agents/Survey.agent.abl',
        content: `AGENT: Survey
GOAL: "Collect a rating."
TOOLS:
  record(score: number) -> object
    description: "Store the score"
FLOW:
  steps: [rate, bye]
  rate:
    REASONING: false
    CALL: record(score)
    ON_SUCCESS:
      GATHER:
        - comment: required
          prompt: "Any comment?"
    THEN: bye
  bye:
    REASONING: false
    RESPOND: "Thanks: {{comment}}"
`,
      },
    ]);
    expect(compiled.diagnostics.filter((x) => x.severity === 'error')).toEqual([]);
    const d = new Driver(scripted({ tools: { record: (_args, id) => toolOk(id, { ok: true }) } }), { ...compiled, entry_agent: 'Survey' });
    expect(d.start()).toEqual(['Any comment?']);
    expect(d.send('great service')).toEqual(['Thanks: great service']);
  });

  it('with the option off (runs recorded before the patch) the answer is not taken, as before', () => {
    const { d, calls } = session(shop(ASK_ORDER_ON_FAIL), false);
    d.start();
    // The answer never reaches order_id: the call is made again without it, fails, and asks again.
    expect(d.send('A-42')).toEqual(['I could not find it.', 'Which order number?']);
    expect(calls).toEqual([{ order_id: null }, { order_id: null }]);
  });
});
